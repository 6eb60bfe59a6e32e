"""The keystroke record stored and read back, on both databases: a batch sent again stores
nothing twice, and the rows come back in the page's order."""

from __future__ import annotations

import pytest

from cyoa import store
from cyoa.cowriting.process.store import (
    load_operations,
    next_seq,
    store_operations,
    stored_through,
)

pytestmark = pytest.mark.both_databases


def typed(seq, round_number, inserted, position):
    return {
        "seq": seq,
        "round": round_number,
        "at_ms": 1_700_000_000_000 + seq,
        "kind": "text",
        "box": "line",
        "slot": None,
        "position": position,
        "deleted": "",
        "inserted": inserted,
        "source": "typed",
    }


def test_a_batch_sent_twice_is_stored_once_and_read_back_in_order(app, writer):
    db = store.connect(app.config["DATABASE"])
    sid = writer.session_id
    assert next_seq(db, sid) == 1
    batch = [typed(2, 1, "h", 1), typed(1, 1, "O", 0), typed(3, 2, "!", 0)]
    assert store_operations(db, sid, batch) == 3
    assert store_operations(db, sid, [*batch, typed(4, 2, "?", 1)]) == 1
    rows = load_operations(db, sid)
    assert [(r["seq"], r["inserted"]) for r in rows] == [(1, "O"), (2, "h"), (3, "!"), (4, "?")]
    assert rows[0]["received_at"].endswith("Z") and rows[0]["slot"] is None
    assert [r["seq"] for r in load_operations(db, sid, round_number=1)] == [1, 2]
    assert [r["seq"] for r in load_operations(db, sid, through=3)] == [1, 2, 3]
    assert next_seq(db, sid) == 5
    assert stored_through(db, sid, 6) == 4
