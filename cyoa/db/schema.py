"""CYOA's schema as SQLAlchemy MetaData: the tables cyoa/store.py's SQLite migrations build
(every table and column is described in docs/data-dictionary.md), and the step that creates
them on PostgreSQL.

SQLite databases keep their own chain (``cyoa.store.MIGRATIONS``, version in ``PRAGMA
user_version``). A PostgreSQL database starts at :data:`VERSION`, the length of that chain,
created whole from :data:`METADATA`, its version in the table ``schema_version``.
tests/db/test_db_schema.py compares this MetaData with a freshly migrated SQLite database
(tables, columns and their type affinities, keys, indexes), so the two cannot drift: a new
SQLite migration fails that test until this file says the same.

Integers are ``BIGINT`` (SQLite's INTEGER holds 64 bits); texts ``TEXT``; fractions ``FLOAT``
(double precision).
"""

from __future__ import annotations

import sqlalchemy as sa

from cyoa.db.facade import Db
from cyoa.errors import SchemaError

VERSION = 16

METADATA = sa.MetaData()
TEXT, INT, FLOAT = sa.Text, sa.BigInteger, sa.Float


def _column(name: str, kind: type, *args: object, **kwargs: object) -> sa.Column:
    return sa.Column(name, kind, *args, nullable=not kwargs.pop("required", False), **kwargs)


def _columns(spec: str, kind: type) -> list[sa.Column]:
    """Nullable columns of one type from a space-separated list of names."""
    return [sa.Column(name, kind) for name in spec.split()]


def _key(name: str, kind: type = TEXT, *args: object) -> sa.Column:
    return sa.Column(name, kind, *args, primary_key=True)


def _fk(table: str, *columns: str) -> sa.ForeignKeyConstraint:
    """A composite foreign key to the same-named key columns of ``table``."""
    return sa.ForeignKeyConstraint(list(columns), [f"{table}.{c}" for c in columns])


def _partial_unique(name: str, *columns: str, where: str) -> sa.Index:
    condition = sa.text(where)
    return sa.Index(name, *columns, unique=True, sqlite_where=condition, postgresql_where=condition)


def _to(table: str) -> sa.ForeignKey:
    """A reference to ``table``'s ``id`` (each column needs its own)."""
    return sa.ForeignKey(f"{table}.id")


sa.Table(
    "experiments", METADATA,
    _key("id"),
    _column("title", TEXT, required=True),
    _column("status", TEXT, required=True),
    _column("spec", TEXT, required=True),
    *_columns("created_at updated_at", TEXT),
    _column("kind", TEXT, required=True, server_default="cowriting"),
)  # fmt: skip
sa.Table(
    "participants", METADATA,
    _key("id", INT),
    _column("experiment_id", TEXT, _to("experiments"), required=True),
    _column("external_id", TEXT, required=True),
    _column("id_source", TEXT, required=True),
    *_columns("study_id platform_session_id created_at", TEXT),
    sa.Index(
        "idx_participants_experiment_id_external_id", "experiment_id", "external_id",
        unique=True,
    ),
)  # fmt: skip
sa.Table(
    "sessions", METADATA,
    _key("id"),
    _column("experiment_id", TEXT, _to("experiments"), required=True),
    _column("participant_id", INT, _to("participants"), required=True),
    *_columns("system_a system_b", TEXT),
    _column("phase", TEXT, required=True),
    _column("current_round", INT),
    _column("completion_code", TEXT, required=True),
    *_columns("started_at updated_at finished_at user_agent", TEXT),
    _column("pair_probability", FLOAT),
    sa.Index("idx_sessions_completion_code", "completion_code", unique=True),
)  # fmt: skip
sa.Table(
    "events", METADATA,
    _key("session_id", TEXT, _to("sessions")),
    _key("seq", INT),
    _column("type", TEXT, required=True),
    _column("payload", TEXT, required=True),
    _column("server_time", TEXT, required=True),
    _column("client_action_id", TEXT),
    _partial_unique(
        "idx_events_client_action", "session_id", "client_action_id",
        where="client_action_id IS NOT NULL",
    ),
)  # fmt: skip
sa.Table(
    "rounds", METADATA,
    _key("session_id", TEXT, _to("sessions")),
    _key("round", INT),
    _column("experiment_id", TEXT),
    _column("participant_id", INT),
    *_columns("writer_line slot1_system slot1_model slot2_system slot2_model", TEXT),
    *_columns("one_suggestion_only chosen_slot", INT),
    *_columns("chosen_system chosen_model chosen_suggestion final_text", TEXT),
    _column("switches", INT),
    *_columns(
        "round_started_at line_submitted_at suggestions_ready_at first_choice_at"
        " turn_submitted_at",
        TEXT,
    ),
)  # fmt: skip
sa.Table(
    "suggestions", METADATA,
    _key("session_id", TEXT, _to("sessions")),
    _key("round", INT),
    _key("slot", INT),
    _key("attempt", INT),
    *_columns("system model model_version weights_file sampling", TEXT),
    _column("seed", INT),
    *_columns("status text raw_text error", TEXT),
    *_columns("generation_seconds first_token_seconds", FLOAT),
    _column("token_count", INT),
    _column("created_at", TEXT),
    _column("waited_seconds", FLOAT),
    _column("sent_settings", TEXT),
)  # fmt: skip
sa.Table(
    "choices", METADATA,
    _key("session_id", TEXT, _to("sessions")),
    _column("round", INT),
    _key("event_seq", INT),
    _column("slot", INT),
    _column("system", TEXT),
    _column("is_switch", INT),
    _column("chosen_at", TEXT),
)  # fmt: skip
sa.Table(
    "survey_answers", METADATA,
    _key("session_id", TEXT, _to("sessions")),
    _key("item_id"),
    *_columns("kind question", TEXT),
    _column("value", INT),
    *_columns("label text answered_at", TEXT),
    _column("position", INT),
)  # fmt: skip
sa.Table(
    "researchers", METADATA,
    _key("id", INT),
    _column("name", TEXT, required=True),
    _column("password_hash", TEXT, required=True),
    _column("created_at", TEXT),
    sa.Index("idx_researchers_name", "name", unique=True),
)  # fmt: skip
sa.Table(
    "evaluation_details", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    *_columns("pay qualifications updated_at updated_by", TEXT),
)  # fmt: skip
sa.Table(
    "generation_claims", METADATA,
    _key("session_id", TEXT, _to("sessions")),
    _key("round", INT),
    _key("slot", INT),
    _key("attempt", INT),
    _column("worker_id", TEXT, required=True),
    _column("claimed_at", TEXT, required=True),
    _column("heartbeat_at", TEXT, required=True),
)  # fmt: skip
sa.Table(
    "sentence_tags", METADATA,
    _key("tagger"),
    _key("sentence"),
    _column("nouns", TEXT, required=True),
    _column("verbs", TEXT, required=True),
)  # fmt: skip
sa.Table(
    "stories", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("story_id"),
    _column("source", TEXT, required=True),
    *_columns("title text url origin", TEXT),
    _column("created_at", TEXT, required=True),
    *_columns("family alias", TEXT),
    _column("position", INT),
)  # fmt: skip
sa.Table(
    "instruments", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _column("instrument_id", TEXT, required=True),
    _column("name", TEXT, required=True),
    *_columns("version reference attribution instructions", TEXT),
    _column("definition", TEXT, required=True),
)  # fmt: skip
sa.Table(
    "instrument_items", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("item_id"),
    _column("position", INT, required=True),
    _column("kind", TEXT, required=True),
    _column("text", TEXT, required=True),
    _column("points", INT),
    _column("labels", TEXT),
    _column("reverse", INT, required=True),
    *_columns("factor category context", TEXT),
    _column("rationale", INT, required=True),
    *_columns("fei_kind story_id", TEXT),
    _column("low", INT),
)  # fmt: skip
sa.Table(
    "raters", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("rater_id"),
    *_columns("external_id id_source", TEXT),
    _column("created_at", TEXT, required=True),
    *_columns(
        "study_id platform_session_id completion_code user_agent phase started_at updated_at"
        " finished_at",
        TEXT,
    ),
    _column("panel", TEXT, required=True, server_default="human"),
)  # fmt: skip
sa.Table(
    "judgements", METADATA,
    _column("experiment_id", TEXT, _to("experiments"), required=True),
    _column("story_id", TEXT, required=True),
    _column("rater_id", TEXT, required=True),
    _column("item_id", TEXT, required=True),
    _column("value", FLOAT),
    *_columns("value_text rationale shown_at answered_at", TEXT),
    _column("recorded_at", TEXT, required=True),
    sa.PrimaryKeyConstraint("experiment_id", "rater_id", "story_id", "item_id"),
    _fk("stories", "experiment_id", "story_id"),
    _fk("raters", "experiment_id", "rater_id"),
    sa.Index("judgements_by_story", "experiment_id", "story_id", "item_id"),
)  # fmt: skip
sa.Table(
    "rating_events", METADATA,
    _key("experiment_id"),
    _key("rater_id"),
    _key("seq", INT),
    _column("type", TEXT, required=True),
    _column("payload", TEXT, required=True),
    _column("created_at", TEXT, required=True),
    _column("client_action_id", TEXT),
    _fk("raters", "experiment_id", "rater_id"),
    _partial_unique(
        "rating_events_action", "experiment_id", "rater_id", "client_action_id",
        where="client_action_id IS NOT NULL",
    ),
)  # fmt: skip
sa.Table(
    "assignments", METADATA,
    _key("experiment_id"),
    _key("rater_id"),
    _key("story_id"),
    _column("position", INT, required=True),
    _column("assigned_at", TEXT, required=True),
    *_columns("shown_at finished_at", TEXT),
    _fk("raters", "experiment_id", "rater_id"),
    _fk("stories", "experiment_id", "story_id"),
)  # fmt: skip
sa.Table(
    "check_answers", METADATA,
    _key("experiment_id"),
    _key("rater_id"),
    _key("story_id"),
    _key("check_id"),
    _column("value", FLOAT),
    _column("correct", INT, required=True),
    _column("answered_at", TEXT, required=True),
    _fk("raters", "experiment_id", "rater_id"),
)  # fmt: skip
sa.Table(
    "judge_runs", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("judge"),
    _column("model", TEXT, required=True),
    *_columns("model_version backend", TEXT),
    _column("templates", TEXT, required=True),
    _column("sampling", TEXT, required=True),
    _column("seed", INT, required=True),
    *_columns("concurrency story_limit", INT),
    _column("items", TEXT),
    _column("total", INT),
    _column("state", TEXT, required=True),
    *_columns("error worker estimate speed", TEXT),
    _column("created_at", TEXT, required=True),
    _column("updated_at", TEXT),
)  # fmt: skip
sa.Table(
    "round_judge_runs", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("judge"),
    _column("model", TEXT, required=True),
    *_columns("model_version backend", TEXT),
    _column("template", TEXT, required=True),
    _column("sampling", TEXT, required=True),
    _column("seed", INT, required=True),
    *_columns("round_limit total", INT),
    _column("state", TEXT, required=True),
    *_columns("error worker", TEXT),
    _column("created_at", TEXT, required=True),
    _column("updated_at", TEXT),
)  # fmt: skip
sa.Table(
    "round_verdicts", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("judge"),
    _key("session_id", TEXT, _to("sessions")),
    _key("round", INT),
    _key("shown_order"),
    _column("slot_a_system", TEXT, required=True),
    _column("slot_b_system", TEXT, required=True),
    *_columns("chosen_slot chosen_system", TEXT),
    _column("response", TEXT, required=True),
    *_columns("asked_at answered_at", TEXT),
    _column("recorded_at", TEXT, required=True),
)  # fmt: skip
sa.Table(
    "plans", METADATA,
    _key("id", INT),
    _column("experiment_id", TEXT, _to("experiments"), required=True),
    _column("created_at", TEXT, required=True),
    _column("kind", TEXT, required=True),
    _column("record", TEXT, required=True),
    _column("text", TEXT, required=True),
    sa.Index("idx_plans_experiment_id_id", "experiment_id", "id"),
)  # fmt: skip
sa.Table(
    "database_moves", METADATA,
    _key("id", INT),
    _column("source", TEXT, required=True),
    _column("source_version", INT, required=True),
    _column("copied_rows", INT, required=True),
    _column("copied_at", TEXT, required=True),
    _column("checked_at", TEXT),
    _column("differences", INT),
)  # fmt: skip
sa.Table(
    "analyses", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("kind"),
    _column("answers", INT, required=True),
    _column("version", TEXT, required=True),
    _column("computed_at", TEXT, required=True),
    _column("seconds", FLOAT, required=True),
    _column("result", TEXT, required=True),
)  # fmt: skip
sa.Table(
    "analysis_jobs", METADATA,
    _key("experiment_id", TEXT, _to("experiments")),
    _key("kind"),
    _column("state", TEXT, required=True),
    _column("version", TEXT, required=True),
    _column("worker_id", TEXT, required=True),
    _column("started_at", TEXT, required=True),
    _column("heartbeat_at", TEXT, required=True),
    *_columns("step error", TEXT),
)  # fmt: skip
ANALYSES = ("analyses", "analysis_jobs")
sa.Table(
    "text_operations", METADATA,
    _key("session_id", TEXT, _to("sessions")),
    _key("seq", INT),
    _column("round", INT, required=True),
    _column("at_ms", INT, required=True),
    _column("kind", TEXT, required=True),
    _column("box", TEXT),
    _column("slot", INT),
    _column("position", INT),
    *_columns("deleted inserted", TEXT),
    _column("source", TEXT, required=True),
    _column("received_at", TEXT, required=True),
)  # fmt: skip
SCHEMA_VERSION = sa.Table("schema_version", METADATA, _column("version", sa.Integer, required=True))


def migrate_postgresql(engine: sa.Engine) -> int:
    """Bring a PostgreSQL database to :data:`VERSION`, creating the schema when new; returns
    the version. Workers that start at once wait for one another on an advisory lock, and
    PostgreSQL's DDL is transactional: one creates the schema, the others find it there. An
    older database is brought up one :data:`STEPS` step at a time; one older than the first
    step, or newer than this code, is refused with a sentence (:class:`SchemaError`)."""
    with engine.begin() as conn:
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtextextended('cyoa-migrate', 0))"))
        SCHEMA_VERSION.create(conn, checkfirst=True)
        version = conn.execute(sa.select(SCHEMA_VERSION.c.version)).scalar() or 0
        if version == 0:
            METADATA.create_all(conn)
            conn.execute(SCHEMA_VERSION.insert().values(version=VERSION))
            return VERSION
    if version > VERSION:
        raise SchemaError(
            f"This database has schema version {version}, newer than this CYOA's "
            f"({VERSION}). Update CYOA (git pull) before using it."
        )
    if version < min(STEPS, default=VERSION):
        raise SchemaError(
            f"This PostgreSQL database has schema version {version}, and this CYOA "
            f"({VERSION}) has no migration from it: copy the study out with the CYOA that "
            "wrote it."
        )
    for step in range(version, VERSION):
        with engine.begin() as conn:
            conn.execute(
                sa.text("SELECT pg_advisory_xact_lock(hashtextextended('cyoa-migrate', 0))")
            )
            if conn.execute(sa.select(SCHEMA_VERSION.c.version)).scalar() != step:
                continue  # another worker took this step meanwhile
            STEPS[step](conn)
            conn.execute(SCHEMA_VERSION.update().values(version=step + 1))
    return VERSION


def continue_sequences(db: Db) -> None:
    """Set the sequence behind each integer key of a PostgreSQL database past the largest key
    stored, so that the next row inserted after rows copied with their own keys gets a new
    one (``setval``; an empty table starts at 1). SQLite needs nothing: its next key is
    always one past the largest."""
    if db.dialect != "postgresql":
        return
    for table in METADATA.sorted_tables:
        column = table.autoincrement_column
        if column is None:
            continue
        db.execute(
            f"SELECT setval(pg_get_serial_sequence(?, ?), coalesce(max({column.name}), 0) + 1,"
            f" false) FROM {table.name}",
            [table.name, column.name],
        )


def _stored_order(conn: sa.Connection) -> None:
    """Version 10 → 11: stories and survey answers get a ``position`` (SQLite's
    ``_stored_order``). PostgreSQL keeps no insertion order, so existing rows are numbered
    in key order."""
    for table, owner, key in (
        ("stories", "experiment_id", "story_id"),
        ("survey_answers", "session_id", "item_id"),
    ):
        conn.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN position BIGINT"))
        conn.execute(
            sa.text(
                f"UPDATE {table} SET position = numbered.n FROM (SELECT {owner}, {key},"
                f" row_number() OVER (PARTITION BY {owner} ORDER BY {key}) AS n"
                f" FROM {table}) AS numbered WHERE numbered.{owner} = {table}.{owner}"
                f" AND numbered.{key} = {table}.{key}"
            )
        )


def _sent_settings(conn: sa.Connection) -> None:
    """Version 11 → 12: each suggestion records the sampling settings sent to its model
    server (SQLite's ``_sent_settings``); existing rows have none."""
    conn.execute(sa.text("ALTER TABLE suggestions ADD COLUMN sent_settings TEXT"))


def _database_moves(conn: sa.Connection) -> None:
    """Version 12 → 13: the ``database_moves`` table (SQLite's ``_database_moves``)."""
    METADATA.tables["database_moves"].create(conn, checkfirst=True)


def _pair_probabilities(conn: sa.Connection) -> None:
    """Version 13 → 14: ``sessions.pair_probability`` (SQLite's ``_pair_probabilities``)."""
    conn.execute(sa.text("ALTER TABLE sessions ADD COLUMN pair_probability DOUBLE PRECISION"))


def _analyses(conn: sa.Connection) -> None:
    """Version 14 → 15: the dashboards' stored analyses and their jobs (SQLite's
    ``_analyses``)."""
    for name in ANALYSES:
        METADATA.tables[name].create(conn, checkfirst=True)


def _text_operations(conn: sa.Connection) -> None:
    """Version 15 → 16: the keystroke record's ``text_operations`` (SQLite's
    ``_text_operations``)."""
    METADATA.tables["text_operations"].create(conn, checkfirst=True)


# The steps from an older PostgreSQL database: STEPS[n] takes version n to n + 1, each in its
# own transaction under the migration lock.
STEPS = {
    10: _stored_order,
    11: _sent_settings,
    12: _database_moves,
    13: _pair_probabilities,
    14: _analyses,
    15: _text_operations,
}
