"""The keystroke record's rows: ``text_operations`` written and read (docs/data-dictionary.md).

A page numbers its record from 1 within its session (``seq``), and ``(session_id, seq)`` is
the table's key, so a batch sent again (a reconnect, a reload that sends the page's outbox
again) stores nothing twice: the rows already there are left as they were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cyoa.db.facade import INSERTS, Db
from cyoa.db.transactions import write_transaction
from cyoa.store import now

COLUMNS = (
    "seq",
    "round",
    "at_ms",
    "kind",
    "box",
    "slot",
    "position",
    "deleted",
    "inserted",
    "source",
)


def store_operations(db: Db, session_id: str, rows: Sequence[Mapping[str, Any]]) -> int:
    """Store a batch of the session's record in one transaction (joining the caller's, if
    any), each row stamped with the server's time; how many rows were new (a row whose
    ``seq`` is stored already is skipped, whatever it holds). One statement for the batch:
    a page sends one every few seconds while its writer types."""
    if not rows:
        return 0
    stamp = now()
    values = [
        {"session_id": session_id, **{c: row.get(c) for c in COLUMNS}, "received_at": stamp}
        for row in rows
    ]
    table = db.table("text_operations")
    stmt = (
        INSERTS[db.dialect](table)
        .on_conflict_do_nothing(index_elements=["session_id", "seq"])
        .returning(table.c.seq)
    )  # compiled once; SQLAlchemy sends the rows as one multi-row INSERT ("insertmanyvalues")
    with write_transaction(db), db.connection() as conn:
        return len(conn.execute(stmt, values).fetchall())


def load_operations(
    db: Db, session_id: str, round_number: int | None = None, through: int | None = None
) -> list[dict[str, Any]]:
    """The session's record in ``seq`` order: all of it, or one round's, or what the page
    had numbered up to ``through``."""
    sql = "SELECT * FROM text_operations WHERE session_id = ?"
    params: list[Any] = [session_id]
    if round_number is not None:
        sql += " AND round = ?"
        params.append(round_number)
    if through is not None:
        sql += " AND seq <= ?"
        params.append(through)
    return list(db.query(sql + " ORDER BY seq", params))


def next_seq(db: Db, session_id: str) -> int:
    """The number the session's next record row takes: one past the largest stored (1 when
    none), which a page that has no count of its own (another browser) starts from."""
    row = db.execute(
        "SELECT max(seq) FROM text_operations WHERE session_id = ?", [session_id]
    ).fetchone()
    return (row[0] or 0) + 1


def stored_through(db: Db, session_id: str, through: int) -> int:
    """How many of the session's rows numbered 1 to ``through`` are stored (``through``
    when none is missing)."""
    row = db.execute(
        "SELECT count(*) FROM text_operations WHERE session_id = ? AND seq <= ?",
        [session_id, through],
    ).fetchone()
    return row[0]
