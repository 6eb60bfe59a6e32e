"""The keystroke record in a real headless Chromium against the real server process (issue
47's "Done when"): a writer types, pastes, undoes and switches between suggestions, goes
offline mid-sentence and reloads; the stored operations replay to exactly the submitted
turns, the pasted line is flagged for review, and the researcher's replay plays the session back at
keystroke grain."""

from __future__ import annotations

import json
import re

import pytest
from conftest import RESEARCHER_PASSWORD, db_rows
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from cyoa import store
from cyoa.cowriting.flow import normalize_text
from cyoa.cowriting.process.operations import reconstruct
from cyoa.web.auth import create_researcher
from tests.cowriting.test_browser import Server, page, start_story  # noqa: F401 - page

pytestmark = pytest.mark.browser

PASTED = "The keeper climbed the stairs in the storm"
FIRST_EDIT = " It was late."
SECOND_EDIT = " Nobody answered."
HALF = "The second night, the keeper "
REST = "heard a knock at the door."


@pytest.fixture
def server(tmp_path):
    """A server whose stories have two rounds, with a researcher account."""
    srv = Server(tmp_path, rounds=2)
    db = store.connect(srv.db)
    store.init_db(db)
    create_researcher(db, "alice", RESEARCHER_PASSWORD)
    db.close()
    srv.start()
    yield srv
    srv.stop()


def record(server: Server) -> list[dict]:
    return db_rows(server.db, "SELECT * FROM text_operations ORDER BY seq")


def test_a_story_s_keystrokes_replay_to_exactly_its_turns_after_a_paste_an_undo_a_switch_and_an_offline_reload(  # noqa: E501
    server,
    page,  # noqa: F811
):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server.url)
    start_story(page, server, "keystrokes1")
    url = page.url
    line = page.locator("#line")
    page.evaluate("text => navigator.clipboard.writeText(text)", PASTED)
    line.press("Control+V")  # the first line is pasted whole: a flag for the reviewer
    line.press_sequentially(" x")
    line.press("Control+Z")  # the undo takes back the last typing
    expect(line).not_to_have_value(PASTED + " x")
    line.press_sequentially(".")
    typed_line = line.input_value()
    page.click("#line-submit")

    page.wait_for_selector("#choose-2:not([disabled])")
    page.click("#choose-1")
    edit = page.locator("#edit")
    edit.press("End")
    edit.press_sequentially(FIRST_EDIT)
    page.click("#choose-2")  # the switch
    expect(page.locator("#choose-1")).to_have_text("Switch to this one")
    edit.press("End")
    edit.press_sequentially(SECOND_EDIT)
    turn_1 = edit.input_value()
    page.click("#edit-submit")

    page.wait_for_selector("#writing:not([hidden])")
    line.press_sequentially(HALF)
    page.context.set_offline(True)
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    line.press_sequentially("heard")
    with pytest.raises(PlaywrightError):
        page.reload()
    page.context.set_offline(False)
    page.goto(url)
    page.wait_for_selector("#writing:not([hidden])")
    expect(line).to_have_value(HALF + "heard")
    line.press("End")
    line.press_sequentially(REST[len("heard") :])
    page.click("#line-submit")
    page.wait_for_selector("#choose-1:not([disabled])")
    page.click("#choose-1")
    edit.press("End")
    edit.press_sequentially(" The end.")
    turn_2 = edit.input_value()
    page.click("#edit-submit")
    page.wait_for_selector("#survey:not([hidden])")

    rows = record(server)
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))  # no number used twice
    rounds = db_rows(server.db, "SELECT * FROM rounds ORDER BY round")
    suggestions = {
        (s["round"], s["slot"]): s["text"]
        for s in db_rows(server.db, "SELECT round, slot, text FROM suggestions")
    }
    texts = reconstruct(rows, suggestions)
    assert [normalize_text(texts[(r["round"], "line", None)]) for r in rounds] == [
        r["writer_line"] for r in rounds
    ]
    assert [normalize_text(texts[(r["round"], "edit", r["chosen_slot"])]) for r in rounds] == [
        r["final_text"] for r in rounds
    ]
    assert rounds[0]["writer_line"] == normalize_text(typed_line)
    assert rounds[1]["writer_line"] == HALF + REST
    assert [r["final_text"] for r in rounds] == [normalize_text(turn_1), normalize_text(turn_2)]
    assert texts[(1, "edit", 1)].endswith(FIRST_EDIT)  # the draft left by the switch
    pasted = [r for r in rows if r["source"] == "pasted"]
    assert [(r["round"], r["box"], r["inserted"]) for r in pasted] == [(1, "line", PASTED)]
    assert any(r["source"] == "undo" for r in rows)
    seen = {(r["kind"], r["source"]) for r in rows}
    assert {("page", "offline"), ("view", "visible"), ("page", "visible")} <= seen
    checks = [
        json.loads(e["payload"])["record"]
        for e in db_rows(server.db, "SELECT payload FROM events ORDER BY seq")
        if "record" in json.loads(e["payload"])
    ]
    assert len(checks) >= 4 and all(c["matches"] for c in checks), checks

    [writer] = db_rows(server.db, "SELECT id FROM participants")
    page.goto(f"{server.url}/research/experiments/fake-ab/participants")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    pasted_chars = len(PASTED.replace(" ", ""))
    expect(page.locator("body")).to_contain_text(
        f"Round 1: {pasted_chars} of the {pasted_chars + 1} characters of the writer's line "
        "were pasted or dropped in, not typed."
    )
    expect(page.locator("body")).not_to_contain_text("while the writer's tab was hidden")
    page.goto(f"{server.url}/research/experiments/fake-ab/writers/{writer['id']}")
    expect(page.locator("#ks-summary")).to_contain_text(f"{len(rows)} recorded rows")
    expect(page.locator("#ks-summary")).to_contain_text("1 paste")
    expect(page.locator(".record-check").first).to_have_text(
        re.compile(r"Keystroke record matches the \d+ submitted texts of this round\.")
    )
    page.click("#keystrokes summary")
    page.click("#ks-marks button:has-text('pasted')")  # a mark jumps to its row
    expect(page.locator("#ks-row")).to_contain_text(f"pasted in the line: put in “{PASTED}”")
    page.select_option("#ks-speed", "20")
    page.click("#ks-play")
    expect(page.locator("#ks-position")).to_contain_text(
        f"Row {len(rows)} of {len(rows)}", timeout=120_000
    )
    expect(page.locator("#ks-play")).to_have_text("Play")
    expect(page.locator("#ks-line")).to_have_text(HALF + REST)
    expect(page.locator("#ks-edit-1")).to_have_text(turn_2)
    page.focus("#ks-scrub")
    page.keyboard.press("Home")  # the scrubber is a range: keys move it
    expect(page.locator("#ks-position")).to_contain_text(f"Row 0 of {len(rows)}")
    assert "Traceback" not in (server.root / "server.log").read_text()
