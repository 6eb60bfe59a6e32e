"""Faults made to happen: a locked database, resent actions. Nothing is lost or doubled."""

import json
import sqlite3

import pytest
from conftest import Writer

from cyoa import store
from cyoa.cowriting import runner as runner_module
from cyoa.cowriting.research import exports
from cyoa.generation.fake import TERSE_STREAMS

pytestmark = pytest.mark.both_databases


@pytest.mark.sqlite_only  # SQLite's write lock and busy wait
def test_a_locked_database_refuses_with_a_retry_and_the_resend_is_recorded_once(
    app, short_busy_wait
):
    writer = Writer(app)
    blocker = sqlite3.connect(app.config["DATABASE"])
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    line = {"text": "Written while the database was busy."}
    ack = writer.act("line_submitted", line, action_id="a1")
    assert ack == {"ok": False, "retry": True, "error": ack["error"]}
    assert "Your text is kept" in ack["error"]
    blocker.rollback()
    blocker.close()

    ack = writer.act("line_submitted", line, action_id="a1")
    assert ack["ok"] and not ack["duplicate"]
    again = writer.act("line_submitted", line, action_id="a1")
    assert again["ok"] and again["duplicate"]
    writer.wait_for("choosing")
    db = store.connect(app.config["DATABASE"])
    types = [r["type"] for r in db.query("SELECT type FROM events")]
    db.close()
    assert types.count("line_submitted") == 1


def suggestion_rows(app):
    db = store.connect(app.config["DATABASE"])
    try:
        return list(
            db.query("SELECT slot, attempt, status, model, seed, text, error FROM suggestions")
        )
    finally:
        db.close()


def test_a_hanging_model_times_out_and_the_writer_goes_on_with_the_other(make_app):
    app = make_app(options_b='fail = "hang"', timeout=0.5)
    writer = Writer(app)
    writer.act("line_submitted", {"text": "One of the machines will never answer."})
    state = writer.wait_for("choosing", timeout=15)
    assert sorted(s["status"] for s in state["current"]["suggestions"]) == ["done", "failed"]
    failed = [r for r in suggestion_rows(app) if r["status"] == "failed"]
    assert len(failed) == 1
    assert failed[0]["attempt"] == 2 and "no suggestion within 0.5 s" in failed[0]["error"]
    good = next(s["slot"] for s in state["current"]["suggestions"] if s["status"] == "done")
    assert writer.act("suggestion_chosen", {"slot": good})["ok"]
    assert writer.act("turn_submitted", {"text": "The story goes on regardless of it."})["ok"]


def test_an_empty_answer_is_drawn_again_then_reported(make_app):
    app = make_app(options_a='fail = "empty"')
    writer = Writer(app)
    writer.act("line_submitted", {"text": "The first machine has nothing to say."})
    writer.wait_for("choosing")
    failed = [r for r in suggestion_rows(app) if r["status"] == "failed"]
    assert len(failed) == 1 and "SuggestionError" in failed[0]["error"]
    assert failed[0]["attempt"] == runner_module.ATTEMPTS == 5


def test_a_too_short_answer_is_drawn_again_with_the_next_seed(make_app):
    app = make_app(options_a='fail = "terse"')
    writer = Writer(app)
    writer.act("line_submitted", {"text": "The first machine answers in one word."})
    state = writer.wait_for("choosing")
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    # Only what was shown is a row: "Why?" three times (too short for a turn) was drawn
    # again, each time with the next seed, and the fourth draw wrote a sentence.
    (terse,) = [r for r in suggestion_rows(app) if r["model"] == "fake-a"]
    assert terse["status"] == "done" and terse["attempt"] == TERSE_STREAMS + 1 == 4
    db = store.connect(app.config["DATABASE"])
    (line,) = db.query("SELECT payload FROM events WHERE type = 'line_submitted'")
    db.close()
    assert terse["seed"] == json.loads(line["payload"])["seeds"][terse["slot"] - 1] + 3
    assert len(terse["text"]) >= 20
    writer.act("suggestion_chosen", {"slot": terse["slot"]})
    assert writer.act("turn_submitted", {"text": terse["text"]})["ok"]
    db = store.connect(app.config["DATABASE"])
    (row,) = exports.preference_rows(db, "fake-ab")
    db.close()
    slot = terse["slot"]
    assert row[f"slot{slot}_attempts"] == 4 and row[f"slot{3 - slot}_attempts"] == 1


def test_a_too_long_answer_is_trimmed_to_the_limit(make_app):
    app = make_app(options_a='fail = "long"', options_b='fail = "long"')
    writer = Writer(app)
    writer.act("line_submitted", {"text": "Both machines ramble on without end."})
    state = writer.wait_for("choosing")
    rambling = "and then " * 50
    for s in state["current"]["suggestions"]:
        assert s["status"] == "done"
        assert 20 <= len(s["text"]) <= 260
        # Cut cleanly at a word boundary, never inside a word.
        assert rambling.startswith(s["text"]) and rambling[len(s["text"])] == " "


def test_a_model_that_fails_once_succeeds_on_the_retry(make_app):
    app = make_app(options_a='fail = "flaky"')
    writer = Writer(app)
    writer.act("line_submitted", {"text": "The first try of the machine fails."})
    state = writer.wait_for("choosing")
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    attempts = sorted(r["attempt"] for r in suggestion_rows(app))
    assert attempts == [1, 2]  # one slot on its first try, the flaky one on its retry
