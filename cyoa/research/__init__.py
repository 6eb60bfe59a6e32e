"""The research shell: the researcher's workspace under ``/research/`` (docs/research.md) is
built from each wing's researcher pages, which each wing registers itself
(:mod:`cyoa.cowriting.wing`, :mod:`cyoa.rating.wing`); the shell adds the pages that span
every kind: the front door (:mod:`.home`) and the Models page (:mod:`.models_views`)."""

from __future__ import annotations

from flask import Flask

from cyoa.research import home, models_views


def init_app(app: Flask) -> None:
    """Register the shell's pages."""
    for blueprint in (home.bp, models_views.bp):
        app.register_blueprint(blueprint)
