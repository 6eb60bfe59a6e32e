"""The layout of the original CYOA evaluation script, in both directions.

``eval_script.py`` (Clark & Smith, 2021, https://github.com/eaclark07/cyoa) reads a
tab-separated file with ``pandas.read_table(path, index_col=0)``: one row per writer, the first
column an index (here ``writer``: the participant's id), then for rounds 1–5

- ``modelLinesN`` / ``baselineLinesN``: the two systems' suggestions ("Model" and "Baseline");
- ``userLinesN``: the writer's own line; ``userEditsN``: the chosen suggestion as edited;
- ``isModelAcceptedN``: the *text* ``true`` when the writer chose the model's suggestion,
  ``false`` otherwise (read as text: the script compares with the string ``"true"``);

then ``isModelAccepted`` (the five values joined by commas after a leading empty field: the
script's preference count reads ``value.split(",")[1:]``), and the Likert answers ``Q1``…
``Q5`` (1–5, empty when missing).

- :func:`export_cyoa_tsv` writes any stored experiment in this layout. "Model" is the
  experiment's *first* system and "Baseline" its *second* (the spec's ``systems`` order; for
  an experiment of more than two systems, one pair at a time, ordered the same way).
  Only complete stories are written (every round submitted), one row per writer in the order
  the sessions started; Q1, Q2, … are the spec's Likert items in order.
- :func:`import_tsv` loads such a file as a new experiment, recording for each writer the
  events the study would have recorded (``session_started``, then per round
  ``line_submitted``, two ``suggestion_completed``, ``suggestion_chosen``,
  ``turn_submitted``, then ``survey_submitted``), so that every table agrees with the events.
  The file does not say which suggestion was shown first: the model's is recorded in slot 1,
  and the spec says ``import.slot_order_recorded = false`` so that no position bias is
  reported. Seeds, sampling and timings are unknown (null); event times are the import's.

Exporting an imported experiment with ``exact=True`` gives back the same file (for a file in
this layout). By default the export neutralises text that a spreadsheet would run as a
formula, as the CSV exports do.
"""

from __future__ import annotations

import csv
import io
import re
import secrets
from collections import defaultdict
from dataclasses import dataclass

from cyoa import store
from cyoa.cowriting import flow
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.analysis.data import StudyData, load_study
from cyoa.cowriting.recording import SessionRecorder
from cyoa.cowriting.spec import LIKERT_LABELS
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.web.security import neutralize_cell

ROUND_GROUPS = ("modelLines", "baselineLines", "userLines", "userEdits", "isModelAccepted")
ACCEPTED_COLUMN = "isModelAccepted"
INDEX_COLUMN = "writer"
MODEL, BASELINE = "model", "baseline"
ID_SOURCE = "import-tsv"
_ROUND_COLUMN = re.compile(r"^(" + "|".join(ROUND_GROUPS) + r")([1-9][0-9]*)$")
_LIKERT_COLUMN = re.compile(r"^Q([1-9][0-9]*)$")
_LIKERT_VALUE = re.compile(r"^([1-5])(\.0*)?$")
_EXPERIMENT_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class WriterRow:
    """One writer's row of the layout. Tuples hold one entry per round (round 1 first);
    ``is_model_accepted`` holds the texts ``"true"``/``"false"``; ``likert`` holds Q1, Q2, …
    (``None`` when missing)."""

    writer: str
    model_lines: tuple[str, ...]
    baseline_lines: tuple[str, ...]
    user_lines: tuple[str, ...]
    user_edits: tuple[str, ...]
    is_model_accepted: tuple[str, ...]
    likert: tuple[int | None, ...]


@dataclass(frozen=True)
class ImportSummary:
    """What :func:`import_tsv` stored, and the file's columns it did not use."""

    experiment: str
    writers: int
    rounds: int
    ignored_columns: tuple[str, ...]


def header(rounds: int, likert_items: int) -> list[str]:
    """The column names for ``rounds`` rounds and ``likert_items`` Likert answers."""
    columns = [INDEX_COLUMN]
    for group in ROUND_GROUPS:
        columns += [f"{group}{n}" for n in range(1, rounds + 1)]
    columns.append(ACCEPTED_COLUMN)
    columns += [f"Q{n}" for n in range(1, likert_items + 1)]
    return columns


def write_cyoa_tsv(
    rows: list[WriterRow], rounds: int, likert_items: int, *, exact: bool = False
) -> str:
    """The rows as the script's tab-separated text (CSV quoting, as pandas reads it). A cell
    that a spreadsheet would run as a formula gets a leading ``'``
    (:func:`~cyoa.web.security.neutralize_cell`) unless ``exact``: the text exactly as stored,
    which the original script and :func:`import_tsv` need."""
    cell = str if exact else neutralize_cell
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t", lineterminator="\n")
    writer.writerow(header(rounds, likert_items))
    for row in rows:
        writer.writerow(
            cell(value)
            for value in [
                row.writer,
                *row.model_lines,
                *row.baseline_lines,
                *row.user_lines,
                *row.user_edits,
                *row.is_model_accepted,
                "," + ",".join(row.is_model_accepted),
                *("" if value is None else str(value) for value in row.likert),
            ]
        )
    return out.getvalue()


def _contiguous(numbers: list[int], what: str) -> int:
    if sorted(numbers) != list(range(1, len(numbers) + 1)):
        raise AnalysisError(f"The {what} columns must be numbered 1, 2, 3, … without gaps.")
    return len(numbers)


def read_cyoa_tsv(text: str) -> tuple[list[WriterRow], int, int, tuple[str, ...]]:
    """Parse the layout: ``(rows, rounds, likert items, ignored columns)``.

    The first column is the index (the writer's id) unless it is one of the layout's columns,
    as with ``index_col=0``; writers without an id are named ``row1``, ``row2``, …
    Raises :class:`AnalysisError` naming the line and column of the first problem.
    """
    records = [record for record in csv.reader(io.StringIO(text), delimiter="\t") if record]
    if not records:
        raise AnalysisError("The file is empty: expected a header line and one line per writer.")
    layout = _read_header(records[0])
    rows = []
    seen: set[str] = set()
    for line, record in enumerate(records[1:], start=2):
        if len(record) != len(records[0]):
            raise AnalysisError(
                f"Line {line} has {len(record)} fields but the header has {len(records[0])}: "
                "check for unquoted tabs or line breaks in the texts."
            )
        row = _writer_row(layout, line, record)
        if row.writer in seen:
            raise AnalysisError(f"Line {line}: the writer id {row.writer!r} appears twice.")
        seen.add(row.writer)
        rows.append(row)
    return rows, layout.rounds, layout.likert_count, layout.ignored


@dataclass(frozen=True)
class _Layout:
    """What a file's header says: whether its first column is the index, where each of the
    layout's columns is, how many rounds and Likert items it has, and which columns it has
    that the layout does not use."""

    has_index: bool
    position: dict[str, int]
    rounds: int
    likert_count: int
    ignored: tuple[str, ...]


def _read_header(names: list[str]) -> _Layout:
    """The layout of a file with these column names; :class:`AnalysisError` when a round
    group is missing or the groups do not have one column per round."""
    has_index = bool(names) and not (
        _ROUND_COLUMN.match(names[0])
        or _LIKERT_COLUMN.match(names[0])
        or names[0] == ACCEPTED_COLUMN
    )
    position = {name: i for i, name in enumerate(names) if not (has_index and i == 0)}
    groups: dict[str, list[int]] = defaultdict(list)
    likert: list[int] = []
    ignored = []
    for name in position:
        if match := _ROUND_COLUMN.match(name):
            groups[match.group(1)].append(int(match.group(2)))
        elif match := _LIKERT_COLUMN.match(name):
            likert.append(int(match.group(1)))
        elif name != ACCEPTED_COLUMN:
            ignored.append(name)
    missing = [group for group in ROUND_GROUPS if group not in groups]
    if missing:
        raise AnalysisError(
            f"The file lacks the columns {', '.join(g + '1…' for g in missing)}: it is not in "
            "the CYOA evaluation layout (modelLines, baselineLines, userLines, userEdits, "
            "isModelAccepted per round)."
        )
    rounds = _contiguous(groups["modelLines"], "modelLines")
    for group in ROUND_GROUPS:
        if _contiguous(groups[group], group) != rounds:
            raise AnalysisError(
                f"The file has {rounds} modelLines columns but {len(groups[group])} {group} "
                "columns: every group needs one column per round."
            )
    likert_count = _contiguous(likert, "Q") if likert else 0
    return _Layout(has_index, position, rounds, likert_count, tuple(ignored))


def _writer_row(layout: _Layout, line: int, record: list[str]) -> WriterRow:
    """One writer's line of the file (``line``, counting the header as 1) as a row;
    :class:`AnalysisError` when a cell is not what the layout expects."""

    def cells(group: str) -> tuple[str, ...]:
        return tuple(record[layout.position[f"{group}{n}"]] for n in range(1, layout.rounds + 1))

    accepted = cells("isModelAccepted")
    _check_accepted(layout, line, record, accepted)
    return WriterRow(
        writer=record[0] if layout.has_index and record[0] else f"row{line - 1}",
        model_lines=cells("modelLines"),
        baseline_lines=cells("baselineLines"),
        user_lines=cells("userLines"),
        user_edits=cells("userEdits"),
        is_model_accepted=accepted,
        likert=_likert_answers(layout, line, record),
    )


def _check_accepted(
    layout: _Layout, line: int, record: list[str], accepted: tuple[str, ...]
) -> None:
    """:class:`AnalysisError` unless each isModelAccepted cell is 'true' or 'false' and the
    joined isModelAccepted column, if there is one, says the same."""
    for n, value in enumerate(accepted, start=1):
        if value not in ("true", "false"):
            raise AnalysisError(
                f"Line {line}, isModelAccepted{n}: expected the text 'true' or 'false', got "
                f"{value!r} (the original script counts only 'true' as the model chosen)."
            )
    if ACCEPTED_COLUMN in layout.position:
        joined = record[layout.position[ACCEPTED_COLUMN]]
        if tuple(joined.split(",")[1:]) != accepted:
            raise AnalysisError(
                f"Line {line}: isModelAccepted ({joined!r}) "
                "disagrees with isModelAccepted1…: fix one of them."
            )


def _likert_answers(layout: _Layout, line: int, record: list[str]) -> tuple[int | None, ...]:
    """The writer's Likert answers Q1…, None for an empty cell; :class:`AnalysisError` for
    a cell that is no answer 1 to 5."""
    answers: list[int | None] = []
    for n in range(1, layout.likert_count + 1):
        value = record[layout.position[f"Q{n}"]].strip()
        if not value:
            answers.append(None)
        elif match := _LIKERT_VALUE.match(value):
            answers.append(int(match.group(1)))
        else:
            raise AnalysisError(
                f"Line {line}, Q{n}: expected a Likert answer 1 to 5 or an empty cell, "
                f"got {value!r}."
            )
    return tuple(answers)


def rows_from_study(data: StudyData) -> list[WriterRow]:
    """The writers of ``data`` whose story is complete (rounds 1 to ``rounds_per_story`` all
    submitted), as rows of the layout: Model = first system, Baseline = second. A suggestion
    that failed is an empty text."""
    model, baseline = data.systems
    rounds = data.rounds_per_story
    by_session = defaultdict(dict)
    for record in data.rounds:
        by_session[record.session_id][record.round] = record
    answers = {(a.session_id, a.item_id): a.value for a in data.survey if a.kind == "likert"}
    rows = []
    for sid, writer in data.writers.items():
        story = by_session[sid]
        if set(story) != set(range(1, rounds + 1)):
            continue
        ordered = [story[n] for n in range(1, rounds + 1)]
        rows.append(
            WriterRow(
                writer=writer,
                model_lines=tuple(r.suggestion_of(model) or "" for r in ordered),
                baseline_lines=tuple(r.suggestion_of(baseline) or "" for r in ordered),
                user_lines=tuple(r.writer_line for r in ordered),
                user_edits=tuple(r.final_text for r in ordered),
                is_model_accepted=tuple(
                    "true" if r.chosen_system == model else "false" for r in ordered
                ),
                likert=tuple(answers.get((sid, item)) for item in data.likert_items),
            )
        )
    return rows


def export_cyoa_tsv(
    db: Db, experiment: str, pair: tuple[str, str] | None = None, *, exact: bool = False
) -> str:
    """``experiment`` in the original script's layout (see the module docstring): the writers
    who compared ``pair`` (needed when the experiment has more than two systems), Model = the
    pair's system that comes first in the spec. Formula-like cells are neutralised unless
    ``exact`` (see :func:`write_cyoa_tsv`)."""
    data = load_study(db, experiment, pair, apply_exclusions=False)  # the data: every writer
    rows = rows_from_study(data)
    return write_cyoa_tsv(rows, data.rounds_per_story, len(data.likert_items), exact=exact)


def _import_spec(name: str, rounds: int, likert_count: int, source: str) -> dict:
    return {
        "id": name,
        "title": name,
        "rounds": rounds,
        "systems": [{"name": MODEL, "model": MODEL}, {"name": BASELINE, "model": BASELINE}],
        "survey": {
            "likert": [
                {"id": f"Q{n}", "text": f"Q{n} (imported; the statement is not in the file)"}
                for n in range(1, likert_count + 1)
            ],
            "open": [],
        },
        "import": {"format": "cyoa-tsv", "source": source, "slot_order_recorded": False},
    }


def import_tsv(db: Db, text: str, name: str, source: str = "") -> ImportSummary:
    """Store a file in the script's layout as the new experiment ``name`` (closed to writers).

    ``name``: lowercase letters, digits, ``-`` and ``_`` (as experiment ids). ``source``: the
    file name, kept in the spec. The whole file is checked before anything is written;
    raises :class:`AnalysisError` for a bad file or a name already in use.
    """
    if not _EXPERIMENT_ID.match(name):
        raise AnalysisError(
            f"'{name}' cannot be an experiment name: use lowercase letters, digits, '-' or '_' "
            "(at most 64 characters, starting with a letter or digit)."
        )
    rows, rounds, likert_count, ignored = read_cyoa_tsv(text)
    store.init_db(db)
    if store.get_experiment(db, name) is not None:
        raise AnalysisError(
            f"There is already an experiment '{name}' in this database: choose another --name."
        )
    spec = _import_spec(name, rounds, likert_count, source)
    store.upsert_experiment(db, name, name, spec)
    with store.write_transaction(db):
        db.update("experiments", name, {"status": "closed"})
    questions = {
        item["id"]: ("likert", item["text"], LIKERT_LABELS) for item in spec["survey"]["likert"]
    }
    for row in rows:
        _import_writer(db, name, rounds, row, questions)
    return ImportSummary(name, len(rows), len(rows) * rounds, ignored)


def _import_writer(
    db: Db,
    experiment: str,
    rounds: int,
    row: WriterRow,
    questions: dict[str, tuple[str, str, tuple[str, ...]]],
) -> None:
    session_id = secrets.token_hex(16)
    cowriting_store.create_session(
        db,
        session_id=session_id,
        exp_id=experiment,
        participant={"external_id": row.writer, "id_source": ID_SOURCE},
        pair=(MODEL, BASELINE),
        completion_code=f"IMPORT-{secrets.token_hex(8).upper()}",
        user_agent="",
        first_event={
            "experiment": experiment,
            "systems": [MODEL, BASELINE],
            "limits": {"rounds": rounds, "min_chars": None, "max_chars": None},
        },
    )
    session = cowriting_store.get_session(db, session_id)
    # The phase after each event comes from the study's own rules, as when writers write.
    record = SessionRecorder(db, session, flow.State(limits=flow.Limits(rounds=rounds)))

    with store.write_transaction(db):
        for index in range(rounds):
            number = index + 1
            texts = (row.model_lines[index], row.baseline_lines[index])
            record(
                "line_submitted",
                {
                    "round": number,
                    "text": row.user_lines[index],
                    "slot_systems": [MODEL, BASELINE],
                    "slot_models": [MODEL, BASELINE],
                    "seeds": [None, None],
                },
            )
            for slot, (system, text) in enumerate(
                zip((MODEL, BASELINE), texts, strict=True), start=1
            ):
                record(
                    "suggestion_completed",
                    {
                        "round": number,
                        "slot": slot,
                        "attempt": 1,
                        "system": system,
                        "model": system,
                        "model_version": None,
                        "weights_file": None,
                        "sampling": {},
                        "seed": None,
                        "text": text,
                        "raw_text": text,
                        "generation_seconds": None,
                        "first_token_seconds": None,
                        "token_count": None,
                        "one_suggestion_only": 0,
                    },
                )
            slot = 1 if row.is_model_accepted[index] == "true" else 2
            chosen = {"system": (MODEL, BASELINE)[slot - 1], "suggestion": texts[slot - 1]}
            chosen["model"] = chosen["system"]
            record("suggestion_chosen", {"round": number, "slot": slot, "switch": False}, chosen)
            record(
                "turn_submitted",
                {"round": number, "slot": slot, "text": row.user_edits[index]},
                chosen,
            )
        answers = {f"Q{n}": v for n, v in enumerate(row.likert, start=1) if v is not None}
        record("survey_submitted", answers, {"questions": questions})
