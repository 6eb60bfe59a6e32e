"""The participants' outboxes survive a reload, in a real headless Chromium against the real
server process: a writer who goes offline mid-round chooses, switches, edits and adds the
turn, reloads while still offline and comes back; then writes a line and answers the survey
offline, reloading each time; and a rater answers offline and reloads. Every action is stored
exactly once and the page shows the story as stored. Clicks kept by a window that was offline
while the story went on in another give way to the stored story; without localStorage the
outbox lives in the page."""

from __future__ import annotations

import json
import re

import pytest
from conftest import db_rows
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from tests.cowriting.test_browser import (  # noqa: F401 - page
    OFFLINE,
    Server,
    page,
    session_of,
    start_story,
    write_line,
)
from tests.rating.test_rating_client_browser import answer_events, box, saved
from tests.rating.test_rating_client_browser import start as start_rating
from tests.web.test_outage_browser import open_rating_study

pytestmark = pytest.mark.browser

DRAFT = "A draft of the first suggestion, typed offline."
TURN = "The second suggestion, rewritten offline and added."
LINE = "A line of my own written while offline."


RATING_ID = "outbox-rating"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the file (a start takes seconds): stories of two rounds, and an open
    rating study of one story (:data:`RATING_ID`). No test stops it or changes its settings;
    each writer has a participant id of their own and reads back only their own session's
    rows (:func:`events`, :func:`session_of`), and the one rater is the only one to write
    rating events. No test reads the sentence tags, so it tags nothing: a tagging run (a
    process of its own) left over from one test would only slow the next."""
    root = tmp_path_factory.mktemp("outbox")
    srv = Server(root, rounds=2)
    srv.env["CYOA_START_BURST"] = "1000"  # every test's participants start from this address
    srv.env["CYOA_TAG_SENTENCES"] = "false"
    open_rating_study(srv.db, root, RATING_ID)
    srv.start()
    yield srv
    srv.stop()


def reload_offline_then_come_back(page, url: str) -> None:  # noqa: F811
    """Reload while offline (the browser has no page to show), then come back online and
    open the page again, as a writer would."""
    with pytest.raises(PlaywrightError):
        page.reload()
    page.context.set_offline(False)
    page.goto(url)


def events(server: Server, pid: str) -> list[dict]:
    """The events of the session of participant ``pid``, in order."""
    rows = db_rows(
        server.db,
        "SELECT type, payload, client_action_id FROM events"
        f" WHERE session_id = '{session_of(server, pid)}' ORDER BY seq",
    )
    return [{**row, "payload": json.loads(row["payload"])} for row in rows]


def test_a_writer_s_offline_clicks_survive_reloads_and_are_stored_once(server, page):  # noqa: F811
    log = server.root / "server.log"
    logged_before = log.stat().st_size  # the file's server: what the other tests logged
    start_story(page, server, "outbox1")
    url = page.url
    write_line(page, "The keeper climbed the stairs to the lamp room.")
    page.wait_for_selector("#choose-2:not([disabled])")

    page.context.set_offline(True)
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    page.click("#choose-1")  # shown at once: the writer edits while offline
    page.wait_for_selector("#editing:not([hidden])")
    page.fill("#edit", DRAFT)
    page.click("#choose-2")  # the switch queues the first draft ahead of it
    expect(page.locator("#choose-1")).to_have_text("Switch to this one")
    page.fill("#edit", TURN)
    page.click("#edit-submit")
    expect(page.locator("#notice")).to_have_text(OFFLINE)
    expect(page.locator("#edit-submit")).to_be_disabled()
    assert page.is_hidden("#writing")  # the turn is not shown as added
    reload_offline_then_come_back(page, url)

    page.wait_for_selector("#writing:not([hidden])")
    expect(page.locator("#round-label")).to_have_text("Round 2 of 2")
    expect(page.locator("#story")).to_contain_text(TURN)
    expect(page.locator("#notice")).to_be_hidden()

    page.context.set_offline(True)
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    write_line(page, LINE)
    expect(page.locator("#notice")).to_have_text(OFFLINE)
    reload_offline_then_come_back(page, url)
    page.wait_for_selector("#choose-1:not([disabled])")
    expect(page.locator("#story")).to_contain_text(LINE)
    page.click("#choose-1")
    page.fill("#edit", "The last suggestion, added online.")
    page.click("#edit-submit")
    page.wait_for_selector("#survey:not([hidden])")

    page.context.set_offline(True)
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    for item in ["happy", "collaborative", "useful", "connected", "ideas"]:
        page.check(f"input[name='{item}'][value='4']")
    page.fill("#q-why_chosen", "Answered offline.")
    page.click("#survey-submit")
    expect(page.locator("#notice")).to_have_text(OFFLINE)
    reload_offline_then_come_back(page, url)
    page.wait_for_selector("#completion-code")

    stored = events(server, "outbox1")
    session = session_of(server, "outbox1")
    ids = [e["client_action_id"] for e in stored if e["client_action_id"]]
    assert len(ids) == len(set(ids))  # nothing stored twice
    writer = [(e["type"], e["payload"]) for e in stored if e["client_action_id"]]
    round_1 = [(kind, p.get("slot"), p.get("text")) for kind, p in writer if p.get("round") == 1]
    assert round_1 == [
        ("line_submitted", None, "The keeper climbed the stairs to the lamp room."),
        ("suggestion_chosen", 1, None),
        ("draft_saved", 1, DRAFT),
        ("suggestion_chosen", 2, None),
        ("turn_submitted", 2, TURN),
    ]
    assert [kind for kind, p in writer].count("line_submitted") == 2
    assert [kind for kind, p in writer].count("survey_submitted") == 1
    [answer] = db_rows(
        server.db,
        f"SELECT text FROM survey_answers WHERE session_id = '{session}'"
        " AND item_id = 'why_chosen'",
    )
    assert answer["text"] == "Answered offline."
    turns = db_rows(
        server.db,
        "SELECT round, writer_line, final_text FROM rounds"
        f" WHERE session_id = '{session}' ORDER BY round",
    )
    assert [(t["round"], t["final_text"]) for t in turns] == [
        (1, TURN),
        (2, "The last suggestion, added online."),
    ]
    assert turns[1]["writer_line"] == LINE
    assert b"Traceback" not in log.read_bytes()[logged_before:]


def test_a_rater_s_offline_answers_survive_a_reload_and_are_stored_once(server, page):  # noqa: F811
    page.on("dialog", lambda dialog: dialog.accept())  # leaving with answers not saved yet
    start_rating(page, server, RATING_ID, "outbox-rater")
    url = page.url
    box(page, 1).locator('input[value="2"]').check()
    saved(page, 1)

    page.context.set_offline(True)
    box(page, 2).locator('input[value="4"]').check()
    box(page, 3).locator('input[value="5"]').check()
    expect(page.locator("#saving")).to_contain_text("2 answers not saved yet — offline")
    reload_offline_then_come_back(page, url)

    saved(page, 2)
    saved(page, 3)
    expect(page.locator("#saving")).to_have_text("All answers saved")
    assert box(page, 3).locator('input[value="5"]').is_checked()
    answers = answer_events(server)
    assert sorted(float(a["value"]) for a in answers) == [2, 4, 5]  # each once
    assert len({a["action_id"] for a in answers}) == 3


MOVED_ON = (
    "Your story had gone on in another tab or window, so this page now shows it as it is saved."
    " Nothing saved was lost."
)


class RetryAfterRefusal:
    """Passes the page's Socket.IO websockets through to the server, except that each
    keystroke-record batch sent after the server refused an action is answered "retry" the
    first time (as when the session's messages come too fast): the page shows its connection
    notice a moment, sends the batch again, and the server stores it once."""

    REFUSED = re.compile(r'^43\d*\[\{"ok": ?false(?!.*"retry")')
    BATCH = re.compile(r'^42(\d+)\["record",\{"operations":\[\[(\d+),')

    def __init__(self, tab) -> None:
        self.refused = False
        self.retried: set[str] = set()  # the batches answered "retry", by their first row
        self.acks: set[str] = set()  # the acknowledgements to answer "retry" instead
        tab.route_web_socket(re.compile(r"/socket\.io/"), self._route)

    def _route(self, ws) -> None:
        upstream = ws.connect_to_server()

        def from_page(message) -> None:
            batch = self.BATCH.match(str(message))
            if batch and self.refused and batch.group(2) not in self.retried:
                self.retried.add(batch.group(2))
                self.acks.add(f"43{batch.group(1)}[")
            upstream.send(message)

        def from_server(message) -> None:
            text = str(message)
            self.refused = self.refused or bool(self.REFUSED.match(text))
            ack = next((a for a in self.acks if text.startswith(a)), None)
            if ack:
                self.acks.discard(ack)
                ws.send(ack + '{"ok": false, "retry": true, "error": "Too fast."}]')
                return
            ws.send(message)

        ws.on_message(from_page)
        upstream.on_message(from_server)


def test_clicks_kept_offline_while_the_story_went_on_elsewhere_give_way_to_the_stored_story(
    server,
    page,  # noqa: F811
    chromium,
):
    start_story(page, server, "outbox2")
    url = page.url
    write_line(page, "The keeper climbed the stairs to the lamp room.")
    page.wait_for_selector("#choose-2:not([disabled])")
    elsewhere = chromium.new_context()  # the same story in another browser window
    elsewhere.add_cookies(page.context.cookies())
    other = elsewhere.new_page()
    other.goto(url)
    other.wait_for_selector("#choose-2:not([disabled])")

    page.context.set_offline(True)
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    page.click("#choose-1")
    page.fill("#edit", "The turn this window kept while it was offline.")
    page.click("#edit-submit")
    expect(page.locator("#notice")).to_have_text(OFFLINE)
    other.click("#choose-2")
    other.fill("#edit", "The turn the other window added meanwhile.")
    other.click("#edit-submit")
    other.wait_for_selector("#round-label:text-is('Round 2 of 2')")
    elsewhere.close()
    sockets = RetryAfterRefusal(page)
    reload_offline_then_come_back(page, url)

    # A keystroke batch answered "retry" after the refusals covers the notice a moment; it
    # comes back once the batch is stored.
    expect(page.locator("#notice")).to_have_text("Too fast.")
    expect(page.locator("#notice")).to_have_text(MOVED_ON)
    assert sockets.retried
    expect(page.locator("#round-label")).to_have_text("Round 2 of 2")
    expect(page.locator("#story")).to_contain_text("The turn the other window added meanwhile.")
    assert "kept while it was offline" not in page.inner_text("#story")
    turns = db_rows(
        server.db,
        "SELECT round, chosen_slot, final_text FROM rounds"
        f" WHERE session_id = '{session_of(server, 'outbox2')}' ORDER BY round",
    )
    assert [(t["round"], t["chosen_slot"], t["final_text"]) for t in turns] == [
        (1, 2, "The turn the other window added meanwhile."),
        (2, None, None),
    ]
    kinds = [e["type"] for e in events(server, "outbox2")]
    assert kinds.count("suggestion_chosen") == 1 and kinds.count("turn_submitted") == 1
    # Answered, so no longer kept: a second reload sends nothing and says nothing.
    page.reload()
    page.wait_for_selector("#writing:not([hidden])")
    expect(page.locator("#notice")).to_be_hidden()
    assert [e["type"] for e in events(server, "outbox2")] == kinds


def test_without_local_storage_the_outbox_lives_in_the_page_and_still_stores_once(server, page):  # noqa: F811
    # As in a private mode where storage refuses every write.
    page.add_init_script("Storage.prototype.setItem = () => { throw new Error('QuotaExceeded'); };")
    start_story(page, server, "outbox3")
    write_line(page, "The keeper climbed the stairs to the lamp room.")
    page.wait_for_selector("#choose-1:not([disabled])")
    page.context.set_offline(True)
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    page.click("#choose-1")
    page.fill("#edit", TURN)
    page.click("#edit-submit")
    expect(page.locator("#notice")).to_have_text(OFFLINE)
    page.context.set_offline(False)
    page.wait_for_selector("#round-label:text-is('Round 2 of 2')")
    expect(page.locator("#story")).to_contain_text(TURN)
    kinds = [e["type"] for e in events(server, "outbox3") if e["client_action_id"]]
    assert kinds == ["line_submitted", "suggestion_chosen", "turn_submitted"]
