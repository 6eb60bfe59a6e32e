"""The ``export`` verb: every table of a stored experiment, in every format."""

from __future__ import annotations

from pathlib import Path

import click

from cyoa import kinds
from cyoa.cli.context import get_app, open_existing
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.web.tables import ExportError


@click.command("export")
@click.argument("experiment")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl", "parquet", "cyoa-tsv", "bundle"]),
    required=True,
    help=(
        "csv, jsonl, parquet: one table (see --table); cyoa-tsv: the layout of the original "
        "CYOA evaluation script (co-writing); bundle: a zip with every table, the data "
        "dictionary, the spec (and for co-writing the evaluation card)."
    ),
)
@click.option(
    "--table",
    type=click.Choice([table for kind in kinds.KINDS.values() for table in kind.tables]),
    default=None,
    help="For csv, jsonl, parquet. Co-writing: preference (the default; one row per writer × "
    "round), sessions, events, survey, process (the keystroke record's measures). Rating: "
    "judgements (the default; one row per rater × story × item), stories, raters.",
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
@click.option(
    "--exact-text",
    is_flag=True,
    help="For cyoa-tsv: every text exactly as stored, as the original evaluation script "
    "reads it. By default a cell starting with = + - @ (which a spreadsheet would run as a "
    "formula) gets a leading ' as in the CSV; open an exact file only with code.",
)
@click.pass_context
def export_command(
    ctx: click.Context,
    experiment: str,
    fmt: str,
    table: str | None,
    out: Path,
    pair: tuple[str, str] | None,
    exact_text: bool,
) -> None:
    """Write a stored EXPERIMENT's data (see docs/data-dictionary.md, "Exports")."""
    if exact_text and fmt != "cyoa-tsv":
        raise click.UsageError(
            "--exact-text is for --format cyoa-tsv: JSON Lines and Parquet always keep the text "
            "exactly, and CSV is for spreadsheets."
        )
    db = open_existing(ctx)
    try:
        experiment_spec = (
            cowriting_parts(get_app(ctx)).study.experiment(experiment) if fmt == "bundle" else None
        )
        data = kinds.export(
            db,
            experiment,
            fmt,
            table=table,
            pair=pair,
            experiment=experiment_spec,
            exact_text=exact_text,
        )
    except ExportError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    if str(out) == "-":
        click.echo(data, nl=False)
    else:
        out.write_bytes(data)
        click.echo(f"Wrote {out}.", err=True)
