"""Command-line verbs: ``python -m cyoa VERB`` (also ``flask --app app cyoa VERB``).

Every verb works on the app's database by default and on another with ``--db PATH``. This
module is the one place that puts the verbs in the ``cyoa`` group; each lives in the module
named for its part (setup, analysis, ratings, research, export, interchange).
"""

from __future__ import annotations

import click

from cyoa.cli import (
    analysis,
    backup,
    export,
    interchange,
    judge,
    judge_rounds,
    judgements,
    migrate_db,
    models,
    plan,
    research,
    setup,
)


@click.group(name="cyoa", help="CYOA: collaborative story writing for model evaluation.")
@click.option(
    "--db",
    "db_path",
    default=None,
    envvar="CYOA_DATABASE",
    metavar="PATH|URL",
    help="The database: a SQLite file or a PostgreSQL URL (default: CYOA_DATABASE, else the "
    "app's, instance/cyoa.sqlite).",
)
@click.pass_context
def cli(ctx: click.Context, db_path: str | None) -> None:
    ctx.ensure_object(dict)
    ctx.obj["db_path"] = db_path


for command in (
    setup.init_db_command,
    setup.prepare_models_command,
    setup.links_command,
    backup.backup_command,
    backup.restore_command,
    migrate_db.migrate_db_command,
    analysis.analyze_command,
    analysis.metrics_command,
    analysis.import_tsv_command,
    analysis.tag_command,
    judgements.import_ratings_command,
    judgements.generate_stories_command,
    judge.judge_command,
    judge_rounds.judge_rounds_command,
    research.create_researcher_command,
    research.experiment_group,
    export.export_command,
    interchange.preference_data_command,
    interchange.export_coauthor_command,
    interchange.import_coauthor_command,
    models.try_model_command,
    plan.plan_command,
):
    cli.add_command(command)
