"""static/js/record.js run in Node (tests/support/record_tabs.js gives it a browser's
localStorage shared by tabs and its storage events): what two tabs of one story, a closed
tab's rows and a large paste leave in the record, without a browser's start-up cost."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from cyoa.cowriting.process.operations import apply_operations
from cyoa.cowriting.process.store import COLUMNS
from tests.paths import ROOT, TESTS

HARNESS = TESTS / "support" / "record_tabs.js"
SCRIPT = ROOT / "static" / "js" / "record.js"
pytestmark = pytest.mark.skipif(not shutil.which("node"), reason="needs Node.js")


def run(scenario: str):
    done = subprocess.run(
        ["node", str(HARNESS), str(SCRIPT)],
        input=scenario,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_two_tabs_of_one_story_number_their_rows_apart_so_the_server_keeps_all_of_them():
    rows = run("""
        const a = tab(), b = tab();
        a.type("O"); b.type("Tw"); a.type("On"); b.type("Two");
        a.record.through(); b.record.through();
        return [...a.handed.flat(), ...b.handed.flat()];
    """)
    assert sorted(row[0] for row in rows) == list(range(1, len(rows) + 1))
    ops = [dict(zip(COLUMNS, row, strict=True)) for row in sorted(rows)]
    assert apply_operations("", ops) == "Two"  # each tab's text as the other left it, then its own


def test_rows_left_by_tabs_that_closed_before_sending_are_sent_by_the_next_page():
    rows = run("""
        const a = tab(), b = tab();
        a.type("One"); b.type("Two");
        a.close(); b.close();
        const next = tab();
        next.record.through();
        return next.handed.flat();
    """)
    assert [row[0] for row in rows] == [1, 2, 3, 4, 5]
    ops = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    texts = [op for op in ops if op["kind"] == "text"]
    assert [op["inserted"] for op in texts] == ["One", "", "Two"]  # b found "One" recorded
    assert apply_operations("", texts) == "Two"
    assert [op["source"] for op in ops if op["kind"] == "page"] == ["hidden", "hidden"]


def test_a_change_too_large_for_one_message_goes_as_rows_in_batches_that_each_fit():
    done = run("""
        const a = tab({ limit: 1000 });
        a.type("a".repeat(600));
        a.type("b".repeat(600));  // a replacement too large for one message
        a.type("b".repeat(600) + "c".repeat(1500));  // an insertion too large even alone
        a.record.through();
        const size = (rows) => new TextEncoder().encode(
            JSON.stringify({ type: "record", payload: { operations: rows } })).length;
        return { sizes: a.handed.map(size), rows: a.handed.flat() };
    """)
    assert len(done["sizes"]) > 1 and max(done["sizes"]) <= 1000
    ops = [dict(zip(COLUMNS, row, strict=True)) for row in done["rows"]]
    assert [op["seq"] for op in ops] == list(range(1, len(ops) + 1))
    assert apply_operations("", ops) == "b" * 600 + "c" * 1500


def test_a_box_the_page_filled_is_recorded_as_filled_before_the_writer_s_own_change():
    rows = run("""
        const a = tab({ begins: "The door opened.", start: "The door opened slowly." });
        a.type("The door opened slowly!");
        a.record.through();
        return a.handed.flat();
    """)
    ops = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    assert [(op["source"], op["deleted"], op["inserted"]) for op in ops] == [
        ("other", "", " slowly"),  # the saved draft the page put in the box
        ("typed", ".", "!"),  # the writer's own keystroke
    ]
    assert apply_operations("The door opened.", ops) == "The door opened slowly!"


def test_each_page_load_records_whether_it_starts_visible_or_hidden():
    rows = run("""
        const shown = tab(), hidden = tab({ hidden: true });
        shown.record.setting({ on: true, next_seq: 1 });
        hidden.record.setting({ on: true, next_seq: 1 });
        shown.record.setting({ on: true, next_seq: 1 });  // a second join: no second row
        return [...shown.handed.flat(), ...hidden.handed.flat()].map(r => [r[3], r[9]]);
    """)
    assert sorted(rows) == [["page", "hidden"], ["page", "visible"]]
