"""The data-access layer answers the same on both databases: each call of ``cyoa.db``'s
``Db`` gives the same rows on a SQLite file and on PostgreSQL, with the SQL written once in
SQLite's spelling (``?`` placeholders, INSERT OR IGNORE / OR REPLACE as ``on_conflict``)."""

from __future__ import annotations

import threading
import time

import pytest
import sqlalchemy as sa

from cyoa import store
from cyoa.database_url import parse_database
from cyoa.db import schema
from cyoa.db.engine import engine_for, pool_settings
from cyoa.db.facade import Db, named_placeholders
from cyoa.db.transactions import write_transaction
from cyoa.errors import SchemaError


def sqlite_db(tmp_path) -> Db:
    path = tmp_path / "study.sqlite"
    conn = store.connect(path)
    store.init_db(conn)
    conn.close()
    return Db(engine_for(parse_database(path)))


def postgresql_db(url: str) -> Db:
    engine = engine_for(parse_database(url))
    schema.migrate_postgresql(engine)
    return Db(engine)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    if request.param == "sqlite":
        handle = sqlite_db(tmp_path)
    else:
        handle = postgresql_db(request.getfixturevalue("postgres_url"))
    yield handle
    handle.engine.dispose()


def add_experiment(db: Db, exp_id: str = "e1") -> None:
    db.insert(
        "experiments",
        {"id": exp_id, "title": "T", "status": "open", "spec": "{}", "kind": "rating"},
    )


# --- placeholders ------------------------------------------------------------------------


def test_question_marks_become_named_parameters_outside_string_literals():
    sql = "SELECT ?, 'why? it''s ?', \"odd?\" FROM t WHERE a = ? AND b LIKE 'x?%'"
    assert named_placeholders(sql) == (
        "SELECT :p0, 'why? it''s ?', \"odd?\" FROM t WHERE a = :p1 AND b LIKE 'x?%'",
        2,
    )


def test_a_colon_inside_a_string_literal_is_not_taken_for_a_parameter():
    translated, count = named_placeholders("SELECT '12:30 :night' WHERE a = ?")
    assert count == 1
    assert translated == "SELECT '12\\:30 \\:night' WHERE a = :p0"


def test_a_query_with_question_marks_reads_the_same_on_both_databases(db):
    rows = list(db.query("SELECT 'why?' AS q, '12:30 :x' AS t, ? AS a, ? AS b", [1, "two"]))
    assert rows == [{"q": "why?", "t": "12:30 :x", "a": 1, "b": "two"}]


def test_named_parameters_and_percent_signs_pass_through(db):
    add_experiment(db, "100%-fun")
    rows = db.query(
        "SELECT id FROM experiments WHERE id LIKE '100%' AND kind = :k", {"k": "rating"}
    )
    assert [r["id"] for r in rows] == ["100%-fun"]


def test_the_wrong_number_of_parameters_is_refused_with_a_sentence(db):
    with pytest.raises(ValueError, match="2 placeholders but 1 value"):
        db.execute("SELECT ?, ?", [1])


# --- writes ------------------------------------------------------------------------------


def test_execute_answers_like_a_cursor(db):
    add_experiment(db, "e1")
    add_experiment(db, "e2")
    changed = db.execute("UPDATE experiments SET status = ? WHERE kind = ?", ["closed", "rating"])
    assert changed.rowcount == 2
    assert db.execute(
        "SELECT count(*) FROM experiments WHERE status = ?", ["closed"]
    ).fetchone() == (2,)
    assert db.execute("SELECT id FROM experiments ORDER BY id").fetchall() == [("e1",), ("e2",)]


def test_insert_returns_the_new_integer_key_and_get_reads_the_row(db):
    first = db.insert("researchers", {"name": "ada", "password_hash": "h1", "created_at": "t"})
    second = db.insert("researchers", {"name": "bo", "password_hash": "h2", "created_at": "t"})
    assert second == first + 1
    assert db.get("researchers", second) == {
        "id": second, "name": "bo", "password_hash": "h2", "created_at": "t"
    }  # fmt: skip
    assert db.get("researchers", second + 1) is None


def test_insert_of_a_composite_key_returns_the_key(db):
    key = db.insert(
        "sentence_tags", {"tagger": "spacy", "sentence": "A cat.", "nouns": "cat", "verbs": ""}
    )
    assert key == ("spacy", "A cat.")
    assert db.get("sentence_tags", ("spacy", "A cat."))["nouns"] == "cat"


def test_a_second_insert_of_the_same_key_fails_unless_told_to_ignore_it(db):
    row = {"tagger": "spacy", "sentence": "A cat.", "nouns": "cat", "verbs": ""}
    db.insert("sentence_tags", row)
    with pytest.raises(sa.exc.IntegrityError):
        db.insert("sentence_tags", {**row, "nouns": "dog"})
    assert db.insert("sentence_tags", {**row, "nouns": "dog"}, on_conflict="ignore") is None
    assert db.get("sentence_tags", ("spacy", "A cat."))["nouns"] == "cat"


def test_insert_or_replace_replaces_the_whole_row(db):
    add_experiment(db)
    db.insert("evaluation_details", {"experiment_id": "e1", "pay": "£9", "qualifications": "UK"})
    db.insert("evaluation_details", {"experiment_id": "e1", "pay": "£12"}, on_conflict="replace")
    assert db.get("evaluation_details", "e1") == {
        "experiment_id": "e1", "pay": "£12", "qualifications": None,
        "updated_at": None, "updated_by": None,
    }  # fmt: skip


def test_upsert_inserts_a_new_row_and_changes_only_the_given_columns_of_an_old_one(db):
    add_experiment(db)
    db.upsert(
        "evaluation_details",
        {"experiment_id": "e1", "pay": "£9", "qualifications": "UK"},
        pk="experiment_id",
    )
    db.upsert("evaluation_details", {"experiment_id": "e1", "pay": "£12"}, pk="experiment_id")
    assert db.get("evaluation_details", "e1")["pay"] == "£12"
    assert db.get("evaluation_details", "e1")["qualifications"] == "UK"


def test_insert_all_writes_every_row_in_order(db):
    rows = [{"tagger": "t", "sentence": f"s{i}", "nouns": "", "verbs": ""} for i in range(5)]
    rows.append({"tagger": "t", "sentence": "s5", "nouns": "n", "verbs": "v"})
    assert db.insert_all("sentence_tags", rows) == 6
    assert db.insert_all("sentence_tags", rows[:2], on_conflict="ignore") == 0
    assert db.insert_all("sentence_tags", []) == 0
    found = db.rows_where("sentence_tags", "tagger = ?", ["t"], order_by="sentence")
    assert [r["sentence"] for r in found] == [f"s{i}" for i in range(6)]


def test_update_changes_the_row_with_that_key(db):
    add_experiment(db, "e1")
    add_experiment(db, "e2")
    assert db.update("experiments", "e2", {"status": "paused"}) == 1
    assert db.update("experiments", "missing", {"status": "paused"}) == 0
    statuses = {r["id"]: r["status"] for r in db.rows_where("experiments")}
    assert statuses == {"e1": "open", "e2": "paused"}


def test_an_unknown_table_is_named_in_the_error(db):
    with pytest.raises(LookupError, match="no table 'nope'"):
        db.insert("nope", {"a": 1})


# --- transactions ------------------------------------------------------------------------


def test_a_write_transaction_that_fails_leaves_nothing_behind(db):
    with pytest.raises(RuntimeError), write_transaction(db, lock=("experiment", "e1")):
        add_experiment(db)
        raise RuntimeError("the check failed")
    assert list(db.rows_where("experiments")) == []
    with write_transaction(db, lock=("experiment", "e1")):
        add_experiment(db)
        with write_transaction(db, lock=("spec", "e1")):
            db.update("experiments", "e1", {"title": "Inner"})
    assert db.get("experiments", "e1")["title"] == "Inner"


def test_every_named_lock_can_be_taken(db):
    add_experiment(db)
    db.insert("raters", {"experiment_id": "e1", "rater_id": "r1", "created_at": "t"})
    for lock in (
        ("session", "s1"),
        ("claim", "s1"),
        ("experiment", "e1"),
        ("rater", "e1", "r1"),
        ("spec", "e1"),
    ):
        with write_transaction(db, lock=lock):
            db.execute("SELECT 1")


def test_an_unknown_lock_is_refused_with_a_sentence(db):
    with (
        pytest.raises(ValueError, match="no lock named 'story'"),
        write_transaction(db, lock=("story", "x")),
    ):
        pass
    with (
        pytest.raises(ValueError, match="takes 2 names"),
        write_transaction(db, lock=("rater", "e1")),
    ):
        pass


def assign_concurrently(db: Db, lock, raters: int, places: int) -> int:
    """``raters`` threads at once each read how many assignments the experiment holds and,
    while fewer than ``places``, add their own; the assignments held afterwards."""
    add_experiment(db)
    db.insert(
        "stories", {"experiment_id": "e1", "story_id": "s1", "source": "x", "created_at": "t"}
    )
    db.insert_all(
        "raters",
        [{"experiment_id": "e1", "rater_id": f"r{i}", "created_at": "t"} for i in range(raters)],
    )
    barrier = threading.Barrier(raters)
    failures: list[BaseException] = []

    def start(rater: str) -> None:
        try:
            barrier.wait()
            with write_transaction(db, lock=lock):
                held = db.execute(
                    "SELECT count(*) FROM assignments WHERE experiment_id = ?", ["e1"]
                ).fetchone()[0]
                time.sleep(0.02)  # the choice a real start makes between reading and writing
                if held < places:
                    db.insert("assignments", {
                        "experiment_id": "e1", "rater_id": rater, "story_id": "s1",
                        "position": held, "assigned_at": "t",
                    })  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=start, args=(f"r{i}",)) for i in range(raters)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    return db.execute("SELECT count(*) FROM assignments").fetchone()[0]


def test_starts_under_the_experiment_lock_never_take_more_places_than_there_are(db):
    assert assign_concurrently(db, ("experiment", "e1"), raters=12, places=3) == 3


def test_without_the_lock_postgresql_lets_concurrent_starts_overfill_the_experiment(postgres_url):
    db = postgresql_db(postgres_url)
    try:
        assert assign_concurrently(db, None, raters=12, places=3) > 3
    finally:
        db.engine.dispose()


# --- the engine --------------------------------------------------------------------------


def test_sqlite_connections_enforce_foreign_keys(tmp_path):
    db = sqlite_db(tmp_path)
    try:
        assert db.execute("PRAGMA foreign_keys").fetchone() == (1,)
        with pytest.raises(sa.exc.IntegrityError):
            db.insert(
                "stories",
                {"experiment_id": "none", "story_id": "s", "source": "x", "created_at": "t"},
            )
    finally:
        db.engine.dispose()


def test_the_postgresql_pool_is_sized_by_two_settings(postgres_url):
    assert pool_settings({}) == (5, 10)
    assert pool_settings({"CYOA_DB_POOL_SIZE": "20", "CYOA_DB_MAX_OVERFLOW": "0"}) == (20, 0)
    with pytest.raises(ValueError, match="CYOA_DB_POOL_SIZE must be a whole number"):
        pool_settings({"CYOA_DB_POOL_SIZE": "many"})
    engine = engine_for(parse_database(postgres_url), environ={"CYOA_DB_POOL_SIZE": "7"})
    try:
        assert engine.pool.size() == 7
        assert engine.dialect.name == "postgresql"
    finally:
        engine.dispose()


def test_schema_errors_are_the_ones_the_store_raises():
    assert store.SchemaError is SchemaError


def test_tabs_recording_at_once_under_the_session_lock_get_one_sequence_number_each(db):
    add_experiment(db)
    participant = db.insert(
        "participants", {"experiment_id": "e1", "external_id": "w1", "id_source": "link"}
    )
    db.insert("sessions", {
        "id": "s1", "experiment_id": "e1", "participant_id": participant,
        "phase": "writing", "completion_code": "C1",
    })  # fmt: skip
    tabs = 8
    barrier = threading.Barrier(tabs)
    failures: list[BaseException] = []

    def record(action: str) -> None:
        try:
            barrier.wait()
            with write_transaction(db, lock=("session", "s1")):
                last = db.execute(
                    "SELECT coalesce(max(seq), 0) FROM events WHERE session_id = ?", ["s1"]
                ).fetchone()[0]
                time.sleep(0.01)
                db.insert("events", {
                    "session_id": "s1", "seq": last + 1, "type": "turn", "payload": "{}",
                    "server_time": "t", "client_action_id": action,
                })  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 (reported below)
            failures.append(exc)

    threads = [threading.Thread(target=record, args=(f"a{i}",)) for i in range(tabs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    seqs = [r["seq"] for r in db.rows_where("events", "session_id = ?", ["s1"], order_by="seq")]
    assert seqs == list(range(1, tabs + 1))
