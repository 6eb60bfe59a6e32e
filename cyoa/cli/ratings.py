"""The ``import-ratings`` verb: judgements of a rating study from a file, as a new experiment."""

from __future__ import annotations

from pathlib import Path

import click

from cyoa.cli.context import open_or_create
from cyoa.instruments import TTCW, InstrumentError, fei_instrument, load_instrument
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import (
    RatingImportError,
    fei_questions,
    long_judgements,
    stories_from_file,
    ttcw_judgements,
)

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("import-ratings")
@click.argument("file", type=FILE)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["ttcw", "long"]),
    required=True,
    help="ttcw: the released TTCW expert judgements (JSON); long: one judgement per row "
    "(CSV or JSON Lines: story_id, source, rater_id, item, value[, rationale]).",
)
@click.option("--name", required=True, help="Id of the new experiment (lowercase, digits, - _).")
@click.option(
    "--instrument",
    default=None,
    help="For --format long: aiss-v1, ttcw, fei, or the path of a custom instrument's TOML spec.",
)
@click.option(
    "--questions",
    type=FILE,
    default=None,
    help="For --instrument fei: JSON Lines of {story_id, question_id, kind, text}, kind "
    "'transitional' or 'world'.",
)
@click.option(
    "--stories",
    type=FILE,
    default=None,
    help="The stories' titles and texts (JSON, JSON Lines or CSV: story_id, source, title, "
    "text), e.g. TTCW's ttcw_short_stories.json.",
)
@click.pass_context
def import_ratings_command(
    ctx: click.Context,
    file: Path,
    fmt: str,
    name: str,
    instrument: str | None,
    questions: Path | None,
    stories: Path | None,
) -> None:
    """Load FILE's judgements as a new rating experiment (closed: nothing to collect), after
    checking every row; a bad row names its file, line and field, and nothing is stored."""
    try:
        if fmt == "ttcw":
            if instrument not in (None, "ttcw"):
                raise RatingImportError(
                    "--format ttcw holds TTCW judgements: leave out --instrument."
                )
            chosen = TTCW
            judgements = ttcw_judgements(_read(file), file.name)
        else:
            chosen = _instrument(instrument, questions)
            judgements = long_judgements(_read(file), file.name, chosen)
        given = stories_from_file(_read(stories), stories.name) if stories else None
    except (RatingImportError, InstrumentError) as error:
        raise click.ClickException(str(error)) from error
    origin = {
        "format": fmt,
        "file": file.name,
        **({"stories": stories.name} if stories else {}),
        **({"questions": questions.name} if questions else {}),
    }
    db = open_or_create(ctx)
    try:
        summary = import_rating_experiment(db, name, chosen, judgements, given, origin)
    except RatingImportError as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    click.echo(
        f"Imported {summary.judgements:,} judgements of {summary.stories} stories by "
        f"{summary.raters} raters ({chosen.name}; sources: {', '.join(summary.sources)}) as "
        f"experiment '{summary.experiment}'."
    )
    if summary.stories_without_text:
        click.echo(
            f"{summary.stories_without_text} stories have no text stored (not in --stories, or "
            "only a link)."
        )


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise RatingImportError(f"{path.name} is not UTF-8 text ({error.reason}).") from None


def _instrument(name: str | None, questions: Path | None):
    if not name:
        raise RatingImportError(
            "--format long needs --instrument: aiss-v1, ttcw, fei, or a TOML spec's path."
        )
    if name == "fei":
        if questions is None:
            raise RatingImportError("--instrument fei needs --questions FILE (the FEI questions).")
        return fei_instrument(fei_questions(_read(questions), questions.name))
    if questions is not None:
        raise RatingImportError("--questions is for --instrument fei only.")
    return load_instrument(name)
