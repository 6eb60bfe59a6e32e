"""A hostile or broken model server behind the ``openai`` backend
(bench/hostile_server.py): every call ends within its card's bounds with a
sentence naming the server and what came back, a judge run stores nothing that is not a
model's answer and asks it again on resume, Stop ends the calls in flight, and a writer's
suggestion fails within its time (docs/deployment.md, "Models on other machines")."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
from conftest import Researcher, Writer, write_setup

from bench.hostile_server import HostileServer
from cyoa import create_app, store
from cyoa.cowriting.judges.runs import RoundJudgeRequest
from cyoa.generation import Sampling, System, generate_suggestion, load_model_card
from cyoa.generation.openai_backend import ModelServerError, OpenAIBackend
from cyoa.generation.suggest import SuggestionCancelled
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement, Story
from cyoa.rating.instruments import TTCW
from cyoa.rating.judges.runs import RunRequest, continue_run, judge_experiment, prepare_run
from cyoa.web.parts import shared as shared_parts
from tests.cowriting.test_cowriting_judges import run as judge_rounds_run
from tests.cowriting.test_cowriting_judges import stored as round_verdicts
from tests.cowriting.test_cowriting_judges import study as cowriting_study
from tests.rating.test_judges_runs import card, ttcw_study, verdicts

# The bounds the tests' cards set: what a run against each mode must end within.
TIMEOUT_SECONDS = 2
DEADLINE_SECONDS = 3
# Room for a busy machine on top of the deadline, not a measurement.
SLACK_SECONDS = 20

CARD = """
name = "{name}"
display_name = "{name}"
backend = "openai"
version = "hostile-1"

[sampling]
top_k = 40
top_p = 1.0
temperature = 1.0
max_new_tokens = 20

[options]
base_url = "{url}"
model = "judge"
wait_seconds = 1
timeout_seconds = {timeout}
deadline_seconds = {deadline}
"""

# Each mode, and what the sentence says came back.
HOSTILE = {
    "drip": f"did not finish its answer within {DEADLINE_SECONDS} s",
    "huge-line": "sent a line longer than 65536 bytes",
    "many-events": "characters for at most 20 tokens, which is not a model's answer",
    "html": "answered with an HTML page, not a completion",
    "json": 'answered with JSON without choices (\'{"status": "ok"',
    "empty": "answered with an empty reply, not a completion",
    "garbage": "sent an event that is not a JSON object ('[1, 2, 3]')",
    "hang": f"sent nothing for {TIMEOUT_SECONDS} s",
}


@pytest.fixture(scope="module")
def hostile():
    server = HostileServer()
    yield server
    server.stop()


def write_card(
    folder: Path, name: str, url: str, timeout=TIMEOUT_SECONDS, deadline=DEADLINE_SECONDS
):
    path = folder / f"{name}.toml"
    path.write_text(CARD.format(name=name, url=url, timeout=timeout, deadline=deadline))
    return load_model_card(path)


@pytest.mark.parametrize("mode", list(HOSTILE))
def test_a_judge_run_against_a_hostile_server_fails_in_time_with_a_sentence_and_stores_nothing(
    hostile, tmp_path, mode
):
    config = ttcw_study(tmp_path)
    # The warm-up meets a good answer; the four prompts asked at once meet the mode.
    url = hostile.base_url(f"ok-then-{mode}")
    judge_card = write_card(Path(config["models"]), "remote", url)
    db = store.connect(config["db"])
    try:
        started = time.monotonic()
        request = RunRequest("tiny", judge_card, items=("1", "13"), max_new_tokens=20)
        run = judge_experiment(db, request, OpenAIBackend(judge_card), "test/1/1/x",
                               log=lambda _: None)  # fmt: skip
        took = time.monotonic() - started
    finally:
        db.close()
    assert run.state == "failed", run
    assert f"{url}/v1/completions" in run.error and HOSTILE[mode] in run.error, run.error
    assert "start the run again to resume" in run.error
    assert not re.search(r"AttributeError|KeyError|TypeError|JSONDecodeError", run.error)
    assert took < DEADLINE_SECONDS + SLACK_SECONDS
    assert verdicts(config, "remote") == []

    # The same card on a server that answers: the resume asks every prompt.
    write_card(Path(config["models"]), "remote", hostile.base_url("ok"))
    db = store.connect(config["db"])
    try:
        again = judge_experiment(db, RunRequest("tiny", card(config, "remote")),
                                 OpenAIBackend(card(config, "remote")), "test/1/1/x",
                                 log=lambda _: None)  # fmt: skip
    finally:
        db.close()
    stored = verdicts(config, "remote")
    assert again.state == "done" and len(stored) == 6
    assert all(v["value"] == 1.0 and v["rationale"] == "Yes, the ending is earned." for v in stored)


def test_stop_during_a_hang_ends_the_calls_in_flight_at_once_and_stores_nothing(hostile, tmp_path):
    config = ttcw_study(tmp_path)
    mode = "ok-then-hang"
    # Bounds far beyond the test: only Stop can end these calls.
    judge_card = write_card(Path(config["models"]), "remote", hostile.base_url(mode), 300, 600)
    db = store.connect(config["db"])
    stop = threading.Event()
    ended: dict[str, object] = {}
    try:
        request = RunRequest("tiny", judge_card, items=("1", "13"), max_new_tokens=20)
        run, instrument = prepare_run(db, request, "test/1/1/x")

        def work() -> None:
            ended["run"] = continue_run(db, run, instrument, OpenAIBackend(judge_card),
                                        stop.is_set, lambda _: None)  # fmt: skip
            ended["at"] = time.monotonic()

        worker = threading.Thread(target=work)
        worker.start()
        deadline = time.monotonic() + 60
        while len(hostile.of_mode(mode)) < 5:  # the warm-up, then four prompts at once
            assert time.monotonic() < deadline, hostile.of_mode(mode)
            time.sleep(0.02)
        pressed = time.monotonic()
        stop.set()
        worker.join(timeout=60)
        assert not worker.is_alive()
    finally:
        db.close()
    assert ended["run"].state == "stopped" and ended["run"].error == ""
    assert ended["at"] - pressed < 2.0  # the 70 s became a watcher's tick
    hung = hostile.of_mode(mode)[1:]
    deadline = time.monotonic() + 30
    while any(entry["hung_up_at"] is None for entry in hung):
        assert time.monotonic() < deadline, hung
        time.sleep(0.02)
    assert verdicts(config, "remote") == []


def test_a_server_writing_past_max_tokens_is_cut_there_and_hung_up_on(hostile, tmp_path):
    remote = write_card(tmp_path, "remote", hostile.base_url("over-long"))
    backend = OpenAIBackend(remote)
    pieces = list(backend.stream("Is the ending earned?", Sampling(max_new_tokens=5), 1))
    assert pieces == ["Yes", " word", " word", " word", " word"]


@pytest.mark.parametrize("mode", list(HOSTILE))
def test_a_writer_s_remote_suggestion_fails_in_time_with_a_sentence(hostile, tmp_path, mode):
    remote = write_card(tmp_path, "remote", hostile.base_url(mode))
    system = System("remote", remote, remote.sampling)
    started = time.monotonic()
    with pytest.raises(ModelServerError, match=re.escape(HOSTILE[mode])) as error:
        generate_suggestion(OpenAIBackend(remote), system, ["The keeper found a letter."], 3)
    assert hostile.base_url(mode) in str(error.value)
    assert time.monotonic() - started < DEADLINE_SECONDS + SLACK_SECONDS


def test_a_suggestion_whose_time_is_up_closes_its_connection_at_once(hostile, tmp_path):
    """The co-writing runner's timeout says stop (``should_stop``); the call waiting on a
    server that hangs ends then, not at its own read timeout."""
    mode = "hang"
    remote = write_card(tmp_path, "remote", hostile.base_url(mode), 300, 600)
    system = System("remote", remote, remote.sampling)
    stop = threading.Event()
    outcome: dict[str, BaseException] = {}

    def work() -> None:
        try:
            generate_suggestion(OpenAIBackend(remote), system, ["Once."], 3,
                                should_stop=stop.is_set)  # fmt: skip
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    before = len(hostile.of_mode(mode))
    worker = threading.Thread(target=work)
    worker.start()
    deadline = time.monotonic() + 60
    while len(hostile.of_mode(mode)) == before:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    stop.set()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert isinstance(outcome["error"], SuggestionCancelled)
    entry = hostile.of_mode(mode)[-1]
    deadline = time.monotonic() + 30
    while entry["hung_up_at"] is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("mode", "bounds", "error"),
    [
        ("html", (TIMEOUT_SECONDS, DEADLINE_SECONDS), HOSTILE["html"]),
        # Bounds beyond the study's: its suggestion timeout (2 s) ends the call.
        ("hang", (300, 600), "no suggestion within 2 s"),
    ],
)
def test_a_writer_whose_model_server_is_hostile_gets_the_other_suggestion_in_time(
    hostile, tmp_path, mode, bounds, error
):
    config = write_setup(tmp_path, timeout=2)
    # fake-b's card now names a model on the hostile server.
    write_card(Path(config["MODELS_DIR"]), "fake-b", hostile.base_url(mode), *bounds)
    app = create_app(config)
    assert shared_parts(app).pool.wait_ready(timeout=30), shared_parts(app).pool.status()
    writer = Writer(app)
    before = len(hostile.of_mode(mode))
    assert writer.act("line_submitted", {"text": "The writer's own line for round 1."})["ok"]
    state = writer.wait_for("choosing", timeout=120)
    db = store.connect(config["DATABASE"])
    try:
        rows = {r["model"]: r for r in db.query("SELECT model, status, error FROM suggestions")}
    finally:
        db.close()
    assert rows["fake-a"]["status"] == "done" and rows["fake-b"]["status"] == "failed"
    assert error in rows["fake-b"]["error"], rows["fake-b"]["error"]
    assert mode == "hang" or hostile.base_url(mode) in rows["fake-b"]["error"]
    assert state["phase"] == "choosing"
    calls = hostile.of_mode(mode)[before:]
    deadline = time.monotonic() + 30
    while any(entry["hung_up_at"] is None for entry in calls if mode == "hang"):
        assert time.monotonic() < deadline, calls  # each call was closed when its time was up
        time.sleep(0.02)


def test_stop_on_the_run_s_page_ends_a_run_whose_server_hangs_at_once(hostile, tmp_path):
    mode = "ok-then-hang~page"
    config = write_setup(tmp_path)
    write_card(Path(config["MODELS_DIR"]), "fake-b", hostile.base_url(mode), 300, 600)
    app = create_app(config)
    db = store.connect(config["DATABASE"])
    stories = [Story(f"s{n}", "GPT4", "", f"Story {n}: the keeper found a letter.", "")
               for n in (1, 2, 3)]  # fmt: skip
    judgements = [Judgement(story.story_id, "GPT4", f"e{rater}", item.id, 1.0, None, "")
                  for story in stories for rater in range(3) for item in TTCW.items]  # fmt: skip
    import_rating_experiment(db, "tiny", TTCW, judgements, stories)
    db.close()
    assert shared_parts(app).pool.wait_ready(timeout=30), shared_parts(app).pool.status()
    researcher = Researcher(app)
    researcher.login()
    page = "/research/ratings/tiny/judges/run"
    assert researcher.post(page, {"model": "fake-b", "items": "1,13"}).status_code == 302
    deadline = time.monotonic() + 60
    while len(hostile.of_mode(mode)) < 5:  # the warm-up, then four prompts at once
        assert time.monotonic() < deadline, hostile.of_mode(mode)
        time.sleep(0.02)
    pressed = time.monotonic()
    assert researcher.post(f"{page}/fake-b/stop").status_code == 302
    deadline = time.monotonic() + 60
    while (status := researcher.get(f"{page}/fake-b.json").get_json())["state"] == "running":
        assert time.monotonic() < deadline, status
        time.sleep(0.02)
    assert time.monotonic() - pressed < 5.0  # the 70 s
    assert status["state"] == "stopped" and status["done"] == 0 and status["error"] == ""


@pytest.mark.parametrize("mode", ["html", "drip", "garbage"])
def test_a_judge_of_the_writers_rounds_against_a_hostile_server_fails_in_time_and_stores_nothing(
    hostile, tmp_path, mode
):
    config = cowriting_study(tmp_path)
    url = hostile.base_url(f"ok-then-{mode}~rounds")
    remote = write_card(Path(config["models"]), "remote", url)
    request = RoundJudgeRequest("exp", remote, round_limit=2)
    started = time.monotonic()
    found, progress = judge_rounds_run(config, request, OpenAIBackend(remote))
    assert time.monotonic() - started < 2 * DEADLINE_SECONDS + SLACK_SECONDS
    # The first prompt met a good answer ("Yes, ..." names no slot: stored, unparsed).
    assert found.state == "failed" and progress["done"] == 1, progress
    assert f"{url}/v1/completions" in found.error and HOSTILE[mode] in found.error
    assert [v["response"] for v in round_verdicts(config, "remote")] == [
        "Yes, the ending is earned."
    ]
