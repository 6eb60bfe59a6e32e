"""CYOA: Choose Your Own Adventure evaluation of story-generation models.

``create_app`` builds the web app; nothing happens at import time.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
from pathlib import Path
from typing import Any

from flask import Flask, request
from werkzeug.middleware.proxy_fix import ProxyFix

from cyoa.paths import ROOT

log = logging.getLogger(__name__)


def _warn_of_an_unused_proxy():
    """A check, run before each request, that logs one warning (once per app: once per
    process) when a request carries ``X-Forwarded-For`` while ``CYOA_PROXIES`` is 0: behind a
    proxy every client then shares the proxy's address, and the start limit stops them all."""
    warned = threading.Event()

    def check() -> None:
        if not warned.is_set() and "X-Forwarded-For" in request.headers:
            warned.set()
            log.warning(
                "A request came through a proxy (it has X-Forwarded-For) but CYOA_PROXIES is 0: "
                "every client shares the proxy's address, so the start limit counts them "
                "together. Set CYOA_PROXIES to the number of proxies in front of the app."
            )

    return check


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """The Flask app. Settings come from the defaults below, then ``CYOA_*`` environment
    variables (e.g. ``CYOA_DATABASE``), then ``test_config``."""
    from cyoa.generation.engine import DEFAULT_PROMPT_STORE_TOKENS

    app = Flask(__name__, root_path=str(ROOT), instance_relative_config=True)
    app.config.from_mapping(
        DATABASE=str(Path(app.instance_path) / "cyoa.sqlite"),
        MODELS_DIR=str(ROOT / "models"),
        EXPERIMENTS_DIR=str(ROOT / "experiments"),
        MODEL_CACHE=str(Path(app.instance_path) / "models"),
        RATING_FILES=str(Path(app.instance_path) / "ratings"),
        DEFAULT_EXPERIMENT="short-story-1",
        HOST="127.0.0.1",
        PORT=5000,
        PUBLIC_URL="",
        LOAD_MODELS_AT_START=True,
        TORCH_THREADS=0,
        GENERATION_MODE="batched",
        PROMPT_STORE_TOKENS=DEFAULT_PROMPT_STORE_TOKENS,
        MESSAGE_QUEUE="",
        TAG_SENTENCES=True,
        TAG_DELAY_SECONDS=30.0,
        SEED_SALT="",
        MESSAGES_PER_SECOND=10.0,
        MESSAGE_BURST=60,
        DRAFTS_PER_SECOND=1.0,
        DRAFT_BURST=10,
        STARTS_PER_MINUTE=2.0,
        START_BURST=10,
        RATER_ACTIONS_PER_SECOND=1.0,
        RATER_ACTION_BURST=30,
        PROXIES=0,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=60 * 60 * 24 * 30,
    )
    app.config.from_prefixed_env("CYOA")
    if test_config:
        app.config.from_mapping(test_config)
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _instance_secret(Path(app.instance_path))

    from cyoa import store
    from cyoa.experiments import load_experiments
    from cyoa.generation import ModelPool, configure_torch_threads, load_model_cards
    from cyoa.generation.engine import GENERATION_MODES, CoreShare
    from cyoa.rating import pages as rating_pages
    from cyoa.rating.service import RatingStudy
    from cyoa.realtime import client_manager, drop_malformed_packets, socketio
    from cyoa.study import pages, sockets
    from cyoa.study.ratelimit import RateLimiter
    from cyoa.study.runner import SuggestionRunner
    from cyoa.study.service import Study

    cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    db = store.connect(app.config["DATABASE"])
    try:
        store.init_db(db)
        # Spec files are refreshed into the database; experiments created by researchers
        # live only there. The database is what the app serves.
        for exp in load_experiments(Path(app.config["EXPERIMENTS_DIR"]), cards).values():
            store.upsert_experiment(db, exp.id, exp.title, exp.source)
        experiments = stored_experiments(db, cards)
    finally:
        db.close()

    used = {s.model.name: s.model for e in experiments.values() for s in e.systems}
    mode = app.config["GENERATION_MODE"]
    if mode not in GENERATION_MODES:
        raise ValueError(
            f"CYOA_GENERATION_MODE is {mode!r}; use one of: {', '.join(GENERATION_MODES)}."
        )
    share = None
    if any(card.backend == "transformers" for card in cards.values()):
        # Batched: each model generates on its own scheduler thread, and the models working
        # at a step share the cores equally (one alone gets them all; two on 2 cores get one
        # each, which keeps them from fighting). CYOA_TORCH_THREADS fixes the threads per
        # model instead. Naive: one generation at a time may use every core.
        cores = os.cpu_count() or 2
        fixed = int(app.config["TORCH_THREADS"])
        configure_torch_threads(fixed or (cores if mode == "naive" else max(1, cores // 2)))
        if mode == "batched" and not fixed:
            share = CoreShare(cores)
    store_tokens = int(app.config["PROMPT_STORE_TOKENS"])
    if store_tokens < 0:
        raise ValueError(
            f"CYOA_PROMPT_STORE_TOKENS is {store_tokens}; use 0 (keep no prompts) or more."
        )
    pool = ModelPool(
        cards,
        Path(app.config["MODEL_CACHE"]),
        generation_mode=mode,
        cores=share,
        prompt_store_tokens=store_tokens,
        load_at_start=used,
    )
    if app.config["LOAD_MODELS_AT_START"]:
        pool.start_loading()

    # With several worker processes, a Redis message queue carries every emit to all.
    socketio.init_app(app, client_manager=client_manager(app.config["MESSAGE_QUEUE"]))
    drop_malformed_packets(socketio.server)
    study = Study(Path(app.config["DATABASE"]), experiments, str(app.config["SEED_SALT"]))
    runner = SuggestionRunner(
        study,
        pool,
        emit=lambda event, data, room: socketio.emit(event, data, to=room),
        on_settled=lambda session_id: sockets.push_state(app, session_id),
        start_task=socketio.start_background_task,
    )
    ratings = RatingStudy(lambda: store.connect(app.config["DATABASE"]))
    app.extensions["cyoa"] = {
        "study": study,
        "runner": runner,
        "pool": pool,
        "cards": cards,
        "ratings": ratings,
        # How fast one writer's session may send (its tabs together), in this process:
        # any message, and drafts among them.
        "limiter": RateLimiter(
            float(app.config["MESSAGES_PER_SECOND"]), float(app.config["MESSAGE_BURST"])
        ),
        "draft_limiter": RateLimiter(
            float(app.config["DRAFTS_PER_SECOND"]), float(app.config["DRAFT_BURST"])
        ),
        # How often one address may start a story or a rating (the two together), so one
        # client cannot take a study's places; and how fast one rater (all their tabs) may
        # send answers.
        "start_limiter": RateLimiter(
            float(app.config["STARTS_PER_MINUTE"]) / 60, float(app.config["START_BURST"])
        ),
        "rater_limiter": RateLimiter(
            float(app.config["RATER_ACTIONS_PER_SECOND"]), float(app.config["RATER_ACTION_BURST"])
        ),
    }

    proxies = int(app.config["PROXIES"])
    if proxies < 0:
        raise ValueError(f"CYOA_PROXIES is {proxies}; use 0 (no proxy in front) or more.")
    if proxies:
        # request.remote_addr, by which starts and logins are limited, is then the client's
        # address as the nearest proxies saw it, not the proxy's own.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)
    else:
        app.before_request(_warn_of_an_unused_proxy())

    app.register_blueprint(pages.bp)
    app.register_blueprint(rating_pages.bp)
    sockets.register(socketio)

    from cyoa import research

    research.init_app(app, socketio)

    from cyoa import security

    security.init_app(app)
    return app


def stored_experiments(db, cards) -> dict[str, Any]:
    """Every co-writing experiment in the database whose models are available; one that
    cannot be loaded (e.g. its model card was removed) is logged and left out."""
    from cyoa.experiments import SpecError, experiment_from_dict

    experiments = {}
    for row in db["experiments"].rows_where("kind = 'cowriting'"):
        try:
            exp = experiment_from_dict(json.loads(row["spec"]), cards, where=row["id"])
        except SpecError as exc:
            log.error("experiment %s is not served: %s", row["id"], exc)
            continue
        experiments[exp.id] = exp
    return experiments


def _instance_secret(instance: Path) -> str:
    """A secret key kept in the instance folder, created on first run, so cookies (and so
    writers' sessions) survive restarts."""
    path = instance / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        os.chmod(path, 0o600)
    return path.read_text().strip()
