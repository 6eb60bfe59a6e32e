"""Sessions: open or resume one, apply a writer's action, describe the state to the browser.

Each action is checked against the rules (:mod:`cyoa.study.flow`) and recorded inside one
``BEGIN IMMEDIATE`` transaction, reading the session's events afresh, so the check and the
write cannot interleave with another action on the same session (from another tab, thread
or process). Only after the commit does the caller acknowledge the action.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyoa import store
from cyoa.experiments import Experiment, validate_survey
from cyoa.study import recording
from cyoa.study.assignment import assign_pair, balanced_slot_plan, slot_systems
from cyoa.study.flow import (
    SLOTS,
    Event,
    Phase,
    RuleError,
    State,
    check,
    is_slot,
    replay,
)

# Actions a browser may send; everything else (suggestion results) comes from the server.
WRITER_ACTIONS = frozenset(
    {
        "line_submitted",
        "suggestion_chosen",
        "draft_saved",
        "turn_submitted",
        "survey_submitted",
        "suggestions_retried",
    }
)
CLIENT_ACTION_ID_MAX = 64
_rng = random.SystemRandom()


@dataclass(frozen=True)
class Outcome:
    """The result of an accepted action: the new state and the recorded event."""

    state: State
    event: Event
    seq: int
    duplicate: bool = False


def new_token() -> str:
    """An unguessable identifier (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def new_completion_code() -> str:
    """A completion code a writer can copy by hand: 12 characters, about 60 bits."""
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    raw = "".join(secrets.choice(alphabet) for _ in range(12))
    return f"{raw[:4]}-{raw[4:8]}-{raw[8:]}"


class Study:
    """The writer-facing operations over one database and a set of experiments."""

    def __init__(
        self, db_path: Path, experiments: dict[str, Experiment], seed_salt: str = ""
    ) -> None:
        self.db_path = db_path
        self.experiments = experiments
        # Empty (the default, and what a study uses): a round's seeds are drawn at random.
        # Set: they are derived from it, the writer and the system (``derived_seed``), so a
        # benchmark can replay the same generation work in two server configurations.
        self.seed_salt = seed_salt
        # Called after each committed action with (experiment id, session id, event type);
        # e.g. the researcher's live dashboard. A listener must not raise.
        self.listeners: list[Callable[[str, str, str], None]] = []

    def db(self):
        return store.connect(self.db_path)

    def experiment(self, exp_id: str) -> Experiment | None:
        return self.experiments.get(exp_id)

    def add_experiment(self, exp: Experiment) -> None:
        """Store a new or changed experiment and serve it from now on."""
        db = self.db()
        try:
            store.upsert_experiment(db, exp.id, exp.title, exp.source)
        finally:
            db.close()
        self.experiments[exp.id] = exp

    # --- sessions -----------------------------------------------------------------------

    def open_session(
        self, exp: Experiment, participant: dict[str, str], user_agent: str = ""
    ) -> str:
        """The participant's session in ``exp``: their existing one, or a new one.

        ``participant`` has ``external_id`` and ``id_source`` (and optionally ``study_id``,
        ``platform_session_id``)."""
        db = self.db()
        try:
            existing = store.find_session_for_participant(db, exp.id, participant["external_id"])
            if existing:
                return existing
            pair = assign_pair(exp.pairs, store.sessions_per_pair(db, exp.id), _rng)
            first_event: dict[str, Any] = {
                "experiment": exp.id,
                "systems": list(pair),
                "slot_order": exp.slot_order,
                "limits": {
                    "rounds": exp.limits.rounds,
                    "min_chars": exp.limits.min_chars,
                    "max_chars": exp.limits.max_chars,
                },
            }
            if exp.slot_order == "balanced":
                first_event["slot_plan"] = balanced_slot_plan(exp.limits.rounds, _rng)
            session_id = store.create_session(
                db,
                session_id=new_token(),
                exp_id=exp.id,
                participant=participant,
                pair=pair,
                completion_code=new_completion_code(),
                user_agent=user_agent,
                first_event=first_event,
            )
        finally:
            db.close()
        for listener in self.listeners:
            listener(exp.id, session_id, "session_started")
        return session_id

    def find_participant_session(self, exp_id: str, external_id: str) -> str | None:
        db = self.db()
        try:
            return store.find_session_for_participant(db, exp_id, external_id)
        finally:
            db.close()

    def experiment_status(self, exp_id: str) -> str:
        """``open``, ``paused`` or ``closed`` (an experiment not in the database is closed)."""
        db = self.db()
        try:
            row = store.get_experiment(db, exp_id)
        finally:
            db.close()
        return row["status"] if row else "closed"

    def session_row(self, session_id: str) -> dict[str, Any] | None:
        db = self.db()
        try:
            return store.get_session(db, session_id)
        finally:
            db.close()

    def state(self, session_id: str) -> tuple[dict[str, Any], State]:
        """The session's row and its state rebuilt from its events."""
        db = self.db()
        try:
            session = store.get_session(db, session_id)
            if session is None:
                raise RuleError("This session does not exist. Please use your study link again.")
            state, _ = self._fold(db, session)
            return session, state
        finally:
            db.close()

    def _fold(self, db, session: dict[str, Any]) -> tuple[State, int]:
        exp = self.experiments[session["experiment_id"]]
        events = store.load_events(db, session["id"])
        state = replay(exp.limits, [Event(e["type"], e["payload"]) for e in events])
        return state, (events[-1]["seq"] if events else 0)

    # --- actions ------------------------------------------------------------------------

    def act(
        self,
        session_id: str,
        event_type: str,
        payload: dict[str, Any],
        client_action_id: str | None = None,
    ) -> Outcome:
        """Check and record one action; raises RuleError when it is not allowed.

        A resent action (same ``client_action_id``) is recorded once: the second call
        returns the first outcome with ``duplicate=True``."""
        if client_action_id is not None and (
            not isinstance(client_action_id, str) or len(client_action_id) > CLIENT_ACTION_ID_MAX
        ):
            raise RuleError("The request was malformed. Please reload the page.")
        client_action_id = client_action_id or None  # an empty id is no id
        db = self.db()
        try:
            with store.write_transaction(db):
                session = store.get_session(db, session_id)
                if session is None:
                    raise RuleError("This session does not exist. Please use your study link.")
                if client_action_id:
                    previous = store.find_action(db, session_id, client_action_id)
                    if previous is not None:
                        state, _ = self._fold(db, session)
                        event = Event(previous["type"], previous["payload"])
                        return Outcome(state, event, previous["seq"], duplicate=True)
                exp = self.experiments[session["experiment_id"]]
                state, last_seq = self._fold(db, session)
                payload, extra = self._enrich(db, exp, session, state, event_type, payload)
                event = check(state, event_type, payload)
                new_state = recording.record(
                    db,
                    session,
                    last_seq + 1,
                    state,
                    event,
                    client_action_id=client_action_id,
                    extra=extra,
                )
            outcome = Outcome(new_state, event, last_seq + 1)
        finally:
            db.close()
        for listener in self.listeners:
            listener(session["experiment_id"], session_id, event.type)
        return outcome

    def _enrich(
        self,
        db,
        exp: Experiment,
        session: dict[str, Any],
        state: State,
        event_type: str,
        payload: Any,
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """Add what only the server decides (slot order, seeds) and what the tables need."""
        if not isinstance(payload, dict):
            raise RuleError("The request was malformed. Please reload the page.")
        rnd = state.current
        if event_type == "line_submitted":
            pair = (session["system_a"], session["system_b"])
            if exp.slot_order == "balanced":
                flip = state.slot_plan[rnd.number - 1]
            else:
                flip = secrets.randbelow(2)  # the paper's server-side coin flip
            order = slot_systems(pair, flip)
            models = [exp.system(name).model.name for name in order]
            if self.seed_salt:
                participant = store.participant_external_id(db, session["participant_id"])
                seeds = [
                    derived_seed(self.seed_salt, exp.id, participant, rnd.number, system)
                    for system in order
                ]
            else:
                seeds = [secrets.randbelow(2**31) for _ in SLOTS]
            payload = {
                "text": payload.get("text"),
                "slot_systems": order,
                "slot_models": models,
                "seeds": seeds,
            }
            return payload, None
        if event_type == "survey_submitted":
            answers = validate_survey(payload.get("answers"), exp.survey)
            questions = {i.id: (i.kind, i.text, exp.likert_labels) for i in exp.survey}
            return answers, {"questions": questions}
        if event_type in ("suggestion_chosen", "turn_submitted"):
            slot = payload.get("slot") if event_type == "suggestion_chosen" else rnd.chosen_slot
            if is_slot(slot) and len(rnd.slot_systems) == len(SLOTS):
                system = exp.system(rnd.slot_systems[slot - 1])
                extra = {
                    "system": system.name,
                    "model": system.model.name,
                    "suggestion": rnd.suggestions.get(slot),
                }
                return payload, extra
        return payload, None


def client_view(
    exp: Experiment,
    session: dict[str, Any],
    state: State,
    live: dict[int, str] | None = None,
    models_ready: bool = True,
) -> dict[str, Any]:
    """What the writer's page needs to draw itself, and nothing more: no model names
    (the writer is blind to which system is in which slot)."""
    rnd = state.current
    live = live or {}
    suggestions = []
    if rnd.writer_line is not None:
        for slot in SLOTS:
            if slot in rnd.suggestions:
                suggestions.append({"slot": slot, "status": "done", "text": rnd.suggestions[slot]})
            elif slot in rnd.failures:
                suggestions.append({"slot": slot, "status": "failed", "text": ""})
            else:
                suggestions.append({"slot": slot, "status": "pending", "text": live.get(slot, "")})
    story = []
    for r in state.rounds:
        if r.writer_line is not None:
            story.append({"author": "writer", "text": r.writer_line})
        if r.final_text is not None:
            story.append({"author": "model", "text": r.final_text})
    view = {
        "phase": state.phase.value,
        "round": rnd.number,
        "rounds": exp.limits.rounds,
        "limits": {"min": exp.limits.min_chars, "max": exp.limits.max_chars},
        "story": story,
        "current": {
            "writer_line": rnd.writer_line,
            "suggestions": suggestions,
            "chosen_slot": rnd.chosen_slot,
            "drafts": {str(k): v for k, v in rnd.drafts.items()},
        },
        "models_ready": models_ready,
    }
    if state.phase in (Phase.SURVEY, Phase.DONE):
        view["survey"] = [{"id": i.id, "kind": i.kind, "text": i.text} for i in exp.survey]
        view["likert_labels"] = list(exp.likert_labels)
    if state.phase == Phase.DONE:
        view["completion_code"] = session["completion_code"]
    return view


def derived_seed(salt: str, exp_id: str, participant: str, round_number: int, system: str) -> int:
    """A system's seed in a round when the app runs with a seed salt (``CYOA_SEED_SALT``):
    the first 31 bits of SHA-256 of the salt, the experiment, the participant's external id,
    the round number and the system, so the same writer in the same round gets the same
    seed from a system on any server given the same salt, whichever slot the system is shown
    in (the slot order is still drawn at random), and so the same suggestion on the same
    machine. Only for benchmarks and demonstrations: a study draws its seeds at random."""
    key = json.dumps([salt, exp_id, participant, round_number, system]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") >> 1
