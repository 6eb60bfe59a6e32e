"""The Plan page of every experiment, under ``/research/plan/<experiment>``, linked from each
kind's dashboard: a form (target power, α, the effect to detect, pay, fee, seed, typed
overrides of the pilot's values) that starts a plan on a background task of this server
process, its progress page (reloading itself while the plan is made, as a judge run's page
does), and the plan once it is stored (:func:`cyoa.store.insert_plan`; the latest goes into
the evaluation card).

Thin: :func:`cyoa.research.planning.make_plan` makes the plan. A plan being made lives in
this process only; a restart loses it, and nothing half made is stored.
"""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, abort, current_app, redirect, render_template, request, url_for

from cyoa import kinds, store
from cyoa.errors import AnalysisError
from cyoa.planning_record import Planner
from cyoa.research import plan_bounds
from cyoa.research.planning import Options, PlanInputError, make_plan, parse_assumptions
from cyoa.web import auth
from cyoa.web import research as web
from cyoa.web.realtime import socketio

log = logging.getLogger(__name__)
bp = web.blueprint("research_plan", __name__, "/research/plan")
# While a plan is being made its page reloads itself this often, in seconds.
REFRESH_SECONDS = 2
# Plans being made or made in this process, kept for their progress pages (oldest forgotten).
JOBS_KEPT = 20
# The form's numbers: field → (label, its option in cyoa.research.plan_bounds.OPTIONS; the
# effect's bounds are its kind's planner's).
FIELDS = {
    "target_power": ("Target power", "target"),
    "alpha": ("α", "alpha"),
    "effect": ("Effect to detect", "effect"),
    "hourly_rate": ("Hourly rate", "hourly_rate"),
    "fee": ("Platform fee", "fee"),
    "seed": ("Seed", "seed"),
    "simulations": ("Simulations per cell", "simulations"),
    "alpha_width": ("Width of α's and κ's interval", "alpha_width"),
}
DEFAULTS = {"target_power": "0.8", "alpha": "0.05", "hourly_rate": "12", "fee": "0.33",
            "seed": "0", "simulations": "2000", "alpha_width": "0.2"}  # fmt: skip


@dataclass
class PlanJob:
    """A plan being made: ``state`` is ``running``, ``saved`` (stored as plan ``plan_id``)
    or ``failed`` (``error`` says why); ``done`` of ``total`` grid cells computed."""

    id: str
    experiment: str
    done: int = 0
    total: int = 0
    state: str = "running"
    error: str = ""
    plan_id: int | None = None
    # The form as it was sent, so the page shows the values this plan uses.
    values: dict[str, str] = field(default_factory=dict)

    def advance(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def to_dict(self) -> dict[str, Any]:
        """What the progress page shows (and its ``.json`` sends)."""
        return {
            "experiment": self.experiment,
            "state": self.state,
            "done": self.done,
            "total": self.total,
            "message": f"Computed {self.done}/{self.total or '…'} designs of the grid.",
            "error": self.error,
            "plan_id": self.plan_id,
        }


@dataclass
class PlanJobs:
    """This process's plans being made, by id, changed under ``lock``."""

    jobs: dict[str, PlanJob] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def init_app(app: Flask) -> None:
    app.extensions[__name__] = PlanJobs()


def plan_jobs(app: Flask | None = None) -> PlanJobs:
    return (app or current_app).extensions[__name__]


def _experiment_or_404(exp_id: str) -> dict[str, Any]:
    with web.db() as db:
        row = store.get_experiment(db, exp_id)
    if row is None:
        abort(404)
    return row


def _latest_values(latest: dict[str, Any] | None) -> dict[str, str]:
    """The form's fields as the latest stored plan used them (a co-writing plan's
    simulations per cell are those of its curve), so the form starts from the plan shown
    above it."""
    record = latest["record"] if latest else {}
    names = ("target_power", "alpha", "hourly_rate", "fee", "seed", "effect")
    values = {name: f"{record[name]:g}" for name in names if record.get(name) is not None}
    simulations = {cell.get("simulations") for cell in record.get("curve") or ()}
    if len(simulations) == 1 and None not in simulations:
        values["simulations"] = str(simulations.pop())
    return values


def _page(row: dict[str, Any], error: str = "", status: int = 200, job: PlanJob | None = None):
    form = {name: value for name, value in request.form.items() if name != "csrf_token"}
    with web.db() as db:
        latest = store.latest_plan(db, row["id"])
        planner = kinds.KINDS[row["kind"]].planner_for(db, row["id"])
    page = render_template(
        "research/plan.html",
        experiment=row,
        dashboard_url=url_for(kinds.KINDS[row["kind"]].dashboard, exp_id=row["id"]),
        keys=sorted(planner.keys),
        latest=latest,
        job=job.to_dict() if job else None,
        error=error,
        values={**DEFAULTS, **_latest_values(latest), **(job.values if job else {}), **form},
        refresh=REFRESH_SECONDS if job and job.state == "running" else None,
    )
    return page, status


@bp.get("/<exp_id>")
@auth.login_required
def plan_page(exp_id: str):
    return _page(_experiment_or_404(exp_id))


def _number(name: str, planner: Planner) -> float | int | None:
    """The form's field ``name`` as a number (None when left blank); :class:`PlanInputError`
    naming the field when it is not one within its bounds (a ``planner``'s plan's)."""
    label, option = FIELDS[name]
    if option == "effect":
        bound = plan_bounds.ASSUMPTIONS[planner.effect]
    else:
        bound = plan_bounds.OPTIONS[option]
    raw = request.form.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw) if bound.whole else float(raw)
    except ValueError:
        value = None
    if value is None or not bound.holds(value):
        raise PlanInputError(f"{label}: {bound.describe()}, or empty.")
    return value


def _options(job: PlanJob) -> tuple[Options, dict[str, float]]:
    """The plan the form asks for: its options and typed overrides."""
    planner = job_planner(job)
    given = {name: _number(name, planner) for name in FIELDS}
    values = {name: float(DEFAULTS[name]) for name in DEFAULTS} | {
        name: value for name, value in given.items() if value is not None
    }
    options = Options(
        values["target_power"], values["alpha"], values["hourly_rate"], values["fee"],
        int(values["seed"]), given["effect"], job.advance, int(values["simulations"]),
        values["alpha_width"], current_app.config["CURRENCY"],
    )  # fmt: skip
    return options, parse_assumptions(request.form.get("assume", ""), planner.keys)


def job_planner(job: PlanJob) -> Planner:
    """The planner the job's experiment is planned with (its kind's, or an FEI pilot's):
    its assumptions, its effect."""
    with web.db() as db:
        return kinds.kind_of(db, job.experiment).planner_for(db, job.experiment)


@bp.post("/<exp_id>")
@auth.login_required
def start_plan(exp_id: str):
    """Start the plan the form asks for; the form again with a sentence naming the field to
    fix when it cannot start."""
    row = _experiment_or_404(exp_id)
    job = PlanJob(secrets.token_urlsafe(8), row["id"])
    job.values = {name: request.form[name] for name in (*FIELDS, "assume") if name in request.form}
    try:
        options, typed = _options(job)
    except PlanInputError as error:
        return _page(row, f"{error}", 400)
    jobs = plan_jobs()
    with jobs.lock:
        jobs.jobs[job.id] = job
        for old in list(jobs.jobs)[:-JOBS_KEPT]:
            if jobs.jobs[old].state != "running":
                del jobs.jobs[old]
    socketio.start_background_task(_run, current_app._get_current_object(), job, options, typed)
    return redirect(url_for(".plan_job", exp_id=row["id"], job_id=job.id))


def _run(app: Flask, job: PlanJob, options: Options, typed: dict[str, float]) -> None:
    """The background plan: made, then stored; a failure is a sentence on its page."""
    db = store.connect(app.config["DATABASE"])
    try:
        record = make_plan(db, job.experiment, None, typed, options)
        job.plan_id = store.insert_plan(
            db, job.experiment, record.kind, record.to_dict(), record.text
        )
        job.state = "saved"
    except (AnalysisError, ValueError) as error:
        job.error, job.state = f"{error} Change the form and make the plan again.", "failed"
    except Exception as failure:  # noqa: BLE001 - a failed plan must not take the server down
        log.exception("Plan %s of %s failed", job.id, job.experiment)
        job.error = f"The plan stopped ({type(failure).__name__}: {failure}); see the server log."
        job.state = "failed"
    finally:
        db.close()


def _job_or_404(exp_id: str, job_id: str) -> PlanJob:
    job = plan_jobs().jobs.get(job_id)
    if job is None or job.experiment != exp_id:
        abort(404)
    return job


@bp.get("/<exp_id>/<job_id>")
@auth.login_required
def plan_job(exp_id: str, job_id: str):
    row = _experiment_or_404(exp_id)
    return _page(row, job=_job_or_404(row["id"], job_id))


@bp.get("/<exp_id>/<job_id>.json")
@auth.login_required
def plan_job_json(exp_id: str, job_id: str):
    row = _experiment_or_404(exp_id)
    return _job_or_404(row["id"], job_id).to_dict()
