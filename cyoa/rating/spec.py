"""A rating experiment's spec (TOML or JSON), read and checked: what a researcher writes to
run a rating study with people.

```toml
id = "aiss-pilot"
title = "Short stories"
kind = "rating"
instrument = "aiss-v1"          # or "ttcw", "fei", a custom spec's path, or a table
raters_per_story = 3
stories_per_rater = 2
consent = "..."                 # shown before starting; required
instructions = "..."            # shown before the first story; required
completion_url = "https://app.prolific.com/submissions/complete?cc={code}"   # optional
completion_code = "C1ABC2XY"    # optional: one code for every rater (Prolific's study code)
dropout_minutes = 60            # an unfinished story's place is freed after this long
language = "en"                 # the participant pages' language: "en", "es" or "ar"
languages = ["en", "es"]        # optional: the browser's Accept-Language picks among these
first_answer_minutes = 15       # ... or after this long, if the rater has answered nothing yet

[stories]
file = "stories.jsonl"          # story_id, source, title, text (relative to the spec)
links = false                   # true: a story whose text is only a URL is shown as a link
# or, a co-writing experiment's finished stories, labelled by their pair of systems:
# from = "cowriting"
# experiment = "short-story-1"

[questions]                     # FEI only: {story_id, question_id, kind, text} per line
file = "questions.jsonl"

[[corrupt]]                     # corrupted controls (FEI §5), each its own source
operation = "shuffle_span"      # FEI §5.2; or swap_antonyms (§5.1); stronger: shuffle_sentences,
                                # swap_sentences, negate, swap_adjectives
seed = 1
fraction = 1.0                  # the share of the stories copied
```

Every error names the spec and the field, and says what to write instead. An instrument
that lacks an item, label or instruction in one of the study's languages is refused with a
sentence naming them (:func:`cyoa.rating.instruments.translation.translation_problem`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.languages import SOURCE_LANGUAGE, study_languages
from cyoa.rating.importing import (
    RatingImportError,
    fei_questions,
    read_records,
    stories_from_file,
)
from cyoa.rating.instruments import (
    FeiQuestion,
    Instrument,
    InstrumentError,
    fei_instrument,
    instrument_from_spec,
)
from cyoa.rating.instruments import load_instrument as load_named_instrument
from cyoa.rating.instruments.translation import translation_problem
from cyoa.rating.quality import QualitySpecError, quality_spec
from cyoa.rating.stories import StoryRecord
from cyoa.rating.stories.corrupt import CorruptionError, corrupt
from cyoa.rating.stories.cowriting import FROM_COWRITING, cowriting_stories
from cyoa.store import RESERVED_IDS
from cyoa.web.completion import completion_url_problem, study_code_problem

ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
RANGES = {
    "raters_per_story": (1, 100),
    "stories_per_rater": (1, 200),
    "dropout_minutes": (1, 7 * 24 * 60),
    "first_answer_minutes": (1, 7 * 24 * 60),
}
DEFAULTS = {
    "raters_per_story": 3,
    "stories_per_rater": 1,
    "dropout_minutes": 60,
    "first_answer_minutes": 15,
}
TEXT_MAX_CHARS = 20_000
KNOWN = {
    "id", "title", "kind", "instrument", "raters_per_story", "stories_per_rater", "consent",
    "instructions", "completion_url", "completion_code", "dropout_minutes",
    "first_answer_minutes", "stories", "questions", "attention_checks", "exclusions", "corrupt",
    "language", "languages",
}  # fmt: skip


class RatingSpecError(ValueError):
    """A spec that cannot be used; the message names the spec and the field."""


@dataclass(frozen=True)
class RatingSpec:
    """A checked rating spec, with its stories and instrument loaded."""

    id: str
    title: str
    instrument: Instrument
    stories: tuple[StoryRecord, ...]
    raters_per_story: int
    stories_per_rater: int
    consent: str
    instructions: str
    completion_url: str
    dropout_minutes: int
    first_answer_minutes: int
    show_links: bool
    # The participant pages' language (BCP 47), and every one the browser may pick among.
    language: str = SOURCE_LANGUAGE
    languages: tuple[str, ...] = (SOURCE_LANGUAGE,)
    source: dict[str, Any] = field(default_factory=dict)


def _int_in_range(raw: dict[str, Any], name: str, where: str) -> int:
    low, high = RANGES[name]
    value = raw.get(name, DEFAULTS[name])
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and (math.isnan(value) or not value.is_integer()))
    ):
        raise RatingSpecError(f"{where}: {name} must be a whole number from {low} to {high}.")
    if not low <= value <= high:
        raise RatingSpecError(f"{where}: {name} must be from {low} to {high}, not {value}.")
    return int(value)


def _text(raw: dict[str, Any], name: str, where: str, required: bool) -> str:
    value = raw.get(name, "")
    if not isinstance(value, str):
        raise RatingSpecError(f"{where}: {name} must be text.")
    value = value.strip()
    if required and not value:
        raise RatingSpecError(f"{where}: {name} is empty; write what participants should read.")
    if len(value) > TEXT_MAX_CHARS:
        raise RatingSpecError(f"{where}: {name} is longer than {TEXT_MAX_CHARS:,} characters.")
    return value


def _file(table: Any, name: str, where: str, base: Path) -> Path:
    if not isinstance(table, dict) or not isinstance(table.get("file"), str):
        raise RatingSpecError(f'{where}: [{name}] needs file = "PATH" (relative to the spec).')
    path = Path(table["file"])
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise RatingSpecError(f"{where}: [{name}] file {table['file']!r} does not exist.")
    return path


def _instrument(raw: dict[str, Any], where: str, base: Path) -> Instrument:
    chosen = raw.get("instrument")
    if isinstance(chosen, dict):
        return instrument_from_spec(chosen, f"{where} [instrument]")
    if not isinstance(chosen, str) or not chosen:
        raise RatingSpecError(
            f'{where}: instrument must be "aiss-v1", "ttcw", "fei", a custom spec\'s path or '
            "an [instrument] table."
        )
    if chosen == "fei":
        path = _file(raw.get("questions"), "questions", where, base)
        return fei_instrument(fei_questions(path.read_text(encoding="utf-8"), path.name))
    if chosen.endswith(".toml") and not Path(chosen).is_absolute():
        chosen = str(base / chosen)
    return load_named_instrument(chosen)


def parse_rating_spec(raw: Any, where: str, base: Path, db: Db | None = None) -> RatingSpec:
    """The checked spec ``raw`` (a parsed TOML or JSON document) whose relative file names
    are relative to ``base``; ``db`` holds the co-writing experiment a ``[stories]`` table
    with ``from = "cowriting"`` names. :class:`RatingSpecError` naming ``where`` and the
    field."""
    if not isinstance(raw, dict):
        raise RatingSpecError(f"{where}: a spec is a table of fields.")
    unknown = sorted(set(raw) - KNOWN)
    if unknown:
        raise RatingSpecError(f"{where}: unknown field(s) {', '.join(unknown)}.")
    if raw.get("kind") != "rating":
        raise RatingSpecError(f'{where}: kind must be "rating" for a rating experiment.')
    exp_id = raw.get("id")
    if not isinstance(exp_id, str) or not ID.fullmatch(exp_id):
        raise RatingSpecError(
            f"{where}: id must be lowercase letters, digits, - and _ (at most 64, starting "
            "with a letter or digit)."
        )
    if exp_id in RESERVED_IDS:
        raise RatingSpecError(f"{where}: id '{exp_id}' names a page of the app; choose another.")
    try:
        languages = study_languages(raw)
    except ValueError as error:
        raise RatingSpecError(f"{where}: {error}") from None
    stories_table = raw.get("stories")
    if not isinstance(stories_table, dict):
        raise RatingSpecError(f'{where}: [stories] needs file = "PATH" or from = "cowriting".')
    show_links = bool(stories_table.get("links", False))
    try:
        instrument = _instrument(raw, where, base)
    except (InstrumentError, RatingImportError) as error:
        raise RatingSpecError(f"{where}: {error}") from None
    untranslated = translation_problem(instrument, languages.allowed)
    if untranslated:
        raise RatingSpecError(f"{where}: {untranslated}")
    records = _stories(stories_table, where, base, db)
    links = [story.story_id for story in records if not story.text]
    if links and not show_links:
        raise RatingSpecError(
            f"{where}: {len(links)} stories have no text, only a link (e.g. {links[0]!r}); "
            "remove them, or set links = true in [stories] to show them as links."
        )
    if instrument.id == "fei":
        _questions_about(instrument, {story.story_id for story in records}, where)
    copies = _corrupted(raw.get("corrupt", []), records, where)
    stories_per_rater = _int_in_range(raw, "stories_per_rater", where)
    _check_stories_per_rater(stories_per_rater, len(records), bool(copies), where)
    records = [*records, *copies]
    if instrument.id == "fei" and copies:
        instrument = _fei_with_copies(instrument, copies)
    try:
        quality_spec(raw, where, instrument, {story.story_id for story in records})
    except QualitySpecError as error:
        raise RatingSpecError(str(error)) from None
    completion_url = _text(raw, "completion_url", where, required=False)
    if completion_url and not completion_url.startswith(("https://", "http://")):
        raise RatingSpecError(f"{where}: completion_url must be a web address (https://…).")
    if "completion_code" in raw and study_code_problem(raw["completion_code"]):
        raise RatingSpecError(f"{where}: {study_code_problem(raw['completion_code'])}")
    problem = completion_url_problem(completion_url, raw.get("completion_code", ""))
    if problem:
        raise RatingSpecError(f"{where}: {problem}")
    return RatingSpec(
        id=exp_id,
        title=_text(raw, "title", where, required=True),
        instrument=instrument,
        stories=tuple(records),
        raters_per_story=_int_in_range(raw, "raters_per_story", where),
        stories_per_rater=stories_per_rater,
        consent=_text(raw, "consent", where, required=True),
        instructions=_text(raw, "instructions", where, required=True),
        completion_url=completion_url,
        dropout_minutes=_int_in_range(raw, "dropout_minutes", where),
        first_answer_minutes=_int_in_range(raw, "first_answer_minutes", where),
        show_links=show_links,
        language=languages.default,
        languages=languages.allowed,
        source=raw,
    )


def _questions_about(instrument: Instrument, story_ids: set[str], where: str) -> None:
    """Refuse an FEI question about a story the study does not have: no rater would see it,
    and its absence would look like a question nobody answered."""
    for item in instrument.items:
        if item.story_id not in story_ids:
            raise RatingSpecError(
                f"{where}: question {item.id!r} is about story {item.story_id!r}, which is not "
                "among the stories; fix its story_id or remove it."
            )


def _check_stories_per_rater(wanted: int, stories: int, copies: bool, where: str) -> None:
    """A rater reads each story at most once, and one of a story and its corrupted copies
    (:mod:`cyoa.rating.assignment`): more stories per rater than that could never be given."""
    if wanted <= stories:
        return
    copied = " (a rater reads one of a story and its copies)" if copies else ""
    raise RatingSpecError(
        f"{where}: stories_per_rater is {wanted}, but the study has {stories} stories{copied}: "
        f"set it to {stories} or fewer, or add stories."
    )


def _corrupted(tables: Any, stories: list[StoryRecord], where: str) -> list[StoryRecord]:
    """The corrupted copies the spec's ``[[corrupt]]`` tables ask for."""
    if not isinstance(tables, list):
        raise RatingSpecError(f"{where}: corrupt must be a list of [[corrupt]] tables.")
    copies: list[StoryRecord] = []
    for number, table in enumerate(tables, start=1):
        name = f"{where}: [[corrupt]] number {number}"
        if not isinstance(table, dict) or not isinstance(table.get("operation"), str):
            raise RatingSpecError(f'{name} needs operation = "NAME".')
        seed, fraction = table.get("seed", 0), table.get("fraction", 1.0)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
            raise RatingSpecError(f"{name}: seed must be a whole number from 0 to 2^32 − 1.")
        if isinstance(fraction, bool) or not isinstance(fraction, int | float):
            raise RatingSpecError(f"{name}: fraction must be a number in (0, 1].")
        try:
            copies += corrupt(stories, table["operation"], seed, float(fraction))
        except CorruptionError as error:
            raise RatingSpecError(f"{name}: {error}") from None
    return copies


def _fei_with_copies(instrument: Instrument, copies: list[StoryRecord]) -> Instrument:
    """The FEI instrument with each question of an original story asked again about each of
    its corrupted copies (id ``"<question>@<copy>"``), as FEI §5 asks the same questions of
    corrupted stories."""
    questions = [
        FeiQuestion(item.story_id, item.id, item.fei_kind, item.text) for item in instrument.items
    ]
    for copy in copies:
        questions += [
            FeiQuestion(copy.story_id, f"{item.id}@{copy.story_id}", item.fei_kind, item.text)
            for item in instrument.items
            if item.story_id == copy.family
        ]
    return fei_instrument(questions)


def _stories(table: dict[str, Any], where: str, base: Path, db: Db | None) -> list[StoryRecord]:
    """The stories the ``[stories]`` table names: a file's, or a co-writing experiment's
    finished stories."""
    if table.get("from", "file") == FROM_COWRITING:
        name = table.get("experiment")
        if not isinstance(name, str) or not name:
            raise RatingSpecError(f'{where}: [stories] from = "cowriting" needs experiment = "ID".')
        if db is None:
            raise RatingSpecError(f"{where}: co-writing stories need the study's database.")
        try:
            stories = cowriting_stories(db, name)
        except AnalysisError as error:
            raise RatingSpecError(f"{where}: [stories] {error}") from None
        if not stories:
            raise RatingSpecError(
                f"{where}: co-writing experiment {name!r} has no finished story yet."
            )
        return stories
    if table.get("from", "file") != "file":
        raise RatingSpecError(f'{where}: [stories] from must be "file" or "cowriting".')
    path = _file(table, "stories", where, base)
    text = path.read_text(encoding="utf-8")
    try:
        read = stories_from_file(text, path.name)
    except RatingImportError as error:
        raise RatingSpecError(f"{where}: {error}") from None
    # A story's own origin (generate-stories writes the model, version, sampling and seeds)
    # is kept beside the file it came from.
    origins = {
        str(record.get("story_id") or record.get("id")).strip(): record["origin"]
        for _, record in read_records(text, path.name)
        if isinstance(record.get("origin"), dict)
    }
    return [
        StoryRecord.from_story(story, {**origins.get(story.story_id, {}), "file": table["file"]})
        for story in read
    ]
