"""Who took part in an experiment, as a crowd platform needs it to pay them, for every study
kind: one row per participant with their platform id, where they are (started, finished,
returned or timed out, excluded), when, the completion code they were shown, and a decision to
approve, reject or review by hand with its reason; as a page, and as a CSV for the platform's
bulk approve and reject. Each wing makes its rows and serves its pages
(:mod:`cyoa.rating.research.participants`, :mod:`cyoa.cowriting.research.participants`).

The decision is a proposal for the researcher to check, not an action: nothing is sent anywhere.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from flask import Response, render_template

from cyoa.web.columns import Column
from cyoa.web.tables import to_csv

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
    Column(
        "reason",
        "string",
        "why: 'finished'; for a rejection, what happened ('failed 2 of 2 attention checks'); "
        "for a review, the study's rules broken, with the attention checks failed",
    ),
    Column(
        "evidence",
        "string",
        "what a reviewer may want to look at, never a decision by itself: a co-writing "
        "writer's writing-process flags, each a sentence ('' if none)",
    ),
)
# Prolific lets a researcher reject a submission on attention checks only when it failed at
# least two of them; any other exclusion is the researcher's call, made on Prolific by hand.
REJECT_AT_FAILED_CHECKS = 2
STATUSES = ("started", "finished", "returned or timed out", "excluded")
# A status as the page's counts name it: "started" is who is still at work, and the counts
# begin with everyone who started.
COUNT_LABELS = {"started": "in progress"}


def status(finished: bool, excluded: bool, last_seen: datetime, now: datetime, timeout: timedelta):
    """Where a participant is: ``excluded`` (finished, and the spec's rules exclude them),
    ``finished``, ``returned or timed out`` (not finished and silent for longer than
    ``timeout``, the time after which their place is given to someone else), or ``started``.
    Who has not finished is never excluded: the rules judge a whole submission."""
    if finished:
        return "excluded" if excluded else "finished"
    return "returned or timed out" if now - last_seen > timeout else "started"


def decision(
    state: str, excluded_because: str, failed_checks: int, checks: int = 0
) -> tuple[str, str]:
    """The proposed decision on a submission and its reason: approve who finished; reject
    an excluded participant who failed at least :data:`REJECT_AT_FAILED_CHECKS` of their
    ``checks`` attention checks (Prolific's rule, apart from the study's own exclusion
    rules), the reason saying what happened ("failed 2 of 2 attention checks"); review by
    hand one excluded otherwise, the reason being the study's rules they broke (and the checks
    they failed, too few for Prolific); none for who did not finish (Prolific marks them
    returned or timed out itself)."""
    if state == "finished":
        return "approve", "finished"
    if state != "excluded":
        return "", ""
    failed = f"failed {failed_checks} of {checks} attention check{'s' if checks != 1 else ''}"
    if failed_checks >= REJECT_AT_FAILED_CHECKS:
        return "reject", failed
    if failed_checks:
        return "review", (
            f"{excluded_because} ({failed}: Prolific rejects on attention checks only at "
            f"{REJECT_AT_FAILED_CHECKS} or more failed)"
        )
    return "review", excluded_because


def platform_id(external_id: str | None, id_source: str) -> str:
    return "anonymous" if id_source == "anonymous" or not external_id else external_id


def parse_time(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None


def row_for(
    row: dict[str, Any],
    state: str,
    excluded_because: str,
    failed_checks: int,
    checks: int = 0,
    evidence: str = "",
) -> dict[str, Any]:
    verdict, reason = decision(state, excluded_because, failed_checks, checks)
    # Only who finished was shown a code; a code beside anyone else reads as owed payment.
    shown = state in ("finished", "excluded")
    return {
        "platform_id": platform_id(row["external_id"], row["id_source"]),
        "id_source": row["id_source"],
        "status": state,
        "started_at": row["started_at"],
        "finished_at": row["finished_at"],
        "completion_code": row["completion_code"] if shown else "",
        "excluded_because": excluded_because,
        "decision": verdict,
        "reason": reason,
        "evidence": evidence,
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


def page(exp_id: str, rows: list[dict[str, Any]], back_url: str, csv_url: str) -> str:
    """The participants page of ``exp_id``: counts per status, the ids to approve and to
    reject on Prolific, the ones to review, and every row (``back_url``: the experiment's
    page; ``csv_url``: this table as CSV)."""
    return render_template(
        "research/participants.html",
        exp_id=exp_id,
        back_url=back_url,
        csv_url=csv_url,
        rows=rows,
        columns=[column.name for column in COLUMNS],
        counts={
            COUNT_LABELS.get(name, name): sum(1 for row in rows if row["status"] == name)
            for name in STATUSES
        },
        approve=prolific_ids(rows, "approve"),
        reject=prolific_ids(rows, "reject"),
        review=[row for row in rows if row["decision"] == "review"],
    )


def download(exp_id: str, rows: list[dict[str, Any]]) -> Response:
    """The participants table of ``exp_id`` as a CSV file to save."""
    return Response(
        to_csv(rows, COLUMNS),
        mimetype="text/csv",
        headers={"Content-Disposition": f'attachment; filename="{exp_id}-participants.csv"'},
    )
