"""CYOA: Choose Your Own Adventure evaluation of story-generation models.

``create_app`` builds the web app; nothing happens at import time.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from flask import Flask

from cyoa.database_url import parse_database
from cyoa.paths import ROOT
from cyoa.planning_cost import money
from cyoa.words import counted


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """The Flask app. Settings come from :func:`default_settings`, then ``CYOA_*``
    environment variables (e.g. ``CYOA_DATABASE``: a SQLite file or a PostgreSQL URL), then
    ``test_config``; a database setting it cannot use, or a database it cannot reach, raises
    :class:`~cyoa.database_url.DatabaseSettingError` with a sentence. The parts are
    built in layer order: the database, the shared plumbing, each kind's wing (the table of
    kinds), the research shell."""
    # The parts bring the models' libraries (torch, transformers): importing cyoa stays light.
    from cyoa import research, store
    from cyoa.generation import load_model_cards
    from cyoa.kinds import KINDS
    from cyoa.web import favicon, language, parts, realtime, security

    app = Flask(__name__, root_path=str(ROOT), instance_relative_config=True)
    app.config.from_mapping(default_settings(Path(app.instance_path)))
    app.config.from_prefixed_env("CYOA")
    if test_config:
        app.config.from_mapping(test_config)
    app.config["DATABASE"] = parse_database(app.config["DATABASE"]).setting
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _instance_secret(Path(app.instance_path))

    db = store.connect(app.config["DATABASE"])
    try:
        store.init_db(db)
    finally:
        db.close()
    cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    read = {name: kind.read_at_start(app, cards) for name, kind in KINDS.items()}
    needed = [model for name, kind in KINDS.items() for model in kind.models_needed(read[name])]
    shared = parts.init_app(app, cards, dict.fromkeys(needed))
    realtime.init_app(app)
    language.init_app(app)
    for name, kind in KINDS.items():
        kind.init_app(app, shared, read[name])
    research.init_app(app)
    security.init_app(app)
    favicon.init_app(app)
    app.jinja_env.filters["counted"] = counted
    app.jinja_env.filters["money"] = lambda amount, currency=None: money(
        amount, currency or app.config["CURRENCY"]
    )
    return app


def default_settings(instance: Path) -> dict[str, Any]:
    """Every setting's default (docs/deployment.md describes each)."""
    from cyoa.generation.engine import DEFAULT_PROMPT_STORE_TOKENS

    return dict(
        DATABASE=str(instance / "cyoa.sqlite"),
        MODELS_DIR=str(ROOT / "models"),
        EXPERIMENTS_DIR=str(ROOT / "experiments"),
        MODEL_CACHE=str(instance / "models"),
        RATING_FILES=str(instance / "ratings"),
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
        RATING_BOOTSTRAP=1000,
        CURRENCY="GBP",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=60 * 60 * 24 * 30,
    )


def _instance_secret(instance: Path) -> str:
    """A secret key kept in the instance folder, created on first run, so cookies (and so
    writers' sessions) survive restarts."""
    path = instance / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_hex(32))
        os.chmod(path, 0o600)
    return path.read_text().strip()
