"""The SQLAlchemy engine for a database location, one per process: a SQLite file (the
embedded default) or a PostgreSQL server through psycopg 3.

SQLite: every new connection switches foreign keys on, waits up to ten seconds for another
writer's lock, and is usable from any thread; the driver's own transaction handling is
switched off so that each transaction begins with the statement :mod:`cyoa.db.transactions`
asks for (``BEGIN`` or ``BEGIN IMMEDIATE``), as SQLAlchemy's documentation recommends
("Serializable isolation / Savepoints / Transactional DDL", pysqlite dialect).

PostgreSQL: a pool of ``CYOA_DB_POOL_SIZE`` connections (default 5) that may grow by
``CYOA_DB_MAX_OVERFLOW`` (default 10) under load, each checked before use
(``pool_pre_ping``) so that a server restart costs a reconnect, not an error. Every worker
process holds at most size + overflow connections: keep their sum over all processes under
the server's ``max_connections``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from cyoa.database_url import DatabaseLocation, DatabaseSettingError

BUSY_TIMEOUT_SECONDS = 10.0
POOL_SETTINGS = (("CYOA_DB_POOL_SIZE", 5), ("CYOA_DB_MAX_OVERFLOW", 10))
BEGIN_OPTION = "cyoa_begin"


def pool_settings(environ: Mapping[str, str]) -> tuple[int, int]:
    """PostgreSQL's pool size and overflow from the settings in ``environ`` (connections per
    worker process); ValueError with a sentence for anything but a whole number ≥ 0."""
    values = []
    for name, default in POOL_SETTINGS:
        text = environ.get(name, "").strip() or str(default)
        if not text.isdigit():
            raise ValueError(
                f"{name} must be a whole number of connections (0 or more), not '{text}'."
            )
        values.append(int(text))
    return values[0], values[1]


def engine_for(location: DatabaseLocation, environ: Mapping[str, str] | None = None) -> sa.Engine:
    """A new engine for ``location``; pool settings come from ``environ`` (default: the
    process's environment)."""
    if location.kind == "sqlite":
        return _sqlite_engine(location)
    size, overflow = pool_settings(os.environ if environ is None else environ)
    return sa.create_engine(
        location.url or "", pool_size=size, max_overflow=overflow, pool_pre_ping=True
    )


def check_reachable(engine: sa.Engine) -> None:
    """Open one connection to ``engine``'s database, or raise
    :class:`~cyoa.database_url.DatabaseSettingError` with a sentence naming the database
    (password hidden) and what to check: a server that does not answer, a refused login, a
    missing database, a SQLite file that cannot be opened or is not a database."""
    try:
        with engine.connect() as connection:
            if engine.dialect.name == "sqlite":  # SQLite reads the file at its first query
                connection.exec_driver_sql("SELECT count(*) FROM sqlite_master")
    except sa.exc.OperationalError as error:
        raise DatabaseSettingError(unreachable(engine, error)) from None
    except sa.exc.DatabaseError as error:
        if engine.dialect.name != "sqlite":
            raise
        raise DatabaseSettingError(  # "file is not a database"
            f"{engine.url.database} is not a SQLite database ({str(error.orig).strip()}): "
            "give --db (or CYOA_DATABASE) a CYOA database, or a new file's name to create one."
        ) from None


def unreachable(engine: sa.Engine, error: sa.exc.OperationalError) -> str:
    """The sentence for a database that could not be opened, with the driver's reason (its
    first line, any password removed)."""
    reason = str(error.orig).strip().splitlines()[0] if str(error.orig).strip() else ""
    if engine.url.password:
        reason = reason.replace(str(engine.url.password), "***")
    if engine.dialect.name == "sqlite":
        return (
            f"Cannot open the SQLite database {engine.url.database} ({reason}): check that "
            "its folder exists and that CYOA may write there."
        )
    return (
        f"Cannot connect to the PostgreSQL database {engine.url.render_as_string()} "
        f"({reason}): is the server running and listening at that host and port, and are "
        "the user, password and database name right?"
    )


def _sqlite_engine(location: DatabaseLocation) -> sa.Engine:
    engine = sa.create_engine(
        f"sqlite+pysqlite:///{location.path}",
        connect_args={"check_same_thread": False},
    )
    sa.event.listen(engine, "connect", _sqlite_connected)
    sa.event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connected(dbapi_connection: Any, _record: Any) -> None:
    dbapi_connection.isolation_level = None  # the "begin" listener below begins transactions
    dbapi_connection.execute("PRAGMA foreign_keys = ON")
    # Read at each new connection, so that a test may shorten it.
    dbapi_connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")


def _sqlite_begin(connection: sa.Connection) -> None:
    """``BEGIN IMMEDIATE`` for a write transaction (the write lock up front), ``BEGIN``
    otherwise. Sent to the driver's connection itself: through SQLAlchemy's statement
    machinery it cost as much as the query it begins, for every query."""
    begin = connection.get_execution_options().get(BEGIN_OPTION, "BEGIN")
    try:
        connection.connection.driver_connection.execute(begin)
    except sqlite3.Error as error:  # raised as SQLAlchemy raises a statement's (a busy file)
        raise sa.exc.DBAPIError.instance(begin, None, error, sqlite3.Error) from error


def use_wal(engine: sa.Engine) -> None:
    """Switch a SQLite database to write-ahead logging (readers and the one writer do not
    block each other; https://www.sqlite.org/wal.html). The mode is kept in the file, so
    this runs once, when the schema is migrated, outside any transaction as SQLite asks."""
    connection = engine.raw_connection()
    try:
        connection.driver_connection.execute("PRAGMA journal_mode = WAL")
    finally:
        connection.close()
