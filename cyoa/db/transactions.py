"""Write transactions: a read-check-write that no other writer can interleave with.

SQLite: ``BEGIN IMMEDIATE`` takes the database's one write lock up front, so every write
transaction is serial, whatever ``lock`` says.

PostgreSQL: ``READ COMMITTED`` (each statement sees what was committed before it began) plus
the lock the caller names, which says what must be serial; writers that name different
sessions, raters or experiments never wait on each other. ``SERIALIZABLE`` is not used: it
would turn every conflict into a retry, where a lock makes the second writer wait its turn.
Row locks are ``FOR NO KEY UPDATE``: they serialise the transactions that take them but not
the foreign-key checks of rows inserted meanwhile (PostgreSQL manual, "Explicit Locking",
13.3.2, row-level lock modes). The locks, by name:

- ``("session", session_id)`` and ``("claim", session_id)``: the session's row, before
  recording a writer's event (``seq`` is read, then written) or claiming a suggestion slot.
- ``("experiment", experiment_id)``: an advisory lock on the experiment, released at commit
  (``pg_advisory_xact_lock``), before a start: a rater's story assignment, a writer's session
  and completion code.
- ``("rater", experiment_id, rater_id)``: the rater's row, before an answer or heartbeat.
- ``("analysis", experiment_id)``: an advisory lock of the experiment's stored analyses,
  before claiming or storing one (:mod:`cyoa.analyses.store`); a rater's start never waits
  for it.
- ``("spec", experiment_id)``: the experiment's advisory lock, then its row, before replacing
  a spec that no session may have used yet (no start slips in between).

Every transaction commits before the block returns, so the caller acknowledges only what is
stored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from cyoa.db.engine import BEGIN_OPTION
from cyoa.db.facade import Db

Lock = tuple[str, ...]

ROW_LOCK = "FOR NO KEY UPDATE"


def _session_row(conn: sa.Connection, session_id: str) -> None:
    sql = f"SELECT 1 FROM sessions WHERE id = :id {ROW_LOCK}"
    conn.execute(sa.text(sql), {"id": session_id})


def _experiment_advisory(conn: sa.Connection, experiment_id: str) -> None:
    sql = "SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"
    conn.execute(sa.text(sql), {"key": f"exp:{experiment_id}"})


def _analysis_advisory(conn: sa.Connection, experiment_id: str) -> None:
    sql = "SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"
    conn.execute(sa.text(sql), {"key": f"analysis:{experiment_id}"})


def _rater_row(conn: sa.Connection, experiment_id: str, rater_id: str) -> None:
    sql = f"SELECT 1 FROM raters WHERE experiment_id = :e AND rater_id = :r {ROW_LOCK}"
    conn.execute(sa.text(sql), {"e": experiment_id, "r": rater_id})


def _spec(conn: sa.Connection, experiment_id: str) -> None:
    # The advisory lock first, as a start takes it: the other order could deadlock.
    _experiment_advisory(conn, experiment_id)
    conn.execute(
        sa.text(f"SELECT 1 FROM experiments WHERE id = :e {ROW_LOCK}"), {"e": experiment_id}
    )


# Each lock's name: how to take it on PostgreSQL, and how many names it takes.
LOCKS: dict[str, tuple[Callable[..., None], int]] = {
    "session": (_session_row, 1),
    "claim": (_session_row, 1),
    "experiment": (_experiment_advisory, 1),
    "rater": (_rater_row, 2),
    "spec": (_spec, 1),
    "analysis": (_analysis_advisory, 1),
}


def lock_taker(lock: Lock | None) -> Callable[[sa.Connection], None]:
    """How to take ``lock`` on a PostgreSQL connection; ValueError with a sentence for a lock
    with an unknown name or the wrong number of names."""
    if lock is None:
        return lambda conn: None
    kind, *names = lock
    if kind not in LOCKS:
        raise ValueError(f"There is no lock named '{kind}': use one of {', '.join(LOCKS)}.")
    take, arity = LOCKS[kind]
    if len(names) != arity:
        raise ValueError(f"The '{kind}' lock takes {arity} names, not {len(names)}: {lock}.")
    return lambda conn: take(conn, *names)


@contextmanager
def write_transaction(db: Db, lock: Lock | None = None) -> Iterator[Db]:
    """One atomic write holding ``lock`` (see the module's description), committed when the
    block ends and rolled back if it raises. Inside another write transaction of the same
    thread it joins that one, taking ``lock`` too."""
    take = lock_taker(lock)
    postgresql = db.dialect == "postgresql"
    outer = db.current_connection()
    if outer is not None:
        if postgresql:
            take(outer)
        yield db
        return
    options: dict[str, Any] = (
        {"isolation_level": "READ COMMITTED"} if postgresql else {BEGIN_OPTION: "BEGIN IMMEDIATE"}
    )
    with db.engine.connect().execution_options(**options) as conn, conn.begin():
        if postgresql:
            take(conn)
        with db.bound_to(conn):
            yield db


@contextmanager
def read_snapshot(db: Db) -> Iterator[Db]:
    """One consistent view of the whole database for several reads by this thread: every
    read in the block sees what was committed before its first read, and nothing after,
    while others go on writing. PostgreSQL: a ``REPEATABLE READ`` transaction; SQLite: one
    read transaction (in WAL mode readers do not block the writer)."""
    options: dict[str, Any] = (
        {"isolation_level": "REPEATABLE READ"} if db.dialect == "postgresql" else {}
    )
    connection = db.engine.connect().execution_options(**options)
    with connection as conn, conn.begin(), db.bound_to(conn):
        yield db
