"""The stored analyses and their claims: the rows of ``analyses`` (the latest analysis of an
experiment and kind, as JSON) and ``analysis_jobs`` (the one computation under way, or the
last that failed), on SQLite and PostgreSQL alike.

A claim is taken in a write transaction under the experiment's ``analysis`` lock, so of two
processes that ask at once one computes and the other serves what is stored. A claim whose
holder stopped beating (``stale_after``) or whose process is gone (``holder_gone``, as for
generation claims: :func:`cyoa.web.workers.worker_gone`) passes to the next one who asks. A
result is stored only while its claim is still its worker's, so a worker that was taken over
never overwrites the newer work of the one that took over.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cyoa.db.facade import Db
from cyoa.db.transactions import write_transaction

RUNNING, FAILED = "running", "failed"


def stamp(moment: datetime) -> str:
    """``moment`` as the database stores times: ISO 8601 UTC with milliseconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def parse_stamp(text: str) -> datetime:
    """A time as :func:`stamp` writes it, back as an aware UTC datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


@dataclass(frozen=True)
class StoredAnalysis:
    """The latest analysis of an experiment: ``answers`` it counted, the data ``version`` it
    was computed from, when (``computed_at``, UTC), how long it took (``seconds``) and its
    ``result`` (what the kind's dashboard shows, display-ready)."""

    experiment_id: str
    kind: str
    answers: int
    version: str
    computed_at: datetime
    seconds: float
    result: dict[str, Any]


@dataclass(frozen=True)
class Job:
    """The computation of an experiment's analysis: ``running`` (held by ``worker_id``, last
    heard of at ``heartbeat_at``, at ``step``) or ``failed`` (``error`` says why) for the data
    ``version`` it set out to analyse."""

    state: str
    version: str
    worker_id: str
    started_at: datetime
    heartbeat_at: datetime
    step: str
    error: str


def latest(
    db: Db, exp_id: str, kind: str, known: StoredAnalysis | None = None
) -> StoredAnalysis | None:
    """The stored analysis ``kind`` of ``exp_id``; None before the first. ``known``: one read
    before, returned as it is while it is still the stored one (its result, up to megabytes
    of JSON, is then neither read nor parsed again)."""
    rows = db.execute(
        "SELECT answers, version, computed_at, seconds FROM analyses"
        " WHERE experiment_id = ? AND kind = ?",
        [exp_id, kind],
    ).fetchall()
    if not rows:
        return None
    answers, version, computed_at, seconds = rows[0]
    at = parse_stamp(computed_at)
    if known is not None and (known.version, known.computed_at) == (version, at):
        return known
    found = db.execute(
        "SELECT result FROM analyses WHERE experiment_id = ? AND kind = ? AND computed_at = ?",
        [exp_id, kind, computed_at],
    ).fetchone()
    if found is None:  # a newer one was stored meanwhile: read that
        return latest(db, exp_id, kind)
    return StoredAnalysis(exp_id, kind, answers, version, at, seconds, json.loads(found[0]))


def job(db: Db, exp_id: str, kind: str) -> Job | None:
    """The computation of ``exp_id``'s analysis ``kind`` under way or failed last; None when
    there is none."""
    row = db.get("analysis_jobs", (exp_id, kind))
    if row is None:
        return None
    return Job(
        state=row["state"],
        version=row["version"],
        worker_id=row["worker_id"],
        started_at=parse_stamp(row["started_at"]),
        heartbeat_at=parse_stamp(row["heartbeat_at"]),
        step=row["step"] or "",
        error=row["error"] or "",
    )


def claim(
    db: Db,
    exp_id: str,
    kind: str,
    version: str,
    worker_id: str,
    stale_after: float,
    at: datetime,
    holder_gone: Callable[[str], bool] | None = None,
) -> bool:
    """Whether ``worker_id`` now holds the computation of ``exp_id``'s analysis ``kind`` of the
    data ``version``. It is taken when there is no job; when the last one failed on other data
    (the same data is not tried again until it changes); or when the running one's holder is
    gone or silent for more than ``stale_after`` seconds. A job another live worker runs is
    left to it, and so is one this worker runs already."""
    with write_transaction(db, lock=("analysis", exp_id)):
        held = job(db, exp_id, kind)
        if held is not None:
            if held.state == FAILED and held.version == version:
                return False
            if held.state == RUNNING:
                silent = (at - held.heartbeat_at).total_seconds()
                gone = holder_gone is not None and holder_gone(held.worker_id)
                if held.worker_id == worker_id or (silent <= stale_after and not gone):
                    return False
        db.upsert(
            "analysis_jobs",
            {
                "experiment_id": exp_id,
                "kind": kind,
                "state": RUNNING,
                "version": version,
                "worker_id": worker_id,
                "started_at": stamp(at),
                "heartbeat_at": stamp(at),
                "step": "",
                "error": None,
            },
            pk=("experiment_id", "kind"),
        )
    return True


def heartbeat(
    db: Db, exp_id: str, kind: str, worker_id: str, at: datetime, step: str | None = None
) -> bool:
    """Record that ``worker_id`` still computes (and, given, the ``step`` it is at). False when
    the claim is no longer its own: another worker took it over."""
    with write_transaction(db, lock=("analysis", exp_id)):
        sets = "heartbeat_at = ?" + (", step = ?" if step is not None else "")
        values = [stamp(at), *([step] if step is not None else [])]
        cursor = db.execute(
            f"UPDATE analysis_jobs SET {sets} WHERE experiment_id = ? AND kind = ?"
            " AND worker_id = ? AND state = ?",
            [*values, exp_id, kind, worker_id, RUNNING],
        )
    return cursor.rowcount == 1


def store_result(
    db: Db,
    exp_id: str,
    kind: str,
    worker_id: str,
    answers: int,
    version: str,
    seconds: float,
    result: dict[str, Any],
    at: datetime,
) -> bool:
    """Store ``result`` as ``exp_id``'s latest analysis ``kind`` and end the job, in one
    transaction, if the claim is still ``worker_id``'s; False (nothing stored) when another
    worker took it over."""
    with write_transaction(db, lock=("analysis", exp_id)):
        cursor = db.execute(
            "DELETE FROM analysis_jobs WHERE experiment_id = ? AND kind = ? AND worker_id = ?"
            " AND state = ?",
            [exp_id, kind, worker_id, RUNNING],
        )
        if cursor.rowcount != 1:
            return False
        db.upsert(
            "analyses",
            {
                "experiment_id": exp_id,
                "kind": kind,
                "answers": answers,
                "version": version,
                "computed_at": stamp(at),
                "seconds": seconds,
                "result": json.dumps(result, ensure_ascii=False),
            },
            pk=("experiment_id", "kind"),
        )
    return True


def fail(db: Db, exp_id: str, kind: str, worker_id: str, error: str, at: datetime) -> None:
    """Mark ``worker_id``'s job failed with ``error`` (a sentence), so that the page says so
    and the same data is not analysed again until it changes."""
    with write_transaction(db, lock=("analysis", exp_id)):
        db.execute(
            "UPDATE analysis_jobs SET state = ?, error = ?, heartbeat_at = ?"
            " WHERE experiment_id = ? AND kind = ? AND worker_id = ?",
            [FAILED, error, stamp(at), exp_id, kind, worker_id],
        )
