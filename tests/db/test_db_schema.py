"""One schema for both databases: ``cyoa/db/schema.py`` describes, as SQLAlchemy MetaData, the
tables that cyoa/store.py's SQLite migrations build, and creates them on PostgreSQL with the
version recorded in ``schema_version``. The comparison below is what keeps the two from
drifting: a new SQLite migration fails it until schema.py says the same."""

from __future__ import annotations

import sqlite3
import threading

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import sqlite as sqlite_dialect

from cyoa import store
from cyoa.database_url import parse_database
from cyoa.db import schema
from cyoa.db.engine import engine_for
from cyoa.errors import SchemaError


def affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type (https://www.sqlite.org/datatype3.html,
    section 3.1): the rules in order."""
    kind = declared.upper()
    if "INT" in kind:
        return "INTEGER"
    if any(word in kind for word in ("CHAR", "CLOB", "TEXT")):
        return "TEXT"
    if "BLOB" in kind or not kind:
        return "BLOB"
    if any(word in kind for word in ("REAL", "FLOA", "DOUB")):
        return "REAL"
    return "NUMERIC"


def sqlite_shape(path) -> dict[str, dict]:
    """Each table of a SQLite file: columns (name → affinity, not null, default), primary
    key, foreign keys and indexes (name → columns, unique, partial), read from its PRAGMAs."""
    conn = sqlite3.connect(path)
    shape = {}
    names = conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall()
    for (table,) in names:
        info = conn.execute(f"PRAGMA table_info('{table}')").fetchall()
        keys = {}
        for row in conn.execute(f"PRAGMA foreign_key_list('{table}')").fetchall():
            keys.setdefault(row[0], [row[2], [], []])
            keys[row[0]][1].append(row[3])
            keys[row[0]][2].append(row[4])
        indexes = {}
        for _, name, unique, origin, partial in conn.execute(f"PRAGMA index_list('{table}')"):
            if origin == "pk":
                continue
            columns = [r[2] for r in conn.execute(f"PRAGMA index_info('{name}')")]
            indexes[name] = (tuple(columns), bool(unique), bool(partial))
        shape[table] = {
            "columns": {
                name: (affinity(kind), bool(notnull) and not pk, _default(default))
                for _, name, kind, notnull, default, pk in info
            },
            "primary_key": tuple(name for *_, name in sorted((r[5], r[1]) for r in info if r[5])),
            "foreign_keys": sorted((t, tuple(a), tuple(b)) for t, a, b in keys.values()),
            "indexes": indexes,
        }
    conn.close()
    return shape


def _default(text: str | None) -> str | None:
    return None if text is None else text.strip("'")


def metadata_shape(metadata: sa.MetaData) -> dict[str, dict]:
    """The same description read from ``metadata``, its types compiled for SQLite."""
    dialect = sqlite_dialect.dialect()
    shape = {}
    for table in metadata.sorted_tables:
        if table.name == "schema_version":
            continue
        pk = {c.name for c in table.primary_key}
        shape[table.name] = {
            "columns": {
                c.name: (
                    affinity(c.type.compile(dialect=dialect)),
                    not c.nullable and c.name not in pk,
                    None if c.server_default is None else str(c.server_default.arg),
                )
                for c in table.columns
            },
            "primary_key": tuple(c.name for c in table.primary_key),
            "foreign_keys": sorted(
                (
                    fk.referred_table.name,
                    tuple(c.name for c in fk.columns),
                    tuple(e.column.name for e in fk.elements),
                )
                for fk in table.foreign_key_constraints
            ),
            "indexes": {
                index.name: (
                    tuple(c.name for c in index.columns),
                    bool(index.unique),
                    index.dialect_options["sqlite"]["where"] is not None,
                )
                for index in table.indexes
            },
        }
    return shape


@pytest.fixture
def migrated_sqlite(tmp_path):
    path = tmp_path / "study.sqlite"
    db = store.connect(path)
    store.init_db(db)
    db.close()
    return path


def test_the_metadata_is_the_schema_the_sqlite_migrations_build(migrated_sqlite):
    built, described = sqlite_shape(migrated_sqlite), metadata_shape(schema.METADATA)
    assert sorted(described) == sorted(built)
    for table in built:
        assert described[table] == built[table], table


def test_the_metadata_describes_the_latest_sqlite_migration():
    assert schema.VERSION == store.SCHEMA_VERSION


def test_the_schema_creates_on_postgresql_with_its_version(postgres_url):
    engine = engine_for(parse_database(postgres_url))
    try:
        assert schema.migrate_postgresql(engine) == schema.VERSION
        assert schema.migrate_postgresql(engine) == schema.VERSION
        with engine.connect() as conn:
            tables = set(sa.inspect(conn).get_table_names())
            versions = conn.execute(sa.text("SELECT version FROM schema_version")).all()
            indexes = {i["name"] for i in sa.inspect(conn).get_indexes("events")}
    finally:
        engine.dispose()
    assert tables == set(schema.METADATA.tables)
    assert [tuple(v) for v in versions] == [(schema.VERSION,)]
    assert "idx_events_client_action" in indexes


def test_workers_that_start_at_once_on_postgresql_create_the_schema_once(postgres_url):
    engine = engine_for(parse_database(postgres_url))
    outcomes: list[object] = []

    def start() -> None:
        try:
            outcomes.append(schema.migrate_postgresql(engine))
        except Exception as exc:  # noqa: BLE001 (the test reports any failure)
            outcomes.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        with engine.connect() as conn:
            count = conn.execute(sa.text("SELECT count(*) FROM schema_version")).scalar_one()
    finally:
        engine.dispose()
    assert outcomes == [schema.VERSION] * 4
    assert count == 1


def test_a_postgresql_database_newer_than_this_cyoa_is_refused_with_a_sentence(postgres_url):
    engine = engine_for(parse_database(postgres_url))
    try:
        schema.migrate_postgresql(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE schema_version SET version = version + 1"))
        with pytest.raises(SchemaError, match="Update CYOA"):
            schema.migrate_postgresql(engine)
    finally:
        engine.dispose()


def test_a_version_10_postgresql_database_gets_every_later_column(
    postgres_url,
):
    engine = engine_for(parse_database(postgres_url))
    try:
        schema.migrate_postgresql(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE stories DROP COLUMN position"))
            conn.execute(sa.text("ALTER TABLE survey_answers DROP COLUMN position"))
            conn.execute(sa.text("ALTER TABLE suggestions DROP COLUMN sent_settings"))
            conn.execute(sa.text("DROP TABLE database_moves"))
            conn.execute(sa.text("ALTER TABLE sessions DROP COLUMN pair_probability"))
            conn.execute(sa.text("DROP TABLE analyses, analysis_jobs"))
            conn.execute(sa.text("UPDATE schema_version SET version = 10"))
            conn.execute(
                sa.text(
                    "INSERT INTO experiments (id, title, spec, status, kind)"
                    " VALUES ('r', 'R', '{}', 'open', 'rating')"
                )
            )
            for story in ("b", "a"):
                conn.execute(
                    sa.text(
                        "INSERT INTO stories (experiment_id, story_id, source, created_at)"
                        " VALUES ('r', :story, 'human', 'now')"
                    ),
                    {"story": story},
                )
        assert schema.migrate_postgresql(engine) == schema.VERSION
        tables = set(sa.inspect(engine).get_table_names())
        with engine.connect() as conn:
            numbered = conn.execute(sa.text("SELECT story_id, position FROM stories")).all()
            version = conn.execute(sa.text("SELECT version FROM schema_version")).scalar_one()
            sent = conn.execute(sa.text("SELECT count(sent_settings) FROM suggestions")).scalar()
            probabilities = conn.execute(sa.text("SELECT pair_probability FROM sessions")).all()
    finally:
        engine.dispose()
    assert sorted(tuple(row) for row in numbered) == [("a", 1), ("b", 2)] and sent == 0
    assert probabilities == []
    assert {"database_moves", "analyses", "analysis_jobs"} <= tables
    assert version == schema.VERSION


def test_a_version_12_postgresql_database_gains_the_database_moves_table(postgres_url):
    engine = engine_for(parse_database(postgres_url))
    try:
        schema.migrate_postgresql(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE database_moves"))
            conn.execute(sa.text("ALTER TABLE sessions DROP COLUMN pair_probability"))
            conn.execute(sa.text("DROP TABLE analyses, analysis_jobs"))
            conn.execute(sa.text("UPDATE schema_version SET version = 12"))
        assert schema.migrate_postgresql(engine) == schema.VERSION
        assert "database_moves" in sa.inspect(engine).get_table_names()
        with engine.connect() as conn:
            version = conn.execute(sa.text("SELECT version FROM schema_version")).scalar_one()
    finally:
        engine.dispose()
    assert version == schema.VERSION == 16


def test_a_version_14_postgresql_database_gets_the_stored_analyses_tables(postgres_url):
    engine = engine_for(parse_database(postgres_url))
    try:
        schema.migrate_postgresql(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE analyses, analysis_jobs"))
            conn.execute(sa.text("UPDATE schema_version SET version = 14"))
        assert schema.migrate_postgresql(engine) == schema.VERSION == 16
        tables = set(sa.inspect(engine).get_table_names())
        with engine.connect() as conn:
            version = conn.execute(sa.text("SELECT version FROM schema_version")).scalar_one()
    finally:
        engine.dispose()
    assert {"analyses", "analysis_jobs"} <= tables and version == 16


def test_a_version_15_postgresql_database_gets_the_keystroke_record_table(postgres_url):
    engine = engine_for(parse_database(postgres_url))
    try:
        schema.migrate_postgresql(engine)
        with engine.begin() as conn:
            conn.execute(sa.text("DROP TABLE text_operations"))
            conn.execute(sa.text("UPDATE schema_version SET version = 15"))
        assert schema.migrate_postgresql(engine) == schema.VERSION == 16
        columns = {c["name"] for c in sa.inspect(engine).get_columns("text_operations")}
    finally:
        engine.dispose()
    assert {"session_id", "seq", "round", "at_ms", "position", "deleted", "inserted"} <= columns
