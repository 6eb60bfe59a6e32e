"""Reading rating data from files: judgements, stories and FEI questions (pure).

Two layouts of judgements (``python -m cyoa import-ratings``):

- ``ttcw``: the released TTCW expert judgements (salesforce/creativity_eval,
  ``Art_or_Artifice/annotations/ttcw_annotations.json``; Chakrabarty et al., CHI 2024): a
  JSON list of objects with ``story_id`` (``"<n>_<source>"``: the source is the part after
  the first underscore), ``expert_idx``, ``ttcw_idx`` (1–14), ``binary_verdict``
  (``"Yes"``/``"No"``) and ``explanation`` (the expert's rationale).
- ``long``: one judgement per row, CSV or JSON Lines (or a JSON list), with the columns
  ``story_id, source, rater_id, item, value`` and optionally ``rationale``; values are read
  by the instrument (:meth:`~cyoa.rating.instruments.types.Instrument.parse_value`).

Every check runs before anything is stored, and a bad row stops the import with a
:class:`RatingImportError` naming the file, the line and the field. Files are read as
spreadsheets save them: a UTF-8 byte-order mark (Excel's "CSV UTF-8") is skipped, a CSV
field may hold a long story (up to :data:`FIELD_MAX_CHARS`, not csv's default 131,072), and
JSON's ``NaN`` (what Python's ``json.dumps`` writes for a missing value of a pandas table,
``{"title": NaN}``) is read as missing, like ``null``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from cyoa.rating.instruments import TTCW, FeiQuestion, Instrument, InstrumentError
from cyoa.rating.instruments.fei import fei_kind

LONG_COLUMNS = ("story_id", "source", "rater_id", "item", "value")
QUESTION_FIELDS = ("story_id", "question_id", "kind", "text")
_URL = re.compile(r"^https?://\S+$")
# One word that starts as a link does (``javascript:…``, ``data:…``): meant as a link, but
# only web addresses are shown as links.
_OTHER_LINK = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
# The longest CSV field read, in characters: a long story fits (a novel is about 500,000);
# a field longer than this is a broken file, refused with a sentence.
FIELD_MAX_CHARS = 1_000_000


class RatingImportError(ValueError):
    """A file that cannot be imported; the message names the file, line and field."""


@dataclass(frozen=True)
class Judgement:
    """One rater's answer to one item about one story, as stored: ``value`` a number for
    scored items (None for text), ``text`` the answer of a text item, ``rationale`` the
    rater's explanation where one was given."""

    story_id: str
    source: str
    rater_id: str
    item_id: str
    value: float | None
    text: str | None
    rationale: str | None


@dataclass(frozen=True)
class Story:
    """A story to rate: ``text`` its full text, or ``url`` where it can be read (a story
    whose text may not be redistributed)."""

    story_id: str
    source: str
    title: str
    text: str
    url: str


def read_records(text: str, filename: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) for each record of a CSV (header line first), JSON Lines or
    JSON-list file, by the file's extension (``.csv``, ``.jsonl``/``.ndjson``, ``.json``;
    a ``.json`` file holding one object per line is read as JSON Lines). A leading byte-order
    mark is skipped, and JSON's ``NaN`` is read as ``None`` (missing). A CSV quote left open, a
    field over :data:`FIELD_MAX_CHARS`, JSON nested past Python's recursion limit, a number
    too long to read, an infinite number (``Infinity``, ``1e999``) and text that is not
    Unicode (a lone surrogate) are :class:`RatingImportError` naming the line."""
    text = text.removeprefix("\ufeff")
    suffix = Path(filename).suffix.lower()
    if suffix == ".csv":
        for number, record in _csv_records(text, filename):
            yield number, _checked_record(record, f"{filename}, line {number}")
        return
    if suffix == ".json" and text.lstrip().startswith("["):
        yield from enumerate(_json_list(text, filename), start=1)
        return
    if suffix not in (".jsonl", ".ndjson", ".json"):
        raise RatingImportError(
            f"{filename}: unknown file type {suffix or '(none)'}; use .csv, .jsonl or .json."
        )
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{filename}, line {number}"
        try:
            record = _json(line, where)
        except json.JSONDecodeError as error:
            raise RatingImportError(f"{where}: not valid JSON ({error.msg}).") from None
        if not isinstance(record, dict):
            raise RatingImportError(f"{where}: not a JSON object.")
        yield number, _checked_record(record, where)


def _csv_records(text: str, filename: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of a CSV file with the line each ends on; strict, so that a quote left
    open is an error naming the line it opens on, not rows silently merged into one field."""
    csv.field_size_limit(FIELD_MAX_CHARS)
    reader = csv.DictReader(io.StringIO(text), strict=True)
    started = 1  # the line the record being read starts on
    try:
        if reader.fieldnames is not None:  # reads the header
            started = reader.line_num + 1
        for record in reader:
            yield reader.line_num, {k.strip(): v for k, v in record.items() if k is not None}
            started = reader.line_num + 1
    except csv.Error as error:
        if "field larger than field limit" in str(error):
            raise RatingImportError(
                f"{filename}, line {started}: a field longer than {FIELD_MAX_CHARS:,} "
                "characters; is a quote left open, or a story pasted twice?"
            ) from None
        if "unexpected end of data" in str(error):
            raise RatingImportError(
                f"{filename}, line {started}: a quoted field opens there and never closes; "
                'close its quote (a quote inside a field is written twice: "").'
            ) from None
        raise RatingImportError(
            f"{filename}, line {reader.line_num}: not valid CSV ({error}); save it again as CSV."
        ) from None


def _missing_or_infinite(constant: str) -> float | None:
    """JSON's non-standard constants: ``NaN`` is how Python's ``json`` writes a missing value
    of a pandas table, so it reads as ``None``; ``Infinity`` and ``-Infinity`` stay infinite, for
    :func:`_checked_record` to refuse naming their field."""
    return None if constant == "NaN" else float(constant)


def _json(text: str, where: str) -> Any:
    """The JSON document ``text``, ``NaN`` read as ``None``; :class:`json.JSONDecodeError` for
    the caller to place, and a :class:`RatingImportError` naming ``where`` for JSON too deep
    or a number too long for Python to read."""
    try:
        return json.loads(text, parse_constant=_missing_or_infinite)
    except RecursionError:
        raise RatingImportError(
            f"{where}: the JSON is nested too deeply; a record is one object of fields."
        ) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # Python reads at most sys.get_int_max_str_digits() digits
        raise RatingImportError(
            f"{where}: a number with more than {sys.get_int_max_str_digits():,} digits; "
            "write it as text (in quotes) or shorten it."
        ) from None


def _checked_record(record: dict[str, Any], where: str) -> dict[str, Any]:
    """``record`` if all its text is Unicode and all its numbers finite. JSON's ``\\ud800``
    writes half a character (a lone surrogate) that nothing can store or show, and
    ``Infinity`` (or ``1e999``) is no rating, title or id: both are refused naming the field."""
    for key, value in record.items():
        name = key if is_unicode(key) else ascii(key)
        pending = [key, value]
        while pending:
            item = pending.pop()
            if isinstance(item, dict):
                pending.extend([*item, *item.values()])
            elif isinstance(item, list):
                pending.extend(item)
            elif isinstance(item, str) and not is_unicode(item):
                raise RatingImportError(
                    f"{where}, field '{name}' holds a lone surrogate (half of a character, "
                    f"{ascii(item[:40])}); write the character itself."
                )
            elif isinstance(item, float) and math.isinf(item):
                raise RatingImportError(
                    f"{where}, field '{name}' holds an infinite number ({item}); write a "
                    "finite number, or null (or NaN) for a missing value."
                )
    return record


def is_unicode(text: str) -> bool:
    """Whether ``text`` can be stored and shown: it holds no lone surrogate."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _json_list(text: str, filename: str) -> list[dict[str, Any]]:
    """The objects of a file holding one JSON list of objects."""
    try:
        records = _json(text.removeprefix("\ufeff"), filename)
    except json.JSONDecodeError as error:
        raise RatingImportError(
            f"{filename}, line {error.lineno}: not valid JSON ({error.msg})."
        ) from None
    if not isinstance(records, list):
        raise RatingImportError(f"{filename}: the file must hold a JSON list of objects.")
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise RatingImportError(f"{filename}, record {number}: not a JSON object.")
        _checked_record(record, f"{filename}, record {number}")
    return records


def _field(record: dict[str, Any], name: str, where: str) -> str:
    value = record.get(name)
    if value is None or str(value).strip() == "":
        raise RatingImportError(f"{where}: the field '{name}' is missing or empty.")
    return str(value).strip()


def ttcw_judgements(text: str, filename: str) -> list[Judgement]:
    """The judgements of a released TTCW annotation file (see the module docstring)."""
    judgements = []
    for number, record in enumerate(_json_list(text, filename), start=1):
        where = f"{filename}, record {number}"
        story_id = _field(record, "story_id", where)
        _, underscore, source = story_id.partition("_")
        if not underscore or not source:
            raise RatingImportError(
                f"{where}: story_id {story_id!r} is not '<n>_<source>' (e.g. '0_GPT4')."
            )
        try:
            test = int(_field(record, "ttcw_idx", where))
        except ValueError:
            raise RatingImportError(
                f"{where}: ttcw_idx must be a whole number from 1 to 14."
            ) from None
        if not 1 <= test <= len(TTCW.items):
            raise RatingImportError(f"{where}: ttcw_idx {test} is not a TTCW test (1–14).")
        verdict = _field(record, "binary_verdict", where)
        if verdict not in ("Yes", "No"):
            raise RatingImportError(
                f"{where}: binary_verdict must be 'Yes' or 'No', not {verdict!r}."
            )
        explanation = str(record.get("explanation") or "").strip() or None
        judgements.append(
            Judgement(
                story_id=story_id,
                source=source,
                rater_id=f"expert-{_field(record, 'expert_idx', where)}",
                item_id=str(test),
                value=1.0 if verdict == "Yes" else 0.0,
                text=None,
                rationale=explanation,
            )
        )
    return _checked(judgements, filename)


def long_judgements(text: str, filename: str, instrument: Instrument) -> list[Judgement]:
    """The judgements of a long-format file, each value read by ``instrument``. For FEI the
    item is a question id, which must be one of that story's questions."""
    judgements = []
    lines: dict[tuple[str, str, str], int] = {}
    for number, record in read_records(text, filename):
        where = f"{filename}, line {number}"
        missing = [name for name in LONG_COLUMNS if name not in record]
        if missing:
            raise RatingImportError(
                f"{where}: missing column(s) {', '.join(missing)}; every row needs "
                f"{', '.join(LONG_COLUMNS)} (and may have rationale)."
            )
        story_id = _field(record, "story_id", where)
        item_id = item_for_story(instrument, _field(record, "item", where), story_id)
        try:
            item = instrument.item(item_id)
            raw = record.get("value")
            value = instrument.parse_value(item_id, "" if raw is None else raw)
        except InstrumentError as error:
            field = "item" if "has no item" in str(error) else "value"
            raise RatingImportError(f"{where}, field '{field}': {error}") from None
        if item.story_id is not None and item.story_id != story_id:
            raise RatingImportError(
                f"{where}, field 'item': question {item_id!r} is about story "
                f"{item.story_id!r}, not {story_id!r}."
            )
        rater_id = _field(record, "rater_id", where)
        key = (rater_id, story_id, item.id)
        if key in lines:
            raise RatingImportError(
                f"{where}: rater {rater_id!r} judged item {item.id!r} of story {story_id!r} "
                f"already on line {lines[key]}; keep one judgement per rater, story and item."
            )
        lines[key] = number
        rationale = str(record.get("rationale") or "").strip() or None
        judgements.append(
            Judgement(
                story_id=story_id,
                source=_field(record, "source", where),
                rater_id=rater_id,
                item_id=item.id,
                value=None if isinstance(value, str) else value,
                text=value if isinstance(value, str) else None,
                rationale=rationale,
            )
        )
    return _checked(judgements, filename)


def _checked(judgements: list[Judgement], filename: str) -> list[Judgement]:
    """``judgements`` if they hold at least one, with one source per story and at most one
    judgement per rater × story × item."""
    if not judgements:
        raise RatingImportError(f"{filename}: no judgements found.")
    sources: dict[str, str] = {}
    seen: set[tuple[str, str, str]] = set()
    for judgement in judgements:
        known = sources.setdefault(judgement.story_id, judgement.source)
        if known != judgement.source:
            raise RatingImportError(
                f"{filename}: story {judgement.story_id!r} is given two sources, {known!r} "
                f"and {judgement.source!r}; a story has one source."
            )
        key = (judgement.rater_id, judgement.story_id, judgement.item_id)
        if key in seen:
            raise RatingImportError(
                f"{filename}: rater {key[0]!r} judged item {key[2]!r} of story {key[1]!r} "
                "twice; keep one judgement per rater, story and item."
            )
        seen.add(key)
    return judgements


def fei_questions(text: str, filename: str) -> list[FeiQuestion]:
    """The FEI questions of a JSON Lines (or CSV / JSON list) file of
    ``{story_id, question_id, kind, text}``, ``kind`` being ``transitional`` or ``world``.
    Questions are per story, so a question id may be used again for another story: such
    ids are made the study's own as ``"<question_id>@<story_id>"`` (as a corrupted copy's
    questions are named)."""
    questions = []
    seen: dict[tuple[str, str], int] = {}
    for number, record in read_records(text, filename):
        where = f"{filename}, line {number}"
        values = {name: _field(record, name, where) for name in QUESTION_FIELDS}
        key = (values["story_id"], values["question_id"])
        if key in seen:
            raise RatingImportError(
                f"{where}: story {key[0]!r} has the question {key[1]!r} already on line "
                f"{seen[key]}; give each question of a story its own id."
            )
        seen[key] = number
        try:
            kind = fei_kind(values["kind"], values["question_id"])
        except InstrumentError as error:
            raise RatingImportError(f"{where}, field 'kind': {error}") from None
        questions.append(
            FeiQuestion(values["story_id"], values["question_id"], kind, values["text"])
        )
    if not questions:
        raise RatingImportError(f"{filename}: no questions found.")
    stories_of = Counter(question.question_id for question in questions)
    return [
        replace(q, question_id=f"{q.question_id}@{q.story_id}")
        if stories_of[q.question_id] > 1
        else q
        for q in questions
    ]


def item_for_story(instrument: Instrument, item_id: str, story_id: str) -> str:
    """The id of the instrument's item ``item_id`` as asked about ``story_id``: an FEI
    question id used for several stories is scoped by its story (:func:`fei_questions`)."""
    scoped = f"{item_id}@{story_id}"
    return scoped if any(item.id == scoped for item in instrument.items) else item_id


def stories_from_file(text: str, filename: str, *, need_text: bool = True) -> list[Story]:
    """The stories of a JSON list, JSON Lines or CSV file: ``story_id`` (or ``id``),
    ``source`` (else the part of a ``<n>_<source>`` id after the first underscore),
    ``title`` (or ``story_name``), ``text`` (or ``content``); a text that is only a URL is
    kept as the story's ``url`` (TTCW's New Yorker stories are links). A file without
    stories and a link that is not a web address (``javascript:…``) are refused.

    ``need_text``: raters will read these stories (a rating study), so a story with neither
    text nor link is refused. Without it (the stories of judgements collected elsewhere,
    as released data sets publish them with some texts empty), such a story is kept with
    an empty text, for the import to name
    (:attr:`cyoa.rating.experiment.ImportSummary.without_text`)."""
    stories = []
    seen: set[str] = set()
    for number, record in read_records(text, filename):
        where = f"{filename}, record {number}"
        story_id = str(record.get("story_id") or record.get("id") or "").strip()
        if not story_id:
            raise RatingImportError(f"{where}: the field 'story_id' (or 'id') is missing or empty.")
        if story_id in seen:
            raise RatingImportError(f"{where}: story {story_id!r} appears twice.")
        seen.add(story_id)
        source = str(record.get("source") or "").strip() or story_id.partition("_")[2]
        if not source:
            raise RatingImportError(f"{where}: the field 'source' is missing or empty.")
        body = str(record.get("text") or record.get("content") or "").strip()
        is_url = bool(_URL.match(body))
        url = body if is_url else str(record.get("url") or "").strip()
        if (url and not _URL.match(url)) or (not is_url and _OTHER_LINK.match(body)):
            raise RatingImportError(
                f"{where}: story {story_id!r}: a link must be a web address (https://…), "
                f"not {(url or body)[:60]!r}."
            )
        if need_text and not body and not url:
            raise RatingImportError(
                f"{where}: story {story_id!r} has neither text nor a link, and raters must "
                "read it; write its text (field 'text') or its web address, or leave it out."
            )
        stories.append(
            Story(
                story_id=story_id,
                source=source,
                title=str(record.get("title") or record.get("story_name") or "").strip(),
                text="" if is_url else body,
                url=url,
            )
        )
    if not stories:
        raise RatingImportError(
            f"{filename} has no stories: write one story per line (JSON Lines), per row "
            "after the header (CSV), or per object of a JSON list."
        )
    return stories
