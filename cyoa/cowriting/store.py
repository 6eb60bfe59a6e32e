"""The co-writing study's rows: participants, sessions, events and the tables written from them.

The append-only ``events`` table is the source of truth. The tables a researcher reads
(``rounds``, ``suggestions``, ``choices``, ``survey_answers``, and the ``sessions`` summary)
are written from each event in the same transaction (:func:`record_event`), so they can never
disagree with it. The connection, transactions and schema are :mod:`cyoa.store`'s; every table
and column is described in docs/data-dictionary.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cyoa.db.facade import Db
from cyoa.db.transactions import write_transaction
from cyoa.store import now

# --- participants and sessions -----------------------------------------------------------


def participant_external_id(db: Db, participant_id: int) -> str:
    """The external id (the recruiting platform's) of the participant with this row id."""
    rows = list(db.query("SELECT external_id FROM participants WHERE id = ?", [participant_id]))
    return rows[0]["external_id"] if rows else ""


def find_session_for_participant(db: Db, exp_id: str, external_id: str) -> str | None:
    rows = list(
        db.query(
            "SELECT s.id FROM sessions s JOIN participants p ON p.id = s.participant_id"
            " WHERE s.experiment_id = ? AND p.external_id = ?",
            [exp_id, external_id],
        )
    )
    return rows[0]["id"] if rows else None


def create_session(
    db: Db,
    *,
    session_id: str,
    exp_id: str,
    participant: dict[str, str],
    pair: tuple[str, str],
    completion_code: str,
    user_agent: str,
    first_event: dict[str, Any],
    pair_probability: float | None = None,
) -> str:
    """Create participant + session + the first event atomically and return the session id.
    ``pair_probability``: the probability with which an adaptive pairing drew ``pair``
    (``None`` when pairs are balanced).

    If the participant already has a session in this experiment (a second tab racing the
    first), that session's id is returned instead: one session per participant."""
    stamp = now()
    with write_transaction(db, lock=("experiment", exp_id)):
        existing = find_session_for_participant(db, exp_id, participant["external_id"])
        if existing:
            return existing
        pid = db.insert(
            "participants", {"experiment_id": exp_id, "created_at": stamp, **participant}
        )
        db.insert(
            "sessions",
            {
                "id": session_id,
                "experiment_id": exp_id,
                "participant_id": pid,
                "system_a": pair[0],
                "system_b": pair[1],
                "phase": "writing",
                "current_round": 1,
                "completion_code": completion_code,
                "started_at": stamp,
                "updated_at": stamp,
                "user_agent": user_agent[:500],
                "pair_probability": pair_probability,
            },
        )
        _insert_event(db, session_id, 1, "session_started", first_event, stamp, None)
        db.insert("rounds", _new_round(db, session_id, 1, stamp))
    return session_id


def sessions_per_pair(db: Db, exp_id: str) -> dict[tuple[str, str], int]:
    """How many sessions each ordered pair (system_a, system_b) has in an experiment."""
    rows = db.query(
        "SELECT system_a, system_b, count(*) AS n FROM sessions WHERE experiment_id = ?"
        " GROUP BY system_a, system_b",
        [exp_id],
    )
    return {(r["system_a"], r["system_b"]): r["n"] for r in rows}


def pair_probabilities(db: Db, exp_id: str) -> dict[str, float]:
    """Per session of an experiment paired adaptively, the probability its pair was drawn
    with (sessions paired by balance are left out)."""
    rows = db.query(
        "SELECT id, pair_probability FROM sessions WHERE experiment_id = ?"
        " AND pair_probability IS NOT NULL",
        [exp_id],
    )
    return {r["id"]: float(r["pair_probability"]) for r in rows}


def counted_choices(db: Db, exp_id: str) -> list[tuple[str, str, str]]:
    """Every submitted choice between two suggestions in an experiment, as ``(session id,
    chosen system, other system)``: what an adaptive pairing estimates from."""
    rows = db.query(
        "SELECT r.session_id, r.slot1_system, r.slot2_system, r.chosen_system FROM rounds AS r"
        " JOIN sessions AS s ON s.id = r.session_id WHERE s.experiment_id = ?"
        " AND r.turn_submitted_at IS NOT NULL AND coalesce(r.one_suggestion_only, 0) = 0",
        [exp_id],
    )
    choices = []
    for r in rows:
        pair = (r["slot1_system"], r["slot2_system"])
        if r["chosen_system"] in pair and pair[0] != pair[1]:
            other = pair[1] if r["chosen_system"] == pair[0] else pair[0]
            choices.append((r["session_id"], r["chosen_system"], other))
    return choices


def get_session(db: Db, session_id: str) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM sessions WHERE id = ?", [session_id]))
    return rows[0] if rows else None


def session_count(db: Db, exp_id: str) -> int:
    """How many writer sessions an experiment has, finished or not."""
    row = db.execute("SELECT count(*) FROM sessions WHERE experiment_id = ?", [exp_id])
    return row.fetchone()[0]


def update_experiment_spec(db: Db, exp_id: str, title: str, spec: dict[str, Any]) -> bool:
    """Replace a co-writing experiment's title and spec, only while it is not open and has
    no session: checked by the write itself, so no writer can start in between. Returns
    whether it was replaced."""
    with write_transaction(db, lock=("spec", exp_id)):
        cursor = db.execute(
            "UPDATE experiments SET title = ?, spec = ?, updated_at = ?"
            " WHERE id = ? AND kind = 'cowriting' AND status != 'open'"
            " AND NOT EXISTS (SELECT 1 FROM sessions WHERE experiment_id = ?)",
            [title, json.dumps(spec, sort_keys=True), now(), exp_id, exp_id],
        )
    return cursor.rowcount == 1


# --- events ------------------------------------------------------------------------------


def load_events(db: Db, session_id: str, after: int = 0) -> list[dict[str, Any]]:
    """The events of a session numbered above ``after`` (every event, by default) in order,
    payloads decoded."""
    rows = db.query(
        "SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq", [session_id, after]
    )
    return [{**row, "payload": json.loads(row["payload"])} for row in rows]


def generation_requested_at(db: Db, session_id: str, round_number: int) -> str | None:
    """When the writer last asked for a round's suggestions: the server time of the round's
    latest ``line_submitted`` or ``suggestions_retried`` event (None when there is none)."""
    rows = db.query(
        "SELECT server_time, payload FROM events WHERE session_id = ?"
        " AND type IN ('line_submitted', 'suggestions_retried') ORDER BY seq DESC",
        [session_id],
    )
    for row in rows:
        if json.loads(row["payload"]).get("round") == round_number:
            return row["server_time"]
    return None


def seconds_since(stamp: str, at: str | None = None) -> float:
    """Seconds from the server time ``stamp`` to ``at`` (default: now)."""
    return (_parse_time(at or now()) - _parse_time(stamp)).total_seconds()


def find_action(db: Db, session_id: str, client_action_id: str) -> dict[str, Any] | None:
    """The event already recorded for a client's action id, if any (makes resends no-ops)."""
    rows = list(
        db.query(
            "SELECT * FROM events WHERE session_id = ? AND client_action_id = ?",
            [session_id, client_action_id],
        )
    )
    return {**rows[0], "payload": json.loads(rows[0]["payload"])} if rows else None


def _insert_event(
    db: Db,
    session_id: str,
    seq: int,
    event_type: str,
    payload: dict[str, Any],
    stamp: str,
    client_action_id: str | None,
) -> None:
    db.insert(
        "events",
        {
            "session_id": session_id,
            "seq": seq,
            "type": event_type,
            "payload": json.dumps(payload, ensure_ascii=False, sort_keys=True),
            "server_time": stamp,
            "client_action_id": client_action_id,
        },
    )


@dataclass(frozen=True)
class Recorded:
    """One event as it is being recorded: what the tables written from it need.

    ``extra`` carries data that is not part of the event but belongs in the tables (e.g. the
    survey's question texts, the chosen suggestion's system)."""

    session_id: str
    seq: int
    type: str
    payload: dict[str, Any]
    stamp: str
    phase: str
    current_round: int
    extra: dict[str, Any]

    @property
    def round_key(self) -> tuple[str, Any]:
        """The key of the ``rounds`` row the event belongs to."""
        return (self.session_id, self.payload.get("round"))


def record_event(
    db: Db,
    session: dict[str, Any],
    seq: int,
    event_type: str,
    payload: dict[str, Any],
    *,
    phase: str,
    current_round: int,
    client_action_id: str | None = None,
    extra: dict[str, Any] | None = None,
) -> str:
    """Append one event and update the researcher tables from it (the writes of its type in
    :data:`TABLE_WRITES`; an event type not there changes only ``sessions``). Call inside
    :func:`write_transaction`. ``extra`` carries data that is not part of the event but
    belongs in the tables (e.g. the survey's question texts). Returns the server time."""
    stamp = now()
    sid = session["id"]
    _insert_event(db, sid, seq, event_type, payload, stamp, client_action_id)
    event = Recorded(sid, seq, event_type, payload, stamp, phase, current_round, extra or {})
    write = TABLE_WRITES.get(event_type)
    if write is not None:
        write(db, event)
    db.update(
        "sessions", sid, {"phase": phase, "current_round": current_round, "updated_at": stamp}
    )
    return stamp


def _line_submitted(db: Db, event: Recorded) -> None:
    """The round gets the writer's line and which system and model fill each slot."""
    slots = event.payload["slot_systems"]
    models = event.payload["slot_models"]
    db.update(
        "rounds",
        event.round_key,
        {
            "writer_line": event.payload["text"],
            "slot1_system": slots[0],
            "slot1_model": models[0],
            "slot2_system": slots[1],
            "slot2_model": models[1],
            "line_submitted_at": event.stamp,
        },
    )


def _suggestion_outcome(db: Db, event: Recorded) -> None:
    """A ``suggestions`` row for a finished or failed suggestion; when it was the round's
    last (the phase is ``choosing``), the round records that its suggestions are ready."""
    payload = event.payload
    db.insert(
        "suggestions",
        {
            "session_id": event.session_id,
            "round": payload.get("round"),
            "slot": payload["slot"],
            "attempt": payload.get("attempt", 1),
            "system": payload["system"],
            "model": payload.get("model"),
            "model_version": payload.get("model_version"),
            "weights_file": payload.get("weights_file"),
            "sampling": json.dumps(payload.get("sampling", {}), sort_keys=True),
            "seed": payload.get("seed"),
            "status": "done" if event.type == "suggestion_completed" else "failed",
            "text": payload.get("text"),
            "raw_text": payload.get("raw_text"),
            "error": payload.get("error"),
            "generation_seconds": payload.get("generation_seconds"),
            "first_token_seconds": payload.get("first_token_seconds"),
            "token_count": payload.get("token_count"),
            "sent_settings": (
                None
                if payload.get("sent_settings") is None
                else json.dumps(payload["sent_settings"], sort_keys=True)
            ),
            "created_at": event.stamp,
            # Only a live study knows how long its writer waited (not an import).
            **{k: payload[k] for k in ("waited_seconds",) if k in payload},
        },
    )
    if event.phase == "choosing":
        failed = payload.get("one_suggestion_only", 0)
        db.update(
            "rounds",
            event.round_key,
            {"suggestions_ready_at": event.stamp, "one_suggestion_only": failed},
        )


def _suggestion_chosen(db: Db, event: Recorded) -> None:
    """A ``choices`` row; the round records its first choice, or counts one more switch."""
    payload = event.payload
    db.insert(
        "choices",
        {
            "session_id": event.session_id,
            "round": payload.get("round"),
            "event_seq": event.seq,
            "slot": payload["slot"],
            "system": event.extra["system"],
            "is_switch": int(payload["switch"]),
            "chosen_at": event.stamp,
        },
    )
    if not payload["switch"]:
        db.update("rounds", event.round_key, {"first_choice_at": event.stamp, "switches": 0})
    else:
        db.execute(
            "UPDATE rounds SET switches = switches + 1 WHERE session_id = ? AND round = ?",
            list(event.round_key),
        )


def _turn_submitted(db: Db, event: Recorded) -> None:
    """The round gets the chosen suggestion and the writer's final text; while the story
    goes on (the phase is ``writing``), the next round starts."""
    db.update(
        "rounds",
        event.round_key,
        {
            "chosen_slot": event.payload["slot"],
            "chosen_system": event.extra["system"],
            "chosen_model": event.extra["model"],
            "chosen_suggestion": event.extra["suggestion"],
            "final_text": event.payload["text"],
            "turn_submitted_at": event.stamp,
        },
    )
    if event.phase == "writing":
        db.insert("rounds", _new_round(db, event.session_id, event.current_round, event.stamp))


def _survey_submitted(db: Db, event: Recorded) -> None:
    """A ``survey_answers`` row per answer, with its question's text and its place among
    the answers sent; the session is finished."""
    questions = event.extra["questions"]
    for position, (item_id, value) in enumerate(event.payload.items(), start=1):
        kind, question, labels = questions[item_id]
        db.insert(
            "survey_answers",
            {
                "session_id": event.session_id,
                "item_id": item_id,
                "kind": kind,
                "question": question,
                "value": value if kind == "likert" else None,
                "label": labels[value - 1] if kind == "likert" else None,
                "text": value if kind == "open" else None,
                "answered_at": event.stamp,
                "position": position,
            },
        )
    db.update("sessions", event.session_id, {"finished_at": event.stamp})


# What each event type writes besides its ``events`` row and the ``sessions`` summary.
TABLE_WRITES: dict[str, Callable[[Db, Recorded], None]] = {
    "line_submitted": _line_submitted,
    "suggestion_completed": _suggestion_outcome,
    "suggestion_failed": _suggestion_outcome,
    "suggestion_chosen": _suggestion_chosen,
    "turn_submitted": _turn_submitted,
    "survey_submitted": _survey_submitted,
}


def _new_round(db: Db, session_id: str, number: int, stamp: str) -> dict[str, Any]:
    session = get_session(db, session_id)
    return {
        "session_id": session_id,
        "round": number,
        "experiment_id": session["experiment_id"] if session else None,
        "participant_id": session["participant_id"] if session else None,
        "round_started_at": stamp,
    }


# --- generation claims: which worker process generates which slot ------------------------


def _parse_time(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def claim_generation(
    db: Db,
    session_id: str,
    round_number: int,
    slot: int,
    attempt: int,
    worker_id: str,
    stale_after_seconds: float,
    at: str | None = None,
    holder_gone: Callable[[str], bool] | None = None,
) -> str | None:
    """Claim the generation of one slot's suggestion for ``worker_id``, so that no other
    worker process generates it at the same time. ``attempt`` is the first attempt of this
    generation (1, or 3 after the writer's first "Try again", …).

    The claim is taken when there is none, when it is already this worker's, when
    ``holder_gone(holder's worker id)`` says its holder no longer runs, or when its holder's
    last heartbeat is more than ``stale_after_seconds`` old (the holder is taken to be dead
    and the claim passes to this worker). Returns None when the claim is this worker's,
    else the holder's last heartbeat time (ISO 8601 UTC). ``at`` is the time to record
    (default: now). Runs in its own write transaction under the session's ``claim`` lock,
    so two workers cannot both take the same claim.
    """
    stamp = at or now()
    key = [session_id, round_number, slot, attempt]
    with write_transaction(db, lock=("claim", session_id)):
        rows = list(
            db.query(
                "SELECT worker_id, heartbeat_at FROM generation_claims"
                " WHERE session_id = ? AND round = ? AND slot = ? AND attempt = ?",
                key,
            )
        )
        if rows and rows[0]["worker_id"] != worker_id:
            age = (_parse_time(stamp) - _parse_time(rows[0]["heartbeat_at"])).total_seconds()
            gone = holder_gone is not None and holder_gone(rows[0]["worker_id"])
            if age <= stale_after_seconds and not gone:
                return rows[0]["heartbeat_at"]
        if rows and rows[0]["worker_id"] == worker_id:
            db.execute(
                "UPDATE generation_claims SET heartbeat_at = ?"
                " WHERE session_id = ? AND round = ? AND slot = ? AND attempt = ?",
                [stamp, *key],
            )
        else:
            db.upsert(
                "generation_claims",
                {
                    "session_id": session_id,
                    "round": round_number,
                    "slot": slot,
                    "attempt": attempt,
                    "worker_id": worker_id,
                    "claimed_at": stamp,
                    "heartbeat_at": stamp,
                },
                pk=("session_id", "round", "slot", "attempt"),
            )
    return None


def heartbeat_generation(
    db: Db,
    session_id: str,
    round_number: int,
    slot: int,
    attempt: int,
    worker_id: str,
    at: str | None = None,
) -> bool:
    """Record that ``worker_id`` is still generating the claimed slot. False when the claim
    is no longer this worker's (another worker took it over as stale): stop generating."""
    with write_transaction(db, lock=("claim", session_id)):
        cursor = db.execute(
            "UPDATE generation_claims SET heartbeat_at = ?"
            " WHERE session_id = ? AND round = ? AND slot = ? AND attempt = ? AND worker_id = ?",
            [at or now(), session_id, round_number, slot, attempt, worker_id],
        )
    return cursor.rowcount == 1
