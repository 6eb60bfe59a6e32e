"""The writer's pages: consent, the writing page, and the thank-you page.

Who may come in and resume is the rule of every study kind (:mod:`cyoa.web.participants`):
a writer's session id lives only in their signed cookie, and a platform id in the link
resumes in another browser only with the platform session recorded when the story began.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    abort,
    redirect,
    render_template,
    request,
    url_for,
)

from cyoa.cowriting.flow import DRAFT_MAX_CHARS, Phase
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.web import outage, participants
from cyoa.web.completion import completion_address, shown_code
from cyoa.web.language import page_language, use_study_language

bp = Blueprint("study", __name__)
outage.answer_retry(bp)
participants.pages(bp)
# Long enough to read (and copy) the completion code before the crowd platform's page opens.
COMPLETION_REDIRECT_SECONDS = 15
# The first segment of a writer's link, and what a writer resumes by it.
START_PATH, WORK = "s", "story"


def _study():
    return cowriting_parts().study


def _experiment(exp_id: str):
    exp = _study().experiment(exp_id)
    if exp is None:
        abort(404)
    use_study_language(exp.language, exp.languages)
    return exp


def _participant_session(exp_id: str, external_id: str) -> tuple[str, str | None] | None:
    """The session of a participant in an experiment and the platform session recorded when
    it began, or None."""
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
    return (rows[0]["session_id"], rows[0]["platform_session_id"]) if rows else None


DOOR = participants.Door(
    cookie="cyoa",
    exists=lambda _exp_id, session_id: _study().session_row(session_id) is not None,
    find=_participant_session,
)


def current_session_id(exp_id: str) -> str | None:
    """The session this browser holds for an experiment (from the signed cookie)."""
    return DOOR.cookie_id(exp_id)


@bp.get("/")
def index():
    study = _study()
    open_now = [
        exp
        for exp in sorted(study.experiments.values(), key=lambda e: e.title)
        if study.experiment_status(exp.id) == "open"
    ]
    return render_template("index.html", experiments=open_now)


def _refused(exp):
    return render_template("consent.html", experiment=exp, refused=True), 403


@bp.get("/s/<exp_id>")
def consent(exp_id: str):
    exp = _experiment(exp_id)
    entry = participants.enter(
        DOOR, exp_id, _study().experiment_status(exp_id) == "open", request.args
    )
    if entry.refused:
        return _refused(exp)
    if entry.resume:
        return redirect(url_for("study.write", exp_id=exp_id))
    if entry.closed:
        return render_template("closed.html", experiment=exp), 403
    error = participants.EXPIRED if request.args.get("expired") else ""
    return render_template("consent.html", experiment=exp, hidden=entry.link, error=error)


@bp.post("/s/<exp_id>/start")
def start(exp_id: str):
    exp = _experiment(exp_id)
    is_open = _study().experiment_status(exp_id) == "open"
    entry = participants.admit(DOOR, exp_id, is_open, request.form, exp)
    if entry.expired:
        # Back to the consent page, changing nothing: a form sent from another site arrives
        # without this site's cookie, and a new cookie would replace the writer's.
        return redirect(url_for("study.consent", exp_id=exp_id, expired=1, **entry.link))
    if entry.refused:
        return _refused(exp)
    if entry.resume:
        return redirect(url_for("study.write", exp_id=exp_id))
    if entry.closed:
        return render_template("closed.html", experiment=exp), 403
    if entry.error:
        page = render_template("consent.html", experiment=exp, hidden=entry.link, error=entry.error)
        return page, 400
    if entry.wait is not None:
        return entry.wait
    session_id = _study().open_session(
        exp,
        entry.participant,
        user_agent=request.headers.get("User-Agent", ""),
        language=page_language()["lang"],
    )
    if session_id is None:
        # Another request started this participant's story a moment ago: the consent page
        # decides whether this browser may continue it.
        return redirect(url_for("study.consent", exp_id=exp_id, **entry.link))
    DOOR.remember(exp_id, session_id)
    return redirect(url_for("study.write", exp_id=exp_id))


@bp.get("/s/<exp_id>/write")
def write(exp_id: str):
    exp = _experiment(exp_id)
    session_id = current_session_id(exp_id)
    if not session_id or _study().session_row(session_id) is None:
        return redirect(url_for("study.consent", exp_id=exp_id))
    # The writer's boxes take no more than the server keeps of a draft (see write.js).
    return render_template(
        "write.html",
        experiment=exp,
        box_max_chars=DRAFT_MAX_CHARS,
        outbox_key=participants.storage_key(session_id),
    )


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
