"""The run machinery both kinds' judges share: a judge model asked every prompt of a run,
each verdict stored in its own transaction as it is answered, and a run that stopped,
failed or was killed resumed without losing or repeating a verdict.

A wing keeps its runs in a table of one row per experiment × judge (:class:`RunTable`:
``round_judge_runs``, ``judge_runs``) with the columns this module reads and writes
(``experiment_id``, ``judge``, ``model``, ``state``, ``error``, ``worker``, ``updated_at``
and the run's limit), and gives the loop only what differs (:class:`Asking`): each prompt's
text, seed and place, and how its verdict is read and stored.

Each prompt is sampled with the run's sampling and its own seed, so a verdict is the same
whichever order or concurrency asked it. ``concurrency`` prompts are asked at once, each on
a thread of the run's pool; a Stop (``stop()`` true) is asked before each prompt and while
one is asked (:func:`cyoa.generation.stopping.stop_when`), which then ends without a verdict
and is asked again on resume.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import closing
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from cyoa import store
from cyoa.db.facade import Db
from cyoa.generation.stopping import GenerationStopped, stop_when, until_stopped
from cyoa.generation.types import Backend, Sampling
from cyoa.web.workers import worker_gone

RUNNING, DONE, STOPPED, FAILED, INTERRUPTED = "running", "done", "stopped", "failed", "interrupted"
INTERRUPTED_MESSAGE = (
    "The process running it stopped (a restart?); start it again to resume where it was."
)
P = TypeVar("P")


@dataclass(frozen=True)
class RunTable:
    """A wing's table of runs (``name``) and its column of how many units a run judges
    (``limit``: the first rounds, the first stories; NULL: all)."""

    name: str
    limit: str


class Run(Protocol):
    """What the loop reads of a wing's stored run."""

    experiment: str
    judge: str
    model: str
    sampling: Sampling


def read_row(db: Db, table: RunTable, experiment: str, judge: str) -> dict[str, Any] | None:
    """The run's row as stored, or None."""
    rows = list(
        db.query(
            f"SELECT * FROM {table.name} WHERE experiment_id = ? AND judge = ?",
            [experiment, judge],
        )
    )
    return rows[0] if rows else None


def stored_row(db: Db, table: RunTable, experiment: str, judge: str) -> dict[str, Any] | None:
    """The run's row; one recorded as running whose process is gone is marked interrupted
    first."""
    row = read_row(db, table, experiment, judge)
    if row is not None and row["state"] == RUNNING and worker_gone(row["worker"] or ""):
        set_state(db, table, experiment, judge, INTERRUPTED, INTERRUPTED_MESSAGE)
        row = read_row(db, table, experiment, judge)
    return row


def judges(db: Db, table: RunTable, experiment: str) -> list[str]:
    """The names of ``experiment``'s judges with a run, in order."""
    return [
        row[0]
        for row in db.execute(
            f"SELECT judge FROM {table.name} WHERE experiment_id = ? ORDER BY judge", [experiment]
        )
    ]


def set_state(
    db: Db, table: RunTable, experiment: str, judge: str, state: str, error: str = ""
) -> None:
    """Record where the run stands (and why, for a failure), in its own transaction."""
    with store.write_transaction(db):
        db.execute(
            f"UPDATE {table.name} SET state = ?, error = ?, updated_at = ?"
            " WHERE experiment_id = ? AND judge = ?",
            [state, error, store.now(), experiment, judge],
        )


def resume_refusal(row: dict[str, Any], model: str) -> str:
    """Why the stored run ``row`` cannot be resumed with ``model`` (a sentence), or ``""``."""
    experiment, judge = row["experiment_id"], row["judge"]
    if row["model"] != model:
        return (
            f"'{experiment}' already has a judge '{judge}' run by model {row['model']!r}; give "
            "this one another name (--judge)."
        )
    if row["state"] == RUNNING:
        return (
            f"The judge '{judge}' of '{experiment}' is running now; wait for it, or stop it first."
        )
    return ""


def resume(db: Db, table: RunTable, row: dict[str, Any], limit: int | None, worker: str) -> None:
    """Mark the stored run ``row`` running again in ``worker``, its error cleared, judging
    ``limit`` units (inside the caller's transaction)."""
    db.execute(
        f"UPDATE {table.name} SET state = ?, error = '', worker = ?, {table.limit} = ?,"
        " updated_at = ? WHERE experiment_id = ? AND judge = ?",
        [RUNNING, worker, limit, store.now(), row["experiment_id"], row["judge"]],
    )


def prompt_seed(seed: int, *place: object) -> int:
    """The seed of one prompt: a hash of the run's ``seed`` and the prompt's ``place`` (the
    round and order, the story and item; 31 bits, as the study's seeds), so a verdict does
    not depend on the order or concurrency it was asked in."""
    key = ":".join(str(part) for part in (seed, *place)).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") >> 1


def ask(backend: Backend, prompt: str, sampling: Sampling, seed: int) -> str:
    """The judge's whole response to ``prompt`` (every piece, up to ``max_new_tokens``);
    :class:`GenerationStopped` when the caller's stop (:func:`stop_when`) turns true first."""
    with closing(backend.stream(prompt, sampling, seed)) as pieces:
        return "".join(until_stopped(pieces)).strip()


@dataclass(frozen=True)
class Answer:
    """A judge's response to one prompt, and when it was asked and answered (ISO times)."""

    response: str
    asked_at: str
    answered_at: str


@dataclass(frozen=True)
class Asking(Generic[P]):
    """What a wing gives the loop about its prompts ``P``: each one's ``text``, ``seed`` and
    ``place`` (for a failure's sentence: "round 3 of session 's1'"), and ``store(prompt,
    answer)``: its verdict read and stored in its own transaction (one stored already
    stays)."""

    text: Callable[[P], str]
    seed: Callable[[P], int]
    place: Callable[[P], str]
    store: Callable[[P, Answer], None]


def failure_sentence(model: str, place: str, failure: Exception) -> str:
    """What a failed run says: where the model failed, why, and that a resume continues."""
    return (
        f"Model {model!r} failed on {place} ({type(failure).__name__}: {failure}). The "
        "verdicts so far are kept: fix the cause and start the run again to resume."
    )


def _answer(backend: Backend, run: Run, asking: Asking[P], prompt: P, stop) -> Answer:
    asked = store.now()
    with stop_when(stop):
        response = ask(backend, asking.text(prompt), run.sampling, asking.seed(prompt))
    return Answer(response, asked, store.now())


def ask_all(
    db: Db,
    table: RunTable,
    run: Run,
    todo: Sequence[P],
    asking: Asking[P],
    backend: Backend,
    concurrency: int = 1,
    stop: Callable[[], bool] = lambda: False,
) -> str:
    """Ask the prompts ``todo`` of ``run``, ``concurrency`` at a time, storing each verdict
    as it comes; returns how the run ended, also stored: ``done``, ``stopped`` (``stop()``
    was true: asked before each prompt and while one is asked; a call in flight then ends
    without a verdict, to be asked again on resume) or ``failed`` (the model failed: its
    error stored; the verdicts so far are kept; nothing is stored for the prompt that
    failed, so a resume asks it again)."""
    left = iter(todo)
    error, stopped = "", False
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="cyoa-judge") as pool:
        flying: dict[Future[Answer], P] = {}
        while True:
            while not error and len(flying) < concurrency and not stop():
                prompt = next(left, None)
                if prompt is None:
                    break
                flying[pool.submit(_answer, backend, run, asking, prompt, stop)] = prompt
            if not flying:
                break
            finished, _ = wait(flying, return_when=FIRST_COMPLETED)
            for future in finished:
                prompt = flying.pop(future)
                try:
                    asking.store(prompt, future.result())
                except GenerationStopped:
                    stopped = True
                except Exception as failure:  # noqa: BLE001 - the run records any failure
                    error = error or failure_sentence(run.model, asking.place(prompt), failure)
    state = FAILED if error else STOPPED if stopped or next(left, None) is not None else DONE
    set_state(db, table, run.experiment, run.judge, state, error)
    return state
