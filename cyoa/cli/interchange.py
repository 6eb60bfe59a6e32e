"""Verbs that carry a co-writing study to the field's formats: preference data for model
builders (``preference-data``)."""

from __future__ import annotations

from pathlib import Path

import click

from cyoa.cli.context import open_existing
from cyoa.cowriting.research import preference_data
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
