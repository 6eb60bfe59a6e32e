"""Keep a running study's sentences tagged, so that its analysis has nothing left to tag.

The text metrics need every sentence tagged by spaCy (about a millisecond a sentence per
core); tagged sentences are kept in the ``sentence_tags`` table
(:mod:`cyoa.cowriting.analysis.tag_cache`). :class:`BackgroundTagger` listens to the study: when a
writer submits a turn or the survey, it waits ``delay`` seconds (so that a burst of turns
makes one run), then runs ``python -m cyoa tag EXPERIMENT --workers 1 --nice 10`` in a
separate process, one experiment at a time. The separate, lower-priority process keeps spaCy
out of the web process's memory and leaves the cores to the models first. Nothing depends on
it: a sentence it has not tagged yet is tagged by the next ``analyze`` or dashboard refresh.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

from cyoa.paths import ROOT

log = logging.getLogger(__name__)

# The events after which a study has new text for the text metrics.
TEXT_EVENTS = frozenset({"turn_submitted", "survey_submitted"})
NICENESS = 10


def tag_command(database: str, experiment: str) -> tuple[list[str], dict[str, str]]:
    """The command that tags ``experiment``'s untagged sentences in ``database`` (a SQLite
    path or a PostgreSQL URL), and its environment: the database travels as
    ``CYOA_DATABASE`` there, because a command line (and the password in a URL) can be read
    by every user of the machine."""
    command = [sys.executable, "-m", "cyoa", "tag", experiment]
    command += ["--workers", "1", "--nice", str(NICENESS)]
    return command, {**os.environ, "CYOA_DATABASE": database}


class BackgroundTagger:
    """A Study listener that tags each experiment's new sentences in a background process.

    ``delay``: seconds between the first new turn and the run that tags it. ``timeout``: the
    longest a run may take before it is stopped (it is tried again after the next turn).
    ``runs`` and ``failures`` count finished runs (for the tests and for diagnosis).
    """

    def __init__(self, database: str, delay: float = 30.0, timeout: float = 600.0) -> None:
        self.database = database
        self.delay = delay
        self.timeout = timeout
        self.runs = 0
        self.failures = 0
        self._pending: set[str] = set()
        self._wake = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def __call__(self, exp_id: str, session_id: str, event_type: str) -> None:
        """Note that ``exp_id`` has new text after a writer's ``event_type``."""
        if event_type not in TEXT_EVENTS:
            return
        with self._wake:
            if self._stopped:
                return
            self._pending.add(exp_id)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="cyoa-tagger", daemon=True)
                self._thread.start()
            self._wake.notify()

    def stop(self) -> None:
        """Finish no more runs (one under way completes); returns at once."""
        with self._wake:
            self._stopped = True
            self._wake.notify()

    def _loop(self) -> None:
        while True:
            with self._wake:
                while not self._pending and not self._stopped:
                    self._wake.wait()
                if self._stopped:
                    return
                # Let the turns of the next `delay` seconds join this run.
                self._wake.wait_for(lambda: self._stopped, timeout=self.delay)
                if self._stopped:
                    return
                experiments = sorted(self._pending)
                self._pending.clear()
            for exp_id in experiments:
                self._tag(exp_id)

    def _tag(self, exp_id: str) -> None:
        command, environment = tag_command(self.database, exp_id)
        try:
            result = subprocess.run(
                command,
                cwd=ROOT,
                env=environment,
                capture_output=True,
                text=True,
                timeout=self.timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            self.failures += 1
            log.warning("Background tagging of %s did not finish: %s", exp_id, error)
            return
        if result.returncode != 0:
            self.failures += 1
            log.warning(
                "Background tagging of %s failed (exit %s): %s",
                exp_id,
                result.returncode,
                result.stderr.strip()[-2000:],
            )
            return
        self.runs += 1
        log.info("Background tagging of %s: %s", exp_id, result.stdout.strip().splitlines()[-1:])
