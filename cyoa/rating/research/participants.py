"""The participants table of a rating experiment, at ``/research/ratings/<id>/participants``
(and ``.csv``): its raters as :mod:`cyoa.web.approvals` lays them out. A rater who finished is
excluded by the spec's exclusion rules (:mod:`cyoa.rating.quality`, as the dashboard and the
``raters`` export count them)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flask import url_for

from cyoa.db.facade import Db
from cyoa.rating.research.exports import rater_rows
from cyoa.rating.research.views import rating_experiment_or_404
from cyoa.rating.service import FIRST_ANSWER_MINUTES
from cyoa.web import approvals, auth
from cyoa.web import research as web
from cyoa.web.approvals import parse_time, row_for, status

bp = web.blueprint("research_rating_participants", __name__, "/research/ratings")


def rating_participants(
    db: Db,
    exp_id: str,
    timeout: timedelta,
    now: datetime,
    first_answer_timeout: timedelta | None = None,
) -> list[dict[str, Any]]:
    """One row (:data:`cyoa.web.approvals.COLUMNS`) per rater of a rating experiment,
    imported raters and judges left out (no platform paid them through this app). A rater who has
    answered nothing has timed out after ``first_answer_timeout`` when it is shorter, as
    their places are given away then (:func:`cyoa.rating.assignment.holds_place`)."""
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
        if row["id_source"] in ("import", "judge"):
            continue
        excluded_because = (row.get("rules_broken") or "") if row["finished"] else ""
        updated_at, answered = seen[row["rater_id"]]
        last_seen = parse_time(updated_at) or now
        silence = timeout
        if not answered and first_answer_timeout is not None:
            silence = min(timeout, first_answer_timeout)
        state = status(row["finished"], bool(row.get("excluded")), last_seen, now, silence)
        failed, checks = row.get("failed_checks") or 0, row.get("checks") or 0
        out.append(row_for(row, state, excluded_because, failed, checks))
    return out


def _rows(exp_id: str) -> list[dict[str, Any]]:
    exp = rating_experiment_or_404(exp_id)
    timeout = timedelta(minutes=float(exp.spec.get("dropout_minutes", 60)))
    first = timedelta(minutes=float(exp.spec.get("first_answer_minutes", FIRST_ANSWER_MINUTES)))
    with web.db() as db:
        return rating_participants(db, exp.id, timeout, datetime.now(UTC), first)


@bp.get("/<exp_id>/participants")
@auth.login_required
def participants_page(exp_id: str):
    back = url_for("research_ratings.rating_experiment", exp_id=exp_id)
    csv_url = url_for("research_rating_participants.participants_csv", exp_id=exp_id)
    return approvals.page(exp_id, _rows(exp_id), back, csv_url)


@bp.get("/<exp_id>/participants.csv")
@auth.login_required
def participants_csv(exp_id: str):
    return approvals.download(exp_id, _rows(exp_id))
