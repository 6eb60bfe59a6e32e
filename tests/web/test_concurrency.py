"""Real concurrency against two app processes on one database (SQLite, and PostgreSQL where
the module runs on both): participants starting at once, raters competing for the last
places, and one writer's two tabs on two processes sending the same actions at once. What
must hold is what a study's numbers stand on: one session and one completion code per
participant, no story over its raters, every acknowledged action stored exactly once with
gap-free sequence numbers (docs/deployment.md, "Design": the locks each write takes)."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import socketio
from click.testing import CliRunner
from conftest import db_rows, fresh_database, write_setup

from cyoa.cli import cli
from tests.rating.test_rating_journey import write_spec
from tests.web.test_workers import EXPERIMENT, AppProcess, new_writer, start_redis, wait_until

RATING = "aiss-pilot"


@pytest.fixture(scope="module")
def module_redis_url(tmp_path_factory):
    yield from start_redis(tmp_path_factory.mktemp("redis"))


pytestmark = pytest.mark.both_databases


@pytest.fixture(scope="module")
def pair(request, database_kind, tmp_path_factory, module_redis_url):
    """Two app processes on one database and one Redis queue, with a rating study of four
    stories, two raters per story and two stories per rater (four raters' places), open.
    Shared by the module's tests, which each look only at their own participants."""
    tmp_path = tmp_path_factory.mktemp("pair")
    with pytest.MonkeyPatch.context() as monkeypatch:
        # A tab saves many drafts in a burst here.
        monkeypatch.setenv("CYOA_DRAFT_BURST", "1000")
        monkeypatch.setenv("CYOA_DRAFTS_PER_SECOND", "1000")
        database = fresh_database(request, database_kind, tmp_path)
        yield from _start_pair(tmp_path, database, module_redis_url)


def _start_pair(tmp_path, database: str, queue: str):
    delay = "delay_seconds = 0.05"
    config = {**write_setup(tmp_path, options_a=delay, options_b=delay), "DATABASE": database}
    base = ["--db", config["DATABASE"]]
    env = {"CYOA_MODELS_DIR": config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    runner = CliRunner()
    created = runner.invoke(
        cli, [*base, "experiment", "create", str(write_spec(tmp_path))], env=env
    )
    assert created.exit_code == 0, created.output
    assert runner.invoke(cli, [*base, "experiment", "open", RATING], env=env).exit_code == 0
    workers = [AppProcess(tmp_path, config, queue, name) for name in ("a", "b")]
    try:
        for worker in workers:
            worker.wait_ready()
        yield config["DATABASE"], workers
    finally:
        for worker in workers:
            worker.stop()


def start_at_once(count: int, start) -> list:
    """``start(i)`` for i in 0..count-1 on as many threads, released together by a barrier
    once each has loaded its consent page, so the starts reach the processes at once."""
    barrier = threading.Barrier(count, timeout=30)
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda i: start(i, barrier), range(count)))


def consent(http: requests.Session, url: str, barrier: threading.Barrier) -> requests.Response:
    """Open a study link, wait for the others, then consent: the start's response."""
    page = http.get(url, timeout=10)
    assert page.ok, page.text
    fields = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', page.text))
    fields.update({"consent": "yes"})
    barrier.wait()
    start = url.split("?")[0] + "/start"
    return http.post(start, data=fields, allow_redirects=False, timeout=30)


def test_writers_starting_at_once_on_two_processes_get_one_session_and_code_each(pair):
    database, workers = pair

    def start(i: int, barrier: threading.Barrier) -> int:
        worker = workers[i % 2]
        # Writers 0-15 are different people; 16-23 are one person opening the link in
        # eight tabs at once, half on each process.
        person = f"w{i}" if i < 16 else "same-person"
        url = f"{worker.url}/s/{EXPERIMENT}?PROLIFIC_PID={person}&STUDY_ID=st&SESSION_ID=se{i}"
        return consent(requests.Session(), url, barrier).status_code

    statuses = start_at_once(24, start)
    assert statuses.count(302) >= 17, statuses
    sessions = db_rows(
        database,
        "SELECT p.external_id, s.completion_code FROM sessions s"
        " JOIN participants p ON p.id = s.participant_id"
        " WHERE p.external_id LIKE 'w%' OR p.external_id = 'same-person'",
    )
    people = Counter(row["external_id"] for row in sessions)
    assert people == Counter([f"w{i}" for i in range(16)] + ["same-person"])
    codes = [row["completion_code"] for row in sessions]
    assert len(set(codes)) == len(codes) == 17


def test_raters_competing_for_four_places_on_two_processes_never_overfill_a_story(pair):
    database, workers = pair

    def start(i: int, barrier: threading.Barrier) -> int:
        url = f"{workers[i % 2].url}/r/{RATING}?PROLIFIC_PID=r{i}&STUDY_ID=st&SESSION_ID=se{i}"
        return consent(requests.Session(), url, barrier).status_code

    start_at_once(12, start)
    held = db_rows(
        database,
        "SELECT rater_id, story_id FROM assignments WHERE experiment_id = ?"
        " ORDER BY rater_id, story_id".replace("?", f"'{RATING}'"),
    )
    per_story = Counter(row["story_id"] for row in held)
    per_rater = Counter(row["rater_id"] for row in held)
    assert per_story == {"s1": 2, "s2": 2, "s3": 2, "s4": 2}, per_story
    assert sorted(per_rater.values()) == [2, 2, 2, 2], per_rater
    raters = db_rows(database, f"SELECT rater_id FROM raters WHERE experiment_id = '{RATING}'")
    assert {row["rater_id"] for row in raters} == set(per_rater)


class Tab:
    """A writer's tab on one process (websocket), acknowledging actions as the page does."""

    def __init__(self, http: requests.Session, worker: AppProcess) -> None:
        self.states: list[dict] = []
        self.io = socketio.Client(http_session=http, reconnection=False)
        self.io.on("state", self.states.append)
        self.io.connect(worker.url, wait_timeout=10, transports=["polling"])
        joined = self.io.call("join", {"experiment": EXPERIMENT}, timeout=10)
        assert joined["ok"], joined

    def act(self, event_type: str, payload: dict, action_id: str) -> dict:
        body = {"type": event_type, "payload": payload, "action_id": action_id}
        return self.io.call("action", body, timeout=30)


def test_two_tabs_on_two_processes_sending_the_same_actions_store_each_once(pair):
    database, workers = pair
    http = new_writer(workers[0])
    tabs = [Tab(http, worker) for worker in workers]
    try:
        line = {"text": "The ferry left the island at dawn."}
        assert tabs[0].act("line_submitted", line, "line-1")["ok"]
        wait_until(
            lambda: any(s["phase"] == "choosing" for s in tabs[0].states), 30, "the suggestions"
        )
        drafts = [(f"d{n}", {"slot": 1 + n % 2, "text": f"Draft number {n}."}) for n in range(30)]

        def send_all(tab: Tab, order: list) -> list[dict]:
            return [tab.act("draft_saved", payload, action_id) for action_id, payload in order]

        # Each tab sends every draft (the other tab's are resends), in opposite orders.
        with ThreadPoolExecutor(2) as pool:
            acks = list(pool.map(send_all, tabs, [drafts, drafts[::-1]]))
    finally:
        for tab in tabs:
            tab.io.disconnect()
    assert all(ack["ok"] for tab_acks in acks for ack in tab_acks), acks
    line_event = db_rows(
        database, "SELECT session_id FROM events WHERE client_action_id = 'line-1'"
    )
    events = db_rows(
        database,
        "SELECT seq, type, client_action_id, payload FROM events"
        f" WHERE session_id = '{line_event[0]['session_id']}' ORDER BY seq",
    )
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    stored = Counter(e["client_action_id"] for e in events if e["type"] == "draft_saved")
    assert stored == Counter(action_id for action_id, _ in drafts)
    texts = {
        e["client_action_id"]: json.loads(e["payload"])["text"]
        for e in events
        if e["type"] == "draft_saved"
    }
    assert all(texts[action_id] == payload["text"] for action_id, payload in drafts)
