"""The participants table of a co-writing experiment, at
``/research/experiments/<id>/participants`` (and ``.csv``): its writers as
:mod:`cyoa.web.approvals` lays them out. Each writer's writing-process flags
(:mod:`cyoa.cowriting.process.flags`) are shown beside them as evidence for review, never as
a decision by themselves; only the spec's process-flag rule
(:mod:`cyoa.cowriting.process.exclusion`) turns them into an exclusion."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from flask import url_for

from cyoa import store
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.process import exclusion
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
    (every writer who finished is proposed for approval, whatever their flags say, unless the
    spec's process-flag rule leaves them out: then they are excluded, to review by hand, the
    reason naming the flags)."""
    minutes = timeout.total_seconds() / 60
    statuses = {"finished": "finished", "dropped": "returned or timed out"}
    kinds = exclusion.flag_rule(_spec(db, exp_id), f"experiment '{exp_id}'")
    rows = []
    for row in session_rows(db, exp_id, now=now, dropout_minutes=minutes):
        flags = session_flags(load_operations(db, row["session_id"]))
        left = exclusion.left_out([(row["session_id"], row["participant"], flags)], kinds)
        state = statuses.get(row["status"], "started")
        because = exclusion.reason(left[0]) if left else ""
        rows.append(
            row_for(
                {**row, "external_id": row["participant"]},
                "excluded" if left and state == "finished" else state,
                because,
                0,
                evidence=describe(flags),
            )
        )
    return rows


def _spec(db: Db, exp_id: str) -> dict[str, Any]:
    spec = json.loads(store.experiment_row(db, exp_id)["spec"] or "{}")
    return spec if isinstance(spec, dict) else {}


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
