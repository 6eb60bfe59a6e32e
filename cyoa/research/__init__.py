"""The researcher's workspace: log in, create and run experiments, watch them live, replay
writers' sessions, and export the data (pages under ``/research/``; see docs/research.md).

Logic lives in pure modules (:mod:`.lifecycle`, :mod:`.progress`, :mod:`.dashboard`,
:mod:`.replay`, :mod:`.exports`, :mod:`.card`, :mod:`.charts`, :mod:`.forms`); :mod:`.views`
and :mod:`.sockets` are thin; :mod:`.commands` holds the command-line verbs.
"""

from __future__ import annotations

from functools import partial

from flask import Flask
from flask_socketio import SocketIO

from cyoa.cowriting.research.opening import Openings
from cyoa.cowriting.research.progress import DROPOUT_MINUTES
from cyoa.cowriting.research.tagging import BackgroundTagger


def init_app(app: Flask, socketio: SocketIO) -> None:
    """Register the pages, the Socket.IO events, the live-dashboard listener, and (unless
    ``TAG_SENTENCES`` is off) the background tagging of new sentences."""
    from cyoa.cowriting.research import sockets, views
    from cyoa.cowriting.research.dashboard import ResultsCache
    from cyoa.rating.research import admin as rating_admin
    from cyoa.rating.research import preview as rating_preview
    from cyoa.rating.research import views as rating_views
    from cyoa.research import home, models_views, participants
    from cyoa.web.auth import LoginLimiter

    app.extensions["research"] = {
        "limiter": LoginLimiter(),
        "results": ResultsCache(),
        "dropout_minutes": float(app.config.get("RESEARCH_DROPOUT_MINUTES", DROPOUT_MINUTES)),
        "openings": Openings(),
    }
    app.register_blueprint(home.bp)
    app.register_blueprint(views.bp)
    app.register_blueprint(rating_views.bp)
    app.register_blueprint(rating_admin.bp)
    app.register_blueprint(rating_preview.bp)
    app.register_blueprint(models_views.bp)
    app.register_blueprint(participants.bp)
    sockets.register(socketio)
    study = app.extensions["cyoa"]["study"]
    study.listeners.append(partial(sockets.push_update, app))
    if app.config["TAG_SENTENCES"]:
        tagger = BackgroundTagger(app.config["DATABASE"], delay=app.config["TAG_DELAY_SECONDS"])
        study.listeners.append(tagger)
        app.extensions["research"]["tagger"] = tagger
