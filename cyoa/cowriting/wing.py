"""The co-writing wing in the app: its experiments read at start, its parts built, its
writer's pages, Socket.IO events and researcher pages registered (:func:`init_app`)."""

from __future__ import annotations

import json
import logging
from functools import partial
from pathlib import Path

from flask import Flask

from cyoa import store
from cyoa.cowriting import pages, sockets
from cyoa.cowriting.parts import CowritingParts
from cyoa.cowriting.research import interchange, participants, views
from cyoa.cowriting.research import sockets as research_sockets
from cyoa.cowriting.research.opening import Openings
from cyoa.cowriting.research.progress import DROPOUT_MINUTES
from cyoa.cowriting.research.tagging import BackgroundTagger
from cyoa.cowriting.runner import SuggestionRunner
from cyoa.cowriting.service import Study
from cyoa.cowriting.spec import Experiment, SpecError, experiment_from_dict, load_experiments
from cyoa.db.facade import Db
from cyoa.generation.types import ModelCard
from cyoa.web.parts import SharedParts
from cyoa.web.ratelimit import RateLimiter
from cyoa.web.realtime import socketio

log = logging.getLogger(__name__)


def read_experiments(app: Flask, cards: dict[str, ModelCard]) -> dict[str, Experiment]:
    """The co-writing experiments the app serves: the spec files (``EXPERIMENTS_DIR``) are
    refreshed into the database first; experiments created by researchers live only there.
    The database is what the app serves."""
    db = store.connect(app.config["DATABASE"])
    try:
        for exp in load_experiments(Path(app.config["EXPERIMENTS_DIR"]), cards).values():
            store.upsert_experiment(db, exp.id, exp.title, exp.source)
        return stored_experiments(db, cards)
    finally:
        db.close()


def stored_experiments(db: Db, cards: dict[str, ModelCard]) -> dict[str, Experiment]:
    """Every co-writing experiment in the database whose models are available; one that
    cannot be loaded (e.g. its model card was removed) is logged and left out."""
    experiments = {}
    for row in db.rows_where("experiments", "kind = 'cowriting'"):
        try:
            exp = experiment_from_dict(json.loads(row["spec"]), cards, where=row["id"])
        except SpecError as exc:
            log.error("experiment %s is not served: %s", row["id"], exc)
            continue
        experiments[exp.id] = exp
    return experiments


def models_needed(experiments: dict[str, Experiment]) -> list[str]:
    """The models of the experiments the app will serve (loaded at start), in their order."""
    return [system.model.name for exp in experiments.values() for system in exp.systems]


def init_app(app: Flask, shared: SharedParts, experiments: dict[str, Experiment]) -> None:
    """Build the wing's parts for the ``experiments`` read at start (:func:`read_experiments`)
    and register its pages and events; every committed writer action reaches the live
    dashboards and (unless ``TAG_SENTENCES`` is off) the background tagging of new
    sentences."""
    study = Study(app.config["DATABASE"], experiments, str(app.config["SEED_SALT"]))
    runner = SuggestionRunner(
        study,
        shared.pool,
        emit=lambda event, data, room: socketio.emit(event, data, to=room),
        on_settled=lambda session_id: sockets.push_state(app, session_id),
        start_task=socketio.start_background_task,
        worker_id=shared.worker_id,
    )
    study.listeners.append(partial(research_sockets.push_update, app))
    tagger = None
    if app.config["TAG_SENTENCES"]:
        tagger = BackgroundTagger(app.config["DATABASE"], delay=app.config["TAG_DELAY_SECONDS"])
        study.listeners.append(tagger)
    app.extensions[CowritingParts.__module__] = CowritingParts(
        study=study,
        runner=runner,
        limiter=RateLimiter(
            float(app.config["MESSAGES_PER_SECOND"]), float(app.config["MESSAGE_BURST"])
        ),
        draft_limiter=RateLimiter(
            float(app.config["DRAFTS_PER_SECOND"]), float(app.config["DRAFT_BURST"])
        ),
        openings=Openings(),
        dropout_minutes=float(app.config.get("RESEARCH_DROPOUT_MINUTES", DROPOUT_MINUTES)),
        tagger=tagger,
    )
    app.register_blueprint(pages.bp)
    app.register_blueprint(views.bp)
    app.register_blueprint(participants.bp)
    app.register_blueprint(interchange.bp)
    sockets.register(socketio)
    research_sockets.register(socketio)
