"""Judge runs: a model card administering a rating experiment's instrument to its stories, as
the judge panel of its name (the edge where a judge model meets the database).

A run is a row of ``judge_runs`` (what repeats it: the model and its version, the prompt
templates, the sampling and the seed; where it stands: ``state``, ``total``, ``error``) and
its verdicts are the judge's ``judgements``, one per story × item, each written in its own
transaction as soon as it is answered (a verdict already stored under the table's key
stays). Starting a
run that exists resumes it with what it stored: the prompts already answered are skipped, so
a run stopped, failed or killed in the middle loses no verdict and repeats none.

Each prompt is sampled with the run's sampling and its own seed, :func:`verdict_seed` (the
run's seed and the story × item), so a verdict is the same whichever order or concurrency
asked it, on the same machine (for a served model, where its server honours seeds).
Concurrency: one prompt at a time for a model run in this process (the CPU is shared with the
live studies), :data:`SERVED_CONCURRENCY` at a time for a served one (``openai`` backend).
The loop, resume and Stop are the shared run machinery's (:mod:`cyoa.judging.runs`); this
module gives it the instrument's prompts and how a verdict is read and stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from cyoa import store
from cyoa.db.facade import Db
from cyoa.generation.stopping import GenerationStopped, stop_when
from cyoa.generation.types import Backend, ModelCard, Sampling
from cyoa.judging import runs as judging
from cyoa.judging.runs import FAILED, RUNNING, STOPPED, Answer
from cyoa.rating.instruments import Instrument
from cyoa.rating.judges.estimate import Estimate, Speed, estimate, measure_speed
from cyoa.rating.judges.prompts import JudgePrompt, judge_prompts, parse_answer, templates_for
from cyoa.rating.judges.store import JUDGE_NAME, judge_panels, rating_design
from cyoa.rating.store import HUMAN_PANEL

SERVED_CONCURRENCY = 4
# Answers of the TTCW release's judges run to 100–250 words.
DEFAULT_MAX_NEW_TOKENS = 256
TABLE = judging.RunTable("judge_runs", "story_limit")


class JudgeRunError(RuntimeError):
    """A run that cannot start or resume; the message says what to do instead."""


@dataclass(frozen=True)
class JudgeRun:
    """A stored run (a ``judge_runs`` row): ``story_limit`` is how many stories it judges
    (the first ones; None: all), ``items`` which items it asks (None: all), ``total`` how many
    prompts that makes."""

    experiment: str
    judge: str
    model: str
    model_version: str
    backend: str
    templates: dict[str, str]
    sampling: Sampling
    seed: int
    concurrency: int
    story_limit: int | None
    items: tuple[str, ...] | None
    total: int
    state: str
    error: str
    worker: str


def default_concurrency(card: ModelCard) -> int:
    """How many prompts a run of ``card`` asks at once (see the module)."""
    return SERVED_CONCURRENCY if card.backend == "openai" else 1


def verdict_seed(seed: int, story_id: str, item_id: str) -> int:
    """The seed of one verdict: a hash of the run's ``seed``, the story and the item (31
    bits, as the study's seeds)."""
    return judging.prompt_seed(seed, story_id, item_id)


def _row_to_run(row: dict[str, Any]) -> JudgeRun:
    return JudgeRun(
        experiment=row["experiment_id"],
        judge=row["judge"],
        model=row["model"],
        model_version=row["model_version"] or "",
        backend=row["backend"] or "",
        templates=json.loads(row["templates"]),
        sampling=Sampling(**json.loads(row["sampling"])),
        seed=int(row["seed"]),
        concurrency=int(row["concurrency"] or 1),
        story_limit=row["story_limit"],
        items=tuple(json.loads(row["items"])) if row["items"] else None,
        total=int(row["total"] or 0),
        state=row["state"],
        error=row["error"] or "",
        worker=row["worker"] or "",
    )


def _read_run(db: Db, exp_id: str, judge: str) -> JudgeRun | None:
    row = judging.read_row(db, TABLE, exp_id, judge)
    return _row_to_run(row) if row else None


def stored_run(db: Db, exp_id: str, judge: str) -> JudgeRun | None:
    """The run of ``judge`` in ``exp_id`` as stored; a run recorded as running whose process
    is gone is marked interrupted first."""
    row = judging.stored_row(db, TABLE, exp_id, judge)
    return _row_to_run(row) if row else None


def experiment_runs(db: Db, exp_id: str) -> list[JudgeRun]:
    """Every judge run of ``exp_id``, by judge name."""
    return [
        run
        for judge in judging.judges(db, TABLE, exp_id)
        if (run := stored_run(db, exp_id, judge)) is not None
    ]


@dataclass(frozen=True)
class RunRequest:
    """What a researcher asks for: ``card`` judging ``experiment`` as ``judge`` (default: the
    card's name); None fields take the defaults (or, when resuming, the stored run's)."""

    experiment: str
    card: ModelCard
    judge: str = ""
    seed: int = 0
    max_new_tokens: int | None = None
    templates: dict[str, str] | None = None
    concurrency: int | None = None
    story_limit: int | None = None
    items: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return self.judge or self.card.name


def prepare_run(db: Db, request: RunRequest, worker: str) -> tuple[JudgeRun, Instrument]:
    """Start the run ``request`` asks for, or resume the stored run of that judge (same
    model; its stored templates, sampling and seed are kept), as running in ``worker``; a
    new run's judge is stored as a panel and described in the experiment's spec (under
    ``judges``). Raises :class:`JudgeRunError` (or :class:`RatingImportError` for a missing
    experiment) saying why it cannot."""
    stored_run(db, request.experiment, request.name)  # marks an orphan interrupted
    with store.write_transaction(db):
        instrument, _ = rating_design(db, request.experiment)
        existing = _read_run(db, request.experiment, request.name)
        if existing is None:
            run = _new_run(db, request, instrument, worker)
        else:
            run = _resumed(db, existing, request, worker)
        total = len(run_prompts(db, run, instrument))
        db.execute(
            "UPDATE judge_runs SET total = ? WHERE experiment_id = ? AND judge = ?",
            [total, run.experiment, run.judge],
        )
    return stored_run(db, run.experiment, run.judge), instrument


def _resumed(db: Db, run: JudgeRun, request: RunRequest, worker: str) -> JudgeRun:
    row = judging.read_row(db, TABLE, run.experiment, run.judge)
    refusal = judging.resume_refusal(row, request.card.name)
    if refusal:
        raise JudgeRunError(refusal)
    limit = run.story_limit if request.story_limit is None else request.story_limit
    judging.resume(db, TABLE, row, limit, worker)
    return _read_run(db, run.experiment, run.judge)


def _new_run(db: Db, request: RunRequest, instrument: Instrument, worker: str) -> JudgeRun:
    judge, exp_id, card = request.name, request.experiment, request.card
    _check_name(db, exp_id, judge)
    try:
        templates = templates_for(instrument, request.templates)
    except ValueError as error:
        raise JudgeRunError(str(error)) from None
    sampling = _sampling(request)
    stamp = store.now()
    row = {
        "experiment_id": exp_id,
        "judge": judge,
        "model": card.name,
        "model_version": card.version,
        "backend": card.backend,
        "templates": json.dumps(templates, sort_keys=True),
        "sampling": json.dumps(sampling.to_dict(), sort_keys=True),
        "seed": request.seed,
        "concurrency": request.concurrency or default_concurrency(card),
        "story_limit": request.story_limit,
        "items": json.dumps(list(request.items)) if request.items else None,
        "total": 0,
        "state": RUNNING,
        "error": "",
        "worker": worker,
        "created_at": stamp,
        "updated_at": stamp,
    }
    db.insert("judge_runs", row)
    db.insert(
        "raters",
        {"experiment_id": exp_id, "rater_id": judge, "id_source": "judge", "panel": judge,
         "created_at": stamp}
    )  # fmt: skip
    spec = json.loads(store.get_experiment(db, exp_id)["spec"])
    origin = {"format": "run", "model": card.name, "model_version": card.version,
              "backend": card.backend, "templates": templates, "sampling": sampling.to_dict(),
              "seed": request.seed}  # fmt: skip
    spec["judges"] = {**spec.get("judges", {}), judge: origin}
    db.execute(
        "UPDATE experiments SET spec = ?, updated_at = ? WHERE id = ?",
        [json.dumps(spec, sort_keys=True), stamp, exp_id],
    )
    return _row_to_run(row)


def _check_name(db: Db, exp_id: str, judge: str) -> None:
    if not JUDGE_NAME.fullmatch(judge):
        raise JudgeRunError(
            f"{judge!r} cannot name a judge: use letters, digits, '.', '-' and '_' (at most 64, "
            "starting with a letter or digit)."
        )
    if judge == HUMAN_PANEL:
        raise JudgeRunError(f"'{HUMAN_PANEL}' names the study's raters; name the judge otherwise.")
    taken = (
        judge in judge_panels(db, exp_id)
        or db.execute(
            "SELECT 1 FROM raters WHERE experiment_id = ? AND rater_id = ?", [exp_id, judge]
        ).fetchone()
    )
    if taken:
        raise JudgeRunError(
            f"'{exp_id}' already has a judge or rater '{judge}' that no run made (imported "
            "verdicts); give this judge another name (--judge)."
        )


def run_prompts(db: Db, run: JudgeRun, instrument: Instrument) -> list[JudgePrompt]:
    """Every prompt of ``run`` (see :func:`story_prompts`)."""
    return story_prompts(db, run.experiment, instrument, run.templates, run.story_limit, run.items)


def story_prompts(
    db: Db,
    exp_id: str,
    instrument: Instrument,
    templates: dict[str, str],
    story_limit: int | None,
    items: tuple[str, ...] | None = None,
) -> list[JudgePrompt]:
    """The prompts of a run of ``exp_id``: its first ``story_limit`` stories (in the order
    they were stored; None: all) × the instrument's ``items`` (None: all), from
    ``templates``. Raises :class:`JudgeRunError` naming an item the instrument lacks."""
    stories = {
        row[0]: row[1] or ""
        for row in db.execute(
            "SELECT story_id, text FROM stories WHERE experiment_id = ? ORDER BY position", [exp_id]
        )
    }
    if story_limit is not None:
        stories = dict(list(stories.items())[:story_limit])
    try:
        prompts = judge_prompts(instrument, stories, templates)
        for item in items or ():
            instrument.item(item)
    except ValueError as error:
        raise JudgeRunError(str(error)) from None
    return [p for p in prompts if items is None or p.item_id in items]


def plan(db: Db, request: RunRequest) -> tuple[list[JudgePrompt], Sampling, dict[str, str]]:
    """What starting ``request`` would ask, storing nothing: the prompts not answered yet,
    the sampling and the templates (the stored run's when it resumes one)."""
    instrument, _ = rating_design(db, request.experiment)
    run = stored_run(db, request.experiment, request.name)
    if run is not None:
        limit = run.story_limit if request.story_limit is None else request.story_limit
        prompts = story_prompts(db, run.experiment, instrument, run.templates, limit, run.items)
        done = answered(db, run)
        return (
            [p for p in prompts if (p.story_id, p.item_id) not in done],
            run.sampling,
            run.templates,
        )
    try:
        templates = templates_for(instrument, request.templates)
    except ValueError as error:
        raise JudgeRunError(str(error)) from None
    prompts = story_prompts(
        db, request.experiment, instrument, templates, request.story_limit, request.items
    )
    return prompts, _sampling(request), templates


def _sampling(request: RunRequest) -> Sampling:
    return request.card.sampling.with_overrides(
        {"max_new_tokens": request.max_new_tokens or DEFAULT_MAX_NEW_TOKENS}
    )


def answered(db: Db, run: JudgeRun) -> set[tuple[str, str]]:
    """The (story, item) pairs the run has a stored verdict for."""
    return {
        (row[0], row[1])
        for row in db.execute(
            "SELECT story_id, item_id FROM judgements WHERE experiment_id = ? AND rater_id = ?",
            [run.experiment, run.judge],
        )
    }


def store_verdict(
    db: Db, run: JudgeRun, instrument: Instrument, prompt: JudgePrompt, answer: Answer
) -> None:
    """One verdict, in its own transaction: the value read from the response
    (:func:`~cyoa.rating.judges.prompts.parse_answer`; None when unparsed), the response as
    its rationale, when it was asked and answered. A verdict stored already stays."""
    value = parse_answer(instrument.item(prompt.item_id), answer.response)
    with store.write_transaction(db):
        db.insert(
            "judgements",
            {"experiment_id": run.experiment, "story_id": prompt.story_id,
             "rater_id": run.judge, "item_id": prompt.item_id, "value": value,
             "rationale": answer.response, "shown_at": answer.asked_at,
             "answered_at": answer.answered_at, "recorded_at": store.now()},
            on_conflict="ignore",
        )  # fmt: skip


def run_judge(
    db: Db,
    run: JudgeRun,
    instrument: Instrument,
    backend: Backend,
    stop: Callable[[], bool] = lambda: False,
) -> str:
    """Ask every prompt of ``run`` not answered yet, ``run.concurrency`` at a time, storing
    each verdict as it comes (:func:`cyoa.judging.runs.ask_all`); returns how the run ended,
    also stored: ``done``, ``stopped`` or ``failed``."""
    done = answered(db, run)
    todo = [p for p in run_prompts(db, run, instrument) if (p.story_id, p.item_id) not in done]
    asking = judging.Asking(
        text=lambda p: p.text,
        seed=lambda p: verdict_seed(run.seed, p.story_id, p.item_id),
        place=_place,
        store=lambda p, answer: store_verdict(db, run, instrument, p, answer),
    )
    return judging.ask_all(db, TABLE, run, todo, asking, backend, run.concurrency, stop)


def _place(prompt: JudgePrompt) -> str:
    return f"story {prompt.story_id!r}, item {prompt.item_id}"


def _failure(run: JudgeRun, prompt: JudgePrompt, failure: Exception) -> str:
    return judging.failure_sentence(run.model, _place(prompt), failure)


def _set_state(db: Db, run: JudgeRun, state: str, error: str = "") -> None:
    judging.set_state(db, TABLE, run.experiment, run.judge, state, error)


def save_estimate(
    db: Db, run: JudgeRun, guess: dict[str, Any], speed: dict[str, float] | None
) -> None:
    """Keep the run's estimate and the speed it was measured at (the next run's "known
    speed" of this model)."""
    with store.write_transaction(db):
        db.execute(
            "UPDATE judge_runs SET estimate = ?, speed = ? WHERE experiment_id = ? AND judge = ?",
            [json.dumps(guess), json.dumps(speed) if speed else None, run.experiment, run.judge],
        )


def known_speed(db: Db, model: str) -> dict[str, float] | None:
    """The speed last measured for ``model`` by any run on this database, or None."""
    row = db.execute(
        "SELECT speed FROM judge_runs WHERE model = ? AND speed IS NOT NULL"
        " ORDER BY updated_at DESC LIMIT 1",
        [model],
    ).fetchone()
    return json.loads(row[0]) if row else None


def run_status(db: Db, run: JudgeRun) -> dict[str, Any]:
    """What the progress page shows of ``run``: its state and error, verdicts ``done`` of
    ``total``, how many are ``unparsed``, the measured seconds a verdict took
    (``seconds_per_verdict``, None before the first) and the run's stored estimate."""
    verdicts = db.execute(
        "SELECT value, shown_at, answered_at FROM judgements"
        " WHERE experiment_id = ? AND rater_id = ?",
        [run.experiment, run.judge],
    ).fetchall()
    took = [
        seconds
        for _, shown, answered in verdicts
        if (seconds := _seconds_between(shown, answered)) is not None
    ]
    estimate = db.execute(
        "SELECT estimate FROM judge_runs WHERE experiment_id = ? AND judge = ?",
        [run.experiment, run.judge],
    ).fetchone()[0]
    return {
        **{key: value for key, value in asdict(run).items() if key != "worker"},
        "sampling": run.sampling.to_dict(),
        "done": len(verdicts),
        "unparsed": sum(value is None for value, _, _ in verdicts),
        "seconds_per_verdict": sum(took) / len(took) if took else None,
        "estimate": json.loads(estimate) if estimate else None,
    }


def _seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from the ISO 8601 time ``start`` to ``end``; None when either is missing or
    is no time."""
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except (TypeError, ValueError):
        return None


def run_estimate(
    db: Db,
    prompts: list[JudgePrompt],
    sampling: Sampling,
    card: ModelCard,
    backend: Backend | None,
    concurrency: int,
) -> tuple[Estimate, Speed | None]:
    """The estimate of asking ``prompts`` with ``card``: at the speed last measured for the
    model on this database, else at one measured now by a warm-up of ``backend`` (loaded),
    else with the time unknown (:mod:`cyoa.rating.judges.estimate`)."""
    texts = [prompt.text for prompt in prompts]
    known = known_speed(db, card.name)
    if known is not None:
        speed, basis = Speed(**known), "at the speed of this model's last run here"
    elif backend is not None and prompts:
        speed, basis = measure_speed(backend, texts[0], sampling, 0), "at a measured warm-up"
    else:
        speed, basis = None, ""
    return estimate(texts, sampling.max_new_tokens, speed, concurrency, basis), speed


def judge_experiment(
    db: Db,
    request: RunRequest,
    backend: Backend,
    worker: str,
    stop: Callable[[], bool] = lambda: False,
    log: Callable[[str], None] = print,
) -> JudgeRun:
    """Start or resume the run ``request`` asks for with ``backend`` (loaded), as running
    in ``worker`` (:func:`prepare_run`), then :func:`continue_run` it."""
    run, instrument = prepare_run(db, request, worker)
    return continue_run(db, run, instrument, backend, stop, log)


def continue_run(
    db: Db,
    run: JudgeRun,
    instrument: Instrument,
    backend: Backend,
    stop: Callable[[], bool] = lambda: False,
    log: Callable[[str], None] = print,
) -> JudgeRun:
    """Tell ``log`` the estimate of the prepared ``run``'s prompts left, store it, and ask
    them (:func:`run_judge`); returns the run as it ended."""
    done = answered(db, run)
    todo = [p for p in run_prompts(db, run, instrument) if (p.story_id, p.item_id) not in done]
    if done:
        log(f"Resuming judge '{run.judge}': {len(done)} verdicts stored, {len(todo)} to ask.")
    try:
        with stop_when(stop):
            guess, speed = run_estimate(
                db, todo, run.sampling, backend.card, backend, run.concurrency
            )
    except GenerationStopped:
        _set_state(db, run, STOPPED)
        return stored_run(db, run.experiment, run.judge)
    except Exception as failure:  # noqa: BLE001 - the warm-up is the model's first prompt
        fail_run(db, run, _failure(run, todo[0], failure))
        return stored_run(db, run.experiment, run.judge)
    log(f"Judge '{run.judge}' ({run.model}): {guess.sentence()}")
    save_estimate(db, run, guess.to_dict(), speed.to_dict() if speed else None)
    run_judge(db, run, instrument, backend, stop)
    return stored_run(db, run.experiment, run.judge)


def fail_run(db: Db, run: JudgeRun, error: str) -> None:
    """Record that ``run`` stopped on ``error`` (a sentence saying what to do); its verdicts
    stay, and starting it again resumes it."""
    _set_state(db, run, FAILED, error)
