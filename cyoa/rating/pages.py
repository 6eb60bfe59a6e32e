"""The rater's pages: consent, one story at a time with its questions, the thank-you page,
and the JSON endpoint that records each answer before acknowledging it.

The rules are the writers' (:mod:`cyoa.study.pages`, docs/research.md's threat model): the
rater's id lives only in the signed cookie; a crowd-platform id in the link (``PROLIFIC_PID``
or ``pid``) resumes in the same browser, and in another only with the platform session
(``SESSION_ID``) recorded when the rater started. The start form carries the CSRF token.
Answers come as JSON with a custom header, which a page on another site cannot send without
the browser asking this server first (CORS).
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import quote

from flask import (
    Blueprint,
    abort,
    current_app,
    jsonify,
    redirect,
    render_template,
    request,
    session,
    url_for,
)

from cyoa.rating.flow import Phase, RuleError
from cyoa.rating.service import AlreadyStarted, RatingExperiment, RatingStudy
from cyoa.security import csrf_valid
from cyoa.study.pages import EXPIRED, ResumeRefused, participant_from_args, resumable
from cyoa.study.service import new_token

bp = Blueprint("rating", __name__)
ACTION_HEADER = "X-CYOA-Action"
COMPLETION_REDIRECT_SECONDS = 15
_LINK_KEYS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "pid")


def _ratings() -> RatingStudy:
    return current_app.extensions["cyoa"]["ratings"]


def _experiment(exp_id: str) -> RatingExperiment:
    exp = _ratings().experiment(exp_id)
    if exp is None:
        abort(404)
    return exp


def _rater(exp_id: str) -> str | None:
    """The rater this browser holds for the experiment (from the signed cookie)."""
    rater_id = (session.get("cyoa_rater") or {}).get(exp_id)
    if rater_id and _ratings().rater_row(exp_id, rater_id) is not None:
        return rater_id
    return None


def _remember(exp_id: str, rater_id: str) -> None:
    held = dict(session.get("cyoa_rater") or {})
    held[exp_id] = rater_id
    session["cyoa_rater"] = held
    session.permanent = True


def _rater_to_resume(exp_id: str, participant: dict[str, str] | None) -> str | None:
    """The rater this request continues, or None to start one: as for writers, an anonymous
    link continues this browser's rater; a participant's link continues their rater if this
    browser holds it, or if the link carries the platform session recorded when they started.
    Raises :class:`ResumeRefused` otherwise."""
    held = _rater(exp_id)
    if participant is None:
        return held
    found = _ratings().find_rater_row(exp_id, participant["external_id"])
    if found is None:
        return None
    return resumable(found["rater_id"], found["platform_session_id"], held, participant)


def _consent_page(exp: RatingExperiment, hidden: dict[str, str], error: str = "", status=200):
    return render_template("rate_consent.html", experiment=exp, hidden=hidden, error=error), status


def _refused(exp: RatingExperiment):
    return render_template("rate_consent.html", experiment=exp, refused=True), 403


@bp.get("/r/<exp_id>")
def consent(exp_id: str):
    exp = _experiment(exp_id)
    try:
        existing = _rater_to_resume(exp_id, participant_from_args(request.args))
    except ResumeRefused:
        return _refused(exp)
    if existing:
        _remember(exp_id, existing)
        return redirect(url_for("rating.rate", exp_id=exp_id))
    if exp.status != "open":
        return render_template("closed.html", experiment=exp, people="readers"), 403
    return _consent_page(exp, {k: v for k, v in request.args.items() if k in _LINK_KEYS})


@bp.post("/r/<exp_id>/start")
def start(exp_id: str):
    exp = _experiment(exp_id)
    hidden = {k: v for k, v in request.form.items() if k in _LINK_KEYS}
    if not csrf_valid():
        return _consent_page(exp, hidden, EXPIRED, 400)
    participant = participant_from_args(request.form)
    try:
        existing = _rater_to_resume(exp_id, participant)
    except ResumeRefused:
        return _refused(exp)
    if existing:
        _remember(exp_id, existing)
        return redirect(url_for("rating.rate", exp_id=exp_id))
    if exp.status != "open":
        return render_template("closed.html", experiment=exp, people="readers"), 403
    if request.form.get("consent") != "yes":
        return _consent_page(exp, hidden, "Please tick the box to say you agree first.", 400)
    if participant is None:
        participant = {"external_id": f"anon:{new_token()}", "id_source": "anonymous"}
    try:
        rater_id = _ratings().open_rater(exp, participant, request.headers.get("User-Agent", ""))
    except AlreadyStarted:
        return _refused(exp)
    if rater_id is None:
        return render_template("full.html", experiment=exp), 403
    _remember(exp_id, rater_id)
    return redirect(url_for("rating.rate", exp_id=exp_id))


@bp.get("/r/<exp_id>/rate")
def rate(exp_id: str):
    exp = _experiment(exp_id)
    rater_id = _rater(exp_id)
    if rater_id is None:
        return redirect(url_for("rating.consent", exp_id=exp_id))
    state = _ratings().state(exp_id, rater_id)
    task = state.current
    if state.phase == Phase.DONE or task is None:
        return redirect(url_for("rating.done", exp_id=exp_id))
    if not task.shown:
        # Time on task counts from here: the server's clock, when the story is first sent.
        state = _ratings().act(exp, rater_id, "story_shown", {"story": task.story_id}).state
        task = state.current
    return render_template(
        "rate.html",
        experiment=exp,
        story=exp.stories[task.story_id],
        task=task,
        questions=[exp.questions.item(q) for q in task.questions],
        answers={q: answer_view(a) for q, a in task.answers.items()},
        position=state.position,
        total=len(state.tasks),
        required=sorted(exp.questions.required() & set(task.questions)),
        first=state.position == 1,
        attribution=exp.questions.instrument.attribution,
        rater_key=storage_key(rater_id),
    )


def storage_key(rater_id: str) -> str:
    """The name the rater's page keeps its drafts and unsent answers under in the browser:
    one per rater, so a second rater in the same browser never sends the first one's answers,
    and not the rater's id itself, which stays on the server's side."""
    return hashlib.sha256(rater_id.encode()).hexdigest()[:16]


def answer_view(answer: Any) -> dict[str, Any]:
    value = answer.value
    shown = value if isinstance(value, str) else f"{value:g}"
    return {"value": shown, "rationale": answer.rationale or ""}


@bp.post("/r/<exp_id>/action")
def action(exp_id: str):
    """One rater action as JSON ``{action_id, type, payload}``; answers ``{ok: true, …}``
    once it is stored, or ``{ok: false, error}`` with a sentence to show."""
    if request.headers.get(ACTION_HEADER) != "1":
        return jsonify(ok=False, error="Please reload the page."), 400
    exp = _ratings().experiment(exp_id)
    rater_id = _rater(exp_id)
    if exp is None or rater_id is None:
        return jsonify(ok=False, error="Please use your study link again."), 403
    data = request.get_json(silent=True)
    if not isinstance(data, dict) or set(data) - {"action_id", "type", "payload"}:
        return jsonify(ok=False, error="The request was malformed. Please reload the page."), 400
    try:
        outcome = _ratings().act(
            exp, rater_id, data.get("type"), data.get("payload"), data.get("action_id")
        )
    except RuleError as error:
        return jsonify(ok=False, error=str(error)), 409
    state = outcome.state
    body: dict[str, Any] = {"ok": True, "duplicate": outcome.duplicate}
    if outcome.event.type == "story_finished" or state.phase == Phase.DONE:
        body["next"] = url_for(
            "rating.done" if state.phase == Phase.DONE else "rating.rate", exp_id=exp_id
        )
    return jsonify(body)


@bp.get("/r/<exp_id>/done")
def done(exp_id: str):
    exp = _experiment(exp_id)
    rater_id = _rater(exp_id)
    if rater_id is None:
        return redirect(url_for("rating.consent", exp_id=exp_id))
    if _ratings().state(exp_id, rater_id).phase != Phase.DONE:
        return redirect(url_for("rating.rate", exp_id=exp_id))
    code = _ratings().rater_row(exp_id, rater_id)["completion_code"]
    url = exp.spec.get("completion_url", "")
    return render_template(
        "rate_done.html",
        experiment=exp,
        code=code,
        completion_url=url.replace("{code}", quote(code)) if url else "",
        redirect_seconds=COMPLETION_REDIRECT_SECONDS,
    )
