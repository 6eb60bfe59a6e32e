"""Runs of a judge of the writers' choices: a model card asked about each round of a
co-writing experiment in both orders (the edge where the judge model meets the database).

A run is a row of ``round_judge_runs`` (what repeats it: the model and its version, the
prompt template, the sampling and the seed; where it stands: ``state``, ``total``,
``error``); its verdicts are rows of ``round_verdicts``, one per round × order, each written
in its own transaction as soon as it is answered (a verdict already stored under the
table's key stays).
Starting a run that exists resumes it: the prompts already answered are skipped, so a run
stopped, failed or killed in the middle loses no verdict and repeats none. Each prompt is
sampled with the run's sampling and its own seed (:func:`verdict_seed`), one at a time. The
loop, resume and Stop are the shared run machinery's (:mod:`cyoa.judging.runs`); this module
gives it the rounds' prompts and how a choice is read and stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cyoa import store
from cyoa.cowriting.analysis.data import RoundRecord, experiment_pairs, load_study
from cyoa.cowriting.judges.prompts import (
    TEMPLATE,
    RoundPrompt,
    RoundPromptError,
    check_template,
    parse_choice,
    round_prompts,
)
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.generation.types import Backend, ModelCard, Sampling
from cyoa.judging import runs as judging
from cyoa.judging.runs import RUNNING, Answer

# Room for the letter and a few sentences of reasons.
DEFAULT_MAX_NEW_TOKENS = 128
TABLE = judging.RunTable("round_judge_runs", "round_limit")


class RoundJudgeError(RuntimeError):
    """A run that cannot start or resume; the message says what to do instead."""


@dataclass(frozen=True)
class RoundJudgeRun:
    """A stored run (a ``round_judge_runs`` row); ``round_limit``: how many rounds with a
    choice it judges (the first ones; None: all), ``total`` how many prompts that makes."""

    experiment: str
    judge: str
    model: str
    model_version: str
    backend: str
    template: str
    sampling: Sampling
    seed: int
    round_limit: int | None
    total: int
    state: str
    error: str
    worker: str


@dataclass(frozen=True)
class RoundJudgeRequest:
    """What a researcher asks for: ``card`` judging ``experiment``'s rounds as ``judge``
    (default: the card's name); None fields take the defaults, or the stored run's."""

    experiment: str
    card: ModelCard
    judge: str = ""
    seed: int = 0
    max_new_tokens: int | None = None
    template: str | None = None
    round_limit: int | None = None

    @property
    def name(self) -> str:
        return self.judge or self.card.name


def verdict_seed(seed: int, session_id: str, round_number: int, order: str) -> int:
    """The seed of one verdict: a hash of the run's ``seed``, the round and the order (31
    bits, as the study's seeds)."""
    return judging.prompt_seed(seed, session_id, round_number, order)


def experiment_rounds(db: Db, experiment: str) -> list[RoundRecord]:
    """Every submitted round of the co-writing ``experiment``, pair by pair (as ``analyze``
    reads them); :class:`AnalysisError` when it is missing or not a co-writing study."""
    row = store.experiment_row(db, experiment)
    if row.get("kind", "cowriting") != "cowriting":
        raise AnalysisError(
            f"'{experiment}' is a {row['kind']} experiment: judge-rounds judges the rounds of a "
            "co-writing study (for a rating study, use judge)."
        )
    return [
        r
        for pair in experiment_pairs(db, experiment)
        for r in load_study(db, experiment, pair).rounds
    ]


def run_prompts(db: Db, run: RoundJudgeRun) -> list[RoundPrompt]:
    """Every prompt of ``run``: both orders of its first ``round_limit`` rounds."""
    prompts = round_prompts(experiment_rounds(db, run.experiment), run.template)
    return prompts if run.round_limit is None else prompts[: 2 * run.round_limit]


def _row_to_run(row: dict[str, Any]) -> RoundJudgeRun:
    return RoundJudgeRun(
        experiment=row["experiment_id"],
        judge=row["judge"],
        model=row["model"],
        model_version=row["model_version"] or "",
        backend=row["backend"] or "",
        template=row["template"],
        sampling=Sampling(**json.loads(row["sampling"])),
        seed=int(row["seed"]),
        round_limit=row["round_limit"],
        total=int(row["total"] or 0),
        state=row["state"],
        error=row["error"] or "",
        worker=row["worker"] or "",
    )


def _read_run(db: Db, experiment: str, judge: str) -> RoundJudgeRun | None:
    row = judging.read_row(db, TABLE, experiment, judge)
    return _row_to_run(row) if row else None


def stored_round_run(db: Db, experiment: str, judge: str) -> RoundJudgeRun | None:
    """The run of ``judge`` as stored; one recorded as running whose process is gone is
    marked interrupted first."""
    row = judging.stored_row(db, TABLE, experiment, judge)
    return _row_to_run(row) if row else None


def experiment_round_runs(db: Db, experiment: str) -> list[RoundJudgeRun]:
    """Every judge run of ``experiment``'s rounds, by judge name."""
    return [
        run
        for name in judging.judges(db, TABLE, experiment)
        if (run := stored_round_run(db, experiment, name))
    ]


def prepare_run(db: Db, request: RoundJudgeRequest, worker: str) -> RoundJudgeRun:
    """Start the run ``request`` asks for, or resume the stored run of that judge (same
    model; its template, sampling and seed kept), as running in ``worker``. Raises
    :class:`RoundJudgeError` or :class:`AnalysisError` saying why it cannot."""
    stored_round_run(db, request.experiment, request.name)  # marks an orphan interrupted
    with store.write_transaction(db):
        existing = _read_run(db, request.experiment, request.name)
        if existing is None:
            _insert_run(db, request, worker)
        else:
            _resume(db, existing, request, worker)
        run = _read_run(db, request.experiment, request.name)
        db.execute(
            "UPDATE round_judge_runs SET total = ? WHERE experiment_id = ? AND judge = ?",
            [len(run_prompts(db, run)), run.experiment, run.judge],
        )
    return _read_run(db, request.experiment, request.name)


def _resume(db: Db, run: RoundJudgeRun, request: RoundJudgeRequest, worker: str) -> None:
    row = judging.read_row(db, TABLE, run.experiment, run.judge)
    refusal = judging.resume_refusal(row, request.card.name)
    if refusal:
        raise RoundJudgeError(refusal)
    limit = run.round_limit if request.round_limit is None else request.round_limit
    judging.resume(db, TABLE, row, limit, worker)


def _insert_run(db: Db, request: RoundJudgeRequest, worker: str) -> None:
    experiment_rounds(db, request.experiment)  # a missing or rating experiment says so
    template = request.template or TEMPLATE
    try:
        check_template(template)
    except RoundPromptError as error:
        raise RoundJudgeError(str(error)) from None
    card, stamp = request.card, store.now()
    sampling = card.sampling.with_overrides(
        {"max_new_tokens": request.max_new_tokens or DEFAULT_MAX_NEW_TOKENS}
    )
    db.insert(
        "round_judge_runs",
        {"experiment_id": request.experiment, "judge": request.name, "model": card.name,
         "model_version": card.version, "backend": card.backend, "template": template,
         "sampling": json.dumps(sampling.to_dict(), sort_keys=True), "seed": request.seed,
         "round_limit": request.round_limit, "total": 0, "state": RUNNING, "error": "",
         "worker": worker, "created_at": stamp, "updated_at": stamp}
    )  # fmt: skip


def answered(db: Db, run: RoundJudgeRun) -> set[tuple[str, int, str]]:
    """The (session, round, order) showings the run has a stored verdict for."""
    return {
        (row[0], row[1], row[2])
        for row in db.execute(
            "SELECT session_id, round, shown_order FROM round_verdicts"
            " WHERE experiment_id = ? AND judge = ?",
            [run.experiment, run.judge],
        )
    }


def store_verdict(db: Db, run: RoundJudgeRun, prompt: RoundPrompt, answer: Answer) -> None:
    """One verdict, in its own transaction: the slot read from the answer's response
    (:func:`~cyoa.cowriting.judges.prompts.parse_choice`; NULL when unparsed), the system
    in it, the response as the rationale. A verdict stored already stays."""
    response = answer.response
    slot = parse_choice(response)
    system = {"A": prompt.slot_a_system, "B": prompt.slot_b_system}.get(slot or "")
    with store.write_transaction(db):
        db.insert(
            "round_verdicts",
            {"experiment_id": run.experiment, "judge": run.judge,
             "session_id": prompt.session_id, "round": prompt.round, "shown_order": prompt.order,
             "slot_a_system": prompt.slot_a_system, "slot_b_system": prompt.slot_b_system,
             "chosen_slot": slot, "chosen_system": system, "response": response,
             "asked_at": answer.asked_at, "answered_at": answer.answered_at,
             "recorded_at": store.now()},
            on_conflict="ignore",
        )  # fmt: skip


def run_judge(
    db: Db, run: RoundJudgeRun, backend: Backend, stop: Callable[[], bool] = lambda: False
) -> str:
    """Ask every prompt of ``run`` not answered yet, one at a time, storing each verdict as
    it comes (:func:`cyoa.judging.runs.ask_all`); returns how the run ended, also stored:
    ``done``, ``stopped`` (``stop()`` was true: asked before each prompt and while one is
    asked, which then ends without a verdict) or ``failed`` (the model failed: the error is
    stored, the verdicts so far are kept, and nothing for the prompt that failed, so a
    resume asks it again)."""
    done = answered(db, run)
    todo = [p for p in run_prompts(db, run) if (p.session_id, p.round, p.order) not in done]
    asking = judging.Asking(
        text=lambda p: p.text,
        seed=lambda p: verdict_seed(run.seed, p.session_id, p.round, p.order),
        place=lambda p: f"round {p.round} of session {p.session_id!r}",
        store=lambda p, answer: store_verdict(db, run, p, answer),
    )
    return judging.ask_all(db, TABLE, run, todo, asking, backend, 1, stop)


def judge_rounds(
    db: Db,
    request: RoundJudgeRequest,
    backend: Backend,
    worker: str,
    stop: Callable[[], bool] = lambda: False,
    log: Callable[[str], None] = print,
) -> RoundJudgeRun:
    """Start or resume the run ``request`` asks for with ``backend`` (loaded), as running in
    ``worker``, and ask what is left; returns the run as it ended."""
    run = prepare_run(db, request, worker)
    done = len(answered(db, run))
    if done:
        log(f"Resuming judge '{run.judge}': {done} verdicts stored, {run.total - done} to ask.")
    run_judge(db, run, backend, stop)
    return stored_round_run(db, run.experiment, run.judge)


def run_progress(db: Db, run: RoundJudgeRun) -> dict[str, Any]:
    """Where ``run`` stands: its state, error, model, template and sampling, verdicts
    ``done`` of ``total`` and how many are ``unparsed``."""
    done, unparsed = db.execute(
        "SELECT count(*), sum(chosen_slot IS NULL) FROM round_verdicts"
        " WHERE experiment_id = ? AND judge = ?",
        [run.experiment, run.judge],
    ).fetchone()
    return {
        "judge": run.judge, "model": run.model, "model_version": run.model_version,
        "backend": run.backend, "state": run.state, "error": run.error,
        "template": run.template, "sampling": run.sampling.to_dict(), "seed": run.seed,
        "round_limit": run.round_limit, "total": run.total, "done": done,
        "unparsed": unparsed or 0,
    }  # fmt: skip
