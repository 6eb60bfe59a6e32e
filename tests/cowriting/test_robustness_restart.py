"""A server killed while generating and started again gives its writers their suggestions at
once: the claims its dead predecessor held on this host are taken over without waiting for
their heartbeats to go stale (2 × the suggestion timeout + 10 s)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from conftest import Writer, db_rows

from cyoa import store
from cyoa.cowriting import store as cowriting_store
from cyoa.paths import ROOT

pytestmark = pytest.mark.both_databases

LINE = {"text": "The power went out in the middle of it."}


def dead_workers_id() -> str:
    """The worker id of a server process of this host that has exited (as after kill -9)."""
    done = subprocess.run(
        [sys.executable, "-c", "import cyoa.cowriting.runner as r; print(r.new_worker_id())"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_restarted_server_generates_what_its_killed_predecessor_had_claimed_at_once(app):
    writer = Writer(app)
    # The killed server had recorded the line and claimed both slots a moment before.
    writer.study.act(writer.session_id, "line_submitted", LINE)
    dead = dead_workers_id()
    db = store.connect(app.config["DATABASE"])
    try:
        for slot in (1, 2):
            cowriting_store.claim_generation(db, writer.session_id, 1, slot, 1, dead, 50)
    finally:
        db.close()
    started = time.monotonic()
    writer.reconnect()  # the page comes back to the new server
    state = writer.wait_for("choosing", timeout=15)
    assert time.monotonic() - started < 15  # not the 50 s a stale heartbeat takes here
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    claims = db_rows(app.config["DATABASE"], "SELECT worker_id FROM generation_claims")
    assert {c["worker_id"] for c in claims} == {writer.runner.worker_id}
    rows = db_rows(app.config["DATABASE"], "SELECT slot, attempt FROM suggestions ORDER BY slot")
    assert rows == [{"slot": 1, "attempt": 1}, {"slot": 2, "attempt": 1}]
