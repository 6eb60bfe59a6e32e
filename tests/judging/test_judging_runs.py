"""The run machinery both kinds' judges share (cyoa/judging/runs.py), on a table of its own:
every prompt asked, each verdict stored as it comes, a failure or a Stop ending the run with
the verdicts so far kept, and a run whose process is gone marked interrupted. The wings' own
runs are proved end to end in test_judges_runs.py and test_cowriting_judges.py."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass

import pytest

from cyoa import store
from cyoa.generation.types import Sampling
from cyoa.judging import runs as judging

TABLE = judging.RunTable("toy_runs", "toy_limit")


@dataclass(frozen=True)
class ToyRun:
    experiment: str
    judge: str
    model: str
    sampling: Sampling


class EchoModel:
    """A model, for these tests only, that answers "seen <prompt> <seed>" in two pieces, and
    fails on the prompts named in ``fails``; ``calls`` counts the prompts asked."""

    def __init__(self, fails: tuple[str, ...] = ()) -> None:
        self.fails, self.calls, self.lock = fails, [], threading.Lock()

    def stream(self, prompt: str, sampling: Sampling, seed: int):
        with self.lock:
            self.calls.append(prompt)
        if prompt in self.fails:
            raise ConnectionError("the server went away")
        yield f"seen {prompt}"
        yield f" {seed}"


@pytest.fixture
def db(tmp_path):
    db = store.connect(tmp_path / "cyoa.sqlite")
    with store.write_transaction(db):
        db.execute(
            "CREATE TABLE toy_runs (experiment_id TEXT, judge TEXT, model TEXT, state TEXT,"
            " error TEXT, worker TEXT, toy_limit INTEGER, updated_at TEXT)"
        )
        db.execute("CREATE TABLE toy_verdicts (prompt TEXT PRIMARY KEY, response TEXT)")
        db.execute("INSERT INTO toy_runs VALUES ('exp', 'j', 'echo', 'running', '', 'w', NULL, '')")
    yield db
    db.close()


def asking(db) -> judging.Asking[str]:
    def stored(prompt: str, answer: judging.Answer) -> None:
        with store.write_transaction(db):
            db.insert("toy_verdicts", {"prompt": prompt, "response": answer.response})

    return judging.Asking(
        text=lambda p: p, seed=lambda p: len(p), place=lambda p: f"prompt {p!r}", store=stored
    )


RUN = ToyRun("exp", "j", "echo", Sampling())
PROMPTS = [f"p{n}" for n in range(1, 8)]


def verdicts(db) -> dict[str, str]:
    return {row[0]: row[1] for row in db.execute("SELECT prompt, response FROM toy_verdicts")}


def test_every_prompt_is_asked_with_its_seed_and_stored_whatever_the_concurrency(db):
    state = judging.ask_all(db, TABLE, RUN, PROMPTS, asking(db), EchoModel(), concurrency=3)
    assert state == judging.DONE
    assert verdicts(db) == {p: f"seen {p} {len(p)}" for p in PROMPTS}
    assert judging.read_row(db, TABLE, "exp", "j")["state"] == "done"


def test_a_failing_model_ends_the_run_with_a_sentence_and_keeps_the_verdicts_before_it(db):
    model = EchoModel(fails=("p3",))
    state = judging.ask_all(db, TABLE, RUN, PROMPTS, asking(db), model, concurrency=1)
    assert state == judging.FAILED
    assert sorted(verdicts(db)) == ["p1", "p2"] and model.calls == ["p1", "p2", "p3"]
    error = judging.read_row(db, TABLE, "exp", "j")["error"]
    assert error == (
        "Model 'echo' failed on prompt 'p3' (ConnectionError: the server went away). The "
        "verdicts so far are kept: fix the cause and start the run again to resume."
    )


def test_a_stop_asked_during_a_call_ends_it_without_a_verdict_and_asks_nothing_more(db):
    asked, model = [], EchoModel()

    def stop() -> bool:  # asked before p1, at p1's two pieces, before p2, at p2's two pieces
        asked.append(None)
        return len(asked) >= 6

    state = judging.ask_all(db, TABLE, RUN, PROMPTS, asking(db), model, stop=stop)
    assert state == judging.STOPPED
    assert sorted(verdicts(db)) == ["p1"] and model.calls == ["p1", "p2"]
    assert judging.read_row(db, TABLE, "exp", "j")["state"] == "stopped"


def test_a_run_whose_process_is_gone_is_marked_interrupted_and_can_be_resumed(db):
    gone = f"{socket.gethostname()}/99999999/0/abc"
    db.execute("UPDATE toy_runs SET worker = ?", [gone])
    row = judging.stored_row(db, TABLE, "exp", "j")
    assert (row["state"], row["error"]) == (judging.INTERRUPTED, judging.INTERRUPTED_MESSAGE)
    assert judging.resume_refusal(row, "echo") == ""
    assert "run by model 'echo'; give this one another name" in judging.resume_refusal(row, "x")
    with store.write_transaction(db):
        judging.resume(db, TABLE, row, 5, "me")
    row = judging.read_row(db, TABLE, "exp", "j")
    assert (row["state"], row["worker"], row["toy_limit"], row["error"]) == ("running", "me", 5, "")
    assert "is running now; wait for it" in judging.resume_refusal(row, "echo")


def test_a_prompt_s_seed_is_a_31_bit_hash_of_the_run_s_seed_and_its_place():
    # The first 4 bytes of sha256(b"7:s1:13"), big-endian, shifted right by one bit.
    assert judging.prompt_seed(7, "s1", "13") == 0x5159E8FA
    seeds = {judging.prompt_seed(7, "s1", n) for n in range(200)}
    assert len(seeds) == 200 and all(0 <= s < 2**31 for s in seeds)
    assert judging.prompt_seed(7, "s1", 3, "AB") == judging.prompt_seed(7, "s1", "3", "AB")
