"""Who took part in an experiment, as a crowd platform needs it to pay them: one row per
participant with their platform id, where they are (started, finished, returned or timed out,
excluded), when, the completion code they were shown, and a decision to approve, reject or
review by hand with its reason; as a page, and as a CSV for the platform's bulk approve and
reject (pages ``/research/ratings/<id>/participants`` and
``/research/experiments/<id>/participants``).

A rater who finished is excluded by the spec's exclusion rules (:mod:`cyoa.rating.quality`,
as the dashboard and the ``raters`` export count them); a co-writing study has no such rules.
The decision is a proposal for the researcher to check, not an action: nothing is sent anywhere.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flask import Response, abort, render_template
from sqlite_utils import Database

from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.research.exports import session_rows
from cyoa.rating.research.exports import rater_rows
from cyoa.rating.research.views import rating_experiment_or_404
from cyoa.rating.service import FIRST_ANSWER_MINUTES
from cyoa.web import auth
from cyoa.web import research as web
from cyoa.web.columns import Column
from cyoa.web.tables import to_csv

bp = web.blueprint("research_participants", __name__, "/research")

COLUMNS = (
    Column("platform_id", "string", "the platform's id (PROLIFIC_PID or pid), or 'anonymous'"),
    Column("id_source", "string", "PROLIFIC_PID, pid or anonymous"),
    Column("status", "string", "started, finished, returned or timed out, or excluded"),
    Column("started_at", "string", "when they started (UTC)"),
    Column("finished_at", "string", "when they finished (UTC; null until then)"),
    Column(
        "completion_code",
        "string",
        "the code they were shown on finishing ('' until they finish)",
    ),
    Column(
        "excluded_because",
        "string",
        "the exclusion rules a finished participant broke ('' if none)",
    ),
    Column(
        "decision",
        "string",
        "approve (finished), reject (excluded for failing 2 or more attention checks), review "
        "(excluded by another rule: decide by hand on Prolific), or '' (not finished)",
    ),
    Column("reason", "string", "why: 'finished', or the rules broken"),
)
# Prolific lets a researcher reject a submission on attention checks only when it failed at
# least two of them; any other exclusion is the researcher's call, made on Prolific by hand.
REJECT_AT_FAILED_CHECKS = 2
STATUSES = ("started", "finished", "returned or timed out", "excluded")


def status(finished: bool, excluded: bool, last_seen: datetime, now: datetime, timeout: timedelta):
    """Where a participant is: ``excluded`` (finished, and the spec's rules exclude them),
    ``finished``, ``returned or timed out`` (not finished and silent for longer than
    ``timeout``, the time after which their place is given to someone else), or ``started``.
    Who has not finished is never excluded: the rules judge a whole submission."""
    if finished:
        return "excluded" if excluded else "finished"
    return "returned or timed out" if now - last_seen > timeout else "started"


def decision(state: str, excluded_because: str, failed_checks: int) -> tuple[str, str]:
    """The proposed decision on a submission and its reason: approve who finished; reject
    an excluded participant who failed at least :data:`REJECT_AT_FAILED_CHECKS` attention
    checks (what Prolific allows), review by hand one excluded by any other rule (the reason
    is the rules they broke); none for who did not finish (Prolific marks them returned or
    timed out itself)."""
    if state == "finished":
        return "approve", "finished"
    if state == "excluded":
        verdict = "reject" if failed_checks >= REJECT_AT_FAILED_CHECKS else "review"
        return verdict, excluded_because
    return "", ""


def _platform_id(external_id: str | None, id_source: str) -> str:
    return "anonymous" if id_source == "anonymous" or not external_id else external_id


def _time(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def rating_participants(
    db: Database,
    exp_id: str,
    timeout: timedelta,
    now: datetime,
    first_answer_timeout: timedelta | None = None,
) -> list[dict[str, Any]]:
    """One row (:data:`COLUMNS`) per rater of a rating experiment, imported raters left out
    (no platform paid them through this app). A rater who has answered nothing has timed out
    after ``first_answer_timeout`` when it is shorter, as their places are given away then
    (:func:`cyoa.rating.assignment.holds_place`)."""
    seen = {
        row["rater_id"]: (row["updated_at"], bool(row["answered"]))
        for row in db.query(
            "SELECT r.rater_id, r.updated_at, EXISTS (SELECT 1 FROM rating_events e"
            " WHERE e.experiment_id = r.experiment_id AND e.rater_id = r.rater_id"
            " AND e.type = 'answer_given') AS answered"
            " FROM raters r WHERE r.experiment_id = ?",
            [exp_id],
        )
    }
    out = []
    for row in rater_rows(db, exp_id):
        if row["id_source"] == "import":
            continue
        excluded_because = (row.get("rules_broken") or "") if row["finished"] else ""
        updated_at, answered = seen[row["rater_id"]]
        last_seen = _time(updated_at) or now
        silence = timeout
        if not answered and first_answer_timeout is not None:
            silence = min(timeout, first_answer_timeout)
        state = status(row["finished"], bool(row.get("excluded")), last_seen, now, silence)
        out.append(_row(row, state, excluded_because, row.get("failed_checks") or 0))
    return out


def cowriting_participants(
    db: Database, exp_id: str, timeout: timedelta, now: datetime
) -> list[dict[str, Any]]:
    """One row (:data:`COLUMNS`) per writer of a co-writing experiment (no exclusion rules:
    every writer who finished is proposed for approval)."""
    minutes = timeout.total_seconds() / 60
    statuses = {"finished": "finished", "dropped": "returned or timed out"}
    return [
        _row(
            {**row, "external_id": row["participant"]},
            statuses.get(row["status"], "started"),
            "",
            0,
        )
        for row in session_rows(db, exp_id, now=now, dropout_minutes=minutes)
    ]


def _row(
    row: dict[str, Any], state: str, excluded_because: str, failed_checks: int
) -> dict[str, Any]:
    verdict, reason = decision(state, excluded_because, failed_checks)
    # Only who finished was shown a code; a code beside anyone else reads as owed payment.
    shown = state in ("finished", "excluded")
    return {
        "platform_id": _platform_id(row["external_id"], row["id_source"]),
        "id_source": row["id_source"],
        "status": state,
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
        "completion_code": row["completion_code"] if shown else "",
        "excluded_because": excluded_because,
        "decision": verdict,
        "reason": reason,
    }


def prolific_ids(rows: list[dict[str, Any]], verdict: str) -> list[str]:
    """The Prolific ids (PROLIFIC_PID) whose proposed decision is ``verdict``: what
    Prolific's bulk approve (or reject) box takes, one per line; ``review`` lists the ones
    to decide by hand."""
    return [
        row["platform_id"]
        for row in rows
        if row["decision"] == verdict and row["id_source"] == "PROLIFIC_PID"
    ]


# --- pages --------------------------------------------------------------------------------


def _rating_rows(exp_id: str) -> list[dict[str, Any]]:
    exp = rating_experiment_or_404(exp_id)
    timeout = timedelta(minutes=float(exp.spec.get("dropout_minutes", 60)))
    first = timedelta(minutes=float(exp.spec.get("first_answer_minutes", FIRST_ANSWER_MINUTES)))
    with web.db() as db:
        return rating_participants(db, exp.id, timeout, datetime.now(UTC), first)


def _cowriting_rows(exp_id: str) -> list[dict[str, Any]]:
    if cowriting_parts().study.experiment(exp_id) is None:
        abort(404)
    timeout = timedelta(minutes=cowriting_parts().dropout_minutes)
    with web.db() as db:
        return cowriting_participants(db, exp_id, timeout, datetime.now(UTC))


def _page(exp_id: str, kind: str, rows: list[dict[str, Any]]):
    return render_template(
        "research/participants.html",
        exp_id=exp_id,
        kind=kind,
        rows=rows,
        columns=[column.name for column in COLUMNS],
        counts={name: sum(1 for row in rows if row["status"] == name) for name in STATUSES},
        approve=prolific_ids(rows, "approve"),
        reject=prolific_ids(rows, "reject"),
        review=[row for row in rows if row["decision"] == "review"],
    )


def _download(exp_id: str, rows: list[dict[str, Any]]) -> Response:
    return Response(
        to_csv(rows, COLUMNS),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{exp_id}-participants.csv"'},
    )


@bp.get("/ratings/<exp_id>/participants")
@auth.login_required
def rating_participants_page(exp_id: str):
    return _page(exp_id, "rating", _rating_rows(exp_id))


@bp.get("/ratings/<exp_id>/participants.csv")
@auth.login_required
def rating_participants_csv(exp_id: str):
    return _download(exp_id, _rating_rows(exp_id))


@bp.get("/experiments/<exp_id>/participants")
@auth.login_required
def cowriting_participants_page(exp_id: str):
    return _page(exp_id, "cowriting", _cowriting_rows(exp_id))


@bp.get("/experiments/<exp_id>/participants.csv")
@auth.login_required
def cowriting_participants_csv(exp_id: str):
    return _download(exp_id, _cowriting_rows(exp_id))
