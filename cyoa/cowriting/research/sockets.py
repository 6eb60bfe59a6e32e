"""The live dashboard over Socket.IO.

- ``research_join`` ``{"experiment": id}``: a logged-in researcher's page joins the room
  ``research:<id>`` (checked against the Flask session; writers are refused). The ack is
  ``{"ok": true, "progress": {...}}`` or ``{"ok": false, "error": message}``.
- ``research_update`` (server → room) after each committed writer or generator action
  except draft saves, and after a status change: ``{"experiment", "event",
  "results_changed"}``; the page then fetches the progress (and, when ``results_changed``
  says a turn or a survey was submitted, the results) over HTTP, where the login is checked
  on every request. The push itself carries no data: a tab whose researcher has logged out
  (in another tab, or everywhere) stays in the room until it disconnects, and learns only
  that something changed.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask
from flask_socketio import SocketIO, join_room

from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.research.lifecycle import stored_experiment
from cyoa.cowriting.research.progress import progress_payload
from cyoa.web.auth import current_researcher
from cyoa.web.parts import shared as shared_parts
from cyoa.web.realtime import socketio

log = logging.getLogger(__name__)
# Saved drafts change neither progress nor results, and come often while writers type.
QUIET_EVENTS = frozenset({"draft_saved"})
# A stored analysis that landed ("analysis_stored") changes the results too.
RESULT_EVENTS = frozenset({"turn_submitted", "survey_submitted", "analysis_stored"})


def room(exp_id: str) -> str:
    """The researchers' room of an experiment (never a writer's session id: those have no
    colon)."""
    return f"research:{exp_id}"


def on_join(data: Any) -> dict[str, Any]:
    if current_researcher() is None:
        return {"ok": False, "error": "Please log in as a researcher and reload the page."}
    exp_id = data.get("experiment") if isinstance(data, dict) else None
    if not isinstance(exp_id, str):
        return {"ok": False, "error": "This experiment does not exist."}
    study = cowriting_parts().study
    db = study.db()
    try:
        # An imported study the app does not serve (no model cards) has a dashboard too.
        exp = study.experiment(exp_id) or stored_experiment(db, exp_id, shared_parts().cards)
        if exp is None:
            return {"ok": False, "error": "This experiment does not exist."}
        join_room(room(exp.id))
        return {"ok": True, "progress": progress_payload(db, exp)}
    finally:
        db.close()


def push_update(app: Flask, exp_id: str, session_id: str, event_type: str) -> None:
    """Tell the experiment's researchers' room that it changed (a Study listener: it logs
    and swallows its own errors, so a writer's action never fails because of it)."""
    if event_type in QUIET_EVENTS:
        return
    try:
        with app.app_context():
            socketio.emit(
                "research_update",
                {
                    "experiment": exp_id,
                    "event": event_type,
                    "results_changed": event_type in RESULT_EVENTS,
                },
                to=room(exp_id),
            )
    except Exception:  # noqa: BLE001 - a listener must not break the writer's action
        log.exception("Could not push the dashboard update of %s", exp_id)


def register(socketio: SocketIO) -> None:
    socketio.on_event("research_join", on_join)
