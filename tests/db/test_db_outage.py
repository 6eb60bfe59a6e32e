"""Which errors mean "the database cannot be reached for now" (an outage: participants are
asked to send again) and which are bugs; and the log that says so once per outage. The
errors are real ones where a test can make them (a locked SQLite file, a folder where the
file should be, a PostgreSQL port nobody listens on), else the driver's own classes."""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing

import psycopg
import pytest
import sqlalchemy as sa

from bench.postgres_server import free_port
from cyoa.db.outage import OutageLog, is_outage, reason


def real_sqlite_error(path, sql: str) -> sqlite3.Error:
    with closing(sqlite3.connect(path, timeout=0)) as conn, pytest.raises(sqlite3.Error) as caught:
        conn.execute(sql)
    return caught.value


def test_a_sqlite_file_locked_past_the_busy_wait_is_an_outage(tmp_path):
    path = tmp_path / "study.sqlite"
    with closing(sqlite3.connect(path)) as holder:
        holder.execute("CREATE TABLE t (x)")
        holder.execute("BEGIN EXCLUSIVE")
        locked = real_sqlite_error(path, "SELECT * FROM t")
        holder.rollback()
    assert "database is locked" in str(locked)
    assert is_outage(locked)
    assert is_outage(sa.exc.OperationalError("SELECT * FROM t", None, locked))


def test_a_sqlite_file_that_cannot_be_opened_is_an_outage(tmp_path):
    (tmp_path / "study.sqlite").mkdir()  # the file's place holds a folder
    with pytest.raises(sqlite3.OperationalError) as caught:
        sqlite3.connect(tmp_path / "study.sqlite").execute("SELECT 1")
    assert "unable to open database file" in str(caught.value)
    assert is_outage(caught.value)


def test_sqlite_failures_without_a_result_code_are_told_by_their_message():
    assert is_outage(sqlite3.OperationalError("disk I/O error"))
    assert is_outage(sqlite3.OperationalError("database or disk is full"))
    assert not is_outage(sqlite3.OperationalError("no such table: sessions"))
    assert not is_outage(sqlite3.DatabaseError("database disk image is malformed"))


def test_a_missing_table_or_a_syntax_error_on_sqlite_is_a_bug_not_an_outage(tmp_path):
    path = tmp_path / "study.sqlite"
    missing = real_sqlite_error(path, "SELECT * FROM sessions")
    wrong = real_sqlite_error(path, "SELEC 1")
    assert isinstance(missing, sqlite3.OperationalError)  # the same class as a lock
    assert not is_outage(missing)
    assert not is_outage(sa.exc.OperationalError("SELECT", None, missing))
    assert not is_outage(wrong)


def test_a_postgresql_server_that_does_not_answer_is_an_outage():
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/cyoa"
    with pytest.raises(psycopg.OperationalError) as direct:
        psycopg.connect(url, connect_timeout=5)
    assert is_outage(direct.value)
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://"))
    with pytest.raises(sa.exc.OperationalError) as wrapped:
        engine.connect()
    assert is_outage(wrapped.value)


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        psycopg.errors.CannotConnectNow("the database system is starting up"),
        psycopg.errors.TooManyConnections("sorry, too many clients already"),
        psycopg.errors.SerializationFailure("could not serialize access"),
        psycopg.errors.DeadlockDetected("deadlock detected"),
        psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"),
        psycopg.InterfaceError("the connection is closed"),
        sa.exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached"),
        sa.exc.DisconnectionError("the connection was lost"),
    ],
    ids=type,
)
def test_postgresql_and_pool_failures_of_a_server_that_cannot_serve_now_are_outages(error):
    assert is_outage(error)


@pytest.mark.parametrize(
    "error",
    [
        psycopg.errors.UndefinedTable('relation "sessions" does not exist'),
        psycopg.errors.SyntaxError("syntax error at or near SELEC"),
        psycopg.errors.UniqueViolation("duplicate key value violates unique constraint"),
        ValueError("not a database error"),
    ],
    ids=type,
)
def test_postgresql_errors_of_the_code_or_the_data_are_not_outages(error):
    assert not is_outage(error)
    assert not is_outage(sa.exc.ProgrammingError("SELECT", None, error))


def test_any_error_after_which_sqlalchemy_dropped_the_connection_is_an_outage():
    error = sa.exc.DBAPIError("SELECT 1", None, psycopg.Error("lost"), connection_invalidated=True)
    assert is_outage(error)


def test_the_reason_logged_never_holds_the_statement_or_a_participant_s_text():
    orig = sqlite3.OperationalError("database is locked")
    error = sa.exc.OperationalError("INSERT INTO events VALUES (?)", ["my secret story"], orig)
    assert reason(error) == "database is locked"
    assert "secret" not in reason(error)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_outage_is_logged_once_and_the_next_one_again_with_the_last_one_s_count(caplog):
    clock = Clock()
    outages = OutageLog(logging.getLogger("test.outage"), quiet_seconds=60, clock=clock)
    error = sqlite3.OperationalError("database is locked")
    with caplog.at_level(logging.WARNING, logger="test.outage"):
        began = [outages.failed(error)]
        for _ in range(4):
            clock.now += 30  # each within a minute of the last: the same outage
            began.append(outages.failed(error))
        clock.now += 61
        began.append(outages.failed(error))
    assert began == [True, False, False, False, False, True]
    first, second = (record.getMessage() for record in caplog.records)
    assert "cannot be reached (database is locked)" in first and "last outage" not in first
    assert "the last outage asked 5 requests to wait" in second
    assert all(record.exc_info is None for record in caplog.records)
