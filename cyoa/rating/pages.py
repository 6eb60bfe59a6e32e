"""The rater's pages: consent, one story at a time with its questions, the thank-you page,
and the JSON endpoint that records each answer before acknowledging it.

Who may come in and resume is the rule of every study kind (:mod:`cyoa.web.participants`):
the rater's id lives only in the signed cookie, and a platform id in the link resumes in
another browser only with the platform session recorded when the rater started.
Answers come as JSON with a custom header, which a page on another site cannot send without
the browser asking this server first (CORS). While the database cannot be reached, every
page and answer here is answered "send again" (:mod:`cyoa.web.outage`).
"""

from __future__ import annotations

import math
from typing import Any

from flask import (
    Blueprint,
    abort,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)

from cyoa.languages import SOURCE_LANGUAGE
from cyoa.rating.blind import from_rater, rater_item_ids
from cyoa.rating.flow import Phase, Questions, RuleError
from cyoa.rating.importing import is_unicode
from cyoa.rating.instruments import Item, rater_credit
from cyoa.rating.instruments.translation import as_read
from cyoa.rating.parts import parts as rating_parts
from cyoa.rating.service import AlreadyStarted, RatingExperiment, RatingStudy
from cyoa.web import outage, participants
from cyoa.web.completion import completion_address, shown_code
from cyoa.web.language import page_language, sentence, use_study_language

bp = Blueprint("rating", __name__)
outage.answer_retry(bp)
participants.pages(bp)
TOO_FAST_MESSAGE = sentence(
    "Your answers are arriving faster than the server saves them. They are kept on this page "
    "and will be sent again in a moment."
)
ACTION_HEADER = "X-CYOA-Action"
COMPLETION_REDIRECT_SECONDS = 15
# The first segment of a rater's link, and what a rater resumes by it.
START_PATH, WORK = "r", "ratings"
NOT_UNICODE = sentence(
    "Your answer holds a character that cannot be saved (half of an emoji or symbol); please "
    "retype it."
)


def _ratings() -> RatingStudy:
    return rating_parts().ratings


def _experiment(exp_id: str) -> RatingExperiment:
    exp = _ratings().experiment(exp_id)
    if exp is None:
        abort(404)
    use_language(exp)
    return exp


def use_language(exp: RatingExperiment) -> None:
    """Show the rater's pages and sentences in the study's language."""
    default = exp.spec.get("language", SOURCE_LANGUAGE)
    use_study_language(default, exp.spec.get("languages", [default]))


def shown_questions(exp: RatingExperiment, question_ids: list[str]) -> list[Item]:
    """The questions ``question_ids`` as the rater reads them: the instrument's items in the
    page's language (:func:`~cyoa.rating.instruments.translation.as_read`; checked for every
    language of the study when it was created and opened), the attention checks as the
    researcher wrote them."""
    instrument = as_read(exp.questions.instrument, page_language()["lang"])
    shown = Questions(instrument, exp.questions.checks)
    return [shown.item(question) for question in question_ids]


def _find_rater(exp_id: str, external_id: str) -> tuple[str, str | None] | None:
    row = _ratings().find_rater_row(exp_id, external_id)
    return (row["rater_id"], row["platform_session_id"]) if row else None


DOOR = participants.Door(
    cookie="cyoa_rater",
    exists=lambda exp_id, rater_id: _ratings().rater_row(exp_id, rater_id) is not None,
    find=_find_rater,
)


def _rater(exp_id: str) -> str | None:
    """The rater this browser holds for the experiment (from the signed cookie)."""
    return DOOR.held(exp_id)


def _consent_page(exp: RatingExperiment, hidden: dict[str, str], error: str = "", status=200):
    return render_template("rate_consent.html", experiment=exp, hidden=hidden, error=error), status


def _refused(exp: RatingExperiment):
    return render_template("rate_consent.html", experiment=exp, refused=True), 403


@bp.get("/r/<exp_id>")
def consent(exp_id: str):
    exp = _experiment(exp_id)
    entry = participants.enter(DOOR, exp_id, exp.status == "open", request.args)
    if entry.refused:
        return _refused(exp)
    if entry.resume:
        return redirect(url_for("rating.rate", exp_id=exp_id))
    if entry.closed:
        return render_template("closed.html", experiment=exp, people="readers"), 403
    return _consent_page(exp, entry.link)


@bp.post("/r/<exp_id>/start")
def start(exp_id: str):
    exp = _experiment(exp_id)
    entry = participants.admit(DOOR, exp_id, exp.status == "open", request.form, exp)
    if entry.expired:
        return _consent_page(exp, entry.link, participants.EXPIRED, 400)
    if entry.refused:
        return _refused(exp)
    if entry.resume:
        return redirect(url_for("rating.rate", exp_id=exp_id))
    if entry.closed:
        return render_template("closed.html", experiment=exp, people="readers"), 403
    if entry.error:
        return _consent_page(exp, entry.link, entry.error, 400)
    if entry.wait is not None:
        return entry.wait
    user_agent = request.headers.get("User-Agent", "")
    try:
        rater_id = _ratings().open_rater(
            exp, entry.participant, user_agent, page_language()["lang"]
        )
    except AlreadyStarted:
        return _refused(exp)
    if rater_id is None:
        return render_template("full.html", experiment=exp), 403
    DOOR.remember(exp_id, rater_id)
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
    shown_ids = {q: q for q in task.questions} | rater_item_ids(exp, task.story_id)
    return render_template(
        "rate.html",
        experiment=exp,
        story=exp.stories[task.story_id],
        task=task,
        questions=shown_questions(exp, task.questions),
        shown_ids=shown_ids,
        answers={q: answer_view(a) for q, a in task.answers.items()},
        position=state.position,
        total=len(state.tasks),
        required=sorted(shown_ids[q] for q in exp.questions.required() & set(task.questions)),
        first=state.position == 1,
        credit=rater_credit(exp.questions.instrument),
        rater_key=participants.storage_key(rater_id),
    )


def answer_view(answer: Any) -> dict[str, Any]:
    value = answer.value
    shown = value if isinstance(value, str) else f"{value:g}"
    return {"value": shown, "rationale": answer.rationale or ""}


def _action_body() -> Any:
    """The action's JSON, or None when it cannot be read: not JSON, a number too long for
    Python, or nested deeper than Python's recursion limit (an answer is three levels)."""
    try:
        return request.get_json(silent=True)
    except (RecursionError, ValueError):
        return None


def _all_unicode(data: Any) -> bool:
    """Whether every text in ``data`` can be stored: JSON's ``\\ud800`` writes half a
    character (a lone surrogate), which SQLite cannot encode."""
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend([*item, *item.values()])
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, str) and not is_unicode(item):
            return False
    return True


@bp.post("/r/<exp_id>/action")
def action(exp_id: str):
    """One rater action as JSON ``{action_id, type, payload}``; answers ``{ok: true, …}``
    once it is stored, or ``{ok: false, error}`` with a sentence to show. An action sent
    faster than the rater's rate limit (HTTP 429) or while the database cannot be reached
    (503, :mod:`cyoa.web.outage`) is not stored and gets ``retry: true`` and ``Retry-After``:
    the page sends it again with the same ``action_id``."""
    if request.headers.get(ACTION_HEADER) != "1":
        return jsonify(ok=False, error=str(sentence("Please reload the page."))), 400
    # Checked before any database work, so a flood of actions costs the server nothing.
    held = DOOR.cookie_id(exp_id)
    if not held:
        return jsonify(ok=False, error=str(sentence("Please use your study link again."))), 403
    if wait := rating_parts().rater_limiter.take(f"{exp_id}/{held}"):
        return _retry(TOO_FAST_MESSAGE, 429, wait)
    exp = _ratings().experiment(exp_id)
    rater_id = _rater(exp_id)
    if exp is None or rater_id is None:
        return jsonify(ok=False, error=str(sentence("Please use your study link again."))), 403
    use_language(exp)
    data = _action_body()
    if not isinstance(data, dict) or set(data) - {"action_id", "type", "payload"}:
        return jsonify(
            ok=False, error=str(sentence("The request was malformed. Please reload the page."))
        ), 400
    if not _all_unicode(data):
        return jsonify(ok=False, error=str(NOT_UNICODE)), 400
    try:
        outcome = _ratings().act(
            exp,
            rater_id,
            data.get("type"),
            from_rater(exp, data.get("payload")),
            data.get("action_id"),
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


@bp.post("/r/<exp_id>/seen")
def seen(exp_id: str):
    """The rater's page, open and visible, says the rater is still reading (sent about once
    a minute): their places are kept as if they had answered, so a slow reader is not timed
    out by ``first_answer_minutes``. Nothing else is recorded. Same header, cookie and rate
    limit as :func:`action`."""
    if request.headers.get(ACTION_HEADER) != "1":
        return jsonify(ok=False, error=str(sentence("Please reload the page."))), 400
    held = DOOR.cookie_id(exp_id)
    if not held:
        return jsonify(ok=False, error=str(sentence("Please use your study link again."))), 403
    if wait := rating_parts().rater_limiter.take(f"{exp_id}/{held}"):
        return _retry(TOO_FAST_MESSAGE, 429, wait)
    return jsonify(ok=_ratings().seen(exp_id, held))


def _retry(message: object, status: int, wait: float):
    """The answer to an action that was not stored and should be sent again in ``wait``
    seconds."""
    response = jsonify(ok=False, retry=True, error=str(message))
    response.status_code = status
    response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
    return response


@bp.get("/r/<exp_id>/done")
def done(exp_id: str):
    exp = _experiment(exp_id)
    rater_id = _rater(exp_id)
    if rater_id is None:
        return redirect(url_for("rating.consent", exp_id=exp_id))
    if _ratings().state(exp_id, rater_id).phase != Phase.DONE:
        return redirect(url_for("rating.rate", exp_id=exp_id))
    own = _ratings().rater_row(exp_id, rater_id)["completion_code"]
    code = shown_code(exp.spec.get("completion_code", ""), own)
    return render_template(
        "rate_done.html",
        experiment=exp,
        code=code,
        completion_url=completion_address(exp.spec.get("completion_url", ""), code),
        redirect_seconds=COMPLETION_REDIRECT_SECONDS,
    )
