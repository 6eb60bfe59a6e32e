"""Judge runs from the researcher's pages, under ``/research/ratings/<experiment>/judges/run``:
the form (a model card, the prompt templates shown as they will be sent, the estimate) that
starts one on a background thread of this server process with the pool's backend, and its
progress page, which the run's stored verdicts feed (:mod:`cyoa.rating.judges.runs`), so it
shows the same from any process and a run of a process that is gone as interrupted, to be
started again where it was.

Thin: prompts, estimates, storage and resuming are the runs module's.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from flask import Flask, abort, current_app, flash, redirect, render_template, request, url_for

from cyoa import store
from cyoa.db.facade import Db
from cyoa.generation.pool import ModelNotAvailable
from cyoa.judging.runs import RUNNING
from cyoa.rating.importing import RatingImportError
from cyoa.rating.instruments import Instrument
from cyoa.rating.judges.estimate import WARM_UP_TOKENS, Speed, estimate, measure_speed
from cyoa.rating.judges.runs import (
    JudgeRun,
    JudgeRunError,
    RunRequest,
    continue_run,
    experiment_runs,
    fail_run,
    known_speed,
    plan,
    prepare_run,
    run_status,
    stored_run,
)
from cyoa.rating.judges.unreadable import unreadable
from cyoa.rating.parts import parts as rating_parts
from cyoa.rating.research.views import rating_experiment_or_404
from cyoa.web import auth
from cyoa.web import research as web
from cyoa.web.parts import shared as shared_parts
from cyoa.web.realtime import socketio
from cyoa.words import sampling_words

log = logging.getLogger(__name__)
bp = web.blueprint("research_rating_judges", __name__, "/research/ratings")
# How long a run waits for its model to load, in seconds.
MODEL_WAIT_SECONDS = 600
# While a run is running its page reloads itself this often, in seconds.
REFRESH_SECONDS = 5


def _cards() -> dict[str, str]:
    """The model cards that can judge (every card of the pool that did not fail to load),
    with the label the form shows."""
    web.read_new_cards()
    cards = shared_parts().cards
    return {
        name: f"{cards[name].display_name} ({name}, {cards[name].backend})"
        for name, model in sorted(shared_parts().pool.status().items())
        if model["state"] != "failed"
    }


def _estimates(exp_id: str) -> tuple[list[dict[str, Any]], dict[str, str], str]:
    """Per card, what a new run of it with the defaults would ask (the estimate; its time
    when the model's speed is known here), the templates it would send, and why it cannot
    run ("" when it can)."""
    cards, rows, templates = shared_parts().cards, [], {}
    with web.db() as db:
        for name, label in _cards().items():
            try:
                prompts, sampling, templates = plan(db, RunRequest(exp_id, cards[name]))
            except (JudgeRunError, RatingImportError) as error:
                return [], {}, str(error)
            speed, basis = _speed(db, name)
            guess = estimate([p.text for p in prompts], sampling.max_new_tokens, speed, 1, basis)
            rows.append({
                "name": name, "label": label, "estimate": guess.sentence(),
                "timed": speed is not None,
            })  # fmt: skip
    return rows, templates, ""


def _speed(db: Db, name: str) -> tuple[Speed | None, str]:
    """The model's speed for the form's estimate, and where it came from: its last run on
    this database, else the probe measured in this process (:func:`probe_judge_speed`),
    else none (the form offers the probe)."""
    known = known_speed(db, name)
    if known is not None:
        return Speed(**known), "at the speed of this model's last run here"
    probed = rating_parts().judge_probes.get(name)
    if probed is not None:
        speed, when = probed
        return speed, f"at the speed of a probe at {when} UTC: one prompt, {WARM_UP_TOKENS} tokens"
    return None, ""


def _page(exp_id: str, error: str = "", status: int = 200):
    exp = rating_experiment_or_404(exp_id)
    cards, templates, problem = _estimates(exp.id)
    with web.db() as db:
        runs = [run_status(db, run) for run in experiment_runs(db, exp.id)]
    page = render_template(
        "research/rating_judge_runs.html",
        experiment=exp,
        cards=cards,
        templates=templates,
        runs=runs,
        error=error or problem,
        values=request.form,
    )
    return page, status


@bp.get("/<exp_id>/judges/run")
@auth.login_required
def judge_runs(exp_id: str):
    return _page(exp_id)


@bp.post("/<exp_id>/judges/run")
@auth.login_required
def start_judge_run(exp_id: str):
    """Start (or resume) the run the form asks for; the form again with the reason when it
    cannot start."""
    exp = rating_experiment_or_404(exp_id)
    try:
        run_request = _request(exp.id)
        with web.db() as db:
            run, instrument = prepare_run(db, run_request, shared_parts().worker_id)
    except (JudgeRunError, RatingImportError, ValueError) as error:
        return _page(exp.id, str(error), 400)
    stop = threading.Event()
    with rating_parts().jobs_lock:
        rating_parts().judge_stops[(exp.id, run.judge)] = stop
    socketio.start_background_task(_run, current_app._get_current_object(), run, instrument, stop)
    return redirect(url_for(".judge_run", exp_id=exp.id, judge=run.judge))


def _request(exp_id: str) -> RunRequest:
    """The run the form asks for; ValueError with a sentence for a field that is wrong."""
    form = request.form
    cards = shared_parts().cards
    name = form.get("model", "")
    if name not in _cards():
        raise ValueError("Choose the judge's model among the cards listed.")
    numbers = {}
    for field, low, high in (("limit", 1, 10**6), ("seed", 0, 2**31 - 1), ("max_tokens", 1, 4096)):
        raw = form.get(field, "").strip()
        if raw and not (raw.isdigit() and low <= int(raw) <= high):
            raise ValueError(f"{field.replace('_', ' ').capitalize()}: a whole number from {low} "
                             f"to {high}, or empty.")  # fmt: skip
        numbers[field] = int(raw) if raw else None
    items = tuple(i.strip() for i in form.get("items", "").split(",") if i.strip()) or None
    return RunRequest(
        exp_id, cards[name], form.get("judge", "").strip(), numbers["seed"] or 0,
        numbers["max_tokens"], None, None, numbers["limit"], items,
    )  # fmt: skip


def _run(app: Flask, run: JudgeRun, instrument: Instrument, stop: threading.Event) -> None:
    """The background run: wait for the model, then judge; a failure is stored on the run,
    and its page says it."""
    db = store.connect(app.config["DATABASE"])
    try:
        backend = shared_parts(app).pool.get(run.model, timeout=MODEL_WAIT_SECONDS)
        continue_run(db, run, instrument, backend, stop.is_set, log.info)
    except ModelNotAvailable as failure:
        fail_run(db, run, f"{failure} Start the run again once the model loads.")
    except Exception as failure:  # noqa: BLE001 - a failed run must not take the server down
        log.exception("Judge run %s failed", run.judge)
        fail_run(db, run, f"The run stopped ({type(failure).__name__}: {failure}); see the "
                 "server log, then start it again to resume.")  # fmt: skip
    finally:
        with rating_parts(app).jobs_lock:
            rating_parts(app).judge_stops.pop((run.experiment, run.judge), None)
        db.close()


@bp.post("/<exp_id>/judges/run/probe")
@auth.login_required
def probe_judge_speed(exp_id: str):
    """Time one short generation of the chosen card (the first prompt, :data:`WARM_UP_TOKENS`
    answer tokens, thrown away) so the form can say how long a run would take before it
    starts; kept in this process until a run of the model measures its own."""
    exp = rating_experiment_or_404(exp_id)
    name = request.form.get("probe", "")
    if name not in _cards():
        return _page(exp.id, "Choose the model to time among the cards listed.", 400)
    try:
        backend = shared_parts().pool.get(name, timeout=0)
    except ModelNotAvailable:
        message = (f"{name} is not loaded yet; it is loading now (the Models page shows when it "
                   "is ready): time it again then.")  # fmt: skip
        return _page(exp.id, message, 409)
    try:
        with web.db() as db:
            prompts, sampling, _ = plan(db, RunRequest(exp.id, shared_parts().cards[name]))
    except (JudgeRunError, RatingImportError) as error:
        return _page(exp.id, str(error), 400)
    if not prompts:
        return _page(exp.id, "This study has nothing a judge can answer: no prompt to time.", 400)
    try:
        speed = measure_speed(backend, prompts[0].text, sampling, 0)
    except Exception as failure:  # noqa: BLE001 - a model that fails its probe is said, not a 500
        log.exception("The probe of %s failed", name)
        return _page(exp.id, f"Timing {name} failed ({type(failure).__name__}: {failure}).", 500)
    with rating_parts().jobs_lock:
        rating_parts().judge_probes[name] = (speed, store.now()[11:16])
    flash(f"Timed {name} on one prompt of this study: the estimate below uses it.")
    return redirect(url_for(".judge_runs", exp_id=exp.id))


@bp.get("/<exp_id>/judges/run/<judge>")
@auth.login_required
def judge_run(exp_id: str, judge: str):
    exp = rating_experiment_or_404(exp_id)
    with web.db() as db:
        run = stored_run(db, exp.id, judge)
        status = run_status(db, run) if run is not None else None
        if status is not None:
            responses = db.execute(
                "SELECT item_id, rationale FROM judgements WHERE experiment_id = ?"
                " AND rater_id = ? AND value IS NULL ORDER BY answered_at, story_id, item_id",
                [exp.id, judge],
            ).fetchall()
    if status is None:
        abort(404)
    return render_template(
        "research/rating_judge_run.html",
        experiment=exp,
        run=status,
        sampling=sampling_words(status["sampling"]),
        unreadable=unreadable(responses, exp.questions.item, status["done"]),
        refresh=REFRESH_SECONDS if status["state"] == RUNNING else None,
    )


@bp.get("/<exp_id>/judges/run/<judge>.json")
@auth.login_required
def judge_run_json(exp_id: str, judge: str):
    exp = rating_experiment_or_404(exp_id)
    with web.db() as db:
        run = stored_run(db, exp.id, judge)
        if run is None:
            abort(404)
        return run_status(db, run)


@bp.post("/<exp_id>/judges/run/<judge>/stop")
@auth.login_required
def stop_judge_run(exp_id: str, judge: str):
    """Ask the run to stop now: the calls in flight end without a verdict (asked again on
    resume); what is stored stays."""
    exp = rating_experiment_or_404(exp_id)
    stop = rating_parts().judge_stops.get((exp.id, judge))
    if stop is None:
        flash("This run is not running in this server process: wait for it to end.")
    else:
        stop.set()
        flash("Stopping now: the prompts being asked end without a verdict; start the run "
              "again to resume.")  # fmt: skip
    return redirect(url_for(".judge_run", exp_id=exp.id, judge=judge))
