"""A co-writing study as CoAuthor session logs, and CoAuthor logs as a study: the database's
side of :mod:`cyoa.cowriting.process.coauthor` (which holds the mapping).

- :func:`export_zip`: one ``<session_id>.jsonl`` per session with a submitted round, so that
  the tools built for CoAuthor's logs (Lee, Liang & Yang, CHI 2022) read a CYOA study;
- :func:`import_logs`: CoAuthor session logs stored as a new co-writing experiment, closed to
  writers, one session per log, shown turn by turn on the replay page like an imported TSV,
  and keystroke by keystroke from the log's text events
  (:mod:`cyoa.cowriting.process.coauthor_record`).
"""

from __future__ import annotations

import io
import json
import re
import secrets
import zipfile
from dataclasses import dataclass
from typing import Any

from cyoa import store
from cyoa.cowriting import flow
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.process.coauthor import (
    CoAuthorError,
    ImportedSession,
    RoundLog,
    ms,
    read_session,
    session_events,
)
from cyoa.cowriting.process.coauthor_record import LogRecord, log_record
from cyoa.cowriting.process.operations import RecordMismatch, reconstruct
from cyoa.cowriting.process.store import load_operations, store_operations
from cyoa.cowriting.recording import SessionRecorder
from cyoa.cowriting.research.exports import shown_suggestions
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.web.tables import ExportError

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SLOT_SYSTEMS = ("coauthor-slot-1", "coauthor-slot-2")


def _playable(ops: list[dict[str, Any]], suggestions: dict[int, str]) -> tuple:
    """A round's record rows if they replay, else none (the round goes out at turn grain,
    as the replay page and the record check say where such a record breaks)."""
    try:
        reconstruct(ops, suggestions)
    except RecordMismatch:
        return ()
    return tuple(ops)


def _round_logs(db: Db, exp_id: str) -> dict[str, list[RoundLog]]:
    shown = shown_suggestions(db, exp_id)
    sessions: dict[str, list[RoundLog]] = {}
    records: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for r in db.query(
        "SELECT r.* FROM rounds r JOIN sessions s ON s.id = r.session_id"
        " WHERE s.experiment_id = ? AND r.turn_submitted_at IS NOT NULL"
        " ORDER BY s.started_at, s.participant_id, r.round",
        [exp_id],
    ):
        session = r["session_id"]
        if session not in records:
            records[session] = {}
            for op in load_operations(db, session):
                records[session].setdefault(op["round"], []).append(op)
        found = {
            slot: g["text"]
            for slot in (1, 2)
            if (g := shown.get((session, r["round"], slot))) and g["status"] == "done"
        }
        sessions.setdefault(session, []).append(
            RoundLog(
                number=r["round"],
                writer_line=r["writer_line"],
                final_text=r["final_text"],
                suggestions=found,
                systems={slot: r[f"slot{slot}_system"] for slot in (1, 2)},
                chosen_slot=r["chosen_slot"],
                line_ms=ms(r["line_submitted_at"]),
                ready_ms=ms(r["suggestions_ready_at"], ms(r["line_submitted_at"])),
                choice_ms=ms(r["first_choice_at"], ms(r["turn_submitted_at"])),
                turn_ms=ms(r["turn_submitted_at"]),
                ops=_playable(records[session].get(r["round"], []), found),
            )
        )
    return sessions


def export_zip(db: Db, exp_id: str) -> bytes:
    """Every session of ``exp_id`` with a submitted round as a CoAuthor log, in a zip."""
    stored = store.get_experiment(db, exp_id)
    if stored is None or stored["kind"] != "cowriting":
        raise ExportError(
            f"There is no co-writing experiment '{exp_id}' in this database: check the name."
        )
    started = {
        s["id"]: s["started_at"]
        for s in db.query("SELECT id, started_at FROM sessions WHERE experiment_id = ?", [exp_id])
    }
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for session, rounds in _round_logs(db, exp_id).items():
            events = session_events(rounds, ms(started[session]))
            lines = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events)
            archive.writestr(f"{session}.jsonl", lines)
    return out.getvalue()


@dataclass(frozen=True)
class ImportSummary:
    """What an import stored: sessions, rounds, stretches of text left out, keystroke record
    rows, and the sentences saying which events or rounds the record could not carry (each
    prefixed with its file)."""

    experiment: str
    sessions: int
    rounds: int
    left_out: int
    operations: int = 0
    record_problems: tuple[str, ...] = ()


def parse_log(text: str, name: str) -> tuple[ImportedSession, LogRecord]:
    """A CoAuthor log file's text (JSON Lines, or one JSON list) read as rounds and as the
    keystroke record; :class:`AnalysisError` naming the file when it is not a CoAuthor
    log."""
    try:
        stripped = text.strip()
        if stripped.startswith("["):
            events = json.loads(stripped)
        else:
            events = [json.loads(line) for line in stripped.splitlines() if line.strip()]
        if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
            raise CoAuthorError("each event must be a JSON object")
        session = read_session(events)
        return session, log_record(events, session)
    except (ValueError, TypeError, KeyError) as exc:
        raise AnalysisError(
            f"{name} is not a CoAuthor session log ({exc}): give the .jsonl file CoAuthor "
            "saved for one session."
        ) from exc


def _systems(sessions: list[ImportedSession]) -> tuple[str, str]:
    """The two sources the logs' suggestions name, when every offered pair names two and
    there are two in all; else the slots (CoAuthor's suggestions mostly name none)."""
    sources = {s for session in sessions for r in session.rounds for s in r.sources}
    pairs_named = all(
        len(r.sources) == 2 and all(r.sources) and r.sources[0] != r.sources[1]
        for session in sessions
        for r in session.rounds
    )
    if pairs_named and len(sources) == 2:
        return tuple(sorted(sources))  # type: ignore[return-value]
    return SLOT_SYSTEMS


def import_logs(db: Db, files: list[tuple[str, str]], name: str) -> ImportSummary:
    """Store CoAuthor logs (``files``: file name and text) as the new experiment ``name``,
    closed to writers, each log one writer named by its file name. Every file is read before
    anything is written; :class:`AnalysisError` for a bad file or a name in use."""
    if not _NAME.match(name):
        raise AnalysisError(
            f"'{name}' cannot be an experiment name: use lowercase letters, digits, '-' or '_' "
            "(at most 64 characters, starting with a letter or digit)."
        )
    sessions = [(file, parse_log(text, file)) for file, text in files]
    store.init_db(db)
    if store.get_experiment(db, name) is not None:
        raise AnalysisError(
            f"There is already an experiment '{name}' in this database: choose another --name."
        )
    systems = _systems([s for _, (s, _) in sessions])
    rounds = max((len(s.rounds) for _, (s, _) in sessions), default=0) or 1
    spec = {
        "id": name,
        "title": name,
        "rounds": rounds,
        "prompt_text": sessions[0][1][0].prompt if sessions else "",
        "systems": [{"name": s, "model": s} for s in systems],
        "survey": {"likert": [], "open": []},
        "import": {
            "format": "coauthor",
            "source": ", ".join(f for f, _ in files),
            "slot_order_recorded": False,
        },
    }
    store.upsert_experiment(db, name, name, spec)
    with store.write_transaction(db):
        db.update("experiments", name, {"status": "closed"})
    for file, (session, record) in sessions:
        _import_session(db, name, file, session, systems, record)
    return ImportSummary(
        name,
        len(sessions),
        sum(len(s.rounds) for _, (s, _) in sessions),
        sum(s.left_out for _, (s, _) in sessions),
        sum(len(r.rows) for _, (_, r) in sessions),
        tuple(f"{file}: {problem}" for file, (_, r) in sessions for problem in r.problems),
    )


def _import_session(
    db: Db,
    experiment: str,
    file: str,
    session: ImportedSession,
    systems: tuple[str, str],
    keystrokes: LogRecord,
) -> None:
    session_id = secrets.token_hex(16)
    cowriting_store.create_session(
        db,
        session_id=session_id,
        exp_id=experiment,
        participant={"external_id": file.rsplit(".", 1)[0], "id_source": "import-coauthor"},
        pair=systems,
        completion_code=f"IMPORT-{secrets.token_hex(8).upper()}",
        user_agent="",
        first_event={
            "experiment": experiment,
            "systems": list(systems),
            "limits": {"rounds": len(session.rounds), "min_chars": None, "max_chars": None},
        },
    )
    row = cowriting_store.get_session(db, session_id)
    limits = flow.Limits(rounds=max(len(session.rounds), 1))
    record = SessionRecorder(db, row, flow.State(limits=limits))
    with store.write_transaction(db):
        for number, r in enumerate(session.rounds, start=1):
            order = list(r.sources) if systems != SLOT_SYSTEMS else list(SLOT_SYSTEMS)
            record(
                "line_submitted",
                {
                    "round": number,
                    "text": r.writer_line,
                    "slot_systems": order,
                    "slot_models": order,
                    "seeds": [None, None],
                },
            )
            for slot, system in enumerate(order, start=1):
                payload = {"round": number, "slot": slot, "attempt": 1, "system": system}
                payload["model"] = system
                if slot <= len(r.suggestions):
                    text = r.suggestions[slot - 1]
                    record("suggestion_completed", payload | {"text": text, "raw_text": text})
                else:
                    record("suggestion_failed", payload | {"error": "not offered in the log"})
            chosen = {
                "system": order[r.chosen_slot - 1],
                "model": order[r.chosen_slot - 1],
                "suggestion": r.suggestions[r.chosen_slot - 1],
            }
            choice = {"round": number, "slot": r.chosen_slot, "switch": False}
            record("suggestion_chosen", choice, chosen)
            record(
                "turn_submitted",
                {"round": number, "slot": r.chosen_slot, "text": r.final_text},
                chosen,
            )
        store_operations(db, session_id, keystrokes.rows)
