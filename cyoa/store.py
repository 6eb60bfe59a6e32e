"""The database handle, the schema's migrations, and the rows both study kinds share
(experiments, researchers, evaluation details, plans).

Every module reaches the database through :func:`connect`, which hands out the data-access
layer :class:`cyoa.db.facade.Db` (docs/deployment.md, "PostgreSQL: how it is built"). SQLite's
migration chain (:data:`MIGRATIONS`, the version in ``PRAGMA user_version``) is the one part
that speaks SQLite itself: its steps run on a sqlite-utils ``Database`` over the connection of
the migrating transaction, so databases from every earlier version keep upgrading step by
step. PostgreSQL starts at the current schema (:func:`cyoa.db.schema.migrate_postgresql`).

Each study kind's own rows are written by its wing: :mod:`cyoa.cowriting.store` (sessions and
their events) and :mod:`cyoa.rating.store` (raters and their events). Every table and column is
described in docs/data-dictionary.md.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from cyoa.database_url import parse_database
from cyoa.db.engine import BUSY_TIMEOUT_SECONDS, check_reachable, engine_for, use_wal
from cyoa.db.facade import Db
from cyoa.db.schema import migrate_postgresql
from cyoa.db.transactions import write_transaction
from cyoa.errors import AnalysisError, SchemaError

if TYPE_CHECKING:
    # Imported where a migration runs: sqlite-utils imports pandas, which a process that
    # opens an up-to-date database does not need.
    from sqlite_utils import Database

__all__ = ["BUSY_TIMEOUT_SECONDS", "Db", "connect", "init_db", "now", "write_transaction"]

# Handles kept per process, by database; the least recently opened beyond this are closed
# (their idle connections; a holder may go on using one).
HANDLES_KEPT = 8
_handles: OrderedDict[str, Db] = OrderedDict()
_handles_lock = threading.Lock()


def now() -> str:
    """Server time as ISO 8601 UTC with milliseconds, e.g. 2026-11-21T12:00:00.123Z."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def connect(location: str | Path) -> Db:
    """The database at ``location`` (a SQLite path, or a URL: :mod:`cyoa.database_url`),
    one handle per process and database, shared by threads: each call borrows a pooled
    connection and gives it back, so a handle holds no transaction between calls, and the
    pool keeps its connections open from one unit of work to the next."""
    key = _handle_key(location)
    with _handles_lock:
        handle = _handles.get(key)
        if handle is None:
            handle = _handles[key] = Db(engine_for(parse_database(location)))
        _handles.move_to_end(key)
        while len(_handles) > HANDLES_KEPT:
            _handles.popitem(last=False)[1].dispose()
        return handle


def forget(location: str | Path) -> None:
    """Close this process's idle connections to the database at ``location`` and drop its
    handle, so the next :func:`connect` opens the database afresh: for a SQLite file that is
    about to be replaced (``restore``), whose old connections would go on reading the file
    they opened."""
    with _handles_lock:
        handle = _handles.pop(_handle_key(location), None)
    if handle is not None:
        handle.dispose()


def _handle_key(location: str | Path) -> str:
    """The database's key among the handles: a SQLite file's resolved path, or the URL."""
    return _resolved_key(str(location), os.getcwd())


@lru_cache(maxsize=1024)
def _resolved_key(location: str, cwd: str) -> str:
    """Remembered per location and working folder (a relative path depends on it): resolving
    a path asks the file system once per folder on the way, and every unit of work connects
    (about half a query's time)."""
    place = parse_database(location)
    return str(place.path.resolve()) if place.path is not None else str(place.url)


def init_db(db: Db) -> None:
    """Bring the database to :data:`SCHEMA_VERSION`, creating it when new. SQLite: WAL mode
    on, then the migrations it has not had (:func:`migrate`) inside one write transaction, so
    that of several worker processes starting at once one migrates while the others wait for
    the write lock, then find nothing left to do. PostgreSQL: the whole schema, once. A
    database that cannot be opened raises :class:`~cyoa.database_url.DatabaseSettingError`
    with a sentence (:func:`cyoa.db.engine.check_reachable`)."""
    check_reachable(db.engine)
    if db.dialect == "postgresql":
        migrate_postgresql(db.engine)
    else:
        use_wal(db.engine)
        with write_transaction(db):
            migrate(db)
    db.forget_tables()


def schema_version(db: Db) -> int:
    """The schema version a SQLite database records (``user_version``; 0 when new)."""
    return db.execute("PRAGMA user_version").fetchone()[0]


def sqlite_utils_database(db: Db) -> Database:
    """A sqlite-utils ``Database`` over the connection of ``db``'s current write transaction
    (SQLite only): what the migration steps are written in."""
    from sqlite_utils import Database

    conn = db.current_connection()
    if conn is None or db.dialect != "sqlite":
        raise RuntimeError("SQLite's migrations run inside write_transaction on SQLite.")
    return Database(conn.connection.driver_connection, execute_plugins=False)


def migrate(db: Db, migrations: Sequence[Callable[[Database], None]] | None = None) -> int:
    """Apply the migrations the SQLite database has not had yet, in order, and record the
    new version; returns it. Call inside :func:`write_transaction`: SQLite's schema changes
    are transactional, so a migration that fails leaves the database as it was.

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
    pending = steps[0 if version <= 1 else version :]
    if pending:
        legacy = sqlite_utils_database(db)
        for step in pending:
            step(legacy)
    db.execute(f"PRAGMA user_version = {len(steps)}")
    db.forget_tables()
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
    """The analysis cache of tagged sentences (:mod:`cyoa.cowriting.analysis.tag_cache`), if
    missing.
    Derived data: deleting its rows loses nothing but time."""
    if not db.table("sentence_tags").exists():
        db.table("sentence_tags").create(
            {"tagger": str, "sentence": str, "nouns": str, "verbs": str},
            pk=("tagger", "sentence"),
            not_null={"nouns", "verbs"},
        )


def ensure_sentence_tags(db: Db) -> None:
    """Create the ``sentence_tags`` cache in a SQLite database that lacks it (a database
    migrated by every version has it; PostgreSQL's schema always has it).
    :class:`sqlalchemy.exc.OperationalError` when it cannot (a busy or read-only file)."""
    if db.dialect == "sqlite":
        with write_transaction(db):
            try:
                create_sentence_tags(sqlite_utils_database(db))
            except sqlite3.OperationalError as error:
                raise sa.exc.OperationalError("CREATE TABLE sentence_tags", None, error) from error


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


def _sent_settings(db: Database) -> None:
    """Each suggestion records the sampling settings sent to the model server that wrote
    it (backend ``openai``), neutral ones included; NULL for a model run in-process."""
    db.execute("ALTER TABLE suggestions ADD COLUMN sent_settings TEXT")


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


def _item_lowest_points(db: Database) -> None:
    """A Likert item's lowest point (a 0–10 rubric starts at 0); items stored before it
    could be set started at 1."""
    db.execute("ALTER TABLE instrument_items ADD COLUMN low INTEGER")
    db.execute("UPDATE instrument_items SET low = 1 WHERE kind = 'likert'")


def _panels(db: Database) -> None:
    """Every rater of a rating experiment belongs to a panel: ``human`` for the study's raters
    and an imported panel of people (every rater so far), a judge's name for a model's
    verdicts, so that the human analysis reads the human panel only."""
    db.execute("ALTER TABLE raters ADD COLUMN panel TEXT NOT NULL DEFAULT 'human'")


def _judge_runs(db: Database) -> None:
    """Judge runs: a model card administering a rating experiment's instrument as the judge
    panel ``judge``, with what repeats it (model version, prompt templates, sampling, seed)
    and where it stands; its verdicts are that panel's ``judgements``
    (:mod:`cyoa.rating.judges.runs`)."""
    db["judge_runs"].create(
        {
            "experiment_id": str,
            "judge": str,
            "model": str,
            "model_version": str,
            "backend": str,
            "templates": str,
            "sampling": str,
            "seed": int,
            "concurrency": int,
            "story_limit": int,
            "items": str,
            "total": int,
            "state": str,
            "error": str,
            "worker": str,
            "estimate": str,
            "speed": str,
            "created_at": str,
            "updated_at": str,
        },
        pk=("experiment_id", "judge"),
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"model", "templates", "sampling", "seed", "state", "created_at"},
    )


def _round_judges(db: Database) -> None:
    """Judges of the writers' choices in a co-writing experiment: a model card shown each
    round's two suggestions in both orders (``round_judge_runs``: what repeats a run and where
    it stands; ``round_verdicts``: one verdict per round and order), see
    :mod:`cyoa.cowriting.judges.runs`."""
    db["round_judge_runs"].create(
        {
            "experiment_id": str,
            "judge": str,
            "model": str,
            "model_version": str,
            "backend": str,
            "template": str,
            "sampling": str,
            "seed": int,
            "round_limit": int,
            "total": int,
            "state": str,
            "error": str,
            "worker": str,
            "created_at": str,
            "updated_at": str,
        },
        pk=("experiment_id", "judge"),
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"model", "template", "sampling", "seed", "state", "created_at"},
    )
    db["round_verdicts"].create(
        {
            "experiment_id": str,
            "judge": str,
            "session_id": str,
            "round": int,
            "shown_order": str,
            "slot_a_system": str,
            "slot_b_system": str,
            "chosen_slot": str,
            "chosen_system": str,
            "response": str,
            "asked_at": str,
            "answered_at": str,
            "recorded_at": str,
        },
        pk=("experiment_id", "judge", "session_id", "round", "shown_order"),
        foreign_keys=[
            ("experiment_id", "experiments", "id"),
            ("session_id", "sessions", "id"),
        ],
        not_null={"shown_order", "slot_a_system", "slot_b_system", "response", "recorded_at"},
    )


def _plans(db: Database) -> None:
    """Sample-size plans made for an experiment (:mod:`cyoa.research.planning`), kept as a
    history: a new plan is a new row, and the latest is the experiment's plan."""
    db["plans"].create(
        {
            "id": int,
            "experiment_id": str,
            "created_at": str,
            "kind": str,
            "record": str,
            "text": str,
        },
        pk="id",
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"experiment_id", "created_at", "kind", "record", "text"},
    )
    db["plans"].create_index(["experiment_id", "id"])


def _stored_order(db: Database) -> None:
    """Stories and survey answers get a ``position``: their place in the order they were
    stored (a story within its experiment, an answer within its session), which both
    databases can sort by. Existing rows take it from SQLite's ``rowid``."""
    for table, owner in (("stories", "experiment_id"), ("survey_answers", "session_id")):
        db.execute(f"ALTER TABLE {table} ADD COLUMN position INTEGER")
        db.execute(
            f"UPDATE {table} SET position = (SELECT count(*) FROM {table} AS earlier"
            f" WHERE earlier.{owner} = {table}.{owner} AND earlier.rowid <= {table}.rowid)"
        )


def _database_moves(db: Database) -> None:
    """The moves by ``migrate-db`` that made this database (:mod:`cyoa.migrate_db`): each
    written with the copied rows, and its check's outcome written when the check ends, so a
    copy whose check never finished says so."""
    db["database_moves"].create(
        {
            "id": int,
            "source": str,
            "source_version": int,
            "copied_rows": int,
            "copied_at": str,
            "checked_at": str,
            "differences": int,
        },
        pk="id",
        not_null={"source", "source_version", "copied_rows", "copied_at"},
    )


def _pair_probabilities(db: Database) -> None:
    """Co-writing sessions get ``pair_probability``: the probability with which an adaptive
    pairing (:func:`cyoa.cowriting.assignment.adaptive_pair_probabilities`) drew the
    session's pair, the analysis's inverse-propensity weight. Empty for sessions paired by
    balance, and for every session stored before this step."""
    db.execute("ALTER TABLE sessions ADD COLUMN pair_probability FLOAT")


def _analyses(db: Database) -> None:
    """The dashboards' stored analyses (:mod:`cyoa.analyses`): ``analyses`` holds the latest
    analysis of each experiment and kind, as JSON, with the answers it counted and when it
    was computed; ``analysis_jobs`` holds the claim of the one computation under way per
    experiment and kind (its worker, heartbeat and step), or the last one that failed."""
    db["analyses"].create(
        {
            "experiment_id": str,
            "kind": str,
            "answers": int,
            "version": str,
            "computed_at": str,
            "seconds": float,
            "result": str,
        },
        pk=("experiment_id", "kind"),
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"answers", "version", "computed_at", "seconds", "result"},
    )
    db["analysis_jobs"].create(
        {
            "experiment_id": str,
            "kind": str,
            "state": str,
            "version": str,
            "worker_id": str,
            "started_at": str,
            "heartbeat_at": str,
            "step": str,
            "error": str,
        },
        pk=("experiment_id", "kind"),
        foreign_keys=[("experiment_id", "experiments", "id")],
        not_null={"state", "version", "worker_id", "started_at", "heartbeat_at"},
    )


def _text_operations(db: Database) -> None:
    """The keystroke record (:mod:`cyoa.cowriting.process`): ``text_operations`` holds one
    row per recorded event of a writer's page, a change of a box's text, a suggestion seen or
    focused, the tab hidden or the connection lost, numbered by the page from 1 within its
    session, so that a batch sent again stores nothing twice."""
    db["text_operations"].create(
        {
            "session_id": str,
            "seq": int,
            "round": int,
            "at_ms": int,
            "kind": str,
            "box": str,
            "slot": int,
            "position": int,
            "deleted": str,
            "inserted": str,
            "source": str,
            "received_at": str,
        },
        pk=("session_id", "seq"),
        foreign_keys=[("session_id", "sessions", "id")],
        not_null={"round", "at_ms", "kind", "source", "received_at"},
    )


# The schema's history: each step takes the database one version further (see migrate).
MIGRATIONS: tuple[Callable[[Database], None], ...] = (
    _version_1,
    _version_2,
    _rating_journeys,
    _suggestion_waits,
    _story_aliases,
    _item_lowest_points,
    _panels,
    _judge_runs,
    _round_judges,
    _plans,
    _stored_order,
    _sent_settings,
    _database_moves,
    _pair_probabilities,
    _analyses,
    _text_operations,
)
SCHEMA_VERSION = len(MIGRATIONS)


# --- experiments -------------------------------------------------------------------------


def upsert_experiment(db: Db, exp_id: str, title: str, spec: dict[str, Any]) -> None:
    """Store (or refresh) an experiment's spec; a new experiment starts ``open``."""
    stamp = now()
    existing = get_experiment(db, exp_id)
    with write_transaction(db, lock=("spec", exp_id)):
        db.upsert(
            "experiments",
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
    db: Db, exp_id: str, title: str, spec: dict[str, Any], status: str = "paused"
) -> None:
    """Store a new experiment (one a researcher creates); raises ValueError if the id is
    taken, so that a new spec never silently replaces one that writers may have used."""
    with write_transaction(db):
        insert_experiment(db, exp_id, title, spec, status, "cowriting")


def insert_experiment(
    db: Db, exp_id: str, title: str, spec: dict[str, Any], status: str, kind: str
) -> None:
    """A new experiment's row, inside the caller's transaction; ValueError for an unknown
    status or a taken id."""
    if status not in EXPERIMENT_STATUSES:
        raise ValueError(f"status must be one of {', '.join(EXPERIMENT_STATUSES)}.")
    if get_experiment(db, exp_id) is not None:
        raise ValueError(f"An experiment with the id '{exp_id}' exists already.")
    stamp = now()
    db.insert(
        "experiments",
        {
            "id": exp_id,
            "title": title,
            "status": status,
            "spec": json.dumps(spec, sort_keys=True),
            "created_at": stamp,
            "updated_at": stamp,
            "kind": kind,
        },
    )


def set_experiment_status(db: Db, exp_id: str, status: str) -> None:
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


def open_if_paused(db: Db, exp_id: str) -> bool:
    """Open the experiment if it is paused (in one statement, so that a pause or close made
    meanwhile is never overwritten); whether it was opened."""
    with write_transaction(db):
        cursor = db.execute(
            "UPDATE experiments SET status = 'open', updated_at = ? WHERE id = ?"
            " AND status = 'paused'",
            [now(), exp_id],
        )
        return cursor.rowcount == 1


# Ids an experiment may not take: /research/experiments/new and /research/ratings/new are
# the forms for a new one.
RESERVED_IDS = ("new",)


def get_experiment(db: Db, exp_id: str) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM experiments WHERE id = ?", [exp_id]))
    return rows[0] if rows else None


def experiment_row(db: Db, experiment: str) -> dict[str, Any]:
    """The stored row of ``experiment``; :class:`AnalysisError` naming the known ones if none."""
    row = get_experiment(db, experiment)
    if row is None:
        known = ", ".join(r["id"] for r in db.query("SELECT id FROM experiments ORDER BY id"))
        raise AnalysisError(
            f"There is no experiment '{experiment}' in this database "
            f"(experiments: {known or 'none'}). Check the name, or pass --db."
        )
    return row


# --- researchers and reporting -----------------------------------------------------------


def create_researcher(db: Db, name: str, password_hash: str) -> int:
    """Add a researcher account; raises ValueError if the name is taken."""
    with write_transaction(db):
        if get_researcher(db, name) is not None:
            raise ValueError(f"A researcher named '{name}' exists already.")
        return db.insert(
            "researchers", {"name": name, "password_hash": password_hash, "created_at": now()}
        )


def get_researcher(db: Db, name: str) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM researchers WHERE name = ?", [name]))
    return rows[0] if rows else None


def get_researcher_by_id(db: Db, researcher_id: int) -> dict[str, Any] | None:
    rows = list(db.query("SELECT * FROM researchers WHERE id = ?", [researcher_id]))
    return rows[0] if rows else None


def get_evaluation_details(db: Db, exp_id: str) -> dict[str, Any]:
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
    db: Db, exp_id: str, *, pay: str, qualifications: str, researcher: str
) -> None:
    with write_transaction(db):
        db.upsert(
            "evaluation_details",
            {
                "experiment_id": exp_id,
                "pay": pay,
                "qualifications": qualifications,
                "updated_at": now(),
                "updated_by": researcher,
            },
            pk="experiment_id",
        )


# --- plans -------------------------------------------------------------------------------


def insert_plan(db: Db, exp_id: str, kind: str, record: dict[str, Any], text: str) -> int:
    """Store a plan made for ``exp_id`` (its structured ``record`` as JSON, and its ``text``)
    and return its id. Plans are never changed: the latest is the experiment's plan."""
    with write_transaction(db):
        return db.insert(
            "plans",
            {
                "experiment_id": exp_id,
                "created_at": now(),
                "kind": kind,
                "record": json.dumps(record, ensure_ascii=False),
                "text": text,
            },
        )


def latest_plan(db: Db, exp_id: str) -> dict[str, Any] | None:
    """The latest plan stored for ``exp_id`` (``id``, ``created_at``, ``kind``, ``record``
    as a dict, ``text``), or None when none was made."""
    rows = list(db.query(
        "SELECT * FROM plans WHERE experiment_id = ? ORDER BY id DESC LIMIT 1", [exp_id]
    ))  # fmt: skip
    if not rows:
        return None
    return {**rows[0], "record": json.loads(rows[0]["record"])}
