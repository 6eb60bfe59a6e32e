"""A study cannot be exhausted or flooded: one address starts only so many participants,
places of raters who never answer come back soon, one rater's flood of answers is refused
without a database write, and a locked database asks the page to send the answer again."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from conftest import Researcher, Writer, write_setup

from cyoa import create_app, store
from cyoa.cli import cli
from tests.rating.test_rating_journey import Rater, rows, write_spec
from tests.rating.test_research_rating_admin import form

pytestmark = pytest.mark.both_databases


def rating_study(tmp_path, **config):
    """An app with the AISS rating study (4 stories, 2 raters each, 2 stories per rater)
    created and opened, under ``config`` (a setting given as None keeps the app's default)."""
    settings = {**write_setup(tmp_path), **config}
    app = create_app({key: value for key, value in settings.items() if value is not None})
    runner = CliRunner()
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    base = ["--db", app.config["DATABASE"]]
    created = runner.invoke(
        cli, [*base, "experiment", "create", str(write_spec(tmp_path))], env=env
    )
    assert created.exit_code == 0, created.output
    assert runner.invoke(cli, [*base, "experiment", "open", "aiss-pilot"], env=env).exit_code == 0
    return app


def from_address(rater: Rater, address: str) -> Rater:
    rater.client.environ_base["REMOTE_ADDR"] = address
    return rater


# --- starts ---------------------------------------------------------------------------------


def test_one_address_starts_only_its_burst_of_raters_then_is_asked_to_wait(tmp_path):
    app = rating_study(tmp_path, START_BURST=2, STARTS_PER_MINUTE=1)
    assert [Rater(app, f"?pid=r{n}").start().status_code for n in range(2)] == [302, 302]
    refused = Rater(app, "?pid=r2").start()
    assert refused.status_code == 429
    assert refused.headers["Retry-After"] == "60"
    page = refused.get_data(as_text=True)
    assert "Please wait a minute and open your study link again." in page
    assert len(rows(app, "SELECT * FROM raters")) == 2
    other = from_address(Rater(app, "?pid=r3"), "192.0.2.7")
    assert other.start().status_code == 302


def test_a_rater_who_started_already_resumes_without_taking_a_start(tmp_path):
    app = rating_study(tmp_path, START_BURST=1, STARTS_PER_MINUTE=1)
    rater = Rater(app, "?pid=r0")
    assert rater.start().status_code == 302
    with rater.client.session_transaction() as cookie:
        token = cookie["csrf"]
    again = rater.client.post(
        "/r/aiss-pilot/start", data={"consent": "yes", "csrf_token": token, "pid": "r0"}
    )
    assert again.status_code == 302 and again.location.endswith("/rate")
    assert Rater(app, "?pid=r1").start().status_code == 429


def test_writers_starts_share_the_address_s_limit(tmp_path):
    app = create_app({**write_setup(tmp_path), "START_BURST": 1, "STARTS_PER_MINUTE": 1})
    Writer(app, "?pid=w0")
    second = app.test_client()
    second.get("/s/fake-ab?pid=w1")
    with second.session_transaction() as cookie:
        token = cookie["csrf"]
    refused = second.post(
        "/s/fake-ab/start", data={"consent": "yes", "csrf_token": token, "pid": "w1"}
    )
    assert refused.status_code == 429
    assert "open your study link again" in refused.get_data(as_text=True)
    assert len(rows(app, "SELECT * FROM sessions")) == 1


def test_behind_a_proxy_each_client_is_limited_by_its_own_forwarded_address(tmp_path):
    app = rating_study(tmp_path, START_BURST=1, STARTS_PER_MINUTE=1, PROXIES=1)
    for n, address in enumerate(("198.51.100.1", "198.51.100.2")):
        rater = Rater(app, f"?pid=r{n}")
        rater.client.environ_base["HTTP_X_FORWARDED_FOR"] = address
        assert rater.start().status_code == 302
    again = Rater(app, "?pid=r9")
    again.client.environ_base["HTTP_X_FORWARDED_FOR"] = "198.51.100.1"
    assert again.start().status_code == 429


def test_a_negative_number_of_proxies_is_refused_with_a_sentence(tmp_path):
    with pytest.raises(ValueError, match="CYOA_PROXIES is -1"):
        create_app({**write_setup(tmp_path), "PROXIES": -1})


def minutes_ago(minutes: float) -> str:
    """Server time ``minutes`` ago, as the app stores it (:func:`cyoa.store.now`)."""
    then = datetime.now(UTC) - timedelta(minutes=minutes)
    return then.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def age(app, rater_id: str, minutes: float) -> None:
    """Move a rater's assignment and last action ``minutes`` into the past."""
    stamp = minutes_ago(minutes)
    db = store.connect(app.config["DATABASE"])
    try:
        with store.write_transaction(db):
            db.execute(
                "UPDATE assignments SET assigned_at = ? WHERE rater_id = ?", [stamp, rater_id]
            )
            db.execute("UPDATE raters SET updated_at = ? WHERE rater_id = ?", [stamp, rater_id])
    finally:
        db.close()


def test_places_of_raters_who_never_answered_come_back_after_the_first_answer_timeout(
    tmp_path,
):
    app = rating_study(tmp_path)
    raters = [Rater(app, f"?pid=r{n}") for n in range(4)]
    for rater in raters:
        assert rater.start().status_code == 302
    raters[0].answer_all()
    assert Rater(app, "?pid=late").start().status_code == 403  # full
    for rater in raters:
        age(app, rater.state()[0], 16)
    late = Rater(app, "?pid=late2")
    assert late.start().status_code == 302
    # The rater who answered keeps both places (dropout_minutes is 60): the late rater gets
    # only stories whose raters never answered.
    kept = {a["story_id"] for a in rows(app, "SELECT * FROM assignments WHERE rater_id = ?",
                                        raters[0].state()[0])}  # fmt: skip
    given = {a["story_id"] for a in rows(app, "SELECT * FROM assignments WHERE rater_id = ?",
                                         late.state()[0])}  # fmt: skip
    assert len(given) == 2 and not given & kept


def test_a_spec_s_first_answer_minutes_is_stored_and_checked(tmp_path):
    app = rating_study(tmp_path)
    spec = rows(app, "SELECT spec FROM experiments WHERE id = 'aiss-pilot'")[0]["spec"]
    assert '"first_answer_minutes": 15' in spec
    bad = write_spec(tmp_path, id="other", first_answer_minutes=0)
    result = CliRunner().invoke(
        cli,
        ["--db", app.config["DATABASE"], "experiment", "create", str(bad)],
        env={"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/x"},
    )
    assert result.exit_code != 0
    assert "first_answer_minutes must be from 1 to 10080, not 0" in result.output


def test_the_rating_form_sets_first_answer_minutes_and_an_edit_shows_it(app):
    researcher = Researcher(app)
    researcher.login()
    reply = researcher.post("/research/ratings/new", data=form(first_answer_minutes="20"))
    assert reply.status_code == 302, reply.get_data(as_text=True)
    spec = rows(app, "SELECT spec FROM experiments WHERE id = 'aiss-pilot'")[0]["spec"]
    assert '"first_answer_minutes": 20' in spec
    edit = researcher.get("/research/ratings/aiss-pilot/edit").get_data(as_text=True)
    assert 'name="first_answer_minutes" type="number" min="1" value="20"' in edit


# --- answers --------------------------------------------------------------------------------


def answer(rater: Rater, value: int, action_id: str):
    _, state = rater.state()
    task = state.current
    payload = {"story": task.story_id, "item": task.questions[0], "value": str(value)}
    return rater.act("answer_given", payload, action_id)


def test_a_rater_s_flood_of_answers_is_refused_with_429_and_not_stored(tmp_path):
    app = rating_study(tmp_path, RATER_ACTION_BURST=3, RATER_ACTIONS_PER_SECOND=0.01)
    rater, other = Rater(app, "?pid=r0"), Rater(app, "?pid=r1")
    rater.start()
    other.start()
    assert [answer(rater, 3, f"a{n}").status_code for n in range(3)] == [200, 200, 200]
    stored = len(rows(app, "SELECT * FROM rating_events"))
    refused = answer(rater, 4, "a3")
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    body = refused.get_json()
    assert body["ok"] is False and body["retry"] is True
    assert "sent again in a moment" in body["error"]
    assert len(rows(app, "SELECT * FROM rating_events")) == stored
    assert answer(other, 2, "b0").status_code == 200  # another rater is not slowed


@pytest.mark.sqlite_only  # SQLite's write lock and busy wait
def test_a_locked_database_asks_the_rater_s_page_to_send_the_answer_again(
    tmp_path, short_busy_wait
):
    app = rating_study(tmp_path)
    rater = Rater(app)
    rater.start()
    lock = sqlite3.connect(app.config["DATABASE"])
    lock.execute("BEGIN EXCLUSIVE")  # another process holds the database
    try:
        busy = answer(rater, 3, "same")
    finally:
        lock.rollback()
        lock.close()
    assert busy.status_code == 503
    assert busy.headers["Retry-After"] == "2"
    assert busy.get_json()["retry"] is True and "sent again" in busy.get_json()["error"]
    assert answer(rater, 3, "same").get_json() == {"ok": True, "duplicate": False}
    assert answer(rater, 3, "same").get_json() == {"ok": True, "duplicate": True}
    assert len(rows(app, "SELECT * FROM judgements")) == 1


@pytest.mark.sqlite_only  # SQLite's write lock and busy wait
def test_a_start_that_meets_a_locked_database_gets_a_sentence_not_a_500(tmp_path, short_busy_wait):
    app = rating_study(tmp_path)
    lock = sqlite3.connect(app.config["DATABASE"])
    lock.execute("BEGIN EXCLUSIVE")
    try:
        busy = Rater(app, "?pid=r0").start()
    finally:
        lock.rollback()
        lock.close()
    assert busy.status_code == 503
    assert "Please wait a moment, then press" in busy.get_data(as_text=True)
    assert Rater(app, "?pid=r0").start().status_code == 302


def seen(rater: Rater):
    return rater.client.post("/r/aiss-pilot/seen", headers={"X-CYOA-Action": "1"})


def test_a_slow_reader_whose_page_is_open_keeps_their_places_past_the_first_answer_timeout(
    tmp_path,
):
    app = rating_study(tmp_path)
    reader, gone = Rater(app, "?pid=reader"), Rater(app, "?pid=gone")
    for rater in (reader, gone, Rater(app, "?pid=r2"), Rater(app, "?pid=r3")):
        assert rater.start().status_code == 302
    events = len(rows(app, "SELECT * FROM rating_events"))
    for rater in (reader, gone):
        age(app, rater.state()[0], 20)  # started 20 minutes ago, no answer since
    assert seen(reader).get_json() == {"ok": True}
    age_seen(app, reader.state()[0], 1)  # the page's last heartbeat: a minute ago
    assert len(rows(app, "SELECT * FROM rating_events")) == events  # no event recorded
    late = Rater(app, "?pid=late")
    assert late.start().status_code == 302
    # The reader's two stories still have their other raters; the late rater took the
    # places of the rater whose page went quiet.
    given = {a["story_id"] for a in rows(app, "SELECT * FROM assignments WHERE rater_id = ?",
                                         late.state()[0])}  # fmt: skip
    read = {a["story_id"] for a in rows(app, "SELECT * FROM assignments WHERE rater_id = ?",
                                        reader.state()[0])}  # fmt: skip
    left = {a["story_id"] for a in rows(app, "SELECT * FROM assignments WHERE rater_id = ?",
                                        gone.state()[0])}  # fmt: skip
    assert len(given) == 2 and given == left and not given & read


def age_seen(app, rater_id: str, minutes: int) -> None:
    """Move only a rater's last sign of life (``raters.updated_at``) ``minutes`` back."""
    db = store.connect(app.config["DATABASE"])
    try:
        with store.write_transaction(db):
            db.execute(
                "UPDATE raters SET updated_at = ? WHERE rater_id = ?",
                [minutes_ago(minutes), rater_id],
            )
    finally:
        db.close()


def test_the_heartbeat_needs_the_page_s_header_and_a_rater_and_is_rate_limited(tmp_path):
    app = rating_study(tmp_path, RATER_ACTION_BURST=2, RATER_ACTIONS_PER_SECOND=0.01)
    rater = Rater(app, "?pid=r0")
    assert seen(rater).status_code == 403  # not started: no rater in the cookie
    rater.start()
    assert rater.client.post("/r/aiss-pilot/seen").status_code == 400
    assert [seen(rater).status_code for _ in range(3)] == [200, 200, 429]


def test_the_addresses_of_one_ipv6_64_share_one_start_limit(tmp_path):
    app = rating_study(tmp_path, START_BURST=2, STARTS_PER_MINUTE=1)
    codes = [
        from_address(Rater(app, f"?pid=v{n}"), f"2001:db8:1:2::{n + 1:x}").start().status_code
        for n in range(3)
    ]
    assert codes == [302, 302, 429]
    other = from_address(Rater(app, "?pid=w0"), "2001:db8:1:3::1")
    assert other.start().status_code == 302  # another /64 is another client


def test_the_default_rater_limit_is_one_action_a_second_with_a_burst_of_30(tmp_path):
    app = rating_study(tmp_path, RATER_ACTION_BURST=None)
    rater = Rater(app, "?pid=r0")
    rater.start()
    codes = [answer(rater, 3, f"a{n}").status_code for n in range(40)]
    # The burst of 30 goes through; then at most a token a second comes back, far fewer than
    # the 10 more answers sent in the time they take.
    assert codes[:30] == [200] * 30 and 429 in codes


def test_a_forwarded_request_without_proxies_set_logs_one_warning(tmp_path, caplog):
    app = rating_study(tmp_path)
    client = app.test_client()
    for _ in range(3):
        client.get("/", headers={"X-Forwarded-For": "203.0.113.7"})
    warnings = [r for r in caplog.records if "CYOA_PROXIES is 0" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelname == "WARNING"


@pytest.mark.sqlite_only  # SQLite's write lock and busy wait
def test_a_story_shown_while_the_database_is_locked_gets_a_sentence_and_503_not_a_500(
    tmp_path, short_busy_wait
):
    app = rating_study(tmp_path)
    rater = Rater(app)
    reply = rater.client.get("/r/aiss-pilot")
    token = re.search(r'name="csrf_token" value="([^"]+)"', reply.get_data(as_text=True))[1]
    started = rater.client.post("/r/aiss-pilot/start", data={"consent": "yes", "csrf_token": token})
    assert started.status_code == 302  # the story is not shown yet: the next page shows it
    lock = sqlite3.connect(app.config["DATABASE"])
    lock.execute("BEGIN EXCLUSIVE")
    try:
        busy = rater.client.get("/r/aiss-pilot/rate")
    finally:
        lock.rollback()
        lock.close()
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "2"
    assert "wait a few seconds and reload this page" in busy.get_data(as_text=True)
    assert rater.client.get("/r/aiss-pilot/rate").status_code == 200
