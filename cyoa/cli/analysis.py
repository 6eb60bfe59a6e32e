"""Verbs of the paper's analysis: ``analyze``, ``metrics``, ``import-tsv``, ``tag``."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from cyoa.cli.context import open_existing, open_or_create
from cyoa.cowriting.analysis.tag_cache import tag_experiment
from cyoa.cowriting.analysis.tsv import import_tsv
from cyoa.errors import AnalysisError
from cyoa.metrics.records import score_records


@click.command("analyze")
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
    help=(
        "Alternative hypothesis of the preference, Mann–Whitney and within-writer tests (the "
        "confidence sequence is two-sided)."
    ),
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
    per pair of systems that writers compared); for a rating experiment, its instrument's
    scores per source, their tests and the raters' agreement."""
    # Here, not at the top: the other verbs of this module need neither wing.
    from cyoa import kinds

    db = open_existing(ctx)
    try:
        kind = kinds.kind_of(db, experiment)
        options = {"compat": compat, "alternative": alternative, "pair": pair}
        text = kind.report(db, experiment, fmt, **options)
    except AnalysisError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    click.echo(text, nl=False)


@click.command("metrics")
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
    "--language",
    default="en",
    show_default=True,
    help="The texts' language (BCP 47): en keeps the papers' English words, any other counts "
    "Unicode words (docs/analysis.md, 'A study in another language').",
)
@click.option(
    "--output",
    "output_file",
    type=click.File("w", encoding="utf-8"),
    default="-",
    help="Where to write the scored JSON lines (default: standard output).",
)
def metrics_command(input_file, variant: str, language: str, output_file) -> None:
    """Add the edit metrics to each JSON record of --input (no database needed)."""

    def records():
        for line, text in enumerate(input_file, start=1):
            if not text.strip():
                continue
            try:
                yield json.loads(text)
            except json.JSONDecodeError as error:
                raise click.ClickException(f"Line {line} is not valid JSON: {error}.") from error

    try:
        for record in score_records(records(), variant, language):
            output_file.write(json.dumps(record, ensure_ascii=False) + "\n")
    except ValueError as error:
        raise click.ClickException(str(error)) from error


@click.command("import-tsv")
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
    from cyoa.errors import AnalysisError

    db = open_or_create(ctx)
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

    click.echo(f"Tagging the sentences of '{experiment}' for the text metrics…")
    start = time.perf_counter()
    tagged = tag_experiment(db, experiment, workers=workers)
    click.echo(f"Tagged {tagged:,} new sentences in {time.perf_counter() - start:.1f} s.")


@click.command("tag")
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

    if niceness:
        os.nice(niceness)
    db = open_existing(ctx)
    try:
        _tag(db, experiment, workers=workers or os.cpu_count() or 1)
    except AnalysisError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
