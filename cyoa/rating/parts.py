"""The rating wing's parts, built once per app (:func:`cyoa.rating.wing.init_app`) and read
through :func:`parts`: the rating studies, the raters' rate limit, the last dashboard
report this process computed, and this process's story-generation jobs."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, current_app

from cyoa.rating.analysis.report import RatingReport
from cyoa.rating.judges.estimate import Speed
from cyoa.rating.service import RatingStudy
from cyoa.web.ratelimit import RateLimiter


@dataclass(frozen=True)
class RatingParts:
    """``rater_limiter``: a rater's actions, all their tabs together. ``jobs``: this
    process's story-generation jobs by id (:class:`cyoa.rating.research.admin.GenerationJob`),
    changed under ``jobs_lock``, as is ``judge_stops``: the stop signal of each judge run
    this process runs, by (experiment, judge), and ``judge_probes``: the judge models timed
    by a probe before a run (:func:`cyoa.rating.research.judge_runs.probe_judge_speed`).
    ``reports``: per experiment, the data version and the report of the last dashboard
    analysis this process computed (the evaluation card uses it when it is of the data as it
    is now)."""

    ratings: RatingStudy
    rater_limiter: RateLimiter
    reports: dict[str, tuple[str, RatingReport | None]] = field(default_factory=dict)
    jobs: dict[str, Any] = field(default_factory=dict)
    jobs_lock: threading.Lock = field(default_factory=threading.Lock)
    judge_stops: dict[tuple[str, str], threading.Event] = field(default_factory=dict)
    # Judge models timed by a probe in this process: name → (speed, "HH:MM" UTC).
    judge_probes: dict[str, tuple[Speed, str]] = field(default_factory=dict)


def parts(app: Flask | None = None) -> RatingParts:
    """The rating parts of ``app`` (the current app when None)."""
    return (app or current_app).extensions[__name__]
