"""static/js/record.js run in Node (tests/web/js/record_tabs.js gives it a browser's
localStorage shared by tabs and its storage events): what two tabs of one story, a closed
tab's rows and a large paste leave in the record, without a browser's start-up cost."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from cyoa.cowriting.process.operations import apply_operations
from cyoa.cowriting.process.store import COLUMNS

HARNESS = Path(__file__).parent / "js" / "record_tabs.js"
pytestmark = pytest.mark.skipif(not shutil.which("node"), reason="needs Node.js")


def run(scenario: str):
    done = subprocess.run(
        ["node", str(HARNESS)], input=scenario, capture_output=True, text=True, check=True
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
    assert [row[0] for row in rows] == [1, 2, 3]
    ops = [dict(zip(COLUMNS, row, strict=True)) for row in rows]
    assert [op["inserted"] for op in ops] == ["One", "", "Two"]  # b found "One" in the record
    assert apply_operations("", ops) == "Two"
