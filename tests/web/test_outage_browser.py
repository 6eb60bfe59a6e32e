"""PostgreSQL stopped mid-round, in a real headless Chromium against the real server process:
a writer's actions queued (and the page's connection lost, so that it joins again during the
outage) and a rater's answer in flight are kept by their pages, which say the study is
reconnecting (and nothing is shown as saved), and resend them until the database is back;
then every one is stored exactly once."""

from __future__ import annotations

import json
import re
import time

import pytest
from conftest import db_rows
from playwright.sync_api import expect

from bench.postgres_server import (  # noqa: F401 - stoppable_cluster is a fixture
    create_database,
    start_server,
    stop_server,
    stoppable_cluster,
)
from cyoa import store
from cyoa.rating.experiment import create_from_spec
from cyoa.rating.spec import parse_rating_spec
from cyoa.web.experiments import set_status
from tests.cowriting.test_browser import Server, page, start_story, write_line  # noqa: F401 - page: a fixture
from tests.rating.test_rating_client_browser import answer_events, box, saved
from tests.rating.test_rating_client_browser import start as start_rating

pytestmark = pytest.mark.browser

RATING = {
    "id": "outage-rating",
    "title": "A short story",
    "kind": "rating",
    "instrument": "aiss-v1",
    "raters_per_story": 1,
    "stories_per_rater": 1,
    "consent": "You will read a short story and answer questions about it.",
    "instructions": "Read the story, then say how far you agree with each statement.",
    "stories": {"file": "stories.jsonl"},
}
STORY = {
    "story_id": "s1",
    "source": "human",
    "title": "The lamp",
    "text": "The keeper lit the lamp every night.\nOne night the lamp would not light.",
}
EDIT = "The keeper's own ending, typed while the database was down."


def open_rating_study(database: str, folder, exp_id: str) -> None:
    """Store and open a rating study ``exp_id`` of the one story :data:`STORY` (AISS, one
    rater per story) in ``database``, its stories file written in ``folder``."""
    (folder / "stories.jsonl").write_text(json.dumps(STORY) + "\n")
    db = store.connect(database)
    try:
        store.init_db(db)
        create_from_spec(db, parse_rating_spec({**RATING, "id": exp_id}, exp_id, folder, db))
        set_status(db, exp_id, "open")
    finally:
        db.dispose()


RECONNECTING = "The study is reconnecting to its database."
RETRY = re.compile(r'^43\d*\[\{.*"retry": ?true')  # a Socket.IO acknowledgement saying retry


class Sockets:
    """The writing page's Socket.IO websockets, passed through to the server: :meth:`drop`
    cuts the open ones (the page reconnects and joins again); ``heard[n]`` holds what the
    server sent on the n-th."""

    def __init__(self, tab) -> None:
        self.open: list = []
        self.heard: list[list[str]] = []
        tab.route_web_socket(re.compile(r"/socket\.io/"), self._route)

    def _route(self, ws) -> None:
        upstream = ws.connect_to_server()
        heard: list[str] = []
        self.heard.append(heard)
        self.open.append((ws, upstream))

        def from_server(message) -> None:
            heard.append(str(message))
            ws.send(message)

        ws.on_message(upstream.send)
        upstream.on_message(from_server)

    def drop(self) -> None:
        for ws, upstream in self.open:
            ws.close()
            upstream.close()
        self.open = []

    def rejoin_answered_retry(self, tab, timeout: float = 20) -> None:
        """Wait until a new connection's first reply (its join's) said "retry"."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.heard) > 1 and any(RETRY.search(m) for m in self.heard[-1]):
                return
            tab.wait_for_timeout(100)  # lets Playwright deliver the sockets' messages
        raise AssertionError(f"no join answered retry: {self.heard[1:]}")


@pytest.fixture
def server(tmp_path, stoppable_cluster):  # noqa: F811
    """The app (one co-writing study of two rounds, one rating study) on a database of the
    file's own PostgreSQL server."""
    _, cluster = stoppable_cluster
    srv = Server(tmp_path, rounds=2)
    srv.db = create_database(cluster, "outage_browser")
    srv.env["CYOA_DATABASE"] = srv.db
    srv.env["CYOA_TAG_SENTENCES"] = "false"
    open_rating_study(srv.db, tmp_path, RATING["id"])
    srv.start()
    yield srv
    srv.stop()


def test_postgresql_stopped_mid_round_loses_and_doubles_nothing_the_pages_had_queued(
    server,
    page,  # noqa: F811
    chromium,
    stoppable_cluster,  # noqa: F811
):
    bin_dir, cluster = stoppable_cluster
    writer = page
    sockets = Sockets(writer)
    start_story(writer, server, "writer-1")
    write_line(writer, "The keeper climbed the stairs to the lamp room.")
    writer.wait_for_selector("#choose-1:not([disabled])")
    writer.click("#choose-1")
    writer.wait_for_selector("#editing:not([hidden])")
    rater = chromium.new_context().new_page()
    start_rating(rater, server, RATING["id"], "rater-1")
    box(rater, 1).locator('input[value="1"]').check()
    saved(rater, 1)

    stop_server(bin_dir, cluster)
    try:
        writer.fill("#edit", EDIT)  # its draft is sent, and answered "retry"
        expect(writer.locator("#notice")).to_contain_text(RECONNECTING)
        writer.click("#edit-submit")  # queued behind the draft
        sockets.drop()  # the page reconnects: its join is answered "retry", its queue kept
        sockets.rejoin_answered_retry(writer)
        expect(writer.locator("#connection")).to_have_text("Reconnecting… your text is kept")
        box(rater, 2).locator('input[value="4"]').check()  # in flight, answered 503
        expect(rater.locator("#saving")).to_contain_text("the study is reconnecting")
        expect(box(rater, 2).locator(".saved")).to_have_text("Saving…")
        expect(writer.locator("#draft-status")).not_to_have_text("Draft saved")
        assert writer.is_hidden("#writing")  # the turn is not shown as added
    finally:
        start_server(bin_dir, cluster)

    writer.wait_for_selector("#writing:not([hidden])")  # the turn was stored: round 2
    expect(writer.locator("#round-label")).to_have_text("Round 2 of 2")
    expect(writer.locator("#notice")).to_be_hidden()
    saved(rater, 2)
    expect(rater.locator("#saving")).to_have_text("All answers saved")
    rater.context.close()

    events = db_rows(server.db, "SELECT type, payload, client_action_id FROM events")
    ids = [e["client_action_id"] for e in events if e["client_action_id"]]
    assert len(ids) == len(set(ids))  # nothing stored twice
    kept = [(e["type"], json.loads(e["payload"]).get("text")) for e in events]
    assert kept.count(("draft_saved", EDIT)) == 1
    assert kept.count(("turn_submitted", EDIT)) == 1
    answers = answer_events(server)
    assert sorted(a["value"] for a in answers) == [1, 4]  # the answer in flight, once
    assert len({a["action_id"] for a in answers}) == 2
    assert "Traceback" not in (server.root / "server.log").read_text()
