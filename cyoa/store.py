"""The SQLite database, through sqlite-utils: schema, writes and queries in one place.

The append-only ``events`` table is the source of truth. The tables a researcher reads
(``rounds``, ``suggestions``, ``choices``, ``survey_answers``, and the ``sessions`` summary)
are written from each event in the same transaction (:func:`record_event`), so they can never
disagree with it. Every table and column is described in docs/data-dictionary.md.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

BUSY_TIMEOUT_SECONDS = 10.0


class SchemaError(RuntimeError):
    """The database cannot be brought to this code's schema (e.g. it is newer)."""


def now() -> str:
    """Server time as ISO 8601 UTC with milliseconds, e.g. 2026-11-21T12:00:00.123Z."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def connect(path: str | Path) -> Database:
    """A connection usable from any thread (one unit of work at a time)."""
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
    db = Database(conn)
    db.execute("PRAGMA foreign_keys = ON")
    return db


@contextmanager
def write_transaction(db: Database) -> Iterator[Database]:
    """One atomic write: ``BEGIN IMMEDIATE`` takes the write lock up front, so a read-check-
    write sequence inside it cannot interleave with another writer (thread or process)."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.conn.execute("ROLLBACK")
        raise
    db.conn.execute("COMMIT")


def init_db(db: Database) -> None:
    """Bring the database to :data:`SCHEMA_VERSION`, creating it when new, and switch on WAL
    mode (see :func:`migrate`). Safe when several worker processes start at once: one
    migrates while the others wait for the write lock, then find nothing left to do."""
    db.enable_wal()
    with write_transaction(db):
        migrate(db)


def schema_version(db: Database) -> int:
    """The schema version the database records (SQLite's ``user_version``; 0 when new)."""
    return db.execute("PRAGMA user_version").fetchone()[0]


def migrate(db: Database, migrations: Sequence[Callable[[Database], None]] | None = None) -> int:
    """Apply the migrations the database has not had yet, in order, and record the new
    version; returns it. Call inside :func:`write_transaction`: SQLite's schema changes are
    transactional, so a migration that fails leaves the database as it was.

    ``migrations[n - 1]`` takes a database from version ``n - 1`` to ``n``. Version 1 is the
    first schema; databases written before migrations existed were also marked 1 while their
    tables grew one "create if missing" at a time, so the version-1 step (which only creates
    what is missing) runs again on a version-1 database. A database newer than the code is
    refused: running older code on it could lose what the newer code stores."""
    steps = MIGRATIONS if migrations is None else migrations
    version = schema_version(db)
    if version > len(steps):
        raise SchemaError(
            f"This database has schema version {version}, newer than this CYOA's "
            f"({len(steps)}). Update CYOA (git pull) before using it."
        )
    first = 0 if version <= 1 else version
    for step in steps[first:]:
        step(db)
    db.execute(f"PRAGMA user_version = {len(steps)}")
    return len(steps)


def _version_1(db: Database) -> None:
    """The first schema: sessions and their events, the co-writing tables, researchers."""
    t = db.table
    if not t("experiments").exists():
        t("experiments").create(
            {
                "id": str,
                "title": str,
                "status": str,
                "spec": str,
                "created_at": str,
                "updated_at": str,
            },
            pk="id",
            not_null={"title", "status", "spec"},
        )
    if not t("participants").exists():
        t("participants").create(
            {
                "id": int,
                "experiment_id": str,
                "external_id": str,
                "id_source": str,
                "study_id": str,
                "platform_session_id": str,
                "created_at": str,
            },
            pk="id",
            foreign_keys=[("experiment_id", "experiments", "id")],
            not_null={"experiment_id", "external_id", "id_source"},
        )
        t("participants").create_index(["experiment_id", "external_id"], unique=True)
    if not t("sessions").exists():
        t("sessions").create(
            {
                "id": str,
                "experiment_id": str,
                "participant_id": int,
                "system_a": str,
                "system_b": str,
                "phase": str,
                "current_round": int,
                "completion_code": str,
                "started_at": str,
                "updated_at": str,
                "finished_at": str,
                "user_agent": str,
            },
            pk="id",
            foreign_keys=[
                ("experiment_id", "experiments", "id"),
                ("participant_id", "participants", "id"),
            ],
            not_null={"experiment_id", "participant_id", "phase", "completion_code"},
        )
        t("sessions").create_index(["completion_code"], unique=True)
    if not t("events").exists():
        t("events").create(
            {
                "session_id": str,
                "seq": int,
                "type": str,
                "payload": str,
                "server_time": str,
                "client_action_id": str,
            },
            pk=("session_id", "seq"),
            foreign_keys=[("session_id", "sessions", "id")],
            not_null={"type", "payload", "server_time"},
        )
        db.execute(
            "CREATE UNIQUE INDEX idx_events_client_action ON events (session_id, client_action_id)"
            " WHERE client_action_id IS NOT NULL"
        )
    if not t("rounds").exists():
        t("rounds").create(
            {
                "session_id": str,
                "round": int,
                "experiment_id": str,
                "participant_id": int,
                "writer_line": str,
                "slot1_system": str,
                "slot1_model": str,
                "slot2_system": str,
                "slot2_model": str,
                "one_suggestion_only": int,
                "chosen_slot": int,
                "chosen_system": str,
                "chosen_model": str,
                "chosen_suggestion": str,
                "final_text": str,
                "switches": int,
                "round_started_at": str,
                "line_submitted_at": str,
                "suggestions_ready_at": str,
                "first_choice_at": str,
                "turn_submitted_at": str,
            },
            pk=("session_id", "round"),
            foreign_keys=[("session_id", "sessions", "id")],
        )
    if not t("suggestions").exists():
        t("suggestions").create(
            {
                "session_id": str,
                "round": int,
                "slot": int,
                "attempt": int,
                "system": str,
                "model": str,
                "model_version": str,
                "weights_file": str,
                "sampling": str,
                "seed": int,
                "status": str,
                "text": str,
                "raw_text": str,
                "error": str,
                "generation_seconds": float,
                "first_token_seconds": float,
                "token_count": int,
                "created_at": str,
            },
            pk=("session_id", "round", "slot", "attempt"),
            foreign_keys=[("session_id", "sessions", "id")],
        )
    if not t("choices").exists():
        t("choices").create(
            {
                "session_id": str,
                "round": int,
                "event_seq": int,
                "slot": int,
                "system": str,
                "is_switch": int,
                "chosen_at": str,
            },
            pk=("session_id", "event_seq"),
            foreign_keys=[("session_id", "sessions", "id")],
        )
    if not t("survey_answers").exists():
        t("survey_answers").create(
            {
                "session_id": str,
                "item_id": str,
                "kind": str,
                "question": str,
                "value": int,
                "label": str,
                "text": str,
                "answered_at": str,
            },
            pk=("session_id", "item_id"),
            foreign_keys=[("session_id", "sessions", "id")],
        )
    if not t("researchers").exists():
        t("researchers").create(
            {"id": int, "name": str, "password_hash": str, "created_at": str},
            pk="id",
            not_null={"name", "password_hash"},
        )
        t("researchers").create_index(["name"], unique=True)
    if not t("evaluation_details").exists():
        t("evaluation_details").create(
            {
                "experiment_id": str,
                "pay": str,
                "qualifications": str,
                "updated_at": str,
                "updated_by": str,
            },
            pk="experiment_id",
            foreign_keys=[("experiment_id", "experiments", "id")],
        )
    if not t("generation_claims").exists():
        t("generation_claims").create(
            {
                "session_id": str,
                "round": int,
                "slot": int,
                "attempt": int,
                "worker_id": str,
                "claimed_at": str,
                "heartbeat_at": str,
            },
            pk=("session_id", "round", "slot", "attempt"),
            foreign_keys=[("session_id", "sessions", "id")],
            not_null={"worker_id", "claimed_at", "heartbeat_at"},
        )
    create_sentence_tags(db)


def create_sentence_tags(db: Database) -> None:
    """The analysis cache of tagged sentences (:mod:`cyoa.analysis.tag_cache`), if missing.
    Derived data: deleting its rows loses nothing but time."""
    if not db.table("sentence_tags").exists():
        db.table("sentence_tags").create(
            {"tagger": str, "sentence": str, "nouns": str, "verbs": str},
            pk=("tagger", "sentence"),
            not_null={"nouns", "verbs"},
        )


def _version_2(db: Database) -> None:
    """Rating studies: experiments get a kind; stories, the instrument each rating
    experiment uses and its items, raters, and judgements (one per rater × story × item)."""
    db.execute("ALTER TABLE experiments ADD COLUMN kind TEXT NOT NULL DEFAULT 'cowriting'")
    t = db.table
    t("stories").create(
        {
            "experiment_id": str,
            "story_id": str,
            "source": str,
            "title": str,
            "text": str,
            "url": str,
            "origin": str,
            "created_at": str,
        },
        pk=("experiment_id", "story_id"),
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"source", "created_at"},
    )
    t("instruments").create(
        {
            "experiment_id": str,
            "instrument_id": str,
            "name": str,
            "version": str,
            "reference": str,
            "attribution": str,
            "instructions": str,
            "definition": str,
        },
        pk="experiment_id",
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"instrument_id", "name", "definition"},
    )
    t("instrument_items").create(
        {
            "experiment_id": str,
            "item_id": str,
            "position": int,
            "kind": str,
            "text": str,
            "points": int,
            "labels": str,
            "reverse": int,
            "factor": str,
            "category": str,
            "context": str,
            "rationale": int,
            "fei_kind": str,
            "story_id": str,
        },
        pk=("experiment_id", "item_id"),
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"position", "kind", "text", "reverse", "rationale"},
    )
    t("raters").create(
        {
            "experiment_id": str,
            "rater_id": str,
            "external_id": str,
            "id_source": str,
            "created_at": str,
        },
        pk=("experiment_id", "rater_id"),
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"created_at"},
    )
    # Composite keys: a judgement belongs to a story and a rater of its experiment.
    db.execute(
        """CREATE TABLE judgements (
            experiment_id TEXT NOT NULL REFERENCES experiments(id),
            story_id TEXT NOT NULL,
            rater_id TEXT NOT NULL,
            item_id TEXT NOT NULL,
            value FLOAT,
            value_text TEXT,
            rationale TEXT,
            shown_at TEXT,
            answered_at TEXT,
            recorded_at TEXT NOT NULL,
            PRIMARY KEY (experiment_id, rater_id, story_id, item_id),
            FOREIGN KEY (experiment_id, story_id) REFERENCES stories(experiment_id, story_id),
            FOREIGN KEY (experiment_id, rater_id) REFERENCES raters(experiment_id, rater_id)
        )"""
    )
    db.execute("CREATE INDEX judgements_by_story ON judgements (experiment_id, story_id, item_id)")


def _rating_journeys(db: Database) -> None:
    """Rating studies with people: each rater's events (the truth, as ``events`` is for
    writers), their assigned stories, their answers to attention checks, and what a rater's
    row needs for resume and completion; stories get the family that links an original and
    its corrupted copies."""
    for column in (
        "study_id TEXT",
        "platform_session_id TEXT",
        "completion_code TEXT",
        "user_agent TEXT",
        "phase TEXT",
        "started_at TEXT",
        "updated_at TEXT",
        "finished_at TEXT",
    ):
        db.execute(f"ALTER TABLE raters ADD COLUMN {column}")
    db.execute("ALTER TABLE stories ADD COLUMN family TEXT")
    db.execute(
        """CREATE TABLE rating_events (
            experiment_id TEXT NOT NULL,
            rater_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            type TEXT NOT NULL,
            payload TEXT NOT NULL,
            created_at TEXT NOT NULL,
            client_action_id TEXT,
            PRIMARY KEY (experiment_id, rater_id, seq),
            FOREIGN KEY (experiment_id, rater_id) REFERENCES raters(experiment_id, rater_id)
        )"""
    )
    db.execute(
        "CREATE UNIQUE INDEX rating_events_action ON rating_events"
        " (experiment_id, rater_id, client_action_id) WHERE client_action_id IS NOT NULL"
    )
    db.execute(
        """CREATE TABLE assignments (
            experiment_id TEXT NOT NULL,
            rater_id TEXT NOT NULL,
            story_id TEXT NOT NULL,
            position INTEGER NOT NULL,
            assigned_at TEXT NOT NULL,
            shown_at TEXT,
            finished_at TEXT,
            PRIMARY KEY (experiment_id, rater_id, story_id),
            FOREIGN KEY (experiment_id, rater_id) REFERENCES raters(experiment_id, rater_id),
            FOREIGN KEY (experiment_id, story_id) REFERENCES stories(experiment_id, story_id)
        )"""
    )
    db.execute(
        """CREATE TABLE check_answers (
            experiment_id TEXT NOT NULL,
            rater_id TEXT NOT NULL,
            story_id TEXT NOT NULL,
            check_id TEXT NOT NULL,
            value FLOAT,
            correct INTEGER NOT NULL,
            answered_at TEXT NOT NULL,
            PRIMARY KEY (experiment_id, rater_id, story_id, check_id),
            FOREIGN KEY (experiment_id, rater_id) REFERENCES raters(experiment_id, rater_id)
        )"""
    )


def _suggestion_waits(db: Database) -> None:
    """How long the writer waited for each suggestion, next to how long it took to generate."""
    db.execute("ALTER TABLE suggestions ADD COLUMN waited_seconds FLOAT")


def story_alias() -> str:
    """A new story's rater-facing id: random, so that it says nothing of the story's source
    (see :mod:`cyoa.rating.blind`)."""
    return secrets.token_hex(6)


def _story_aliases(db: Database) -> None:
    """Each story of a rating experiment gets the opaque id raters see in its place."""
    db.execute("ALTER TABLE stories ADD COLUMN alias TEXT")
    keys = list(db.execute("SELECT experiment_id, story_id FROM stories").fetchall())
    for exp_id, story_id in keys:
        db.execute(
            "UPDATE stories SET alias = ? WHERE experiment_id = ? AND story_id = ?",
            [story_alias(), exp_id, story_id],
        )


# The schema's history: each step takes the database one version further (see migrate).
MIGRATIONS: tuple[Callable[[Database], None], ...] = (
    _version_1,
    _version_2,
    _rating_journeys,
    _suggestion_waits,
    _story_aliases,
)
SCHEMA_VERSION = len(MIGRATIONS)


# --- experiments and participants -------------------------------------------------------


def upsert_experiment(db: Database, exp_id: str, title: str, spec: dict[str, Any]) -> None:
    """Store (or refresh) an experiment's spec; a new experiment starts ``open``."""
    stamp = now()
    existing = get_experiment(db, exp_id)
    with write_transaction(db):
        db["experiments"].upsert(
            {
                "id": exp_id,
                "title": title,
                "status": existing["status"] if existing else "open",
                "spec": json.dumps(spec, sort_keys=True),
                "created_at": existing["created_at"] if existing else stamp,
                "updated_at": stamp,
            },
            pk="id",
        )


EXPERIMENT_STATUSES = ("open", "paused", "closed")


def create_experiment(
    db: Database, exp_id: str, title: str, spec: dict[str, Any], status: str = "paused"
) -> None:
    """Store a new experiment (one a researcher creates); raises ValueError if the id is
    taken, so that a new spec never silently replaces one that writers may have used."""
    with write_transaction(db):
        _insert_experiment(db, exp_id, title, spec, status, "cowriting")


def _insert_experiment(
    db: Database, exp_id: str, title: str, spec: dict[str, Any], status: str, kind: str
) -> None:
    """A new experiment's row, inside the caller's transaction; ValueError for an unknown
    status or a taken id."""
    if status not in EXPERIMENT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(EXPERIMENT_STATUSES)}.")
    if get_experiment(db, exp_id) is not None:
        raise ValueError(f"An experiment with the id '{exp_id}' exists already.")
    stamp = now()
    db["experiments"].insert(
        {
            "id": exp_id,
            "title": title,
            "status": status,
            "spec": json.dumps(spec, sort_keys=True),
            "created_at": stamp,
            "updated_at": stamp,
            "kind": kind,
        }
    )


def create_rating_experiment(
    db: Database,
    exp_id: str,
    title: str,
    spec: dict[str, Any],
    *,
    instrument: dict[str, Any],
    items: list[dict[str, Any]],
    stories: list[dict[str, Any]],
    raters: list[dict[str, Any]],
    judgements: list[dict[str, Any]],
    status: str = "closed",
) -> None:
    """Store a rating experiment whole, in one transaction: its row (kind ``rating``), the
    instrument it uses and its items, its stories, raters and judgements (rows as in
    docs/data-dictionary.md). Raises ValueError if the id is taken; nothing is stored then,
    nor when any row is refused."""
    stamp = now()
    with write_transaction(db):
        _insert_experiment(db, exp_id, title, spec, status, "rating")
        _insert_rating_design(db, exp_id, instrument, items, stories, stamp)
        db["raters"].insert_all(
            {"experiment_id": exp_id, "created_at": stamp, **row} for row in raters
        )
        db["judgements"].insert_all({"experiment_id": exp_id, **row} for row in judgements)


def _insert_rating_design(
    db: Database,
    exp_id: str,
    instrument: dict[str, Any],
    items: list[dict[str, Any]],
    stories: list[dict[str, Any]],
    stamp: str,
) -> None:
    """The instrument, its items and the stories of a rating experiment (inside the
    caller's transaction)."""
    db["instruments"].insert({**instrument, "experiment_id": exp_id})
    db["instrument_items"].insert_all({"experiment_id": exp_id, **item} for item in items)
    db["stories"].insert_all(
        {"experiment_id": exp_id, "created_at": stamp, **story, "alias": story_alias()}
        for story in stories
    )


def set_experiment_status(db: Database, exp_id: str, status: str) -> None:
    """Open, pause or close an experiment (``open`` takes new writers; the others do not,
    but writers with a session can finish). Raises ValueError for an unknown experiment."""
    if status not in EXPERIMENT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(EXPERIMENT_STATUSES)}.")
    with write_transaction(db):
        if get_experiment(db, exp_id) is None:
            raise ValueError(f"There is no experiment '{exp_id}'.")
        db.execute(
            "UPDATE experiments SET status = ?, updated_at = ? WHERE id = ?",
            [status, now(), exp_id],
        )


def open_if_paused(db: Database, exp_id: str) -> bool:
    """Open the experiment if it is paused (in one statement, so that a pause or close made
    meanwhile is never overwritten); whether it was opened."""
    with write_transaction(db):
        cursor = db.execute(
            "UPDATE experiments SET status = 'open', updated_at = ? WHERE id = ?"
            " AND status = 'paused'",
            [now(), exp_id],
        )
        return cursor.rowcount == 1


def session_count(db: Database, exp_id: str) -> int:
    """How many writer sessions an experiment has, finished or not."""
    row = db.execute("SELECT count(*) FROM sessions WHERE experiment_id = ?", [exp_id])
    return row.fetchone()[0]


def update_experiment_spec(db: Database, exp_id: str, title: str, spec: dict[str, Any]) -> bool:
    """Replace a co-writing experiment's title and spec, only while it is not open and has
    no session: checked by the write itself, so no writer can start in between. Returns
    whether it was replaced."""
    with write_transaction(db):
        cursor = db.execute(
            "UPDATE experiments SET title = ?, spec = ?, updated_at = ?"
            " WHERE id = ? AND kind = 'cowriting' AND status != 'open'"
            " AND NOT EXISTS (SELECT 1 FROM sessions WHERE experiment_id = ?)",
            [title, json.dumps(spec, sort_keys=True), now(), exp_id, exp_id],
        )
    return cursor.rowcount == 1


def get_experiment(db: Database, exp_id: str) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM experiments WHERE id = ?", [exp_id]))
    return rows[0] if rows else None


def participant_external_id(db: Database, participant_id: int) -> str:
    """The external id (the recruiting platform's) of the participant with this row id."""
    rows = list(db.query("SELECT external_id FROM participants WHERE id = ?", [participant_id]))
    return rows[0]["external_id"] if rows else ""


def find_session_for_participant(db: Database, exp_id: str, external_id: str) -> str | None:
    rows = list(
        db.query(
            "SELECT s.id FROM sessions s JOIN participants p ON p.id = s.participant_id"
            " WHERE s.experiment_id = ? AND p.external_id = ?",
            [exp_id, external_id],
        )
    )
    return rows[0]["id"] if rows else None


def create_session(
    db: Database,
    *,
    session_id: str,
    exp_id: str,
    participant: dict[str, str],
    pair: tuple[str, str],
    completion_code: str,
    user_agent: str,
    first_event: dict[str, Any],
) -> str:
    """Create participant + session + the first event atomically and return the session id.

    If the participant already has a session in this experiment (a second tab racing the
    first), that session's id is returned instead: one session per participant."""
    stamp = now()
    with write_transaction(db):
        existing = find_session_for_participant(db, exp_id, participant["external_id"])
        if existing:
            return existing
        pid = (
            db["participants"]
            .insert({"experiment_id": exp_id, "created_at": stamp, **participant})
            .last_pk
        )
        db["sessions"].insert(
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
            }
        )
        _insert_event(db, session_id, 1, "session_started", first_event, stamp, None)
        db["rounds"].insert(_new_round(db, session_id, 1, stamp))
    return session_id


def sessions_per_pair(db: Database, exp_id: str) -> dict[tuple[str, str], int]:
    """How many sessions each ordered pair (system_a, system_b) has in an experiment."""
    rows = db.query(
        "SELECT system_a, system_b, count(*) AS n FROM sessions WHERE experiment_id = ?"
        " GROUP BY system_a, system_b",
        [exp_id],
    )
    return {(r["system_a"], r["system_b"]): r["n"] for r in rows}


def get_session(db: Database, session_id: str) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM sessions WHERE id = ?", [session_id]))
    return rows[0] if rows else None


# --- events -----------------------------------------------------------------------------


def load_events(db: Database, session_id: str, after: int = 0) -> list[dict[str, Any]]:
    """The events of a session numbered above ``after`` (every event, by default) in order,
    payloads decoded."""
    rows = db.query(
        "SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq", [session_id, after]
    )
    return [{**row, "payload": json.loads(row["payload"])} for row in rows]


def generation_requested_at(db: Database, session_id: str, round_number: int) -> str | None:
    """When the writer last asked for a round's suggestions: the server time of the round's
    latest ``line_submitted`` or ``suggestions_retried`` event (None when there is none)."""
    rows = list(
        db.query(
            "SELECT server_time FROM events WHERE session_id = ?"
            " AND type IN ('line_submitted', 'suggestions_retried')"
            " AND json_extract(payload, '$.round') = ? ORDER BY seq DESC LIMIT 1",
            [session_id, round_number],
        )
    )
    return rows[0]["server_time"] if rows else None


def seconds_since(stamp: str, at: str | None = None) -> float:
    """Seconds from the server time ``stamp`` to ``at`` (default: now)."""
    return (_parse_time(at or now()) - _parse_time(stamp)).total_seconds()


def find_action(db: Database, session_id: str, client_action_id: str) -> dict[str, Any] | None:
    """The event already recorded for a client's action id, if any (makes resends no-ops)."""
    rows = list(
        db.query(
            "SELECT * FROM events WHERE session_id = ? AND client_action_id = ?",
            [session_id, client_action_id],
        )
    )
    return {**rows[0], "payload": json.loads(rows[0]["payload"])} if rows else None


def _insert_event(
    db: Database,
    session_id: str,
    seq: int,
    event_type: str,
    payload: dict[str, Any],
    stamp: str,
    client_action_id: str | None,
) -> None:
    db["events"].insert(
        {
            "session_id": session_id,
            "seq": seq,
            "type": event_type,
            "payload": json.dumps(payload, ensure_ascii=False, sort_keys=True),
            "server_time": stamp,
            "client_action_id": client_action_id,
        }
    )


def record_event(
    db: Database,
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
    """Append one event and update the researcher tables from it. Call inside
    :func:`write_transaction`. ``extra`` carries data that is not part of the event but
    belongs in the tables (e.g. the survey's question texts). Returns the server time."""
    stamp = now()
    sid = session["id"]
    _insert_event(db, sid, seq, event_type, payload, stamp, client_action_id)
    updates: dict[str, Any] = {"phase": phase, "current_round": current_round, "updated_at": stamp}
    rnd = payload.get("round")
    key = (sid, rnd)
    if event_type == "line_submitted":
        slots = payload["slot_systems"]
        models = payload["slot_models"]
        db["rounds"].update(
            key,
            {
                "writer_line": payload["text"],
                "slot1_system": slots[0],
                "slot1_model": models[0],
                "slot2_system": slots[1],
                "slot2_model": models[1],
                "line_submitted_at": stamp,
            },
        )
    elif event_type in ("suggestion_completed", "suggestion_failed"):
        db["suggestions"].insert(
            {
                "session_id": sid,
                "round": rnd,
                "slot": payload["slot"],
                "attempt": payload.get("attempt", 1),
                "system": payload["system"],
                "model": payload.get("model"),
                "model_version": payload.get("model_version"),
                "weights_file": payload.get("weights_file"),
                "sampling": json.dumps(payload.get("sampling", {}), sort_keys=True),
                "seed": payload.get("seed"),
                "status": "done" if event_type == "suggestion_completed" else "failed",
                "text": payload.get("text"),
                "raw_text": payload.get("raw_text"),
                "error": payload.get("error"),
                "generation_seconds": payload.get("generation_seconds"),
                "first_token_seconds": payload.get("first_token_seconds"),
                "token_count": payload.get("token_count"),
                "created_at": stamp,
                # Only a live study knows how long its writer waited (not an import).
                **{k: payload[k] for k in ("waited_seconds",) if k in payload},
            }
        )
        if phase == "choosing":
            failed = payload.get("one_suggestion_only", 0)
            db["rounds"].update(key, {"suggestions_ready_at": stamp, "one_suggestion_only": failed})
    elif event_type == "suggestion_chosen":
        db["choices"].insert(
            {
                "session_id": sid,
                "round": rnd,
                "event_seq": seq,
                "slot": payload["slot"],
                "system": (extra or {})["system"],
                "is_switch": int(payload["switch"]),
                "chosen_at": stamp,
            }
        )
        if not payload["switch"]:
            db["rounds"].update(key, {"first_choice_at": stamp, "switches": 0})
        else:
            db.execute(
                "UPDATE rounds SET switches = switches + 1 WHERE session_id = ? AND round = ?",
                [sid, rnd],
            )
    elif event_type == "turn_submitted":
        e = extra or {}
        db["rounds"].update(
            key,
            {
                "chosen_slot": payload["slot"],
                "chosen_system": e["system"],
                "chosen_model": e["model"],
                "chosen_suggestion": e["suggestion"],
                "final_text": payload["text"],
                "turn_submitted_at": stamp,
            },
        )
        if phase == "writing":
            db["rounds"].insert(_new_round(db, sid, current_round, stamp))
    elif event_type == "survey_submitted":
        questions = (extra or {})["questions"]
        for item_id, value in payload.items():
            kind, question, labels = questions[item_id]
            db["survey_answers"].insert(
                {
                    "session_id": sid,
                    "item_id": item_id,
                    "kind": kind,
                    "question": question,
                    "value": value if kind == "likert" else None,
                    "label": labels[value - 1] if kind == "likert" else None,
                    "text": value if kind == "open" else None,
                    "answered_at": stamp,
                }
            )
        updates["finished_at"] = stamp
    db["sessions"].update(sid, updates)
    return stamp


def _new_round(db: Database, session_id: str, number: int, stamp: str) -> dict[str, Any]:
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
    db: Database,
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
    (default: now). Runs in its own ``BEGIN IMMEDIATE`` transaction, so two workers cannot
    both take the same claim.
    """
    stamp = at or now()
    key = [session_id, round_number, slot, attempt]
    with write_transaction(db):
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
            db["generation_claims"].upsert(
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
    db: Database,
    session_id: str,
    round_number: int,
    slot: int,
    attempt: int,
    worker_id: str,
    at: str | None = None,
) -> bool:
    """Record that ``worker_id`` is still generating the claimed slot. False when the claim
    is no longer this worker's (another worker took it over as stale): stop generating."""
    with write_transaction(db):
        cursor = db.execute(
            "UPDATE generation_claims SET heartbeat_at = ?"
            " WHERE session_id = ? AND round = ? AND slot = ? AND attempt = ? AND worker_id = ?",
            [at or now(), session_id, round_number, slot, attempt, worker_id],
        )
    return cursor.rowcount == 1


# --- researchers and reporting ----------------------------------------------------------


def create_researcher(db: Database, name: str, password_hash: str) -> int:
    """Add a researcher account; raises ValueError if the name is taken."""
    with write_transaction(db):
        if get_researcher(db, name) is not None:
            raise ValueError(f"A researcher named '{name}' exists already.")
        return (
            db["researchers"]
            .insert({"name": name, "password_hash": password_hash, "created_at": now()})
            .last_pk
        )


def get_researcher(db: Database, name: str) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM researchers WHERE name = ?", [name]))
    return rows[0] if rows else None


def get_researcher_by_id(db: Database, researcher_id: int) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM researchers WHERE id = ?", [researcher_id]))
    return rows[0] if rows else None


def get_evaluation_details(db: Database, exp_id: str) -> dict[str, Any]:
    """What the researcher entered for the evaluation card (empty strings if nothing)."""
    rows = list(db.query("SELECT * FROM evaluation_details WHERE experiment_id = ?", [exp_id]))
    row = rows[0] if rows else {}
    return {
        "experiment_id": exp_id,
        "pay": row.get("pay") or "",
        "qualifications": row.get("qualifications") or "",
        "updated_at": row.get("updated_at"),
        "updated_by": row.get("updated_by"),
    }


def set_evaluation_details(
    db: Database, exp_id: str, *, pay: str, qualifications: str, researcher: str
) -> None:
    with write_transaction(db):
        db["evaluation_details"].upsert(
            {
                "experiment_id": exp_id,
                "pay": pay,
                "qualifications": qualifications,
                "updated_at": now(),
                "updated_by": researcher,
            },
            pk="experiment_id",
        )


# --- rating studies with people ----------------------------------------------------------


def rating_rows(db: Database, exp_id: str, table: str) -> list[dict[str, Any]]:
    """Every row of one of a rating experiment's tables (``stories``, ``raters``,
    ``assignments``, ``instrument_items``), in key order."""
    if table not in ("stories", "raters", "assignments", "instrument_items"):
        raise ValueError(f"{table} is not a rating experiment's table.")
    keys = {
        "stories": "story_id",
        "raters": "rater_id",
        "assignments": "rater_id, position",
        "instrument_items": "position",
    }
    return list(
        db.query(f"SELECT * FROM {table} WHERE experiment_id = ? ORDER BY {keys[table]}", [exp_id])
    )


def create_rater(
    db: Database,
    exp_id: str,
    rater_id: str,
    participant: dict[str, str],
    completion_code: str,
    user_agent: str,
    first_event: dict[str, Any],
) -> None:
    """A new rater and their first event (``rater_started``, with their stories): call inside
    :func:`write_transaction`."""
    stamp = now()
    db["raters"].insert(
        {
            "experiment_id": exp_id,
            "rater_id": rater_id,
            "external_id": participant["external_id"],
            "id_source": participant["id_source"],
            "study_id": participant.get("study_id") or None,
            "platform_session_id": participant.get("platform_session_id") or None,
            "created_at": stamp,
            "completion_code": completion_code,
            "user_agent": user_agent[:300],
            "phase": "rating",
            "started_at": stamp,
            "updated_at": stamp,
        }
    )
    record_rating_event(db, exp_id, rater_id, 1, "rater_started", first_event, phase="rating")


def find_rater(db: Database, exp_id: str, external_id: str) -> dict[str, Any] | None:
    """The rater of ``exp_id`` with this platform id, if any."""
    rows = list(
        db.query(
            "SELECT * FROM raters WHERE experiment_id = ? AND external_id = ?",
            [exp_id, external_id],
        )
    )
    return rows[0] if rows else None


def get_rater(db: Database, exp_id: str, rater_id: str) -> dict[str, Any] | None:
    rows = list(
        db.query(
            "SELECT * FROM raters WHERE experiment_id = ? AND rater_id = ?", [exp_id, rater_id]
        )
    )
    return rows[0] if rows else None


def mark_rater_seen(db: Database, exp_id: str, rater_id: str) -> bool:
    """Set an unfinished rater's ``updated_at`` to now, as their page says they are still
    reading (no event is recorded); False when there is no such rater or they finished."""
    cursor = db.execute(
        "UPDATE raters SET updated_at = ? WHERE experiment_id = ? AND rater_id = ?"
        " AND phase != 'done'",
        [now(), exp_id, rater_id],
    )
    return cursor.rowcount > 0


def load_rating_events(db: Database, exp_id: str, rater_id: str) -> list[dict[str, Any]]:
    """A rater's events in order, payloads decoded."""
    rows = db.query(
        "SELECT * FROM rating_events WHERE experiment_id = ? AND rater_id = ? ORDER BY seq",
        [exp_id, rater_id],
    )
    return [{**row, "payload": json.loads(row["payload"])} for row in rows]


def find_rating_action(
    db: Database, exp_id: str, rater_id: str, client_action_id: str
) -> dict[str, Any] | None:
    """The event a rater's action (by its id) recorded, if it was recorded."""
    rows = list(
        db.query(
            "SELECT * FROM rating_events WHERE experiment_id = ? AND rater_id = ?"
            " AND client_action_id = ?",
            [exp_id, rater_id, client_action_id],
        )
    )
    return {**rows[0], "payload": json.loads(rows[0]["payload"])} if rows else None


def record_rating_event(
    db: Database,
    exp_id: str,
    rater_id: str,
    seq: int,
    event_type: str,
    payload: dict[str, Any],
    *,
    phase: str,
    client_action_id: str | None = None,
    check: dict[str, Any] | None = None,
) -> str:
    """Append one of a rater's events and update the tables written from it (``raters``,
    ``assignments``, ``judgements``, ``check_answers``) in the same transaction: call inside
    :func:`write_transaction`. ``check`` (for an answer to an attention check) carries
    whether it was right. Returns the server time."""
    stamp = now()
    db["rating_events"].insert(
        {
            "experiment_id": exp_id,
            "rater_id": rater_id,
            "seq": seq,
            "type": event_type,
            "payload": json.dumps(payload, ensure_ascii=False, sort_keys=True),
            "created_at": stamp,
            "client_action_id": client_action_id,
        }
    )
    key = {"experiment_id": exp_id, "rater_id": rater_id}
    if event_type == "rater_started":
        for position, story in enumerate(payload["stories"], start=1):
            db["assignments"].insert(
                {**key, "story_id": story["story"], "position": position, "assigned_at": stamp}
            )
    elif event_type == "story_shown":
        db.execute(
            "UPDATE assignments SET shown_at = ? WHERE experiment_id = ? AND rater_id = ?"
            " AND story_id = ? AND shown_at IS NULL",
            [stamp, exp_id, rater_id, payload["story"]],
        )
    elif event_type == "answer_given" and check is not None:
        value = payload["value"]
        db["check_answers"].upsert(
            {
                **key,
                "story_id": payload["story"],
                "check_id": payload["item"],
                "value": value if isinstance(value, float) else None,
                "correct": int(check["correct"]),
                "answered_at": stamp,
            },
            pk=("experiment_id", "rater_id", "story_id", "check_id"),
        )
    elif event_type == "answer_given":
        shown = db.execute(
            "SELECT shown_at FROM assignments WHERE experiment_id = ? AND rater_id = ?"
            " AND story_id = ?",
            [exp_id, rater_id, payload["story"]],
        ).fetchone()
        value = payload["value"]
        db["judgements"].upsert(
            {
                **key,
                "story_id": payload["story"],
                "item_id": payload["item"],
                "value": None if isinstance(value, str) else value,
                "value_text": value if isinstance(value, str) else None,
                "rationale": payload.get("rationale"),
                "shown_at": shown[0] if shown else None,
                "answered_at": stamp,
                "recorded_at": stamp,
            },
            pk=("experiment_id", "rater_id", "story_id", "item_id"),
        )
    elif event_type == "story_finished":
        db.execute(
            "UPDATE assignments SET finished_at = ? WHERE experiment_id = ? AND rater_id = ?"
            " AND story_id = ?",
            [stamp, exp_id, rater_id, payload["story"]],
        )
    updates = {"phase": phase, "updated_at": stamp}
    if phase == "done":
        updates["finished_at"] = stamp
    db["raters"].update((exp_id, rater_id), updates)
    return stamp


# --- rating experiments made, copied and changed by researchers ---------------------------

# What a copy of a rating experiment takes along; raters, their events and answers stay, and
# so do the evaluation-card details (as for a copy of a co-writing experiment).
_RATING_COPIED = ("instruments", "instrument_items", "stories")


def cowriting_story_counts(db: Database) -> list[dict[str, Any]]:
    """Every co-writing experiment, by id, with how many of its sessions finished (each gives
    one story to rate): ``id``, ``title``, ``finished``."""
    return list(
        db.query(
            "SELECT e.id, e.title, (SELECT count(*) FROM sessions s WHERE s.experiment_id = e.id"
            " AND s.phase = 'done') AS finished FROM experiments e WHERE e.kind = 'cowriting'"
            " ORDER BY e.id"
        )
    )


def _rating_row(db: Database, exp_id: str) -> dict[str, Any]:
    row = get_experiment(db, exp_id)
    if row is None or row["kind"] != "rating":
        raise ValueError(f"There is no rating experiment '{exp_id}'.")
    return row


def clone_rating_experiment(db: Database, exp_id: str, new_id: str) -> None:
    """Store a copy of the rating experiment ``exp_id`` as ``new_id``, paused, in one
    transaction: its title and spec (with the new id), instrument and items, and stories
    (created now); not its raters, their events or answers, nor an imported experiment's
    ``import`` details (the copy is a study to run). Raises ValueError when ``exp_id`` is no
    rating experiment or ``new_id`` is taken."""
    stamp = now()
    with write_transaction(db):
        row = _rating_row(db, exp_id)
        stored = json.loads(row["spec"])
        spec = {**{k: v for k, v in stored.items() if k != "import"}, "id": new_id}
        _insert_experiment(db, new_id, row["title"], spec, "paused", "rating")
        for table in _RATING_COPIED:
            rows = list(db.query(f"SELECT * FROM {table} WHERE experiment_id = ?", [exp_id]))
            db[table].insert_all(
                {**copied, "experiment_id": new_id, **_fresh(table, stamp)} for copied in rows
            )


def _fresh(table: str, stamp: str) -> dict[str, Any]:
    """What a copied row of ``table`` gets anew: a story is created now, with its own alias
    (a rater of both studies cannot link them)."""
    return {"created_at": stamp, "alias": story_alias()} if table == "stories" else {}


def rating_edit_refusal(db: Database, exp_id: str) -> str:
    """Why the rating experiment ``exp_id`` cannot be edited now, as a sentence, or "" if it
    can: a rater has started (what a rater was given stays as it was), or it is open (no
    rater may start while it changes). ValueError when it is no rating experiment."""
    row = _rating_row(db, exp_id)
    started = db.execute("SELECT count(*) FROM raters WHERE experiment_id = ?", [exp_id])
    if started.fetchone()[0]:
        return (
            f"Raters have started '{exp_id}', so it can no longer be edited; clone it and edit "
            "the copy."
        )
    if row["status"] == "open":
        return (
            f"'{exp_id}' is open: pause it before editing, so that no rater starts while it "
            "changes."
        )
    return ""


def replace_rating_experiment(
    db: Database,
    exp_id: str,
    title: str,
    spec: dict[str, Any],
    *,
    instrument: dict[str, Any],
    items: list[dict[str, Any]],
    stories: list[dict[str, Any]],
) -> None:
    """Replace the rating experiment ``exp_id``'s title, spec, instrument, items and stories
    (rows as :func:`create_rating_experiment` takes them) in one transaction. Raises
    ValueError when it is no rating experiment or cannot be edited
    (:func:`rating_edit_refusal`)."""
    stamp = now()
    with write_transaction(db):
        refusal = rating_edit_refusal(db, exp_id)
        if refusal:
            raise ValueError(refusal)
        db.execute(
            "UPDATE experiments SET title = ?, spec = ?, updated_at = ? WHERE id = ?",
            [title, json.dumps(spec, sort_keys=True), stamp, exp_id],
        )
        for table in ("instrument_items", "instruments", "stories"):
            db.execute(f"DELETE FROM {table} WHERE experiment_id = ?", [exp_id])
        _insert_rating_design(db, exp_id, instrument, items, stories, stamp)
