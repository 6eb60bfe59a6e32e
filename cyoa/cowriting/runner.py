"""Runs the two systems for a round at the same time and records what they wrote.

When a writer submits their line, :meth:`SuggestionRunner.start` launches one background task
per slot. Each streams its partial text to the writer's room as it is generated and, when
done, records ``suggestion_completed`` (or ``suggestion_failed`` when its tries are spent, see
:data:`ATTEMPTS`) through :class:`~cyoa.cowriting.service.Study`. Partial text is also kept in
memory so a writer who reloads mid-generation sees it at once. After a server restart,
:meth:`resume` restarts the slots that were still pending (with their recorded seeds, so on
the same machine the text is the same).

Several worker processes may serve the same writer (two tabs on two workers, or a reconnect
that lands on another worker). Before generating, a task claims the slot in the database
(:func:`cyoa.cowriting.store.claim_generation`): a slot claimed by a live worker is left to it, and
this process only watches until it is settled; a claim whose holder is a process of this
host that no longer runs (:func:`cyoa.web.workers.worker_gone`: a server killed and
restarted) is taken over at once, and one whose heartbeat is older than
:func:`stale_after_seconds` (a worker on another host that died) too. The partial text
(:meth:`SuggestionRunner.live_text`) is known only to the process that generates it; the
finished suggestion reaches every worker through the database.

A slot's task never strands its writer: a finished suggestion that cannot be recorded
because the database stays locked or cannot be reached (:func:`cyoa.db.outage.is_outage`:
a PostgreSQL server restarting, too) is recorded as soon as it can be
(:data:`RECORD_PATIENCE_SECONDS`), and a task that dies (the database locked before the
suggestion was generated, or a bug) is started again after a pause
(:data:`RESTART_DELAYS_SECONDS`), so the writer's page receives the suggestions without a
reload.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from cyoa import store
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.flow import Phase, RuleError, State
from cyoa.cowriting.service import Study
from cyoa.cowriting.spec import System
from cyoa.db.outage import is_outage, reason
from cyoa.generation import Suggestion, SuggestionError, generate_suggestion
from cyoa.web.workers import new_worker_id, worker_gone

log = logging.getLogger(__name__)
# A slot's tries before the writer is told it failed. A text too short for a turn (the model
# ended after "What is it?") is drawn again with the next seed, up to ATTEMPTS draws in all:
# such a draw costs a few tokens, and redrawing keeps the model's own distribution, taken
# over the texts a turn accepts (rejection sampling). SmolLM2 ended that early in 16 of 200
# draws on a first-round story (6 of 200 on a two-turn one), so two draws left about 1 slot in
# 160 failed; five leave about 1 in 300,000.
# A fault (timeout, backend error) costs up to the experiment's timeout, so it is tried
# FAULT_ATTEMPTS times at most.
ATTEMPTS = 5
FAULT_ATTEMPTS = 2
# How often a process that leaves a slot to another worker checks whether it is settled.
WATCH_SECONDS = 1.0
# Pauses before a slot whose task died is started again: quick at first (a lock held for a
# moment), then every 30 s, about ten minutes in all. After that only the writer's next
# join starts it again.
RESTART_DELAYS_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0) + (30.0,) * 18
# How long a finished suggestion keeps trying to be recorded through a locked database
# (each try waits up to the busy timeout), and the pause between two tries.
RECORD_PATIENCE_SECONDS = 600.0
RECORD_PAUSE_SECONDS = 0.5


def stale_after_seconds(suggestion_timeout_seconds: float) -> float:
    """Seconds without a heartbeat after which a generation claim is taken to belong to a
    dead worker: twice the suggestion timeout (a heartbeat is written before each attempt,
    and an attempt lasts at most the timeout) plus the database's busy timeout (recording
    the result may wait that long for the write lock)."""
    return 2 * suggestion_timeout_seconds + store.BUSY_TIMEOUT_SECONDS


class SuggestionTimeout(RuntimeError):
    pass


class SuggestionRunner:
    """Background generation for every session of a :class:`Study`.

    ``emit(event, data, room)`` sends to the browser; ``on_settled(session_id)`` is called
    after a suggestion is recorded so the caller can push the new state. ``worker_id``
    names this process in the database's generation claims (default: :func:`new_worker_id`).
    """

    def __init__(
        self,
        study: Study,
        pool: Any,
        emit: Callable[[str, dict[str, Any], str], None],
        on_settled: Callable[[str], None],
        start_task: Callable[..., Any] | None = None,
        worker_id: str | None = None,
    ):
        self.study = study
        self.worker_id = worker_id or new_worker_id()
        self.pool = pool
        self.emit = emit
        self.on_settled = on_settled
        self.start_task = start_task or _start_thread
        self._lock = threading.Lock()
        self._live: dict[tuple[str, int, int], str] = {}
        self._running: set[tuple[str, int, int]] = set()
        self._idle = threading.Condition(self._lock)

    def live_text(self, session_id: str, round_number: int) -> dict[int, str]:
        """Partial text of the slots still generating for this session's round."""
        with self._lock:
            return {
                slot: text
                for (sid, rnd, slot), text in self._live.items()
                if sid == session_id and rnd == round_number
            }

    def start(self, session_id: str, state: State) -> None:
        """Generate every pending slot of the current round that is not already running, in
        this process or (by its claim in the database) in another live worker."""
        if state.phase != Phase.SUGGESTING:
            return
        rnd = state.current
        story = state.story()
        for slot in rnd.pending_slots():
            key = (session_id, rnd.number, slot)
            with self._lock:
                if key in self._running:
                    continue
                self._running.add(key)
                self._live[key] = ""
            self.start_task(self._run_slot, session_id, rnd.number, slot, story)

    resume = start

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no generation is running (used at shutdown and in tests)."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def _run_slot(self, session_id: str, round_number: int, slot: int, story: list[str]) -> None:
        key = (session_id, round_number, slot)
        try:
            for delay in (*RESTART_DELAYS_SECONDS, None):
                try:
                    self._generate_and_record(session_id, round_number, slot, story)
                    return
                except Exception as exc:  # noqa: BLE001 - a crash must never leave a writer stuck
                    if is_outage(exc):
                        log.warning(
                            "generation of %s stopped: the database said %r", key, reason(exc)
                        )
                    else:
                        log.exception("generation task crashed for %s", key)
                if delay is None:
                    log.error("generation of %s given up; the writer's next join restarts it", key)
                    return
                log.info("generation of %s starts again in %g s", key, delay)
                time.sleep(delay)
        finally:
            with self._idle:
                self._running.discard(key)
                self._live.pop(key, None)
                self._idle.notify_all()
            self.on_settled(session_id)

    def _generate_and_record(
        self, session_id: str, round_number: int, slot: int, story: list[str]
    ) -> None:
        while True:
            session, state = self.study.state(session_id)
            exp = self.study.experiments[session["experiment_id"]]
            rnd = state.current
            if rnd.number != round_number or slot not in rnd.pending_slots():
                return
            line, last_attempt = self._round_history(session_id, round_number, slot)
            # Attempts are numbered across the writer's retries: each has its own seed.
            first = last_attempt + 1
            claim = (session_id, round_number, slot, first)
            if self._claim(claim, stale_after_seconds(exp.suggestion_timeout_seconds)):
                break
            # Another live worker generates this slot. Look again in a moment: it may be
            # settled, retried by the writer, or left behind by a worker that died.
            time.sleep(WATCH_SECONDS)
        system = exp.system(rnd.slot_systems[slot - 1])
        base_seed = line["seeds"][slot - 1]
        error = ""
        faults = 0
        attempt = first
        for attempt in range(first, first + ATTEMPTS):
            if attempt > first and not self._heartbeat(claim):
                log.warning("slot %s was taken over by another worker; stopping here", claim)
                return
            seed = base_seed + attempt - 1

            def on_text(text: str, _key=(session_id, round_number, slot)) -> None:
                with self._lock:
                    self._live[_key] = text
                self.emit(
                    "suggestion_progress",
                    {"round": round_number, "slot": slot, "text": text},
                    session_id,
                )

            try:
                suggestion = self._attempt(exp, system, story, seed, on_text)
            except Exception as exc:  # noqa: BLE001 - any backend fault counts as a failed try
                error = f"{type(exc).__name__}: {exc}"
                log.warning("slot %s attempt %s failed: %s", slot, attempt, error)
                if not isinstance(exc, SuggestionError):
                    faults += 1
                    if faults == FAULT_ATTEMPTS:
                        break
                continue
            payload = _completed(round_number, slot, attempt, system.name, suggestion)
            self._record(session_id, "suggestion_completed", payload)
            return
        payload = _failed(round_number, slot, attempt, system, base_seed + attempt - 1, error)
        self._record(session_id, "suggestion_failed", payload)

    def _claim(self, claim: tuple[str, int, int, int], stale_after: float) -> bool:
        """Whether this process now holds the claim on the slot's generation (it was free,
        already ours, or stale), rather than another live worker."""
        db = self.study.db()
        try:
            holder = cowriting_store.claim_generation(
                db, *claim, self.worker_id, stale_after, holder_gone=worker_gone
            )
            return holder is None
        finally:
            db.close()

    def _heartbeat(self, claim: tuple[str, int, int, int]) -> bool:
        db = self.study.db()
        try:
            return cowriting_store.heartbeat_generation(db, *claim, self.worker_id)
        finally:
            db.close()

    def _attempt(
        self,
        exp: Any,
        system: Any,
        story: list[str],
        seed: int,
        on_text: Callable[[str], None],
    ) -> Suggestion:
        """One generation, given at most the experiment's timeout. It runs in a thread of
        its own, watched from here, so a backend that hangs (even inside one forward pass)
        cannot hold the writer: after the timeout the attempt fails, the thread is told to
        stop, and anything it still produces is ignored."""
        timeout = exp.suggestion_timeout_seconds
        cancelled = threading.Event()
        outcome: dict[str, Any] = {}

        def forward(text: str) -> None:
            if not cancelled.is_set():
                on_text(text)

        def work() -> None:
            try:
                backend = self.pool.get(system.model.name, timeout=timeout)
                outcome["suggestion"] = generate_suggestion(
                    backend,
                    system,
                    story,
                    seed,
                    min_chars=exp.limits.min_chars,
                    max_chars=exp.limits.max_chars,
                    on_text=forward,
                    should_stop=cancelled.is_set,
                )
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                outcome["error"] = exc

        worker = threading.Thread(target=work, daemon=True, name=f"generate-{system.name}")
        worker.start()
        worker.join(timeout)
        if worker.is_alive():
            cancelled.set()
            raise SuggestionTimeout(f"no suggestion within {timeout:g} s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["suggestion"]

    def _round_history(
        self, session_id: str, round_number: int, slot: int
    ) -> tuple[dict[str, Any], int]:
        """The round's ``line_submitted`` payload (slot order, seeds) and the number of
        this slot's last attempt in this round (0 before any; a recorded failure carries
        the number of the attempt that ended its run)."""
        db = self.study.db()
        try:
            events = [
                e
                for e in cowriting_store.load_events(db, session_id)
                if e["payload"].get("round") == round_number
            ]
        finally:
            db.close()
        line = next(e["payload"] for e in events if e["type"] == "line_submitted")
        last = max(
            (
                e["payload"].get("attempt", 0)
                for e in events
                if e["type"] == "suggestion_failed" and e["payload"]["slot"] == slot
            ),
            default=0,
        )
        return line, last

    def _record(self, session_id: str, event_type: str, payload: dict[str, Any]) -> None:
        """Record the slot's outcome, trying again while the database cannot be reached (up to
        :data:`RECORD_PATIENCE_SECONDS`): the suggestion is written, it must not be lost."""
        deadline = time.monotonic() + RECORD_PATIENCE_SECONDS
        while True:
            try:
                self.study.act(session_id, event_type, payload)
                return
            except RuleError as exc:
                # The round moved on meanwhile (e.g. a duplicate task after a restart).
                log.info("suggestion for %s not recorded: %s", session_id, exc)
                return
            except Exception as exc:
                if not is_outage(exc) or time.monotonic() >= deadline:
                    raise
                log.warning(
                    "suggestion for %s waits to be recorded: the database said %r",
                    session_id,
                    reason(exc),
                )
                time.sleep(RECORD_PAUSE_SECONDS)


def _start_thread(fn: Callable[..., Any], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=fn, args=args, daemon=True)
    thread.start()
    return thread


def _completed(
    round_number: int, slot: int, attempt: int, system: str, suggestion: Suggestion
) -> dict[str, Any]:
    """The payload of a ``suggestion_completed`` event (times in seconds, to 0.1 ms)."""
    return {
        "round": round_number,
        "slot": slot,
        "attempt": attempt,
        "system": system,
        "text": suggestion.text,
        "raw_text": suggestion.raw_text,
        "model": suggestion.model,
        "model_version": suggestion.model_version,
        "weights_file": suggestion.weights_file,
        "sampling": suggestion.sampling,
        "seed": suggestion.seed,
        "generation_seconds": round(suggestion.generation_seconds, 4),
        "first_token_seconds": (
            None
            if suggestion.first_token_seconds is None
            else round(suggestion.first_token_seconds, 4)
        ),
        "token_count": suggestion.token_count,
        "sent_settings": suggestion.sent_settings,
    }


def _failed(
    round_number: int, slot: int, attempt: int, system: System, seed: int, error: str
) -> dict[str, Any]:
    """The payload of a ``suggestion_failed`` event: the last attempt, its seed and error."""
    return {
        "round": round_number,
        "slot": slot,
        "attempt": attempt,
        "system": system.name,
        "model": system.model.name,
        "sampling": system.sampling.to_dict(),
        "seed": seed,
        "error": error,
    }
