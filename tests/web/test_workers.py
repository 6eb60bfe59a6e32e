"""Several web workers: two app processes (``python app.py``) on one database, joined by a
real Redis message queue, and the generation claims that keep them from generating the same
suggestion twice. Redis is Debian's redis-server (`make redis` installs it)."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
import socketio
import sqlalchemy as sa
from conftest import Writer, db_rows, write_setup

from bench.deployment import free_port, redis_server, wait_until
from cyoa import store
from cyoa.cowriting import runner as runner_module
from cyoa.cowriting import store as cowriting_store
from cyoa.db.facade import Db
from cyoa.web.workers import new_worker_id, worker_gone
from tests.paths import ROOT

EXPERIMENT = "fake-ab"


@pytest.fixture
def redis_url(tmp_path):
    """A private redis-server on a free port: no persistence, its files in a temp folder."""
    yield from start_redis(tmp_path)


def start_redis(root: Path):
    """Start a private redis-server with its files under ``root``; yield its URL, then stop it."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is missing: run `make redis` (apt-get install redis-server).")
    with redis_server(root / "redis") as url:
        yield url


class AppProcess:
    """One web worker, as `python app.py` runs it, on the shared database and queue."""

    def __init__(self, root: Path, config: dict[str, str], queue: str, name: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = root / f"{name}.log"
        env = {
            **os.environ,
            "CYOA_PORT": str(self.port),
            "CYOA_DATABASE": config["DATABASE"],
            "CYOA_MODELS_DIR": config["MODELS_DIR"],
            "CYOA_EXPERIMENTS_DIR": config["EXPERIMENTS_DIR"],
            "CYOA_MODEL_CACHE": config["MODEL_CACHE"],
            "CYOA_DEFAULT_EXPERIMENT": EXPERIMENT,
            "CYOA_SECRET_KEY": "shared-by-every-worker",
            "CYOA_MESSAGE_QUEUE": queue,
            "CYOA_TAG_SENTENCES": "false",
            # Every test writer starts from this machine's one address.
            "CYOA_START_BURST": "1000",
        }
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=log
            )

    def wait_ready(self) -> None:
        def up() -> bool:
            if self.proc.poll() is not None:
                pytest.fail(f"worker exited: {self.log_path.read_text()}")
            try:
                return requests.get(f"{self.url}/s/{EXPERIMENT}", timeout=5).ok
            except requests.RequestException:
                return False

        # Generous: beside another xdist worker a start has taken over 30 s.
        wait_until(up, 120, f"the worker on {self.url}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # never leave a server behind
                self.proc.kill()
                self.proc.wait(timeout=10)


@pytest.fixture
def workers(tmp_path, redis_url):
    """Worker A and worker B: the fake models take 0.3 s per word, so a suggestion takes
    a few seconds."""
    delay = "delay_seconds = 0.3"
    config = write_setup(tmp_path, options_a=delay, options_b=delay)
    pair = [AppProcess(tmp_path, config, redis_url, name) for name in ("a", "b")]
    try:
        for worker in pair:
            worker.wait_ready()
        yield pair
    finally:
        for worker in pair:
            worker.stop()


class Tab:
    """One browser tab: a Socket.IO connection to one worker with the writer's cookies,
    recording every event the server sends it."""

    def __init__(self, http: requests.Session, worker: AppProcess):
        self.events: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        self.io = socketio.Client(http_session=http, reconnection=False)
        for name in ("state", "suggestion_progress"):
            self.io.on(name, lambda data, name=name: self._record(name, data))
        # Long-polling: it closes at once (a WebSocket client waits 3 s on close), and each
        # tab talks to one worker, as behind a load balancer with sticky sessions.
        self.io.connect(worker.url, wait_timeout=10, transports=["polling"])
        self.joined = self.io.call("join", {"experiment": EXPERIMENT}, timeout=10)
        assert self.joined["ok"], self.joined

    def _record(self, name: str, data: dict) -> None:
        with self.lock:
            self.events.append((name, data))

    def received(self, name: str) -> list[dict]:
        with self.lock:
            return [data for event, data in self.events if event == name]

    def act(self, event_type: str, payload: dict) -> dict:
        return self.io.call("action", {"type": event_type, "payload": payload}, timeout=10)

    def wait_for_phase(self, phase: str, timeout: float = 30) -> dict:
        def reached():
            return next((s for s in self.received("state") if s["phase"] == phase), None)

        return wait_until(reached, timeout, f"a state in phase {phase!r}")

    def close(self) -> None:
        self.io.disconnect()


def new_writer(worker: AppProcess) -> requests.Session:
    """A writer who opened the link and consented on ``worker``: their cookie jar."""
    http = requests.Session()
    page = http.get(f"{worker.url}/s/{EXPERIMENT}", timeout=5)
    assert page.ok
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    response = http.post(
        f"{worker.url}/s/{EXPERIMENT}/start",
        data={"consent": "yes", "csrf_token": token},
        allow_redirects=False,
        timeout=5,
    )
    assert response.status_code == 302, response.text
    return http


def assert_streamed_once(tab: Tab) -> None:
    """Each slot's streamed text only ever grows: one generation per slot, not two
    interleaved (a second generation would start again from its first word)."""
    progress = tab.received("suggestion_progress")
    for slot in (1, 2):
        texts = [p["text"] for p in progress if p["slot"] == slot]
        assert texts, f"no streamed text for slot {slot}"
        assert all(len(a) < len(b) and b.startswith(a) for a, b in itertools.pairwise(texts)), texts


def test_a_suggestion_generated_on_one_worker_streams_to_a_tab_on_the_other(workers, tmp_path):
    a, b = workers
    http = new_writer(a)
    tab_a = Tab(http, a)
    tab_b = Tab(http, b)  # the same writer's second tab, held by the other worker
    try:
        ack = tab_a.act("line_submitted", {"text": "The ferry left the island at dawn."})
        assert ack["ok"], ack
        state = tab_b.wait_for_phase("choosing")
        assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
        assert_streamed_once(tab_b)
        final = {s["slot"]: s["text"] for s in state["current"]["suggestions"]}
        for slot in (1, 2):
            streamed = [p["text"] for p in tab_b.received("suggestion_progress")]
            assert final[slot] in streamed
        # The other tab hears about the writer's own line too (sent by worker A).
        assert any(s["phase"] == "suggesting" for s in tab_b.received("state"))
    finally:
        tab_a.close()
        tab_b.close()


def test_a_tab_joining_on_another_worker_does_not_generate_again(workers, tmp_path):
    a, b = workers
    db = str(tmp_path / "cyoa.sqlite")
    http = new_writer(a)
    tab_a = Tab(http, a)
    try:
        assert tab_a.act("line_submitted", {"text": "The ferry left the island at dawn."})["ok"]
        wait_until(lambda: tab_a.received("suggestion_progress"), 10, "streaming on A")
        # While A generates, the writer reconnects (or opens a tab) through worker B, whose
        # join resumes any pending generation that no live worker has claimed.
        tab_b = Tab(http, b)
        assert tab_b.joined["state"]["phase"] == "suggesting"
        state = tab_b.wait_for_phase("choosing")
        tab_b.close()
    finally:
        tab_a.close()
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    assert_streamed_once(tab_b)
    claims = db_rows(db, "SELECT slot, attempt, worker_id FROM generation_claims ORDER BY slot")
    assert [(c["slot"], c["attempt"]) for c in claims] == [(1, 1), (2, 1)]
    assert {c["worker_id"].split("/")[1] for c in claims} == {str(a.proc.pid)}
    rows = db_rows(db, "SELECT slot, status FROM suggestions ORDER BY slot")
    assert rows == [{"slot": 1, "status": "done"}, {"slot": 2, "status": "done"}]
    assert "not recorded" not in (tmp_path / "b.log").read_text()


# The claims within one process (no Redis): a slot another worker holds is left to it.


def claim_both_slots(app, session_id: str, worker_id: str) -> None:
    db = store.connect(app.config["DATABASE"])
    try:
        for slot in (1, 2):
            cowriting_store.claim_generation(db, session_id, 1, slot, 1, worker_id, 60)
    finally:
        db.close()


def test_a_slot_claimed_by_a_live_worker_is_left_to_it_until_its_claim_goes_stale(app, monkeypatch):
    monkeypatch.setattr(runner_module, "stale_after_seconds", lambda timeout: 1.0)
    monkeypatch.setattr(runner_module, "WATCH_SECONDS", 0.05)
    writer = Writer(app)
    # As if another worker had recorded the line and started generating, then died.
    writer.study.act(writer.session_id, "line_submitted", {"text": "The lamp went out at once."})
    claim_both_slots(app, writer.session_id, "elsewhere/1/dead")
    state = writer.reconnect()["state"]
    assert state["phase"] == "suggesting"
    time.sleep(0.5)
    assert writer.state()["phase"] == "suggesting"  # left to the other worker for now
    state = writer.wait_for("choosing")
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    db = store.connect(app.config["DATABASE"])
    owners = {r["worker_id"] for r in db.query("SELECT worker_id FROM generation_claims")}
    db.close()
    assert owners == {writer.runner.worker_id}


def test_a_claim_is_refused_while_fresh_and_taken_over_when_stale(tmp_path):
    db = store.connect(tmp_path / "claims.sqlite")
    store.init_db(db)
    db = Db(sa.create_engine(f"sqlite+pysqlite:///{db.engine.url.database}"))  # no foreign keys
    key = ("session", 1, 2, 1)
    t0 = "2026-01-01T12:00:00.000Z"
    assert cowriting_store.claim_generation(db, *key, "A", 50, at=t0) is None
    assert (
        cowriting_store.claim_generation(db, *key, "A", 50, at="2026-01-01T12:00:01.000Z") is None
    )
    assert cowriting_store.claim_generation(db, *key, "B", 50, at="2026-01-01T12:00:30.000Z") == (
        "2026-01-01T12:00:01.000Z"
    )
    assert cowriting_store.heartbeat_generation(db, *key, "A", at="2026-01-01T12:00:40.000Z")
    assert (
        cowriting_store.claim_generation(db, *key, "B", 50, at="2026-01-01T12:01:20.000Z")
        is not None
    )
    assert (
        cowriting_store.claim_generation(db, *key, "B", 50, at="2026-01-01T12:01:31.000Z") is None
    )
    assert not cowriting_store.heartbeat_generation(db, *key, "A")  # A learns it was taken over
    # A writer's retry is another generation with its own claim.
    assert cowriting_store.claim_generation(db, "session", 1, 2, 3, "A", 50) is None
    rows = list(db.query("SELECT attempt, worker_id, claimed_at FROM generation_claims"))
    assert rows == [
        {"attempt": 1, "worker_id": "B", "claimed_at": "2026-01-01T12:01:31.000Z"},
        {"attempt": 3, "worker_id": "A", "claimed_at": rows[1]["claimed_at"]},
    ]


def test_a_retry_of_a_slot_another_worker_failed_is_generated_here(app, monkeypatch):
    monkeypatch.setattr(runner_module, "WATCH_SECONDS", 0.05)
    writer = Writer(app)
    sid = writer.session_id
    outcome = writer.study.act(sid, "line_submitted", {"text": "The radio crackled twice."})
    claim_both_slots(app, sid, "elsewhere/1/alive")
    writer.reconnect()  # this worker now watches both slots, which the other one holds
    # The other worker gives up on both slots; the writer asks to try again, here.
    for slot, system in enumerate(outcome.state.current.slot_systems, start=1):
        failed = {"round": 1, "slot": slot, "attempt": 2, "system": system, "error": "gone"}
        writer.study.act(sid, "suggestion_failed", failed)
    assert writer.act("suggestions_retried", {})["ok"]
    state = writer.wait_for("choosing")
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    db = store.connect(app.config["DATABASE"])
    claims = list(db.query("SELECT slot, attempt, worker_id FROM generation_claims"))
    db.close()
    assert sorted((c["slot"], c["attempt"], c["worker_id"]) for c in claims) == [
        (1, 1, "elsewhere/1/alive"),
        (1, 3, writer.runner.worker_id),
        (2, 1, "elsewhere/1/alive"),
        (2, 3, writer.runner.worker_id),
    ]


# A worker of this host that no longer runs (a server killed and restarted) gives up its
# claims at once; a live one keeps them.

# A process that names itself as a worker and runs until its stdin closes.
HOLDER = (
    "import sys\n"
    "from cyoa.web.workers import new_worker_id\n"
    "print(new_worker_id(), flush=True)\n"
    "sys.stdin.read()\n"
)


def test_a_claim_of_a_process_of_this_host_is_kept_while_it_runs_and_taken_when_it_is_gone(
    tmp_path,
):
    db = store.connect(tmp_path / "claims.sqlite")
    store.init_db(db)
    db = Db(sa.create_engine(f"sqlite+pysqlite:///{db.engine.url.database}"))  # no foreign keys
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        holder_id = holder.stdout.readline().strip()
        key = ("session", 1, 1, 1)
        assert cowriting_store.claim_generation(db, *key, holder_id, 50) is None
        assert not worker_gone(holder_id)
        assert cowriting_store.claim_generation(
            db, *key, new_worker_id(), 50, holder_gone=worker_gone
        )
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert worker_gone(holder_id)
    me = new_worker_id()
    assert cowriting_store.claim_generation(db, *key, me, 50, holder_gone=worker_gone) is None
    (row,) = db.query("SELECT worker_id FROM generation_claims")
    assert row["worker_id"] == me


def test_only_a_process_of_this_host_that_no_longer_runs_counts_as_gone():
    me = new_worker_id()
    host, pid, start, _ = me.split("/")
    assert pid == str(os.getpid())
    assert not worker_gone(me)
    assert not worker_gone(f"{host}/{pid}/{start}/another-app-in-this-process")
    # The same process id, started at another time: an earlier server, restarted.
    assert worker_gone(f"{host}/{pid}/{int(start) - 1}/an-earlier-process")
    # Another host's worker, or one named in the older form: only its heartbeat can tell.
    assert not worker_gone(f"another-host/{pid}/1/x")
    assert not worker_gone(f"{host}/{pid}/abc123")
