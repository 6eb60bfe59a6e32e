"""While the database cannot be reached, every page, form, answer and Socket.IO event of a
participant is answered "send again" (HTTP 503 with ``Retry-After``, or ``retry: true``),
never a 500; the outage is logged in one line; and what is sent again once the database is
back is stored exactly once.

The outages are real: on SQLite the file's place holds a folder, so no connection can open
it ("unable to open database file", as when its disk is gone); on PostgreSQL the test file's
own server is stopped at once, cutting every connection, and started again."""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import Writer, db_rows

from bench.postgres_server import (  # noqa: F401 - stoppable_cluster is a fixture
    create_database,
    start_server,
    stop_server,
    stoppable_cluster,
)
from cyoa import store
from cyoa.cowriting.sockets import push_state
from cyoa.web.outage import SENT_AGAIN, TEXT_KEPT
from tests.rating.test_rating_journey import Rater
from tests.rating.test_rating_limits import rating_study

LINE = {"text": "The lamp went out while the sea was calm."}
RECONNECTING = "The study is reconnecting to its database."
AS_THE_PAGE_SENDS = {"X-CYOA-Action": "1", "Accept": "application/json"}  # static/js/rate.js


def sqlite_outage(path: Path) -> Callable[[], contextmanager]:
    """The database file moved away and a folder in its place, then the file put back."""

    @contextmanager
    def outage() -> Iterator[None]:
        store.connect(path).dispose()  # the pool's idle connections still hold the file open
        away = path.with_name(path.name + ".away")
        path.rename(away)
        path.mkdir()
        try:
            yield
        finally:
            path.rmdir()
            away.rename(path)
            store.connect(path).dispose()

    return outage


def postgresql_outage(bin_dir: Path, cluster) -> Callable[[], contextmanager]:
    """The server stopped at once (every connection cut), then started again."""

    @contextmanager
    def outage() -> Iterator[None]:
        stop_server(bin_dir, cluster)
        try:
            yield
        finally:
            start_server(bin_dir, cluster)

    return outage


@pytest.fixture(params=["sqlite", "postgresql"])
def study(request, tmp_path):
    """An app with the co-writing and the rating study open, and its outage to make."""
    if request.param == "sqlite":
        app = rating_study(tmp_path)
        return app, sqlite_outage(Path(app.config["DATABASE"]))
    bin_dir, cluster = request.getfixturevalue("stoppable_cluster")
    url = create_database(cluster, f"outage_{secrets.token_hex(4)}")
    app = rating_study(tmp_path, DATABASE=url)
    return app, postgresql_outage(bin_dir, cluster)


def csrf(client) -> str:
    with client.session_transaction() as s:
        return s["csrf"]


def answer_body(rater: Rater, value: int, action_id: str) -> dict:
    _, state = rater.state()
    task = state.current
    payload = {"story": task.story_id, "item": task.questions[0], "value": str(value)}
    return {"action_id": action_id, "type": "answer_given", "payload": rater.as_shown(payload)}


def post_answer(rater: Rater, body: dict):
    return rater.client.post("/r/aiss-pilot/action", json=body, headers=AS_THE_PAGE_SENDS)


def test_a_participant_s_pages_forms_and_answers_during_an_outage_get_503_and_retry_after(study):
    app, outage = study
    writer = Writer(app)
    rater = Rater(app, "?pid=r0")
    rater.start()
    body = answer_body(rater, 3, "answer-1")
    newcomer = app.test_client()
    newcomer.get("/s/fake-ab?pid=new1")
    form = {"consent": "yes", "csrf_token": csrf(newcomer), "pid": "new1"}

    with outage():
        pages = {
            "/": newcomer.get("/"),
            "/s/fake-ab": newcomer.get("/s/fake-ab?pid=new1"),
            "/s/fake-ab/write": writer.http.get("/s/fake-ab/write"),
            "/s/fake-ab/done": writer.http.get("/s/fake-ab/done"),
            "/r/aiss-pilot": rater.client.get("/r/aiss-pilot"),
            "/r/aiss-pilot/rate": rater.client.get("/r/aiss-pilot/rate"),
        }
        started = newcomer.post("/s/fake-ab/start", data=form)
        answered = post_answer(rater, body)
        seen = rater.client.post("/r/aiss-pilot/seen", headers=AS_THE_PAGE_SENDS)

    for url, page in pages.items():
        assert (url, page.status_code, page.headers["Retry-After"]) == (url, 503, "2")
        html = page.get_data(as_text=True)
        assert RECONNECTING in html and 'id="countdown" data-seconds="5"' in html
    assert (started.status_code, started.headers["Retry-After"]) == (503, "2")
    again = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', started.get_data(as_text=True)))
    assert again == form  # the page's Try again button sends the same form
    assert 'action="/s/fake-ab/start"' in started.get_data(as_text=True)
    for reply in (answered, seen):
        assert (reply.status_code, reply.headers["Retry-After"]) == (503, "2")
        assert reply.get_json() == {"ok": False, "retry": True, "error": SENT_AGAIN}

    assert newcomer.post("/s/fake-ab/start", data=again).status_code == 302
    assert writer.http.get("/s/fake-ab/write").status_code == 200
    assert rater.client.get("/r/aiss-pilot/rate").status_code == 200
    assert post_answer(rater, body).get_json() == {"ok": True, "duplicate": False}
    assert post_answer(rater, body).get_json() == {"ok": True, "duplicate": True}
    stored = db_rows(app.config["DATABASE"], "SELECT client_action_id FROM rating_events")
    assert [row["client_action_id"] for row in stored].count("answer-1") == 1


def test_a_writer_s_action_and_join_during_an_outage_get_retry_and_are_stored_once_after(study):
    app, outage = study
    writer = Writer(app)
    with outage():
        acted = writer.act("line_submitted", LINE, action_id="line-1")
        joined = writer.reconnect()  # a page that lost its connection joins again
    assert acted == {"ok": False, "retry": True, "error": TEXT_KEPT}
    assert joined == {"ok": False, "retry": True, "error": TEXT_KEPT}

    rejoined = writer.connect()
    assert rejoined["ok"], rejoined
    first = writer.act("line_submitted", LINE, action_id="line-1")
    assert first["ok"] and not first["duplicate"]
    assert writer.act("line_submitted", LINE, action_id="line-1")["duplicate"]
    writer.wait_for("choosing")
    lines = db_rows(app.config["DATABASE"], "SELECT * FROM events WHERE type = 'line_submitted'")
    assert [row["client_action_id"] for row in lines] == ["line-1"]


def test_an_outage_is_logged_in_one_line_not_a_traceback_per_request(study, caplog):
    app, outage = study
    writer = Writer(app)
    rater = Rater(app, "?pid=r0")
    rater.start()
    body = answer_body(rater, 3, "answer-1")
    with caplog.at_level(logging.INFO), outage():
        for _ in range(3):
            assert rater.client.get("/r/aiss-pilot/rate").status_code == 503
            assert post_answer(rater, body).status_code == 503
            assert writer.act("line_submitted", LINE, action_id="line-1")["retry"]
    told = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in told] == ["cyoa.web.outage"]
    assert "The database cannot be reached" in told[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]


def test_a_database_error_that_is_not_an_outage_stays_an_error(tmp_path):
    app = rating_study(tmp_path)
    rater = Rater(app, "?pid=r0")
    rater.start()
    db = store.connect(app.config["DATABASE"])
    db.execute("DROP TABLE rating_events")  # a bug, not an outage: no retry would mend it
    with pytest.raises(Exception, match="no such table"):
        rater.client.get("/r/aiss-pilot/rate")


def test_a_state_pushed_to_a_writer_s_tabs_during_an_outage_waits_for_their_next_join(
    study, caplog
):
    app, outage = study
    writer = Writer(app)
    writer.io.get_received()
    with caplog.at_level(logging.INFO), outage():
        push_state(app, writer.session_id)  # as the runner does when a slot settles
    assert [m["name"] for m in writer.io.get_received()] == []
    assert [r.name for r in caplog.records if r.levelno >= logging.WARNING] == ["cyoa.web.outage"]
    push_state(app, writer.session_id)
    assert [m["name"] for m in writer.io.get_received()] == ["state"]
