"""The research shell: the researcher's workspace under ``/research/`` (docs/research.md) is
built from each wing's researcher pages, which each wing registers itself
(:mod:`cyoa.cowriting.wing`, :mod:`cyoa.rating.wing`); the shell adds the pages that span
every kind: the front door (:mod:`.home`), the Models page (:mod:`.models_views`) and each
experiment's Plan page (:mod:`.plan_views`)."""

from __future__ import annotations

from flask import Flask

from cyoa.research import home, models_views, plan_views


def init_app(app: Flask) -> None:
    """Register the shell's pages."""
    plan_views.init_app(app)
    for blueprint in (home.bp, models_views.bp, plan_views.bp):
        app.register_blueprint(blueprint)
