"""One writer cannot slow the others: the work a session's messages can cause is bounded.

A session's messages beyond its rate are answered "send it again in a moment" when its next
token is due;
a draft that repeats the saved one records nothing; an action the rules refuse takes no
write lock; a connection's events are handled one after another on its own thread, however
many it sends; the state is kept between actions rather than rebuilt from the whole log. And
each suggestion records how long its writer actually waited, next to how long it took to
generate. Timings under a flood: bench/results/flood.md (``python bench/flood.py``).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time

import psutil
import pytest
import socketio
from conftest import Writer, db_rows, write_setup

from cyoa import create_app
from cyoa.cowriting.flow import RuleError
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.service import Study
from cyoa.web.ratelimit import Bucket, take
from tests.web.test_workers import EXPERIMENT, AppProcess, new_writer

LINE = {"text": "The lighthouse keeper found a letter."}
# Faster than the defaults, so that a refusal's answer (sent when the session's next token
# is due) comes within a hundredth of a second and a flood of hundreds takes seconds.
LIMITS = {"MESSAGES_PER_SECOND": 100.0, "MESSAGE_BURST": 60, "DRAFTS_PER_SECOND": 20.0}


@pytest.fixture
def app(tmp_path):
    return create_app({**write_setup(tmp_path), **LIMITS, "DRAFT_BURST": 10})


def choosing(writer: Writer) -> None:
    assert writer.act("line_submitted", LINE)["ok"]
    writer.wait_for("choosing")
    assert writer.act("suggestion_chosen", {"slot": 1})["ok"]


def drafts_recorded(app) -> int:
    sql = "SELECT count(*) AS n FROM events WHERE type = 'draft_saved'"
    return db_rows(app.config["DATABASE"], sql)[0]["n"]


def test_a_flood_of_drafts_is_answered_with_a_retry_beyond_the_sessions_rate(app):
    writer, other = Writer(app), Writer(app)
    choosing(writer)
    started = time.monotonic()
    acks = [
        writer.act("draft_saved", {"slot": 1, "text": f"Draft number {n}."}) for n in range(200)
    ]
    elapsed = time.monotonic() - started
    refused = [a for a in acks if not a["ok"]]
    assert refused
    for ack in refused:
        assert ack["retry"] is True and ack["error"].startswith("Your changes are arriving faster")
    assert drafts_recorded(app) <= 10 + elapsed * 20.0 + 1
    # The flood is one session's: another writer goes on as ever.
    assert other.act("line_submitted", LINE)["ok"]
    assert other.wait_for("choosing")


def test_a_flood_of_any_messages_is_held_to_the_sessions_rate(app):
    writer = Writer(app)
    started = time.monotonic()
    acks = [writer.act("suggestion_chosen", {"slot": 1}) for _ in range(300)]
    elapsed = time.monotonic() - started
    answered = [a for a in acks if "state" in a]  # those that reached the rules
    assert len(answered) < len(acks)
    assert len(answered) <= 60 + elapsed * 100.0 + 1
    assert all(a["error"] == "Please write your own line first." for a in answered)


def test_a_message_over_the_rate_is_answered_when_the_sessions_next_token_is_due(tmp_path):
    slow = {"MESSAGES_PER_SECOND": 2.0, "MESSAGE_BURST": 3}
    writer = Writer(create_app({**write_setup(tmp_path), **slow}))  # its join takes a token
    assert writer.act("suggestion_chosen", {"slot": 1})["error"]  # the rules answer
    assert writer.act("suggestion_chosen", {"slot": 1})["error"]
    started = time.monotonic()
    ack = writer.act("suggestion_chosen", {"slot": 1})
    assert ack["retry"] and time.monotonic() - started >= 0.4  # a token comes every 0.5 s


def test_a_sessions_bucket_refills_at_its_rate_up_to_its_burst():
    wait, bucket = take(None, now=100.0, rate=2.0, burst=3)
    assert wait == 0 and bucket == Bucket(2.0, 100.0)
    for _ in range(2):
        wait, bucket = take(bucket, now=100.0, rate=2.0, burst=3)
        assert wait == 0
    wait, bucket = take(bucket, now=100.0, rate=2.0, burst=3)
    assert wait == 0.5  # the next token in half a second
    wait, bucket = take(bucket, now=100.5, rate=2.0, burst=3)
    assert wait == 0 and bucket.tokens == 0
    _, bucket = take(bucket, now=1000.0, rate=2.0, burst=3)
    assert bucket.tokens == 2  # full after a long pause (3), less this message


def test_a_draft_that_repeats_the_saved_one_records_nothing(app):
    writer = Writer(app)
    choosing(writer)
    assert writer.act("draft_saved", {"slot": 1, "text": "My edit of the first one."})["ok"]
    again = writer.act("draft_saved", {"slot": 1, "text": "My edit of the first one."})
    assert again["ok"] and again["duplicate"]
    assert again["state"]["current"]["drafts"]["1"] == "My edit of the first one."
    assert drafts_recorded(app) == 1


def test_a_refused_action_is_answered_while_another_writer_holds_the_write_lock(
    app, short_busy_wait
):
    writer = Writer(app)
    lock = sqlite3.connect(app.config["DATABASE"])
    lock.execute("BEGIN IMMEDIATE")  # another writer's action is being recorded
    try:
        ack = writer.act("suggestion_chosen", {"slot": 1})
    finally:
        lock.rollback()
        lock.close()
    assert ack["ok"] is False and ack["error"] == "Please write your own line first."


def test_the_state_kept_between_actions_follows_what_another_worker_records(app):
    here = cowriting_parts(app).study
    there = Study(app.config["DATABASE"], here.experiments)  # another worker process
    writer = Writer(app)
    sid = writer.session_id
    assert here.state(sid)[1].phase.value == "writing"
    there.act(sid, "line_submitted", LINE)
    assert here.state(sid)[1].phase.value == "suggesting"
    with pytest.raises(RuleError):
        here.act(sid, "line_submitted", LINE)
    writer.wait_for("choosing")
    assert here.state(sid)[1] == there.state(sid)[1]


def test_each_suggestion_records_how_long_its_writer_waited_next_to_its_generation_time(make_app):
    app = make_app(options_a="delay_seconds = 0.05", options_b="delay_seconds = 0.05")
    writer = Writer(app)
    assert writer.act("line_submitted", LINE)["ok"]
    deadline = time.monotonic() + 10
    while len(writer.runner.live_text(writer.session_id, 1)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    # The database is held for a second while the suggestions are written: they are
    # generated as fast as ever, but the writer waits for them a second longer.
    lock = sqlite3.connect(app.config["DATABASE"])
    lock.execute("BEGIN EXCLUSIVE")
    held_from = time.monotonic()
    while time.monotonic() - held_from < 1.0:
        time.sleep(0.05)
    lock.rollback()
    lock.close()
    held = time.monotonic() - held_from
    writer.wait_for("choosing")
    rows = db_rows(app.config["DATABASE"], "SELECT * FROM suggestions")
    assert len(rows) == 2
    for row in rows:
        assert row["generation_seconds"] < 1.0 <= held <= row["waited_seconds"]
    payloads = db_rows(
        app.config["DATABASE"], "SELECT payload FROM events WHERE type = 'suggestion_completed'"
    )
    assert all('"waited_seconds"' in p["payload"] for p in payloads)


# Against a real server: a connection that floods it costs it one thread.


@pytest.fixture
def server(tmp_path, monkeypatch):
    for name in ("MESSAGES_PER_SECOND", "MESSAGE_BURST", "DRAFTS_PER_SECOND", "DRAFT_BURST"):
        monkeypatch.setenv(f"CYOA_{name}", "1000000")
    worker = AppProcess(tmp_path, write_setup(tmp_path), "", "solo")
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()


def test_one_connection_costs_the_server_one_thread_however_many_events_it_sends(server, caplog):
    # The server's limits are far above this flood (see the server fixture): every draft is
    # recorded, the most work a message can cause.
    caplog.set_level(logging.WARNING)
    process = psutil.Process(server.proc.pid)
    io = socketio.Client(http_session=new_writer(server), reconnection=False)
    io.connect(server.url, wait_timeout=10, transports=["websocket"])
    try:
        assert io.call("join", {"experiment": EXPERIMENT}, timeout=10)["ok"]
        before = process.num_threads()
        answered = threading.Semaphore(0)
        sent = 400
        for n in range(sent):
            payload = {"slot": 1, "text": f"Draft {n}"}
            io.emit(
                "action",
                {"type": "draft_saved", "payload": payload},
                callback=lambda *a: answered.release(),
            )
        most = before
        deadline = time.monotonic() + 30
        for _ in range(sent):
            while not answered.acquire(timeout=0.01):
                most = max(most, process.num_threads())
                assert time.monotonic() < deadline, "the server stopped answering"
        most = max(most, process.num_threads())
    finally:
        io.disconnect()
    assert most - before <= 5, (before, most)
