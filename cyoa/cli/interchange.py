"""Verbs that carry a co-writing study to the field's formats and back: preference data for
model builders (``preference-data``), CoAuthor's session logs out (``export-coauthor``) and in
(``import-coauthor``)."""

from __future__ import annotations

from pathlib import Path

import click

from cyoa.cli.context import open_existing, open_or_create
from cyoa.cowriting.research import coauthor, preference_data
from cyoa.errors import AnalysisError
from cyoa.web.tables import ExportError


def _write(data: bytes, out: Path) -> None:
    if str(out) == "-":
        click.echo(data, nl=False)
    else:
        out.write_bytes(data)
        click.echo(f"Wrote {out}.", err=True)


@click.command("preference-data")
@click.argument("experiment")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(preference_data.FORMATS),
    default="zip",
    show_default=True,
    help="jsonl or parquet: the pairs; zip: both with the dataset card (README.md).",
)
@click.option(
    "--licence",
    default=preference_data.NO_LICENCE,
    help="The licence the data is released under (an SPDX id such as CC-BY-4.0), written in "
    "every row and the dataset card.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="File to write ('-' for standard output).",
)
@click.pass_context
def preference_data_command(
    ctx: click.Context, experiment: str, fmt: str, licence: str, out: Path
) -> None:
    """Write a co-writing EXPERIMENT's rounds as preference pairs with the writer's edit
    (TRL's prompt, chosen, rejected, plus edited; docs/data-dictionary.md)."""
    db = open_existing(ctx)
    try:
        data = preference_data.export(db, experiment, fmt, licence)
    except ExportError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    _write(data, out)


@click.command("export-coauthor")
@click.argument("experiment")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Zip file to write ('-' for standard output).",
)
@click.pass_context
def export_coauthor_command(ctx: click.Context, experiment: str, out: Path) -> None:
    """Write a co-writing EXPERIMENT as CoAuthor session logs: a zip with one
    <session_id>.jsonl per writer (mapping: docs/data-dictionary.md, "CoAuthor logs")."""
    db = open_existing(ctx)
    try:
        data = coauthor.export_zip(db, experiment)
    except ExportError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    _write(data, out)


@click.command("import-coauthor")
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--name", required=True, help="The new experiment's id.")
@click.pass_context
def import_coauthor_command(ctx: click.Context, files: tuple[Path, ...], name: str) -> None:
    """Load CoAuthor session logs (FILES, one .jsonl per session) as a new co-writing
    experiment, closed to writers, each log one writer on the replay page."""
    db = open_or_create(ctx)
    try:
        texts = [(file.name, file.read_text(encoding="utf-8")) for file in files]
        summary = coauthor.import_logs(db, texts, name)
    except AnalysisError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    left = (
        f"; text after the last suggestion left out in {summary.left_out}"
        if summary.left_out
        else ""
    )
    click.echo(
        f"Imported {summary.sessions} CoAuthor sessions ({summary.rounds} rounds{left}) as "
        f"experiment '{summary.experiment}', with {summary.operations} keystroke record rows."
    )
    for problem in summary.record_problems:
        click.echo(f"Not in the keystroke record: {problem}")
