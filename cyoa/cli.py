"""Command-line verbs: ``python -m cyoa VERB`` (also ``flask --app app cyoa VERB``).

Every verb works on the app's database by default and on another with ``--db PATH``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import click
from flask import Flask
from flask.cli import ScriptInfo


@click.group(name="cyoa", help="CYOA: collaborative story writing for model evaluation.")
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="SQLite database to use instead of the app's (instance/cyoa.sqlite).",
)
@click.pass_context
def cli(ctx: click.Context, db_path: Path | None) -> None:
    ctx.ensure_object(dict)
    ctx.obj["db_path"] = db_path


def get_app(ctx: click.Context) -> Flask:
    """The app for a verb: the one Flask's CLI loaded, or a new one (models not loaded)."""
    root = ctx.find_root()
    if "app" not in root.meta:
        overrides: dict[str, object] = {"LOAD_MODELS_AT_START": False}
        db_path = (ctx.find_object(dict) or {}).get("db_path")
        if db_path:
            overrides["DATABASE"] = str(db_path)
        info = ctx.find_object(ScriptInfo)
        if info is not None:
            app = info.load_app()
            app.config.update(overrides)
        else:
            from cyoa import create_app

            app = create_app(overrides)
        root.meta["app"] = app
    return root.meta["app"]


@cli.command("init-db")
@click.pass_context
def init_db_command(ctx: click.Context) -> None:
    """Create the database tables (done automatically when the app starts)."""
    app = get_app(ctx)
    click.echo(f"Database ready: {app.config['DATABASE']}")


@cli.command("prepare-models")
@click.pass_context
def prepare_models_command(ctx: click.Context) -> None:
    """Convert the packaged models once into the model cache (shows progress)."""
    from cyoa.generation import load_model_cards, prepare_models

    app = get_app(ctx)
    cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    used = {
        s.model.name
        for e in app.extensions["cyoa"]["study"].experiments.values()
        for s in e.systems
    }
    prepare_models(
        {n: c for n, c in cards.items() if n in used},
        Path(app.config["MODEL_CACHE"]),
        log=click.echo,
    )
    click.echo("Models ready.")


@cli.command("links")
@click.option("--base-url", default="http://127.0.0.1:5000", show_default=True)
@click.pass_context
def links_command(ctx: click.Context, base_url: str) -> None:
    """Print every experiment's participant link and the identifiers it accepts."""
    app = get_app(ctx)
    for line in participant_links(app, base_url):
        click.echo(line)


def participant_links(app: Flask, base_url: str) -> list[str]:
    study = app.extensions["cyoa"]["study"]
    lines = []
    for exp in study.experiments.values():
        lines.append(f"  {exp.id}: {base_url.rstrip('/')}/s/{exp.id}")
    lines.append(
        "  (append ?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=… or ?pid=… to identify participants)"
    )
    return lines


def database_path(ctx: click.Context) -> Path:
    """The database a verb works on: ``--db`` if given (no app is built), else the app's."""
    db_path = (ctx.find_object(dict) or {}).get("db_path")
    if db_path:
        return Path(db_path)
    return Path(get_app(ctx).config["DATABASE"])


def _open_existing(ctx: click.Context):
    from cyoa import store

    path = database_path(ctx)
    if not path.exists():
        raise click.ClickException(f"There is no database at {path}: check --db.")
    return store.connect(path)


@cli.command("analyze")
@click.argument("experiment")
@click.option(
    "--compat",
    type=click.Choice(["cyoa-2021"]),
    default=None,
    help="Compute exactly what the original CYOA evaluation script computed.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "csv", "json"]),
    default="markdown",
    show_default=True,
)
@click.option(
    "--alternative",
    type=click.Choice(["two-sided", "greater", "less"]),
    default="two-sided",
    show_default=True,
    help="Alternative hypothesis of the preference and Mann–Whitney tests.",
)
@click.option(
    "--pair",
    nargs=2,
    default=None,
    metavar="SYSTEM SYSTEM",
    help="Analyse only the writers who compared these two systems (default: every pair).",
)
@click.pass_context
def analyze_command(
    ctx: click.Context,
    experiment: str,
    compat: str | None,
    fmt: str,
    alternative: str,
    pair: tuple[str, str] | None,
) -> None:
    """Print the paper's tables for a stored EXPERIMENT, with their tests (one set of tables
    per pair of systems that writers compared)."""
    from cyoa.analysis.data import AnalysisError, experiment_pairs, load_study
    from cyoa.analysis.render import render
    from cyoa.analysis.tables import analyze
    from cyoa.analysis.tag_cache import SentenceTagCache

    db = _open_existing(ctx)
    try:
        try:
            pairs = [tuple(pair)] if pair else experiment_pairs(db, experiment)
            studies = [load_study(db, experiment, p) for p in pairs]
        except AnalysisError as error:
            raise click.ClickException(str(error)) from error
        if not studies:
            raise click.ClickException(f"No writer of experiment '{experiment}' has started yet.")
        cache = SentenceTagCache(db)
        analyses = [
            analyze(data, compat=compat, alternative=alternative, cache=cache) for data in studies
        ]
    finally:
        db.close()
    click.echo(render(analyses, fmt), nl=False)


@cli.command("metrics")
@click.option(
    "--input",
    "input_file",
    type=click.File("r", encoding="utf-8"),
    required=True,
    help="JSON lines, each an object with 'original' and 'edited' ('-' for stdin).",
)
@click.option(
    "--variant",
    type=click.Choice(["cyoa-2021", "storium"]),
    default="cyoa-2021",
    show_default=True,
    help="USER variant: the CYOA paper's, or the STORIUM platform's.",
)
@click.option(
    "--output",
    "output_file",
    type=click.File("w", encoding="utf-8"),
    default="-",
    help="Where to write the scored JSON lines (default: standard output).",
)
def metrics_command(input_file, variant: str, output_file) -> None:
    """Add the edit metrics to each JSON record of --input (no database needed)."""
    import json

    from cyoa.metrics.records import score_records

    def records():
        for line, text in enumerate(input_file, start=1):
            if not text.strip():
                continue
            try:
                yield json.loads(text)
            except json.JSONDecodeError as error:
                raise click.ClickException(f"Line {line} is not valid JSON: {error}.") from error

    try:
        for record in score_records(records(), variant):
            output_file.write(json.dumps(record, ensure_ascii=False) + "\n")
    except ValueError as error:
        raise click.ClickException(str(error)) from error


@cli.command("import-tsv")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--name", required=True, help="Id of the new experiment (lowercase, digits, - _).")
@click.option(
    "--tag/--no-tag",
    default=True,
    show_default=True,
    help="Tag the imported sentences for the text metrics now (else the first analyze does).",
)
@click.pass_context
def import_tsv_command(ctx: click.Context, file: Path, name: str, tag: bool) -> None:
    """Load FILE, in the original CYOA evaluation script's layout, as a new experiment."""
    from cyoa import store
    from cyoa.analysis.data import AnalysisError
    from cyoa.analysis.tsv import import_tsv

    db = store.connect(database_path(ctx))
    try:
        summary = import_tsv(db, file.read_text(encoding="utf-8"), name, source=file.name)
        click.echo(
            f"Imported {summary.writers} writers ({summary.rounds} rounds) as experiment "
            f"'{summary.experiment}'."
        )
        if summary.ignored_columns:
            click.echo(f"Columns not used: {', '.join(summary.ignored_columns)}.")
        if tag:
            _tag(db, name, workers=os.cpu_count() or 1)
    except AnalysisError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()


def _tag(db, experiment: str, workers: int) -> None:
    from cyoa.analysis.tag_cache import tag_experiment

    click.echo(f"Tagging the sentences of '{experiment}' for the text metrics…")
    start = time.perf_counter()
    tagged = tag_experiment(db, experiment, workers=workers)
    click.echo(f"Tagged {tagged:,} new sentences in {time.perf_counter() - start:.1f} s.")


@cli.command("tag")
@click.argument("experiment")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes for the tagging (default: every CPU).",
)
@click.option(
    "--nice",
    "niceness",
    type=click.IntRange(0, 19),
    default=0,
    show_default=True,
    help="Lower this process's CPU priority by this much (the app tags in the background with 10).",
)
@click.pass_context
def tag_command(ctx: click.Context, experiment: str, workers: int | None, niceness: int) -> None:
    """Tag EXPERIMENT's sentences not tagged yet, for the text metrics, so that the next
    analyze has nothing left to tag (the app does this while writers write)."""
    from cyoa.analysis.data import AnalysisError

    if niceness:
        os.nice(niceness)
    db = _open_existing(ctx)
    try:
        _tag(db, experiment, workers=workers or os.cpu_count() or 1)
    except AnalysisError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()


@cli.command("export")
@click.argument("experiment")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl", "parquet", "cyoa-tsv", "bundle"]),
    required=True,
    help=(
        "csv, jsonl, parquet: one table (see --table); cyoa-tsv: the layout of the original "
        "CYOA evaluation script; bundle: a zip with every table, the data dictionary, the "
        "spec and the evaluation card."
    ),
)
@click.option(
    "--table",
    type=click.Choice(["preference", "sessions", "events", "survey"]),
    default="preference",
    show_default=True,
    help="For csv, jsonl, parquet: preference = one row per writer × round.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write ('-' for standard output).",
)
@click.option(
    "--pair",
    nargs=2,
    default=None,
    metavar="SYSTEM SYSTEM",
    help="For cyoa-tsv: the two systems to export, for an experiment of more than two.",
)
@click.pass_context
def export_command(
    ctx: click.Context,
    experiment: str,
    fmt: str,
    table: str,
    out: Path,
    pair: tuple[str, str] | None,
) -> None:
    """Write a stored EXPERIMENT's data (see docs/data-dictionary.md, "Exports")."""
    if fmt == "cyoa-tsv":
        from cyoa.analysis.data import AnalysisError
        from cyoa.analysis.tsv import export_cyoa_tsv

        db = _open_existing(ctx)
        try:
            data = export_cyoa_tsv(db, experiment, tuple(pair) if pair else None).encode()
        except AnalysisError as error:
            raise click.ClickException(str(error)) from error
        finally:
            db.close()
    else:
        from cyoa.research.commands import export_data

        data = export_data(ctx, experiment, fmt, table)
    if str(out) == "-":
        click.get_binary_stream("stdout").write(data)
    else:
        out.write_bytes(data)
        click.echo(f"Wrote {out}.", err=True)


def init_app(app: Flask) -> None:
    app.cli.add_command(cli)


def _register_research_commands() -> None:
    from cyoa.research.commands import register_commands

    register_commands(cli)


_register_research_commands()
