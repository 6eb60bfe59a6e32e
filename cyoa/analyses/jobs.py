"""Dashboards that answer at once: each serves the last stored analysis of its experiment, and
a newer one is computed off the request path, on a background thread of the process that
noticed the data changed.

:meth:`BackgroundAnalyses.serve` is what a dashboard's request calls: it reads the stored
analysis and the job, and when the data changed since the stored analysis (and at least
``interval`` seconds have passed since it was computed, so a busy study is analysed at most
that often) it starts a computation and returns without waiting for it. One computation runs
per experiment and kind: in a process by the set of those it runs, across processes by the
claim in ``analysis_jobs`` (:mod:`cyoa.analyses.store`). The thread beats while it computes,
so a claim left by a process that died passes on. What the page says about
it comes from :func:`describe`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cyoa import store as cyoa_store
from cyoa.analyses import store
from cyoa.analyses.store import FAILED, RUNNING, Job, StoredAnalysis
from cyoa.web.workers import worker_gone

log = logging.getLogger(__name__)

# Seconds between a job's heartbeats, and of silence after which its claim passes on.
HEARTBEAT_SECONDS = 5.0
STALE_SECONDS = 60.0

# What a computation reports as it goes (a short phrase: "reading the answers").
Step = Callable[[str], None]
# A computation: given the database and its step reporter, the answers it counted, the data
# version it read and its display-ready result (JSON-able).
Compute = Callable[[cyoa_store.Db, Step], tuple[int, str, dict[str, Any]]]


@dataclass(frozen=True)
class Served:
    """What a dashboard request shows: the ``stored`` analysis (None before the first), the
    ``job`` computing or failed (None when there is none) and whether the stored analysis is
    of the data as it is now (``current``)."""

    stored: StoredAnalysis | None
    job: Job | None
    current: bool


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%H:%M UTC")


def describe(
    served: Served, now: datetime, interval: float, unit: str = "answers"
) -> dict[str, Any]:
    """What the page says about its analysis, with the times in UTC as ``HH:MM UTC``:
    ``state`` (``current``, ``computing``, ``first`` while the first is computed,
    ``waiting`` for ``interval`` to pass since the last, ``failed``), ``as_of`` ("N answers,
    HH:MM UTC", what the kind counts named by ``unit``; "–" before the first), ``text`` (one
    sentence for the page) and ``answers``."""
    stored, job = served.stored, served.job
    as_of = f"{stored.answers:,} {unit}, {_time(stored.computed_at)}" if stored else "–"
    head = f"Analysis as of {as_of}" if stored else ""
    running = job is not None and job.state == RUNNING
    if running:
        elapsed = max(0, round((now - job.started_at).total_seconds()))
        step = f"{job.step}, " if job.step else ""
        last = f"; the last took {stored.seconds:.0f} s" if stored else ""
        doing = f"({step}{elapsed} s so far{last})"
        state = "computing" if stored else "first"
        text = (
            f"{head}; a newer analysis is being computed {doing}."
            if stored
            else f"Computing the first analysis… {doing}"
        )
    elif job is not None and job.state == FAILED and not served.current:
        state = "failed"
        text = (f"{head}. " if stored else "") + (
            f"The newest analysis failed: {job.error} It is tried again when the data changes."
        )
    elif stored is None:
        state, text = "first", "Computing the first analysis…"
    elif served.current:
        state, text = "current", f"{head}."
    else:
        state = "waiting"
        due = stored.computed_at + timedelta(seconds=interval)
        text = f"{head}; the newer {unit} are analysed from {_time(max(due, now))}."
    return {
        "state": state,
        "as_of": as_of,
        "text": text,
        "answers": stored.answers if stored else None,
    }


class BackgroundAnalyses:
    """This process's analysis jobs, for the database at ``database`` (a SQLite path or a
    PostgreSQL URL); ``worker_id`` names the process in the claims
    (:func:`cyoa.web.workers.new_worker_id`)."""

    def __init__(
        self,
        database: str,
        worker_id: str,
        stale_after: float = STALE_SECONDS,
        heartbeat_every: float = HEARTBEAT_SECONDS,
    ) -> None:
        self.database = database
        self.worker_id = worker_id
        self.stale_after = stale_after
        self.heartbeat_every = heartbeat_every
        self._running: set[tuple[str, str]] = set()
        self._known: dict[tuple[str, str], StoredAnalysis] = {}
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def serve(
        self,
        db: cyoa_store.Db,
        exp_id: str,
        kind: str,
        version: str,
        compute: Compute,
        interval: float,
        now: datetime | None = None,
        landed: Callable[[], None] | None = None,
    ) -> Served:
        """The stored analysis ``kind`` of ``exp_id`` and its job, after starting a newer one
        in the background when the data (``version``, as the kind counts it) changed and the
        stored one is at least ``interval`` seconds old (at once when there is none);
        ``landed`` is called once a newer one is stored (to tell the open pages)."""
        now = now or datetime.now(UTC)
        stored = store.latest(db, exp_id, kind, self._known.get((exp_id, kind)))
        if stored is not None:
            self._known[(exp_id, kind)] = stored
        current = stored is not None and stored.version == version
        if not current and (
            stored is None or (now - stored.computed_at).total_seconds() >= interval
        ):
            self.start(db, exp_id, kind, version, compute, now, landed)
        return Served(stored, store.job(db, exp_id, kind), current)

    def start(
        self,
        db: cyoa_store.Db,
        exp_id: str,
        kind: str,
        version: str,
        compute: Compute,
        now: datetime | None = None,
        landed: Callable[[], None] | None = None,
    ) -> bool:
        """Start computing ``exp_id``'s analysis ``kind`` of the data ``version`` on a thread,
        unless this process or another live one computes it already; whether it started."""
        key = (exp_id, kind)
        with self._lock:
            if key in self._running:
                return False
            self._running.add(key)
        try:
            claimed = store.claim(
                db,
                exp_id,
                kind,
                version,
                self.worker_id,
                self.stale_after,
                now or datetime.now(UTC),
                holder_gone=worker_gone,
            )
        except Exception:
            self._done(key)
            raise
        if not claimed:
            self._done(key)
            return False
        thread = threading.Thread(
            target=self._run,
            args=(exp_id, kind, version, compute, landed),
            name=f"cyoa-analysis-{exp_id}",
            daemon=True,
        )
        thread.start()
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until this process computes nothing (for a clean stop); whether it does."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, timeout=timeout)

    def _done(self, key: tuple[str, str]) -> None:
        with self._idle:
            self._running.discard(key)
            self._idle.notify_all()

    def _run(
        self,
        exp_id: str,
        kind: str,
        version: str,
        compute: Compute,
        landed: Callable[[], None] | None,
    ) -> None:
        db = cyoa_store.connect(self.database)
        steps: list[str] = []
        changed = threading.Event()
        finished = threading.Event()

        def step(text: str) -> None:
            steps.append(text)
            changed.set()

        def keep_beating() -> None:
            # The beats are written from this thread: the computation may hold a read snapshot.
            while not finished.is_set():
                changed.wait(self.heartbeat_every)
                changed.clear()
                now, last = datetime.now(UTC), steps[-1] if steps else None
                held = store.heartbeat(db, exp_id, kind, self.worker_id, now, last)
                if not held and not finished.is_set():
                    log.warning("The analysis of %s (%s) was taken over", exp_id, kind)

        ticker = threading.Thread(target=keep_beating, name="cyoa-analysis-heartbeat", daemon=True)
        ticker.start()
        began = time.perf_counter()
        try:
            answers, read_version, result = compute(db, step)
            seconds = time.perf_counter() - began
            stored = store.store_result(
                db, exp_id, kind, self.worker_id, answers, read_version, seconds, result,
                datetime.now(UTC),
            )  # fmt: skip
            if stored and landed is not None:
                landed()
        except Exception as error:  # a failed analysis is said on the page, never raised there
            log.exception("The analysis of %s (%s) failed", exp_id, kind)
            store.fail(
                db, exp_id, kind, self.worker_id, f"{type(error).__name__}: {error}.",
                datetime.now(UTC),
            )  # fmt: skip
        finally:
            finished.set()
            changed.set()
            ticker.join()
            db.close()
            self._done((exp_id, kind))
