"""A database locked while suggestions are generated never strands the writer: the slot's
task starts again by itself, and a finished suggestion waits for the lock and is recorded.
The writer gets the suggestions pushed to the page, without reloading (no join)."""

from __future__ import annotations

import logging
import sqlite3
import time

import pytest
from conftest import Writer, db_rows

from cyoa.cowriting import runner as runner_module

LINE = {"text": "The harbour froze over in a single night."}


@pytest.fixture
def quick_retries(app, short_busy_wait, monkeypatch):
    """A busy timeout of 0.2 s (instead of 10 s), and quick restarts and record retries."""
    monkeypatch.setattr(runner_module, "RESTART_DELAYS_SECONDS", (0.1,) * 100)
    monkeypatch.setattr(runner_module, "RECORD_PAUSE_SECONDS", 0.05)


def wait_until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def reported_locked(caplog) -> bool:
    """Whether the server has met the lock (in a message, or an error's traceback)."""
    return any(
        "locked" in record.getMessage() or (record.exc_info and "locked" in str(record.exc_info[1]))
        for record in caplog.records
    )


class PushedStates:
    """The states the server pushed to this writer's page (never asked for with a join)."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.seen: list[dict] = []

    def reached(self, phase: str) -> dict | None:
        for message in self.writer.io.get_received():
            if message["name"] == "state":
                self.seen.append(message["args"][0])
        return next((s for s in self.seen if s["phase"] == phase), None)


def test_a_slot_whose_task_died_on_a_locked_database_starts_again_by_itself(
    app, caplog, quick_retries
):
    caplog.set_level(logging.INFO)
    writer = Writer(app)
    outcome = writer.study.act(writer.session_id, "line_submitted", LINE)
    pushed = PushedStates(writer)
    lock = sqlite3.connect(app.config["DATABASE"])
    lock.execute("BEGIN EXCLUSIVE")  # another process holds the database
    try:
        writer.runner.start(writer.session_id, outcome.state)  # as after the line's ack
        wait_until(lambda: reported_locked(caplog), 10, "the slots to meet the lock")
    finally:
        lock.rollback()
        lock.close()
    state = wait_until(lambda: pushed.reached("choosing"), 15, "the suggestions on the page")
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    types = [r["type"] for r in db_rows(app.config["DATABASE"], "SELECT type FROM events")]
    assert types.count("suggestion_completed") == 2


def test_a_finished_suggestion_waits_for_a_lock_longer_than_the_busy_timeout_and_is_recorded(
    make_app, caplog, quick_retries
):
    caplog.set_level(logging.INFO)
    app = make_app(options_a="delay_seconds = 0.05", options_b="delay_seconds = 0.05")
    writer = Writer(app)
    pushed = PushedStates(writer)
    assert writer.act("line_submitted", LINE)["ok"]
    # Both slots have claimed and begun to stream: the next write is their record.
    wait_until(lambda: len(writer.runner.live_text(writer.session_id, 1)) == 2, 10, "streams")
    wait_until(lambda: all(writer.runner.live_text(writer.session_id, 1).values()), 10, "text")
    lock = sqlite3.connect(app.config["DATABASE"])
    lock.execute("BEGIN EXCLUSIVE")
    try:
        wait_until(lambda: reported_locked(caplog), 10, "a finished suggestion to meet the lock")
    finally:
        lock.rollback()
        lock.close()
    state = wait_until(lambda: pushed.reached("choosing"), 15, "the suggestions on the page")
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    rows = db_rows(app.config["DATABASE"], "SELECT slot, attempt, status FROM suggestions")
    assert sorted((r["slot"], r["attempt"], r["status"]) for r in rows) == [
        (1, 1, "done"),
        (2, 1, "done"),
    ]
