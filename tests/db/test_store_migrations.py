"""The database's schema is upgraded in place, in order, in one transaction, losing nothing.

Studies run for weeks: a new version of CYOA must open a database written by an older one
with every session, event and answer intact.
"""

from __future__ import annotations

import sqlite3

import pytest
from sqlite_utils import Database

from cyoa import store
from cyoa.paths import ROOT

V1_DUMP = ROOT / "tests" / "data" / "cyoa-schema-v1.sql"


def version_1_database(path) -> store.Db:
    """A database as version 1 of the schema wrote it (a dump made by the code of that
    time, before migrations existed), with two writers' whole sessions."""
    conn = sqlite3.connect(path)
    conn.executescript(V1_DUMP.read_text(encoding="utf-8"))
    conn.close()
    db = store.connect(path)
    assert store.schema_version(db) == 1
    return db


def snapshot(db: store.Db, columns: dict[str, list[str]]) -> dict[str, list[tuple]]:
    """Every row of each table, in the given columns (those the older schema had)."""
    return {
        name: sorted(map(tuple, db.execute(f"SELECT {', '.join(cols)} FROM [{name}]")))
        for name, cols in columns.items()
    }


def columns_of(db: store.Db) -> dict[str, list[str]]:
    return {name: [c.name for c in db.table(name).columns] for name in db.table_names()}


def test_a_version_1_database_full_of_sessions_is_upgraded_and_loses_nothing(tmp_path):
    db = version_1_database(tmp_path / "old.sqlite")
    tables = columns_of(db)
    before = snapshot(db, tables)
    assert len(before["events"]) > 40 and len(before["rounds"]) == 10
    db.close()

    upgraded = store.connect(tmp_path / "old.sqlite")
    store.init_db(upgraded)
    assert store.schema_version(upgraded) == store.SCHEMA_VERSION
    assert snapshot(upgraded, tables) == before
    assert [row[0] for row in upgraded.execute("SELECT kind FROM experiments")] == ["cowriting"]
    # Opening it again changes nothing more.
    store.init_db(upgraded)
    assert snapshot(upgraded, tables) == before


def test_migrations_run_in_order_once_each(tmp_path):
    applied: list[str] = []

    def add_notes(db: Database) -> None:
        applied.append("notes")
        db.execute("ALTER TABLE sessions ADD COLUMN notes TEXT")

    def fill_notes(db: Database) -> None:
        applied.append("fill")
        db.execute("UPDATE sessions SET notes = 'kept: ' || id")

    db = version_1_database(tmp_path / "db.sqlite")
    steps = (*store.MIGRATIONS[:1], add_notes, fill_notes)
    with store.write_transaction(db):
        assert store.migrate(db, steps) == 3
    with store.write_transaction(db):
        store.migrate(db, steps)
    assert applied == ["notes", "fill"]
    assert store.schema_version(db) == 3
    notes = [row[0] for row in db.execute("SELECT notes FROM sessions")]
    assert len(notes) == 2 and all(note.startswith("kept: ") for note in notes)


def test_a_failing_migration_leaves_the_database_as_it_was(tmp_path):
    def add_table(db: Database) -> None:
        db.execute("CREATE TABLE half_done (id INTEGER)")

    def broken(db: Database) -> None:
        db.execute("INSERT INTO no_such_table VALUES (1)")

    db = version_1_database(tmp_path / "db.sqlite")
    before = snapshot(db, columns_of(db))
    with pytest.raises(sqlite3.OperationalError), store.write_transaction(db):
        store.migrate(db, (*store.MIGRATIONS[:1], add_table, broken))
    assert store.schema_version(db) == 1
    assert "half_done" not in db.table_names()
    assert snapshot(db, columns_of(db)) == before


def test_a_database_newer_than_the_code_is_refused_with_what_to_do(tmp_path):
    db = store.connect(tmp_path / "new.sqlite")
    db.execute(f"PRAGMA user_version = {store.SCHEMA_VERSION + 1}")
    with pytest.raises(store.SchemaError, match="Update CYOA"):
        store.init_db(db)


def test_a_new_database_gets_every_table_at_the_current_version(tmp_path):
    db = store.connect(tmp_path / "fresh.sqlite")
    store.init_db(db)
    assert store.schema_version(db) == store.SCHEMA_VERSION
    assert {"experiments", "sessions", "events", "rounds", "suggestions"} <= set(db.table_names())


def test_every_table_and_column_is_in_the_data_dictionary(tmp_path):
    dictionary = (ROOT / "docs" / "data-dictionary.md").read_text()
    db = store.connect(tmp_path / "fresh.sqlite")
    store.init_db(db)
    for table, columns in columns_of(db).items():
        assert f"\n## {table}\n" in dictionary, table
        section = dictionary.split(f"\n## {table}\n", 1)[1].split("\n## ", 1)[0]
        for column in columns:
            assert f"`{column}`" in section, (table, column)


def test_stories_and_survey_answers_get_their_stored_order_as_a_position(tmp_path):
    db = store.connect(tmp_path / "v10.sqlite")
    with store.write_transaction(db):
        store.migrate(db, store.MIGRATIONS[:10])
    stamp = "2026-11-21T12:00:00.000Z"
    db.execute(
        "INSERT INTO experiments (id, title, spec, status, created_at, updated_at, kind)"
        " VALUES ('r', 'R', '{}', 'open', ?, ?, 'rating')",
        [stamp, stamp],
    )
    for story in ("zeta", "alpha", "mid"):
        db.execute(
            "INSERT INTO stories (experiment_id, story_id, source, created_at)"
            " VALUES ('r', ?, 'human', ?)",
            [story, stamp],
        )
    db.execute(
        "INSERT INTO participants (id, experiment_id, external_id, id_source)"
        " VALUES (1, 'r', 'p', 'url')"
    )
    db.execute(
        "INSERT INTO sessions (id, experiment_id, participant_id, phase, completion_code,"
        " started_at) VALUES ('s', 'r', 1, 'done', 'C0DE', ?)",
        [stamp],
    )
    for item in ("q9", "q1", "q5"):
        db.execute(
            "INSERT INTO survey_answers (session_id, item_id, kind, question, answered_at)"
            " VALUES ('s', ?, 'open', 'Why?', ?)",
            [item, stamp],
        )

    store.init_db(db)

    stories = db.execute("SELECT story_id FROM stories ORDER BY position").fetchall()
    answers = db.execute("SELECT item_id FROM survey_answers ORDER BY position").fetchall()
    assert [row[0] for row in stories] == ["zeta", "alpha", "mid"]
    assert [row[0] for row in answers] == ["q9", "q1", "q5"]
