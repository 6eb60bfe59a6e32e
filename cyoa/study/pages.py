"""The writer's pages: consent, the writing page, and the thank-you page.

A writer's session id lives only in their signed cookie (never in a URL), so the same
browser comes back to the same story, and nobody can act on another writer's session by
guessing or pasting an id. A crowd-platform identifier in the link (``PROLIFIC_PID`` or
``pid``) is not a secret (a researcher, a co-worker or a screenshot may know it), so it
resumes a story silently only in the browser that holds the story; from another browser
the link must also carry the platform's per-submission ``SESSION_ID`` recorded when the
story began (Prolific fills it in; only that participant's own link holds it). The start
form carries a CSRF token like the researcher's forms (:mod:`cyoa.security`). The threat
model is in docs/deployment.md.
"""

from __future__ import annotations

import math
import re
import secrets
from typing import Any

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from cyoa.completion import completion_address, shown_code
from cyoa.security import csrf_valid
from cyoa.study.flow import DRAFT_MAX_CHARS, Phase
from cyoa.study.ratelimit import client_key
from cyoa.study.service import new_token

bp = Blueprint("study", __name__)
# Long enough to read (and copy) the completion code before the crowd platform's page opens.
COMPLETION_REDIRECT_SECONDS = 15
_PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")
EXPIRED = "This page had expired. Please tick the box and start again."


def _study():
    return current_app.extensions["cyoa"]["study"]


def _experiment(exp_id: str):
    exp = _study().experiment(exp_id)
    if exp is None:
        abort(404)
    return exp


def current_session_id(exp_id: str) -> str | None:
    """The session this browser holds for an experiment (from the signed cookie)."""
    return (session.get("cyoa") or {}).get(exp_id)


def _remember(exp_id: str, session_id: str) -> None:
    held = dict(session.get("cyoa") or {})
    held[exp_id] = session_id
    session["cyoa"] = held
    session.permanent = True


def participant_from_args(args: Any) -> dict[str, str] | None:
    """The participant named by the link's identifiers, or None for an anonymous link.

    ``PROLIFIC_PID`` (with ``STUDY_ID`` and ``SESSION_ID``) wins over a generic ``pid``."""
    for key in ("PROLIFIC_PID", "pid"):
        value = (args.get(key) or "").strip()
        if value:
            if not _PARTICIPANT_ID.match(value):
                abort(400, description="The participant id in this link is not valid.")
            return {
                "external_id": value,
                "id_source": key,
                "study_id": (args.get("STUDY_ID") or "")[:128],
                "platform_session_id": (args.get("SESSION_ID") or "")[:128],
            }
    return None


@bp.get("/")
def index():
    study = _study()
    open_now = [
        exp
        for exp in sorted(study.experiments.values(), key=lambda e: e.title)
        if study.experiment_status(exp.id) == "open"
    ]
    return render_template("index.html", experiments=open_now)


_LINK_KEYS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "pid")


class ResumeRefused(Exception):
    """The link names a participant whose story is held by another browser, without the
    platform session that proves it is theirs."""


def _participant_session(exp_id: str, external_id: str) -> dict[str, Any] | None:
    """The session of a participant in an experiment with the platform session recorded
    when it began (``session_id``, ``platform_session_id``), or None."""
    db = _study().db()
    try:
        rows = list(
            db.query(
                "SELECT s.id AS session_id, p.platform_session_id FROM sessions s"
                " JOIN participants p ON p.id = s.participant_id"
                " WHERE s.experiment_id = ? AND p.external_id = ?",
                [exp_id, external_id],
            )
        )
    finally:
        db.close()
    return rows[0] if rows else None


def _session_to_resume(exp_id: str, participant: dict[str, str] | None) -> str | None:
    """The session this request continues, or None to start one. An anonymous link
    continues the session in this browser's cookie; a participant's link continues their
    session if this browser holds it, or if the link carries the platform session recorded
    when it began. Raises :class:`ResumeRefused` otherwise."""
    held = current_session_id(exp_id)
    if participant is None:
        return held if held and _study().session_row(held) else None
    found = _participant_session(exp_id, participant["external_id"])
    if found is None:
        return None
    return resumable(found["session_id"], found["platform_session_id"], held, participant)


def resumable(
    found: str, recorded_platform_session: str | None, held: str | None, participant: dict
) -> str:
    """``found`` (the id of the participant's session or rater) when this request may continue
    it: this browser holds it, or the link carries the platform session recorded when it
    began (compared in constant time). Raises :class:`ResumeRefused` otherwise. The rule of
    docs/research.md's threat model, for writers and raters alike."""
    if found == held:
        return found
    recorded = (recorded_platform_session or "").encode("utf-8")
    sent = participant.get("platform_session_id", "").encode("utf-8", "surrogatepass")
    if recorded and secrets.compare_digest(recorded, sent):
        return found
    raise ResumeRefused


def _refused(exp):
    return render_template("consent.html", experiment=exp, refused=True), 403


def too_many_starts(experiment: Any) -> Response | None:
    """None when this client (``request.remote_addr``: behind a proxy, see ``CYOA_PROXIES``)
    may start a new participant now, taking one of its starts; else the page that asks it to
    wait (HTTP 429, with ``Retry-After``). Writers' and raters' starts share one limit per
    address (an IPv6 address's /64), so no client can take a study's places faster than
    ``CYOA_STARTS_PER_MINUTE``."""
    key = client_key(request.remote_addr or "")
    wait = current_app.extensions["cyoa"]["start_limiter"].take(key)
    if not wait:
        return None
    minutes = math.ceil(wait / 60)
    words = "a minute" if minutes == 1 else f"{minutes} minutes"
    page = render_template("too_many_starts.html", experiment=experiment, minutes=words)
    response = make_response(page, 429)
    response.headers["Retry-After"] = str(math.ceil(wait))
    return response


@bp.get("/s/<exp_id>")
def consent(exp_id: str):
    exp = _experiment(exp_id)
    try:
        existing = _session_to_resume(exp_id, participant_from_args(request.args))
    except ResumeRefused:
        return _refused(exp)
    if existing:
        _remember(exp_id, existing)
        return redirect(url_for("study.write", exp_id=exp_id))
    if _study().experiment_status(exp_id) != "open":
        return render_template("closed.html", experiment=exp), 403
    hidden = {k: v for k, v in request.args.items() if k in _LINK_KEYS}
    error = EXPIRED if request.args.get("expired") else ""
    return render_template("consent.html", experiment=exp, hidden=hidden, error=error)


@bp.post("/s/<exp_id>/start")
def start(exp_id: str):
    exp = _experiment(exp_id)
    link = {k: v for k, v in request.form.items() if k in _LINK_KEYS}
    if not csrf_valid():
        # Back to the consent page, changing nothing: a form sent from another site arrives
        # without this site's cookie, and a new cookie would replace the writer's.
        return redirect(url_for("study.consent", exp_id=exp_id, expired=1, **link))
    participant = participant_from_args(request.form)
    try:
        existing = _session_to_resume(exp_id, participant)
    except ResumeRefused:
        return _refused(exp)
    if existing:
        _remember(exp_id, existing)
        return redirect(url_for("study.write", exp_id=exp_id))
    if _study().experiment_status(exp_id) != "open":
        return render_template("closed.html", experiment=exp), 403
    if request.form.get("consent") != "yes":
        error = "Please tick the box to say you agree before starting."
        return render_template("consent.html", experiment=exp, hidden=link, error=error), 400
    if (refusal := too_many_starts(exp)) is not None:
        return refusal
    if participant is None:
        participant = {"external_id": f"anon:{new_token()}", "id_source": "anonymous"}
    session_id = _study().open_session(
        exp, participant, user_agent=request.headers.get("User-Agent", "")
    )
    if session_id is None:
        # Another request started this participant's story a moment ago: the consent page
        # decides whether this browser may continue it.
        return redirect(url_for("study.consent", exp_id=exp_id, **link))
    _remember(exp_id, session_id)
    return redirect(url_for("study.write", exp_id=exp_id))


@bp.get("/s/<exp_id>/write")
def write(exp_id: str):
    exp = _experiment(exp_id)
    session_id = current_session_id(exp_id)
    if not session_id or _study().session_row(session_id) is None:
        return redirect(url_for("study.consent", exp_id=exp_id))
    # The writer's boxes take no more than the server keeps of a draft (see write.js).
    return render_template("write.html", experiment=exp, box_max_chars=DRAFT_MAX_CHARS)


@bp.get("/s/<exp_id>/done")
def done(exp_id: str):
    exp = _experiment(exp_id)
    session_id = current_session_id(exp_id)
    if not session_id:
        return redirect(url_for("study.consent", exp_id=exp_id))
    row, state = _study().state(session_id)
    if state.phase != Phase.DONE:
        return redirect(url_for("study.write", exp_id=exp_id))
    code = shown_code(exp.completion_code, row["completion_code"])
    return render_template(
        "done.html",
        experiment=exp,
        code=code,
        completion_url=completion_address(exp.completion_url, code),
        redirect_seconds=COMPLETION_REDIRECT_SECONDS,
        story=state.story(),
    )
