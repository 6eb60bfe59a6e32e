"""An experiment's data as files: pure functions from the database to bytes.

Tables (every column is described in docs/data-dictionary.md, "Exports"):

- ``preference``: one row per writer × submitted round (rounds still in progress are in
  ``events`` only): the writer's line, both suggestions (system, model, text, sampling,
  seed, generation time), the chosen one, the final text, the edit metrics of the chosen
  suggestion against the final text (:func:`cyoa.metrics.edit.edit_metrics`, USER variant
  ``cyoa-2021``) and the round's timestamps;
- ``sessions``: one row per writer's session, with its status (finished / dropped /
  in progress, see :mod:`cyoa.cowriting.research.progress`);
- ``events``: every recorded event, payload as JSON text;
- ``survey``: one row per answered survey item;
- ``process``: one row per writer × submitted round: how they wrote it, measured from the
  keystroke record (:func:`cyoa.cowriting.process.measures.round_measures`), and the
  writing-process flags of the round (:mod:`cyoa.cowriting.process.flags`).

Formats: the tables as CSV, JSON Lines or Parquet (:mod:`cyoa.web.tables`), the original
CYOA evaluation script's TSV (:func:`cyoa_tsv`) and a zip bundle of everything
(:func:`bundle`).
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from typing import Any

from cyoa import store
from cyoa.cowriting.analysis.data import (
    experiment_language,
    experiment_pairs,
    experiment_systems,
    load_study,
)
from cyoa.cowriting.analysis.tsv import export_cyoa_tsv
from cyoa.cowriting.process import flags as process_flags
from cyoa.cowriting.process.measures import round_measures, rounds_of
from cyoa.cowriting.process.operations import RecordMismatch
from cyoa.cowriting.process.store import load_operations
from cyoa.cowriting.research.card import evaluation_card
from cyoa.cowriting.research.progress import DROPOUT_MINUTES, seconds_between, session_status
from cyoa.cowriting.spec import Experiment
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.metrics.edit import edit_metrics_many
from cyoa.web.columns import Column
from cyoa.web.completion import shown_code
from cyoa.web.tables import (
    ExportError,
    data_dictionary,
    to_csv,
    to_parquet,
    write_table,
)

FORMATS = ("csv", "jsonl", "parquet", "cyoa-tsv", "bundle")


def _slot_columns(slot: int) -> list[Column]:
    s = f"slot {slot}"
    return [
        Column(f"slot{slot}_system", "string", f"system whose suggestion was shown in {s}"),
        Column(f"slot{slot}_model", "string", f"model card of that system ({s})"),
        Column(f"slot{slot}_model_version", "string", f"model card version ({s})"),
        Column(f"slot{slot}_text", "string", f"the suggestion shown in {s} (null if it failed)"),
        Column(f"slot{slot}_status", "string", f"'done' or 'failed' ({s})"),
        Column(
            f"slot{slot}_attempts",
            "int",
            f"generation attempts for {s} this round (every draw, the failed ones included)",
        ),
        Column(f"slot{slot}_sampling", "string", f"sampling settings as JSON ({s})"),
        Column(f"slot{slot}_seed", "int", f"sampling seed ({s})"),
        Column(
            f"slot{slot}_sent_settings",
            "string",
            f"sampling settings sent to the model server as JSON; null in-process ({s})",
        ),
        Column(
            f"slot{slot}_generation_seconds", "float", f"seconds to generate the suggestion ({s})"
        ),
        Column(f"slot{slot}_token_count", "int", f"tokens generated ({s})"),
        Column(
            f"slot{slot}_waited_seconds",
            "float",
            f"seconds the writer waited for the suggestion, from their request to its record ({s})",
        ),
    ]


EDIT_COLUMNS = (
    Column("edit_distance", "int", "Levenshtein distance, characters"),
    Column("edit_distance_norm", "float", "edit distance / length of the longer text (0–1)"),
    Column("jaccard", "float", "Jaccard similarity of word sets, percent"),
    Column("jaccard_normalized", "float", "Jaccard, lowercased and punctuation stripped, percent"),
    Column("user", "float", "USER (F, cyoa-2021 variant), percent"),
    Column("user_precision", "float", "USER precision, percent"),
    Column("user_recall", "float", "USER recall, percent"),
    Column("user_f", "float", "USER F, percent"),
)

PREFERENCE_COLUMNS: tuple[Column, ...] = (
    Column("experiment_id", "string", "experiment id"),
    Column("participant", "string", "the participant's id from the link (or anon:…)"),
    Column("participant_id", "int", "→ participants.id"),
    Column("session_id", "string", "→ sessions.id"),
    Column("system_a", "string", "first system of the writer's pair"),
    Column("system_b", "string", "second system of the writer's pair"),
    Column("round", "int", "round number, 1-based"),
    Column("writer_line", "string", "the writer's own line"),
    *_slot_columns(1),
    *_slot_columns(2),
    Column("one_suggestion_only", "bool", "true if one slot failed (no real choice)"),
    Column("chosen_slot", "int", "slot of the option the writer added (1 or 2)"),
    Column("chosen_system", "string", "system of that option"),
    Column("chosen_model", "string", "model card of that option"),
    Column("chosen_suggestion", "string", "that option as the model wrote it"),
    Column("final_text", "string", "what the writer added after editing"),
    Column("switches", "int", "switches between the options this round"),
    *(
        Column(c.name, c.type, f"{c.description}: chosen_suggestion vs final_text")
        for c in EDIT_COLUMNS
    ),
    Column("round_started_at", "string", "when the round began (server time, UTC)"),
    Column("line_submitted_at", "string", "when the writer's line was recorded"),
    Column("suggestions_ready_at", "string", "when the last suggestion settled"),
    Column("first_choice_at", "string", "the first choice of the round"),
    Column("turn_submitted_at", "string", "when the edited turn was added"),
    Column("round_seconds", "float", "seconds from round_started_at to turn_submitted_at"),
)

SESSION_COLUMNS: tuple[Column, ...] = (
    Column("experiment_id", "string", "experiment id"),
    Column("session_id", "string", "→ sessions.id"),
    Column("participant_id", "int", "→ participants.id"),
    Column("participant", "string", "the participant's id from the link (or anon:…)"),
    Column("id_source", "string", "PROLIFIC_PID, pid or anonymous"),
    Column("study_id", "string", "Prolific STUDY_ID from the link"),
    Column("platform_session_id", "string", "Prolific SESSION_ID from the link"),
    Column("system_a", "string", "first system of the writer's pair"),
    Column("system_b", "string", "second system of the writer's pair"),
    Column(
        "pair_probability",
        "float",
        "adaptive pairing: the probability the writer's pair was drawn with (null: balanced)",
    ),
    Column("phase", "string", "writing, suggesting, choosing, survey or done"),
    Column("status", "string", "finished, dropped or in_progress (at export time)"),
    Column("current_round", "int", "round the writer is in"),
    Column("rounds_submitted", "int", "rounds whose turn was added"),
    Column("completion_code", "string", "code shown at the end (to approve payment)"),
    Column("started_at", "string", "consent time (server time, UTC)"),
    Column("updated_at", "string", "last recorded action"),
    Column("finished_at", "string", "survey submission (null until done)"),
    Column("session_seconds", "float", "seconds from started_at to finished_at"),
    Column("user_agent", "string", "browser User-Agent (first 500 characters)"),
    Column(
        "language",
        "string",
        "BCP 47 code of the language the writer's pages were in (null: not recorded)",
    ),
)

EVENT_COLUMNS: tuple[Column, ...] = (
    Column("experiment_id", "string", "experiment id"),
    Column("session_id", "string", "→ sessions.id"),
    Column("participant", "string", "the participant's id from the link (or anon:…)"),
    Column("seq", "int", "event number within the session (1, 2, …)"),
    Column("type", "string", "event type (see the events table)"),
    Column("payload", "string", "event fields as JSON (see the events table)"),
    Column("server_time", "string", "when the server committed the event (UTC)"),
    Column("client_action_id", "string", "the browser's id for the action (null for server)"),
)

SURVEY_COLUMNS: tuple[Column, ...] = (
    Column("experiment_id", "string", "experiment id"),
    Column("session_id", "string", "→ sessions.id"),
    Column("participant", "string", "the participant's id from the link (or anon:…)"),
    Column("system_a", "string", "first system of the writer's pair"),
    Column("system_b", "string", "second system of the writer's pair"),
    Column("item_id", "string", "survey item id from the spec"),
    Column("kind", "string", "likert or open"),
    Column("question", "string", "the statement or question as shown"),
    Column("value", "int", "Likert answer 1–5 (null for open questions)"),
    Column("label", "string", "the Likert label of that answer"),
    Column("text", "string", "open answer (null for Likert items)"),
    Column("answered_at", "string", "server time (UTC)"),
)

PROCESS_COLUMNS: tuple[Column, ...] = (
    Column("experiment_id", "string", "experiment id"),
    Column("participant", "string", "the participant's id from the link (or anon:…)"),
    Column("session_id", "string", "→ sessions.id"),
    Column("round", "int", "round number, 1-based"),
    Column("chosen_slot", "int", "slot of the option the writer added (1 or 2)"),
    Column("chosen_system", "string", "system of that option"),
    Column("slot1_system", "string", "system shown in slot 1"),
    Column("slot2_system", "string", "system shown in slot 2"),
    Column(
        "recorded", "bool", "whether the round has a keystroke record (else every measure is null)"
    ),
    Column("record_problem", "string", "why the record could not be measured ('' if it could)"),
    Column("first_keystroke_ms", "int", "ms from the suggestions appearing to the first keystroke"),
    Column("slot1_visible_ms", "int", "ms the slot 1 suggestion was in the viewport"),
    Column("slot2_visible_ms", "int", "ms the slot 2 suggestion was in the viewport"),
    Column("slot1_focused_ms", "int", "ms the slot 1 suggestion had focus or the pointer"),
    Column("slot2_focused_ms", "int", "ms the slot 2 suggestion had focus or the pointer"),
    Column("focus_switches", "int", "changes of the focused suggestion between the slots"),
    Column("line_typed_chars", "int", "characters typed into the writer's own line"),
    Column("line_pasted_chars", "int", "characters pasted or dropped into the writer's line"),
    Column("edit_typed_chars", "int", "characters typed into the edit boxes"),
    Column("edit_pasted_chars", "int", "characters pasted or dropped into the edit boxes"),
    Column("other_chars", "int", "characters put in otherwise (undo, redo, IME, autocorrect)"),
    Column("suggestion_chars", "int", "characters of the chosen suggestion as shown"),
    Column("kept_chars", "int", "characters of the chosen suggestion surviving into the turn"),
    Column("kept_share", "float", "kept_chars / suggestion_chars (0–1)"),
    Column("revisions", "int", "operations that deleted something (both boxes)"),
    Column("deleted_chars", "int", "characters those operations deleted"),
    Column("pauses", "int", "inter-key intervals over 2 s within a box"),
    Column("pause_ms", "int", "total ms of those pauses"),
    Column("median_interkey_ms", "float", "median ms between text operations within a box"),
    Column("flags", "string", "the round's writing-process flags, each a sentence ('' if none)"),
)

TABLES: dict[str, tuple[Column, ...]] = {
    "preference": PREFERENCE_COLUMNS,
    "sessions": SESSION_COLUMNS,
    "events": EVENT_COLUMNS,
    "survey": SURVEY_COLUMNS,
    "process": PROCESS_COLUMNS,
}


# --- reading the tables ---------------------------------------------------------------


def shown_suggestions(db: Db, exp_id: str) -> dict[tuple[str, int, int], dict[str, Any]]:
    """Per (session, round, slot): the suggestion shown (last successful attempt, else the
    last failed one) and the number of attempts: the highest attempt number recorded, since
    only an attempt that ends a run of tries is a row (one drawn again because its text was
    too short, or retried after a fault, is counted by the number of the next)."""
    shown: dict[tuple[str, int, int], dict[str, Any]] = {}
    for row in db.query(
        "SELECT g.* FROM suggestions g JOIN sessions s ON s.id = g.session_id"
        " WHERE s.experiment_id = ? ORDER BY g.session_id, g.round, g.slot, g.attempt",
        [exp_id],
    ):
        key = (row["session_id"], row["round"], row["slot"])
        current = shown.get(key)
        if current is None or row["status"] == "done" or current["status"] != "done":
            shown[key] = {**row, "attempts": row["attempt"]}
        else:
            current["attempts"] = row["attempt"]
    return shown


def preference_rows(db: Db, exp_id: str) -> list[dict[str, Any]]:
    """The ``preference`` table: one row per writer × submitted round, in session order."""
    shown = shown_suggestions(db, exp_id)
    rows = []
    for r in db.query(
        "SELECT r.*, p.external_id AS participant, s.system_a, s.system_b FROM rounds r"
        " JOIN sessions s ON s.id = r.session_id JOIN participants p ON p.id = s.participant_id"
        " WHERE s.experiment_id = ? AND r.turn_submitted_at IS NOT NULL"
        " ORDER BY s.started_at, s.participant_id, r.round",
        [exp_id],
    ):
        row: dict[str, Any] = {
            "experiment_id": exp_id,
            "participant": r["participant"],
            "participant_id": r["participant_id"],
            "session_id": r["session_id"],
            "system_a": r["system_a"],
            "system_b": r["system_b"],
            "round": r["round"],
            "writer_line": r["writer_line"],
        }
        for slot in (1, 2):
            g = shown.get((r["session_id"], r["round"], slot), {})
            row.update(
                {
                    f"slot{slot}_system": r[f"slot{slot}_system"],
                    f"slot{slot}_model": r[f"slot{slot}_model"],
                    f"slot{slot}_model_version": g.get("model_version"),
                    f"slot{slot}_text": g.get("text") if g.get("status") == "done" else None,
                    f"slot{slot}_status": g.get("status"),
                    f"slot{slot}_attempts": g.get("attempts", 0),
                    f"slot{slot}_sampling": g.get("sampling"),
                    f"slot{slot}_seed": g.get("seed"),
                    f"slot{slot}_sent_settings": g.get("sent_settings"),
                    f"slot{slot}_generation_seconds": g.get("generation_seconds"),
                    f"slot{slot}_token_count": g.get("token_count"),
                    f"slot{slot}_waited_seconds": g.get("waited_seconds"),
                }
            )
        row.update(
            {
                "one_suggestion_only": bool(r["one_suggestion_only"]),
                "chosen_slot": r["chosen_slot"],
                "chosen_system": r["chosen_system"],
                "chosen_model": r["chosen_model"],
                "chosen_suggestion": r["chosen_suggestion"],
                "final_text": r["final_text"],
                "switches": r["switches"],
                "round_started_at": r["round_started_at"],
                "line_submitted_at": r["line_submitted_at"],
                "suggestions_ready_at": r["suggestions_ready_at"],
                "first_choice_at": r["first_choice_at"],
                "turn_submitted_at": r["turn_submitted_at"],
                "round_seconds": seconds_between(r["round_started_at"], r["turn_submitted_at"]),
            }
        )
        rows.append(row)
    scored = [r for r in rows if r["chosen_suggestion"] is not None and r["final_text"]]
    metrics = edit_metrics_many(
        [(r["chosen_suggestion"], r["final_text"]) for r in scored],
        language=experiment_language(db, exp_id),
    )
    for row, values in zip(scored, metrics, strict=True):
        row.update(values)
    for row in rows:
        for column in EDIT_COLUMNS:
            row.setdefault(column.name, None)
    return rows


def session_rows(
    db: Db,
    exp_id: str,
    now: datetime | None = None,
    dropout_minutes: float = DROPOUT_MINUTES,
) -> list[dict[str, Any]]:
    """The ``sessions`` table, with each session's status as of ``now`` and the completion
    code the writer is shown (the spec's study-wide one when it sets one)."""
    now = now or datetime.now(UTC)
    stored = store.get_experiment(db, exp_id)
    study_code = json.loads(stored["spec"]).get("completion_code", "") if stored else ""
    rows = []
    for s in db.query(
        "SELECT s.*, p.external_id AS participant, p.id_source, p.study_id,"
        " p.platform_session_id,"
        " (SELECT e.payload FROM events e WHERE e.session_id = s.id"
        "  AND e.type = 'session_started') AS started,"
        " (SELECT count(*) FROM rounds r WHERE r.session_id = s.id"
        "  AND r.turn_submitted_at IS NOT NULL) AS rounds_submitted"
        " FROM sessions s JOIN participants p ON p.id = s.participant_id"
        " WHERE s.experiment_id = ? ORDER BY s.started_at, s.participant_id",
        [exp_id],
    ):
        row = {c.name: s.get(c.name) for c in SESSION_COLUMNS}
        row["session_id"] = s["id"]
        row["completion_code"] = shown_code(study_code, s["completion_code"])
        row["status"] = session_status(s, now, dropout_minutes)
        row["session_seconds"] = seconds_between(s["started_at"], s["finished_at"])
        row["language"] = json.loads(s["started"] or "{}").get("language")
        rows.append(row)
    return rows


def event_rows(db: Db, exp_id: str) -> list[dict[str, Any]]:
    """The ``events`` table: every event of the experiment's sessions, in session order."""
    return [
        {"experiment_id": exp_id, **row}
        for row in db.query(
            "SELECT e.session_id, p.external_id AS participant, e.seq, e.type, e.payload,"
            " e.server_time, e.client_action_id FROM events e"
            " JOIN sessions s ON s.id = e.session_id"
            " JOIN participants p ON p.id = s.participant_id"
            " WHERE s.experiment_id = ? ORDER BY s.started_at, s.participant_id, e.seq",
            [exp_id],
        )
    ]


def survey_rows(db: Db, exp_id: str) -> list[dict[str, Any]]:
    """The ``survey`` table: one row per answered item."""
    return [
        {"experiment_id": exp_id, **row}
        for row in db.query(
            "SELECT a.session_id, p.external_id AS participant, s.system_a, s.system_b,"
            " a.item_id, a.kind, a.question, a.value, a.label, a.text, a.answered_at"
            " FROM survey_answers a JOIN sessions s ON s.id = a.session_id"
            " JOIN participants p ON p.id = s.participant_id"
            " WHERE s.experiment_id = ? ORDER BY s.started_at, s.participant_id, a.position",
            [exp_id],
        )
    ]


def _measured(ops: list[dict[str, Any]], suggestions: dict[int, str], chosen: int | None):
    """The ``process`` columns measured from one round's record (``recorded`` false and no
    measure when it has none; ``record_problem`` the sentence when it does not apply)."""
    if not ops:
        return {"recorded": False, "record_problem": ""}
    try:
        m = round_measures(ops, suggestions, chosen)
    except RecordMismatch as exc:
        return {"recorded": True, "record_problem": str(exc)}
    return {
        "recorded": True,
        "record_problem": "",
        "first_keystroke_ms": m.first_keystroke_ms,
        **{f"slot{s}_visible_ms": m.visible_ms[s] for s in (1, 2)},
        **{f"slot{s}_focused_ms": m.focused_ms[s] for s in (1, 2)},
        "focus_switches": m.focus_switches,
        **{f"{box}_typed_chars": m.typed_chars[box] for box in ("line", "edit")},
        **{f"{box}_pasted_chars": m.pasted_chars[box] for box in ("line", "edit")},
        "other_chars": m.other_chars,
        "suggestion_chars": len(suggestions[chosen]) if chosen in suggestions else None,
        "kept_chars": m.kept_chars,
        "kept_share": m.kept_share,
        "revisions": m.revisions,
        "deleted_chars": m.deleted_chars,
        "pauses": m.pauses,
        "pause_ms": m.pause_ms,
        "median_interkey_ms": m.median_interkey_ms,
    }


def process_rows(db: Db, exp_id: str) -> list[dict[str, Any]]:
    """The ``process`` table: one row per writer × submitted round, in session order, its
    measures from the keystroke record (null where the round has none, or where the record
    does not apply, which ``record_problem`` says) and its flags."""
    shown = shown_suggestions(db, exp_id)
    rows: list[dict[str, Any]] = []
    records: dict[str, tuple[dict[int, list], dict[int, str]]] = {}
    for r in db.query(
        "SELECT r.session_id, r.round, r.chosen_slot, r.chosen_system, r.slot1_system,"
        " r.slot2_system, p.external_id AS participant FROM rounds r"
        " JOIN sessions s ON s.id = r.session_id JOIN participants p ON p.id = s.participant_id"
        " WHERE s.experiment_id = ? AND r.turn_submitted_at IS NOT NULL"
        " ORDER BY s.started_at, s.participant_id, r.round",
        [exp_id],
    ):
        session = r["session_id"]
        if session not in records:
            ops = load_operations(db, session)
            by_round: dict[int, list] = {}
            for flag in process_flags.session_flags(ops):
                by_round.setdefault(flag.round, []).append(flag)
            records[session] = (rounds_of(ops), by_round)
        grouped, by_round = records[session]
        suggestions = {
            slot: g["text"]
            for slot in (1, 2)
            if (g := shown.get((session, r["round"], slot))) and g["status"] == "done"
        }
        row = {"experiment_id": exp_id, **r}
        row |= _measured(grouped.get(r["round"], []), suggestions, r["chosen_slot"])
        row["flags"] = process_flags.describe(by_round.get(r["round"], []))
        rows.append({c.name: row.get(c.name) for c in PROCESS_COLUMNS})
    return rows


def table_rows(
    db: Db, exp_id: str, table: str, now: datetime | None = None
) -> list[dict[str, Any]]:
    """The rows of one of :data:`TABLES`."""
    if table == "preference":
        return preference_rows(db, exp_id)
    if table == "sessions":
        return session_rows(db, exp_id, now)
    if table == "events":
        return event_rows(db, exp_id)
    if table == "survey":
        return survey_rows(db, exp_id)
    if table == "process":
        return process_rows(db, exp_id)
    raise ExportError(f"Unknown table '{table}': use one of {', '.join(TABLES)}.")


def export_table(db: Db, exp_id: str, table: str, fmt: str, now: datetime | None = None) -> bytes:
    """One table in one of :data:`cyoa.web.tables.TABLE_FORMATS`."""
    if table not in TABLES:
        raise ExportError(f"Unknown table '{table}': use one of {', '.join(TABLES)}.")
    return write_table(table_rows(db, exp_id, table, now), TABLES[table], fmt)


def cyoa_tsv(
    db: Db, exp_id: str, pair: tuple[str, str] | None = None, *, exact: bool = False
) -> bytes:
    """The layout of the original CYOA evaluation script
    (:func:`cyoa.cowriting.analysis.tsv.export_cyoa_tsv`): the writers of one pair of systems
    (``pair`` is needed when the experiment has more than two). Formula-like cells are
    neutralised as in the CSV unless ``exact`` (the text as stored, which the original script
    needs)."""
    systems = experiment_systems(db, exp_id) if store.get_experiment(db, exp_id) else []
    if pair is None and len(systems) > 2:
        raise ExportError(
            f"The CYOA TSV layout holds two systems (Model and Baseline); '{exp_id}' has "
            f"{len(systems)}: name a pair (--pair A B), or take the bundle, which has one TSV "
            "per pair that writers compared."
        )
    try:
        return export_cyoa_tsv(db, exp_id, pair, exact=exact).encode("utf-8")
    except AnalysisError as exc:
        raise ExportError(str(exc)) from exc


def export(
    db: Db,
    row: dict[str, Any],
    fmt: str,
    *,
    table: str | None = None,
    pair: tuple[str, str] | None = None,
    experiment: Experiment | None = None,
    now: datetime | None = None,
    exact_text: bool = False,
) -> bytes:
    """Every export of a stored co-writing experiment (``row``), by format: one of
    :data:`~cyoa.web.tables.TABLE_FORMATS` (one ``table`` of :data:`TABLES`, default
    ``preference``), ``cyoa-tsv`` (one ``pair`` of systems; ``exact_text``: not neutralised)
    or ``bundle`` (everything; needs the loaded ``experiment``)."""
    exp_id = row["id"]
    if fmt == "bundle":
        if experiment is None:
            raise ExportError(
                f"Experiment '{exp_id}' cannot be loaded (see the log): its models or spec are "
                "missing, so there is no bundle. The single tables can still be exported."
            )
        return bundle(db, experiment, store.get_evaluation_details(db, exp_id), now)
    if fmt == "cyoa-tsv":
        return cyoa_tsv(db, exp_id, pair, exact=exact_text)
    return export_table(db, exp_id, table or "preference", fmt, now)


def bundle(db: Db, exp: Experiment, details: dict[str, Any], now: datetime | None = None) -> bytes:
    """A zip with every table as CSV and Parquet, the CYOA TSV (``cyoa.tsv``; with more than
    two systems ``cyoa-<a>-vs-<b>.tsv`` per pair that writers compared), the data dictionary,
    the experiment spec (JSON) and the evaluation card (Markdown)."""
    now = now or datetime.now(UTC)
    tables = {name: table_rows(db, exp.id, name, now) for name in TABLES}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, rows in tables.items():
            archive.writestr(f"{name}.csv", to_csv(rows, TABLES[name]))
            archive.writestr(f"{name}.parquet", to_parquet(rows, TABLES[name]))
        if len(exp.systems) == 2:
            archive.writestr("cyoa.tsv", cyoa_tsv(db, exp.id))
        else:
            for a, b in experiment_pairs(db, exp.id):
                archive.writestr(f"cyoa-{a}-vs-{b}.tsv", cyoa_tsv(db, exp.id, (a, b)))
        archive.writestr("data-dictionary.md", data_dictionary())
        archive.writestr(
            "experiment-spec.json", json.dumps(exp.source, indent=2, ensure_ascii=False) + "\n"
        )
        card = card_text(db, exp, details, now, tables["sessions"], tables["preference"])
        archive.writestr("evaluation-card.md", card)
    return out.getvalue()


def card_text(
    db: Db,
    exp: Experiment,
    details: dict[str, Any],
    now: datetime,
    sessions: list[dict[str, Any]],
    rounds: list[dict[str, Any]],
) -> str:
    """The evaluation card of ``exp``: ``sessions`` and ``rounds`` (the ``sessions`` and
    ``preference`` tables' rows), the researcher's ``details``, the latest stored plan, and
    each pair's data for the results section."""
    studies = [load_study(db, exp.id, pair) for pair in experiment_pairs(db, exp.id)]
    plan = store.latest_plan(db, exp.id)
    return evaluation_card(exp, details, sessions, rounds, now, plan, studies)
