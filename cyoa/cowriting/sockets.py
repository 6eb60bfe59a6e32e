"""Socket.IO events of the writing page. Thin: read the payload, call the study, reply.

Protocol (all acknowledged with ``{"ok": true, "state": view}`` or
``{"ok": false, "error": message, "state": view}``):

- ``join`` ``{"experiment": id}``: attach this connection to the browser's session (taken
  from the signed cookie, never from the payload); the ack carries the full state.
- ``action`` ``{"type": t, "payload": {...}, "action_id": uuid}``: one writer action; the
  ack is sent only after the action is committed to the database. Resending the same
  ``action_id`` is harmless.
- ``record`` ``{"operations": [row, …], "action_id": uuid}``: a batch of the keystroke
  record (:mod:`cyoa.cowriting.process.batches`), acknowledged ``{"ok": true, "stored": n}``
  after its commit; rows already stored (a batch sent again) are skipped. Refused with a
  sentence when the experiment does not record keystrokes (the join's ``record`` says
  whether it does, and from which number a page without a count of its own goes on).

The server also sends ``state`` (the whole view, to every tab of the session) and
``suggestion_progress`` ``{"round", "slot", "text"}`` while a suggestion streams.

Every message is answered. A malformed one (:mod:`cyoa.cowriting.messages`) or one the rules
refuse gets the sentence to show; one sent faster than the session's rate limit
(:mod:`cyoa.web.ratelimit`) or while the database cannot be reached (:mod:`cyoa.web.outage`:
a server down, a SQLite file locked past its busy wait), ``join`` included, gets
``retry: true``, and the page sends it again a moment later (an action with the same
``action_id``); an error no handler expected is logged and answered too.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from flask import Flask, current_app, request, session
from flask_socketio import SocketIO, emit, join_room

from cyoa.cowriting import messages
from cyoa.cowriting.flow import RuleError, State
from cyoa.cowriting.pages import DOOR
from cyoa.cowriting.parts import parts
from cyoa.cowriting.process import batches
from cyoa.cowriting.process.store import next_seq, store_operations
from cyoa.cowriting.service import Refused, client_view
from cyoa.web import outage
from cyoa.web.language import sentence
from cyoa.web.parts import shared as shared_parts
from cyoa.web.ratelimit import RateLimiter
from cyoa.web.realtime import socketio

log = logging.getLogger(__name__)
TOO_FAST_MESSAGE = sentence(
    "Your changes are arriving faster than the server saves them. Your text is kept; it will "
    "be sent again in a moment."
)
STALL_MAX_SECONDS = 1.0
FAILED_MESSAGE = sentence(
    "Something went wrong on the server. Your story so far is saved; please reload the page."
)


def view_for(
    app: Flask, session_id: str, known: tuple[dict[str, Any], State] | None = None
) -> dict[str, Any]:
    """The page's view of the session: of its row and state when ``known`` (a refusal's,
    just read), else as the database has them now."""
    study, runner = parts(app).study, parts(app).runner
    pool = shared_parts(app).pool
    row, state = known if known is not None else study.state(session_id)
    exp = study.experiments[row["experiment_id"]]
    live = runner.live_text(session_id, state.current.number)
    ready = pool.is_ready(system.model.name for system in exp.systems)
    return client_view(exp, row, state, live=live, models_ready=ready)


def push_state(app: Flask, session_id: str) -> None:
    """Send the session's current state to every tab it has open. While the database cannot
    be reached nothing is sent (the outage is logged once): the tabs' next join or action
    brings the state."""
    with app.app_context():
        try:
            view = view_for(app, session_id)
        except Exception as error:
            if not outage.noted(error):
                raise
            return
        socketio.emit("state", view, to=session_id)


def on_join(*args: Any) -> dict[str, Any]:
    try:
        exp_id = messages.join_experiment(args)
    except RuleError as exc:
        return {"ok": False, "error": str(exc)}
    session_id = DOOR.cookie_id(exp_id)
    if not session_id or parts().study.session_row(session_id) is None:
        return {
            "ok": False,
            "error": str(sentence("No story found for this browser. Please open your link.")),
        }
    if too_fast := _over_rate(parts().limiter, session_id):
        return too_fast
    # Flask-SocketIO keeps a per-connection copy of the cookie session: remember the join.
    session["joined"] = session_id
    join_room(session_id)
    _, state = parts().study.state(session_id)
    # After a server restart, generation that was under way is started again.
    parts().runner.resume(session_id, state)
    return {
        "ok": True,
        "state": view_for(current_app, session_id),
        "record": _record_setting(session_id),
    }


def _record_setting(session_id: str) -> dict[str, Any]:
    """Whether the page records keystrokes, and the number after the largest stored row
    (where a page in another browser, with no count of its own, goes on)."""
    study = parts().study
    row = study.session_row(session_id)
    if not study.experiments[row["experiment_id"]].record_keystrokes:
        return {"on": False}
    db = study.db()
    try:
        return {"on": True, "next_seq": next_seq(db, session_id)}
    finally:
        db.close()


def on_record(*args: Any) -> dict[str, Any]:
    session_id = session.get("joined")
    if session_id is None:
        return {
            "ok": False,
            "error": str(sentence("Please reload the page to reconnect to your story.")),
        }
    if too_fast := _over_rate(parts().limiter, session_id):
        return too_fast
    study = parts().study
    row = study.session_row(session_id)  # the session's round, without folding its events
    if not study.experiments[row["experiment_id"]].record_keystrokes:
        return {"ok": False, "error": str(batches.OFF)}
    try:
        rows = batches.read_batch(args, row["current_round"])
    except RuleError as exc:
        return {"ok": False, "error": str(exc)}
    db = study.db()
    try:
        stored = store_operations(db, session_id, rows)
    finally:
        db.close()
    return {"ok": True, "stored": stored}


def on_action(*args: Any) -> dict[str, Any]:
    session_id = session.get("joined")
    if session_id is None:
        return {
            "ok": False,
            "error": str(sentence("Please reload the page to reconnect to your story.")),
        }
    if too_fast := _over_rate(parts().limiter, session_id):
        return too_fast
    try:
        action = messages.action(args)
        if action.type == "draft_saved" and (
            too_fast := _over_rate(parts().draft_limiter, session_id)
        ):
            return too_fast
        outcome = parts().study.act(session_id, action.type, action.payload, action.action_id)
    except Refused as exc:
        return _refusal(session_id, str(exc), (exc.session, exc.state))
    except RuleError as exc:
        return _refusal(session_id, str(exc))
    if outcome.event.type in ("line_submitted", "suggestions_retried"):
        parts().runner.start(session_id, outcome.state)
    view = view_for(current_app, session_id)
    emit("state", view, to=session_id, skip_sid=request.sid)
    return {"ok": True, "state": view, "duplicate": outcome.duplicate}


def _over_rate(limiter: RateLimiter, session_id: str) -> dict[str, Any] | None:
    """None when the session's message is within the rate of ``limiter``; else the answer to
    send, once its next token is due (at most STALL_MAX_SECONDS later): this connection's
    events wait meanwhile, so a flooding page slows itself down, not the server."""
    wait = limiter.take(session_id)
    if not wait:
        return None
    time.sleep(min(wait, STALL_MAX_SECONDS))
    return {"ok": False, "retry": True, "error": str(TOO_FAST_MESSAGE)}


def _refusal(
    session_id: str, message: str, known: tuple[dict[str, Any], State] | None = None
) -> dict[str, Any]:
    return {"ok": False, "error": message, "state": view_for(current_app, session_id, known)}


def on_error(exc: Exception) -> dict[str, Any]:
    """An error the handler did not answer itself: a database that cannot be reached gets
    ``retry: true`` (:func:`cyoa.web.outage.socket_reply`); anything else is a bug, logged
    with its traceback, and answered, so the page is never left waiting for a reply."""
    if (retry := outage.socket_reply(exc)) is not None:
        return retry
    log.error("Socket.IO event %r failed", request.event["message"], exc_info=exc)
    return {"ok": False, "error": str(FAILED_MESSAGE)}


def register(socketio: SocketIO) -> None:
    socketio.on_event("join", on_join)
    socketio.on_event("action", on_action)
    socketio.on_event("record", on_record)
    socketio.on_error_default(on_error)
