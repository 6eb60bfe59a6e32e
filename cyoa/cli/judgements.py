"""Verbs of rating studies' data: ``import-ratings`` (judgements from a file, as a new
experiment) and ``generate-stories`` (stories written by models, for a rating study)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cyoa.cli.context import get_app, open_or_create
from cyoa.generation import System, load_model_cards
from cyoa.generation.pool import make_backend
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import (
    RatingImportError,
    fei_questions,
    long_judgements,
    read_records,
    stories_from_file,
    ttcw_judgements,
)
from cyoa.rating.instruments import TTCW, InstrumentError, fei_instrument, load_instrument
from cyoa.rating.judges.store import add_judge, rating_design
from cyoa.rating.judges.verdicts import ttcw_llm_judgements
from cyoa.rating.stories import StoryRecord
from cyoa.rating.stories.generate import (
    GenerationFailed,
    generate_stories,
    generate_stories_to_length,
)
from cyoa.rating.stories.length import LengthControl, LengthError, PlotPrompt, plot_prompts

FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("import-ratings")
@click.argument("file", type=FILE)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["ttcw", "long", "ttcw-llm"]),
    required=True,
    help="ttcw: the released TTCW expert judgements (JSON); long: one judgement per row "
    "(CSV or JSON Lines: story_id, source, rater_id, item, value[, rationale]); ttcw-llm: "
    "one judge's TTCW verdicts (JSON Lines of id, response), with --into and --judge.",
)
@click.option("--name", default=None, help="Id of the new experiment (lowercase, digits, - _).")
@click.option(
    "--into",
    default=None,
    help="Add FILE's verdicts to this stored rating experiment as a judge (with --judge) "
    "instead of making a new experiment.",
)
@click.option(
    "--judge",
    default=None,
    help="With --into: the judge model's name; its verdicts are a panel of their own, "
    "calibrated against the human raters by analyze.",
)
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
@click.option(
    "--rater-ids",
    type=click.Choice(["people", "positions"]),
    default="people",
    show_default=True,
    help="positions: the file numbers each story's raters (rater 1 of one story need not be "
    "rater 1 of another); then no per-rater quality control and no rater effect in the model.",
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
    rater_ids: str,
    into: str | None,
    judge: str | None,
) -> None:
    """Load FILE's judgements as a new rating experiment (closed: nothing to collect), or
    with --into and --judge add them to a stored one as a judge's verdicts, after checking
    every row; a bad row names its file, line and field, and nothing is stored."""
    if into or judge or fmt == "ttcw-llm":
        _add_judge(ctx, file, fmt, into, judge, (name, instrument, questions, stories))
        return
    if not name:
        raise click.ClickException("Give --name: the id of the new experiment.")
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
        given = (
            stories_from_file(_read(stories), stories.name, need_text=False) if stories else None
        )
    except (RatingImportError, InstrumentError) as error:
        raise click.ClickException(str(error)) from error
    origin = {
        "format": fmt,
        "file": file.name,
        **({"stories": stories.name} if stories else {}),
        **({"questions": questions.name} if questions else {}),
        **({"rater_ids": rater_ids} if rater_ids == "positions" else {}),
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
    if summary.without_text:
        click.echo(_without_text_note(summary.without_text, given is not None))
    if summary.links:
        click.echo(f"{summary.links} stories are stored as a link only (their text is not).")


def _without_text_note(story_ids: tuple[str, ...], stories_given: bool) -> str:
    """The sentence that names the imported stories stored without a text (a note, not a
    refusal: the judgements are data whether or not the story's text was released)."""
    where = "empty in --stories, or not in it" if stories_given else "no --stories given"
    return (
        f"{len(story_ids)} stories have no text stored ({where}): {', '.join(story_ids)}. "
        "Their judgements are imported and analysed all the same."
    )


def _add_judge(
    ctx: click.Context,
    file: Path,
    fmt: str,
    into: str | None,
    judge: str | None,
    unused: tuple[object, ...],
) -> None:
    """``import-ratings FILE --into EXPERIMENT --judge NAME``: FILE's verdicts (``ttcw-llm``,
    or ``long`` read with the experiment's instrument) added as the judge panel NAME."""
    if not into:
        raise click.ClickException(
            f"--format {fmt} adds a judge to an experiment: give --into EXPERIMENT (a stored "
            "rating experiment) and --judge NAME."
        )
    if not judge:
        raise click.ClickException("--into adds a judge's verdicts: give --judge NAME.")
    if fmt == "ttcw" or any(option is not None for option in unused):
        raise click.ClickException(
            "--into and --judge take --format ttcw-llm or long, and no --name, --instrument, "
            "--questions or --stories (the experiment has its own)."
        )
    db = open_or_create(ctx)
    try:
        instrument, stories = rating_design(db, into)
        text = _read(file)
        if fmt == "ttcw-llm":
            if instrument.id != TTCW.id:
                raise RatingImportError(
                    f"'{into}' uses {instrument.name}, not TTCW: --format ttcw-llm holds "
                    "TTCW verdicts; use --format long."
                )
            judgements = ttcw_llm_judgements(text, file.name, judge, stories, into)
        else:
            judgements = long_judgements(text, file.name, instrument)
        added = add_judge(db, into, judge, judgements, {"format": fmt, "file": file.name})
    except (RatingImportError, InstrumentError) as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    click.echo(
        f"Added judge '{added.judge}' to '{added.experiment}': {added.verdicts:,} verdicts "
        f"about {added.stories} stories."
    )
    if added.unparsed:
        click.echo(
            f"{added.unparsed} could not be read as Yes or No: stored without a value (the "
            "response kept as rationale) and counted, not taken as No, by analyze."
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


@click.command("generate-stories")
@click.argument("prompts", type=FILE)
@click.option(
    "--model",
    "models",
    multiple=True,
    required=True,
    help="A model card's name (models/NAME.toml), once per system; sampled as its card says.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--per-prompt", type=click.IntRange(1, 50), default=1, show_default=True)
@click.option("--sentences", type=click.IntRange(1, 30), default=5, show_default=True)
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True)
@click.option(
    "--tolerance",
    type=click.IntRange(1),
    default=200,
    show_default=True,
    help="With targets: a story is long enough when it is fewer than this many words off.",
)
@click.option(
    "--max-rounds",
    type=click.IntRange(1, 50),
    default=5,
    show_default=True,
    help="With targets: the most model calls a story may take (the first included).",
)
@click.pass_context
def generate_stories_command(
    ctx: click.Context,
    prompts: Path,
    models: tuple[str, ...],
    out: Path,
    per_prompt: int,
    sentences: int,
    seed: int,
    tolerance: int,
    max_rounds: int,
) -> None:
    """Let each model write stories from the PROMPTS file, with the same seeds for every
    model, into a JSON Lines file of stories for a rating study ([stories] file = …), each
    with its model, version, sampling and seeds. A text file gives one opening per line,
    continued sentence by sentence; a CSV or JSON Lines file gives a prompt per row, and rows
    with a reference story or target_words are plots written to that length (TTCW §5.1)."""
    app = get_app(ctx)
    cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    unknown = [name for name in models if name not in cards]
    if unknown:
        raise click.ClickException(
            f"Unknown model card(s) {', '.join(unknown)}: use one of {', '.join(sorted(cards))}."
        )
    openings, plots = _prompts(prompts)
    _check_length_options(ctx, plots)
    backends = {
        name: make_backend(cards[name], Path(app.config["MODEL_CACHE"])) for name in set(models)
    }
    for name, backend in backends.items():
        click.echo(f"Loading {name}…", err=True)
        backend.load(log=lambda line: click.echo(line, err=True))
    systems = [System(name, cards[name], cards[name].sampling) for name in dict.fromkeys(models)]
    log = lambda line: click.echo(line, err=True)  # noqa: E731
    try:
        if plots is None:
            stories = generate_stories(systems, backends, openings, stories_per_prompt=per_prompt,
                                       sentences=sentences, seed=seed, log=log)  # fmt: skip
        else:
            control = LengthControl(tolerance=tolerance, max_rounds=max_rounds)
            stories = generate_stories_to_length(
                systems, backends, plots, control, stories_per_prompt=per_prompt, seed=seed, log=log
            )
    except GenerationFailed as error:
        raise click.ClickException(str(error)) from error
    out.write_text(
        "".join(
            json.dumps(
                {"story_id": s.story_id, "source": s.source, "title": s.title, "text": s.text,
                 "origin": s.origin},
                ensure_ascii=False,
            )
            + "\n"
            for s in stories
        ),
        encoding="utf-8",
    )  # fmt: skip
    click.echo(f"Wrote {len(stories)} stories to {out}." + _flagged(stories, tolerance))


def _prompts(path: Path) -> tuple[list[str], list[PlotPrompt] | None]:
    """The openings of a text file (one a line), or the rows of a CSV or JSON Lines file:
    their plots with targets (:func:`plot_prompts`), else their prompts as openings."""
    try:
        text = _read(path)
        if path.suffix.lower() not in (".csv", ".jsonl", ".ndjson", ".json"):
            openings = [line.strip() for line in text.splitlines() if line.strip()]
            plots = None
        else:
            records = list(read_records(text, path.name))
            plots = plot_prompts(records, path.name)
            openings = [str(record.get("prompt") or "").strip() for _, record in records]
    except (RatingImportError, LengthError) as error:
        raise click.ClickException(str(error)) from None
    if plots is None and not all(openings):
        raise click.ClickException(f"{path.name}: every row needs a prompt (the opening).")
    if not openings:
        raise click.ClickException(f"{path.name} has no prompt: write one opening per line.")
    return openings, plots


def _check_length_options(ctx: click.Context, plots: list[PlotPrompt] | None) -> None:
    """Options that mean nothing for these prompts are refused, not silently ignored."""

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT

    if plots is None and (given("tolerance") or given("max_rounds")):
        raise click.ClickException(
            "--tolerance and --max-rounds need a prompt file whose rows give a reference story "
            "or target_words (CSV or JSON Lines): without a target the openings are continued "
            "--sentences sentences."
        )
    if plots is not None and given("sentences"):
        raise click.ClickException(
            "--sentences is for openings: rows with a target are written whole and lengthened "
            "to it (--tolerance, --max-rounds)."
        )


def _flagged(stories: list[StoryRecord], tolerance: int) -> str:
    """The sentence that names the stories kept outside the tolerance ('' when none)."""
    missed = [
        s for s in stories if not s.origin.get("length_control", {}).get("within_tolerance", True)
    ]
    if not missed:
        return ""
    listed = ", ".join(
        f"{s.story_id} ({s.origin['length_control']['words']} words of "
        f"{s.origin['length_control']['target_words']}, {s.origin['length_control']['rounds']} "
        "rounds)"
        for s in missed
    )
    are = "story is" if len(missed) == 1 else "stories are"
    return (
        f" {len(missed)} {are} not within {tolerance} words of its target: {listed}; "
        "kept and flagged (origin.length_control.within_tolerance is false)."
    )
