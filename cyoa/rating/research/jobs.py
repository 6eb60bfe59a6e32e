"""Generation jobs of the rating form (:mod:`cyoa.rating.research.admin`), and their status
on disk, so that a job's page outlives the process that ran it.

A job runs on a thread of one server process. Its status (state, stories done, the error,
the process that runs it, its attempt's folder) is written to ``<RATING_FILES>/_jobs/<id>.json``
when it starts, after each story and when it ends (``_jobs`` cannot be an experiment's id,
which starts with a letter or digit). A job whose status still says ``running`` while its
process is gone (:func:`cyoa.web.workers.worker_gone`: the server was restarted or killed)
was interrupted: nothing of it was stored, its attempt's folder is removed, and its page
says so. The app does that for every such job when it starts, and a page asking for one does
it too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cyoa.web.workers import worker_gone

JOBS_FOLDER = "_jobs"
# Finished jobs whose status is kept for their progress pages (the oldest are forgotten).
JOBS_KEPT = 20
_JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
CANCELLED = "Cancelled: nothing was stored, and its files were removed."
# Loading a model cannot be interrupted: a job cancelled while it waits for one stops once
# the model is ready, before its first story.
CANCELLING = (
    "Cancelling: nothing will be stored. The job stops before its next story (if a model is "
    "still loading, once it is ready: loading cannot be interrupted)."
)
INTERRUPTED = (
    "Interrupted: the server stopped while the stories were being generated, so nothing was "
    "stored. Start it again from the form."
)


@dataclass
class GenerationJob:
    """Stories being generated for a rating experiment, and what became of them: ``state`` is
    ``running``, ``created`` (the experiment is stored), ``failed`` (``error`` says why),
    ``cancelled`` (by the researcher) or ``interrupted`` (its process ended first). ``values``
    are the form as it was sent, to show it again after a failure (empty for a job read back
    from disk). ``root`` is the ``RATING_FILES`` folder its status is saved under."""

    id: str
    experiment: str
    total: int
    values: dict[str, Any]
    editing: bool
    root: Path
    folder: Path
    worker: str
    done: int = 0
    state: str = "running"
    error: str = ""
    cancel: threading.Event = field(default_factory=threading.Event, compare=False)

    def advance(self, _line: str) -> None:
        """One more story written (the ``log`` of :func:`generate_stories`)."""
        self.done += 1
        self.save()

    def end(self, state: str, error: str = "") -> None:
        """Record how the job ended: ``created``, ``failed``, ``cancelled`` or
        ``interrupted``."""
        self.state, self.error = state, error
        self.save()

    def to_dict(self) -> dict[str, Any]:
        """What the progress page shows (and ``/research/ratings/new/<job>.json`` sends)."""
        return {
            "experiment": self.experiment,
            "state": self.state,
            "done": self.done,
            "total": self.total,
            "message": f"Generated {self.done}/{self.total} stories.",
            "error": self.error,
        }

    def save(self) -> None:
        """Write the job's status file (whole, or not at all: a reader never sees half)."""
        status = {
            "id": self.id,
            "experiment": self.experiment,
            "total": self.total,
            "editing": self.editing,
            "folder": str(self.folder),
            "worker": self.worker,
            "done": self.done,
            "state": self.state,
            "error": self.error,
        }
        path = status_path(self.root, self.id)
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_suffix(".part")
        part.write_text(json.dumps(status), encoding="utf-8")
        os.replace(part, path)


def status_path(root: Path, job_id: str) -> Path:
    return root / JOBS_FOLDER / f"{job_id}.json"


def saved_job(root: Path, job_id: str) -> GenerationJob | None:
    """The job ``job_id`` as its status file tells it, or None when there is none (or the
    id could not be a job's). A running job whose process is gone is marked interrupted
    first (:func:`interrupt_if_gone`)."""
    if not _JOB_ID.fullmatch(job_id):
        return None
    try:
        status = json.loads(status_path(root, job_id).read_text(encoding="utf-8"))
        job = GenerationJob(
            id=job_id,
            experiment=str(status["experiment"]),
            total=int(status["total"]),
            values={},
            editing=bool(status["editing"]),
            root=root,
            folder=Path(status["folder"]),
            worker=str(status["worker"]),
            done=int(status["done"]),
            state=str(status["state"]),
            error=str(status["error"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    interrupt_if_gone(job)
    return job


def interrupt_if_gone(job: GenerationJob) -> None:
    """Mark ``job`` interrupted and remove its attempt's folder (only ever one under the
    ``RATING_FILES`` folder) when it is recorded as running but its process no longer runs."""
    if job.state == "running" and worker_gone(job.worker):
        if job.folder.resolve().is_relative_to(job.root.resolve()):
            shutil.rmtree(job.folder, ignore_errors=True)
        job.end("interrupted", INTERRUPTED)


def interrupt_orphans(root: Path) -> None:
    """At start: every saved job whose process is gone is marked interrupted and its folder
    removed, so no attempt of a killed server is left half made."""
    for path in sorted((root / JOBS_FOLDER).glob("*.json")):
        saved_job(root, path.stem)


def forget_old(root: Path) -> None:
    """Remove the status files of all but the :data:`JOBS_KEPT` newest jobs, never one that
    says it is running (in any process: its progress page reads it)."""
    paths = sorted((root / JOBS_FOLDER).glob("*.json"), key=lambda p: p.stat().st_mtime)
    ended = [p for p in paths if not _says_running(p)]
    for path in ended[: max(0, len(paths) - JOBS_KEPT)]:
        path.unlink(missing_ok=True)


def _says_running(path: Path) -> bool:
    try:
        return json.loads(path.read_text(encoding="utf-8")).get("state") == "running"
    except (OSError, ValueError, AttributeError):
        return False
