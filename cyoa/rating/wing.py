"""The rating wing in the app: its parts built, its raters' pages and researcher pages
registered, and generation jobs a restart ended marked as interrupted (:func:`init_app`)."""

from __future__ import annotations

from pathlib import Path

from flask import Flask

from cyoa import store
from cyoa.generation.types import ModelCard
from cyoa.rating import pages
from cyoa.rating.parts import RatingParts
from cyoa.rating.research import admin, judge_runs, participants, preview, views
from cyoa.rating.research.jobs import interrupt_orphans
from cyoa.rating.service import RatingStudy
from cyoa.web.parts import SharedParts
from cyoa.web.ratelimit import RateLimiter


def read_at_start(_app: Flask, _cards: dict[str, ModelCard]) -> None:
    """Nothing: rating experiments are read from the database when they are needed."""


def models_needed(_nothing: None) -> list[str]:
    """None: a rating study's stories are written before it opens (generation jobs load
    their models when they run)."""
    return []


def init_app(app: Flask, _shared: SharedParts, _nothing: None) -> None:
    """Build the wing's parts and register its pages."""
    app.extensions[RatingParts.__module__] = RatingParts(
        ratings=RatingStudy(lambda: store.connect(app.config["DATABASE"])),
        rater_limiter=RateLimiter(
            float(app.config["RATER_ACTIONS_PER_SECOND"]), float(app.config["RATER_ACTION_BURST"])
        ),
    )
    interrupt_orphans(Path(app.config["RATING_FILES"]))
    for blueprint in (pages.bp, views.bp, admin.bp, preview.bp, participants.bp, judge_runs.bp):
        app.register_blueprint(blueprint)
