"""The participants table of a co-writing experiment, at
``/research/experiments/<id>/participants`` (and ``.csv``): its writers as
:mod:`cyoa.web.approvals` lays them out. A co-writing study has no exclusion rules; each
writer's writing-process flags (:mod:`cyoa.cowriting.process.flags`) are shown beside them as
evidence for review, never as a decision."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from flask import url_for

from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.process.flags import describe, session_flags
from cyoa.cowriting.process.store import load_operations
from cyoa.cowriting.research.exports import session_rows
from cyoa.cowriting.research.views import experiment_or_404
from cyoa.db.facade import Db
from cyoa.web import approvals, auth
from cyoa.web import research as web
from cyoa.web.approvals import row_for

bp = web.blueprint("research_cowriting_participants", __name__, "/research/experiments")


def cowriting_participants(
    db: Db, exp_id: str, timeout: timedelta, now: datetime
) -> list[dict[str, Any]]:
    """One row (:data:`cyoa.web.approvals.COLUMNS`) per writer of a co-writing experiment
    (no exclusion rules: every writer who finished is proposed for approval, whatever their
    flags say)."""
    minutes = timeout.total_seconds() / 60
    statuses = {"finished": "finished", "dropped": "returned or timed out"}
    return [
        row_for(
            {**row, "external_id": row["participant"]},
            statuses.get(row["status"], "started"),
            "",
            0,
            evidence=describe(session_flags(load_operations(db, row["session_id"]))),
        )
        for row in session_rows(db, exp_id, now=now, dropout_minutes=minutes)
    ]


def _rows(exp_id: str) -> list[dict[str, Any]]:
    experiment_or_404(exp_id)
    timeout = timedelta(minutes=cowriting_parts().dropout_minutes)
    with web.db() as db:
        return cowriting_participants(db, exp_id, timeout, datetime.now(UTC))


@bp.get("/<exp_id>/participants")
@auth.login_required
def participants_page(exp_id: str):
    back = url_for("research_cowriting.experiment", exp_id=exp_id)
    csv_url = url_for("research_cowriting_participants.participants_csv", exp_id=exp_id)
    return approvals.page(exp_id, _rows(exp_id), back, csv_url)


@bp.get("/<exp_id>/participants.csv")
@auth.login_required
def participants_csv(exp_id: str):
    return approvals.download(exp_id, _rows(exp_id))
