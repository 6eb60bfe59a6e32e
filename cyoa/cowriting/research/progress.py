"""How far an experiment has got: writers started, finished, dropped out, and how long
things take. Pure functions of rows from the database and the current time.

Definitions (also in docs/research.md):

- **started**: sessions (a writer agreed to take part);
- **finished**: sessions whose survey was submitted (``phase = 'done'``);
- **dropped out**: unfinished sessions with no recorded action (``sessions.updated_at``) for
  at least ``dropout_minutes`` (default :data:`DROPOUT_MINUTES`); such a writer may still come
  back and finish, and then counts as finished;
- **in progress**: the other unfinished sessions;
- **time per turn**: per submitted round, seconds from the round's start (consent or the
  previous turn) to its edited turn being added;
- **time per session**: seconds from consent to the survey, over finished sessions.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from cyoa import store
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.spec import Experiment
from cyoa.db.facade import Db
from cyoa.web.research import format_seconds

DROPOUT_MINUTES = 30.0


def parse_time(stamp: str | None) -> datetime | None:
    """A stored server time (ISO 8601 UTC, ``…Z``) as an aware datetime, None for None."""
    if not stamp:
        return None
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from ``start`` to ``end`` (stored server times), None if either is missing."""
    a, b = parse_time(start), parse_time(end)
    return None if a is None or b is None else (b - a).total_seconds()


def session_status(session: Mapping[str, Any], now: datetime, dropout_minutes: float) -> str:
    """``finished``, ``dropped`` or ``in_progress`` (see the module docstring)."""
    if session["phase"] == "done":
        return "finished"
    idle = seconds_between(session["updated_at"], now.isoformat())
    if idle is not None and idle >= dropout_minutes * 60:
        return "dropped"
    return "in_progress"


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class Progress:
    """An experiment's progress. Times in seconds (None without data); ``per_pair`` counts
    sessions per pair of systems, named ``"a vs b"``."""

    experiment: str
    status: str
    target_writers: int
    started: int
    finished: int
    dropped: int
    in_progress: int
    rounds_submitted: int
    median_turn_seconds: float | None
    median_session_seconds: float | None
    per_pair: dict[str, int]
    dropout_minutes: float
    last_activity: str | None

    def to_dict(self) -> dict[str, Any]:
        """Every field, plus ``display``: the times as the dashboard shows them."""
        return {
            **asdict(self),
            "display": {
                "median_turn_seconds": format_seconds(self.median_turn_seconds),
                "median_session_seconds": format_seconds(self.median_session_seconds),
                "last_activity": self.last_activity or "–",
            },
        }


def summarize(
    experiment: str,
    status: str,
    target_writers: int,
    sessions: Iterable[Mapping[str, Any]],
    rounds: Iterable[Mapping[str, Any]],
    now: datetime,
    dropout_minutes: float = DROPOUT_MINUTES,
) -> Progress:
    """The :class:`Progress` of an experiment from its ``sessions`` rows and its ``rounds``
    rows (``round_started_at``, ``turn_submitted_at``), as of ``now`` (aware UTC)."""
    counts = {"finished": 0, "dropped": 0, "in_progress": 0}
    session_seconds: list[float] = []
    per_pair: dict[str, int] = {}
    last: str | None = None
    started = 0
    for row in sessions:
        started += 1
        counts[session_status(row, now, dropout_minutes)] += 1
        if row["phase"] == "done":
            seconds = seconds_between(row["started_at"], row["finished_at"])
            if seconds is not None:
                session_seconds.append(seconds)
        pair = " vs ".join(sorted((row["system_a"], row["system_b"])))
        per_pair[pair] = per_pair.get(pair, 0) + 1
        if row["updated_at"] and (last is None or row["updated_at"] > last):
            last = row["updated_at"]
    turn_seconds = []
    submitted = 0
    for row in rounds:
        if row["turn_submitted_at"]:
            submitted += 1
            seconds = seconds_between(row["round_started_at"], row["turn_submitted_at"])
            if seconds is not None:
                turn_seconds.append(seconds)
    return Progress(
        experiment=experiment,
        status=status,
        target_writers=target_writers,
        started=started,
        finished=counts["finished"],
        dropped=counts["dropped"],
        in_progress=counts["in_progress"],
        rounds_submitted=submitted,
        median_turn_seconds=_median(turn_seconds),
        median_session_seconds=_median(session_seconds),
        per_pair=dict(sorted(per_pair.items())),
        dropout_minutes=dropout_minutes,
        last_activity=last,
    )


def experiment_progress(
    db: Db,
    exp: Experiment,
    now: datetime | None = None,
    dropout_minutes: float = DROPOUT_MINUTES,
) -> Progress:
    """The experiment's :class:`Progress`, read from the database."""
    row = store.get_experiment(db, exp.id)
    sessions = db.query(
        "SELECT phase, started_at, updated_at, finished_at, system_a, system_b"
        " FROM sessions WHERE experiment_id = ?",
        [exp.id],
    )
    rounds = db.query(
        "SELECT round_started_at, turn_submitted_at FROM rounds WHERE experiment_id = ?",
        [exp.id],
    )
    return summarize(
        exp.id,
        row["status"] if row else "closed",
        exp.target_writers,
        sessions,
        rounds,
        now or datetime.now(UTC),
        dropout_minutes,
    )


def progress_payload(db: Db, exp: Experiment) -> dict[str, Any]:
    """The experiment's progress as the dashboard script reads it, with the app's dropout
    setting (``RESEARCH_DROPOUT_MINUTES``)."""
    dropout = cowriting_parts().dropout_minutes
    return experiment_progress(db, exp, dropout_minutes=dropout).to_dict()
