"""Whether an error means that the database cannot be reached for now (an outage), and the
log that says so once per outage.

An outage is an error after which nothing was stored and the same request, sent again
later, can succeed: the PostgreSQL server is down, restarting, refusing new connections or
dropped the connection; the pool had no connection free in time; a SQLite file stayed locked
past its busy wait, could not be opened, read or written (a disk I/O error, a full disk, a
file made read-only). Participants are then asked to send again (HTTP 503 or a Socket.IO
``retry``) and their pages resend until acknowledged, which the ``action_id`` makes
harmless. Anything else, such as a missing table or a syntax error, is a bug: it stays an
error with its traceback.

The classes follow PEP 249 (an ``OperationalError`` is "related to the database's
operation", e.g. "an unexpected disconnect"; an ``InterfaceError`` to the database
interface, e.g. psycopg's "the connection is closed"), PostgreSQL's SQLSTATE classes
(Appendix A of its manual) and SQLite's result codes (https://www.sqlite.org/rescode.html).
SQLite reports every one of its failures, bugs too, as ``sqlite3.OperationalError``, so
there the result code decides.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable

import psycopg
import sqlalchemy as sa

# The errors a handler of outages must look at: everything the engine or a driver raises.
DATABASE_ERRORS = (sa.exc.SQLAlchemyError, sqlite3.Error, psycopg.Error)

# SQLite's primary result codes for a database that is busy or cannot be reached for now.
SQLITE_OUTAGE_CODES = {
    5: "SQLITE_BUSY",
    6: "SQLITE_LOCKED",
    7: "SQLITE_NOMEM",
    8: "SQLITE_READONLY",
    10: "SQLITE_IOERR",
    13: "SQLITE_FULL",
    14: "SQLITE_CANTOPEN",
    15: "SQLITE_PROTOCOL",
}
# The same failures by their message, for an error that carries no result code.
SQLITE_OUTAGE_MESSAGES = (
    "database is locked",
    "database table is locked",
    "disk i/o error",
    "database or disk is full",
    "unable to open database file",
    "attempt to write a readonly database",
    "locking protocol",
    "out of memory",
)
# PostgreSQL's SQLSTATE classes (first two characters) and codes of a server that cannot
# serve for now: connection exceptions, insufficient resources, operator intervention (a
# shutdown, a restart), system errors; a failed serialization or a deadlock (the transaction
# was rolled back); a read-only transaction (a standby not yet promoted).
POSTGRESQL_OUTAGE_CLASSES = ("08", "53", "57", "58")
POSTGRESQL_OUTAGE_CODES = ("40001", "40P01", "25006")


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` means the database cannot be reached for now (see the module's
    description): True for SQLAlchemy's pool timeouts and disconnections, any error after
    which SQLAlchemy invalidated the connection, and the driver errors of an outage
    (psycopg's OperationalError and InterfaceError and the SQLSTATEs above; SQLite's busy,
    locked, I/O, full, cannot-open and read-only results)."""
    if isinstance(error, sa.exc.TimeoutError | sa.exc.DisconnectionError):
        return True
    if isinstance(error, sa.exc.DBAPIError):
        return bool(error.connection_invalidated) or is_outage(error.orig)
    if isinstance(error, sqlite3.Error):
        return _sqlite_outage(error)
    if isinstance(error, psycopg.Error):
        return _postgresql_outage(error)
    return False


def _sqlite_outage(error: sqlite3.Error) -> bool:
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return (code & 0xFF) in SQLITE_OUTAGE_CODES  # the primary code of an extended one
    message = str(error).lower()
    return any(text in message for text in SQLITE_OUTAGE_MESSAGES)


def _postgresql_outage(error: psycopg.Error) -> bool:
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    state = error.sqlstate or ""
    return state[:2] in POSTGRESQL_OUTAGE_CLASSES or state in POSTGRESQL_OUTAGE_CODES


def reason(error: BaseException) -> str:
    """The driver's own first line about ``error`` (never the statement or its values,
    which may hold a participant's text)."""
    cause = error.orig if isinstance(error, sa.exc.DBAPIError) else error
    lines = str(cause).strip().splitlines()
    return lines[0] if lines else type(cause).__name__


class OutageLog:
    """Logs one warning per outage, not one per request: an outage begins at the first
    failure and ends once ``quiet_seconds`` pass without another; the failures in between
    are counted, and the next outage's line says how many the last one had. Safe to share
    between threads."""

    def __init__(
        self,
        logger: logging.Logger,
        quiet_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.quiet_seconds = quiet_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self._count = 0

    def failed(self, error: BaseException) -> bool:
        """Count one request that met an outage; True when it began a new outage (and was
        logged)."""
        now = self.clock()
        with self._lock:
            ongoing = self._last is not None and now - self._last < self.quiet_seconds
            self._last = now
            if ongoing:
                self._count += 1
                return False
            before, self._count = self._count, 1
        earlier = f" (the last outage asked {before} requests to wait)" if before else ""
        self.logger.warning(
            "The database cannot be reached (%s): participants are asked to wait and send "
            "again until it answers; failures are not logged again until %g s pass without "
            "one%s.",
            reason(error),
            self.quiet_seconds,
            earlier,
        )
        return True
