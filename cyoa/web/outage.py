"""How a participant is answered while the database cannot be reached (an outage,
:func:`cyoa.db.outage.is_outage`): "send again", never a 500.

- A page or form (``/s/…``, ``/r/…``): HTTP 503 with ``Retry-After`` and a short page saying
  the study is reconnecting. A page asked for with GET reloads itself after a few seconds; a
  form's page holds what was sent and a button that sends it again.
- A JSON request (the rater's answers): 503, ``Retry-After`` and
  ``{"ok": false, "retry": true, "error": sentence}``; the page keeps the answer queued and
  sends it again with the same ``action_id``.
- A Socket.IO event, ``join`` included: ``{"ok": false, "retry": true, "error": sentence}``
  (:func:`socket_reply`); the writing page keeps its outbox and sends it again.

Nothing was stored by a request answered so. Each wing registers :func:`answer_retry` on its
participants' blueprints, so no handler catches database errors itself. Every process logs
one line per outage (:class:`cyoa.db.outage.OutageLog`), not a traceback per request.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Blueprint, Response, current_app, jsonify, render_template, request

from cyoa.db.outage import DATABASE_ERRORS, OutageLog, is_outage
from cyoa.web.language import sentence

log = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 2
# A page asked for with GET reloads itself after this long.
RELOAD_SECONDS = 5
SENT_AGAIN = sentence(
    "The study is reconnecting to its database. What you sent is kept on this page and will "
    "be sent again in a moment."
)
TEXT_KEPT = sentence(
    "The study is reconnecting to its database. Your text is kept; it will be sent again in "
    "a moment."
)


def answer_retry(bp: Blueprint) -> None:
    """Answer every request of ``bp`` that meets an outage with "send again" (see the
    module's description); any other database error goes on to Flask's own handling."""
    for error in DATABASE_ERRORS:
        bp.register_error_handler(error, _answer)


def noted(error: BaseException) -> bool:
    """Whether ``error`` is an outage; if so it is counted in this app's outage log (and
    logged when it begins an outage). Needs an app context."""
    if not is_outage(error):
        return False
    _outages().failed(error)
    return True


def _answer(error: Exception) -> Response:
    if not noted(error):
        raise error
    if _wants_json():
        response = jsonify(ok=False, retry=True, error=str(SENT_AGAIN))
    else:
        again = request.method == "GET"
        page = render_template(
            "reconnecting.html",
            reload_seconds=RELOAD_SECONDS if again else None,
            form=[] if again else list(request.form.items(multi=True)),
            action=request.path,
        )
        response = current_app.make_response(page)
    response.status_code = 503
    response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def socket_reply(error: Exception) -> dict[str, Any] | None:
    """The Socket.IO acknowledgement for an event that met an outage (``retry: true``), or
    None when ``error`` is not one."""
    if not noted(error):
        return None
    return {"ok": False, "retry": True, "error": str(TEXT_KEPT)}


def _wants_json() -> bool:
    """A request sent by a page's script (JSON in, or JSON asked for), not a page view."""
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return request.is_json or best == "application/json"


def _outages() -> OutageLog:
    """This app's outage log: one per app, so one per process."""
    return current_app.extensions.setdefault(__name__, OutageLog(log))
