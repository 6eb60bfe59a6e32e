"""Sessions: open or resume one, apply a writer's action, describe the state to the browser.

Each action is checked against the rules (:mod:`cyoa.cowriting.flow`) and recorded inside one
write transaction under the session's lock, reading the session's new events afresh, so
the check and the write cannot interleave with another action on the same session (from
another tab, thread or process). Only after the commit does the caller acknowledge the
action. An action
the rules refuse is refused on the committed state before the write lock is taken, so
refused actions never hold up another writer's.

The state of a session is its events folded by the rules. A :class:`Study` keeps the last
state it folded for each session (a few thousand sessions at most) and folds only the events
recorded since, by this process or any other, instead of the whole log for every action.
"""

from __future__ import annotations

import hashlib
import json
import random
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cyoa import store
from cyoa.cowriting import recording
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.assignment import (
    assign_adaptive,
    assign_pair,
    balanced_slot_plan,
    slot_systems,
)
from cyoa.cowriting.flow import (
    SLOTS,
    Event,
    Phase,
    RuleError,
    State,
    apply,
    check,
    check_round,
    is_slot,
)
from cyoa.cowriting.process import check as record_check
from cyoa.cowriting.process.store import load_operations, stored_through
from cyoa.cowriting.spec import Experiment, validate_survey
from cyoa.db.transactions import write_transaction
from cyoa.web.completion import shown_code
from cyoa.web.language import sentence
from cyoa.web.participants import NUL_SENTENCE, holds_nul, new_completion_code, new_token

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
# Sessions whose last folded state a Study keeps (a state is a few kilobytes: the story and
# the round's drafts); the least recently used is dropped first.
STATES_KEPT = 4096
_rng = random.SystemRandom()


@dataclass(frozen=True)
class Outcome:
    """The result of an accepted action: the new state and the recorded event
    (``duplicate``: nothing new was recorded, the action had been already)."""

    state: State
    event: Event
    seq: int
    duplicate: bool = False


class Refused(RuleError):
    """An action the rules refused, with the session's row and the committed state it was
    refused on: the reply shows that state without reading the session again (a third of
    the Socket.IO handlers' time went to re-reading it for refusals)."""

    def __init__(self, message: str, session: dict[str, Any], state: State) -> None:
        super().__init__(message)
        self.session = session
        self.state = state


@dataclass(frozen=True)
class _Accepted:
    """An action the rules accept on ``state`` (the session's event ``seq``): to record."""

    session: dict[str, Any]
    state: State
    seq: int
    event: Event
    extra: dict[str, Any] | None


class Study:
    """The writer-facing operations over one database and a set of experiments."""

    def __init__(
        self, database: str, experiments: dict[str, Experiment], seed_salt: str = ""
    ) -> None:
        self.database = database  # a SQLite path or a PostgreSQL URL (cyoa.store.connect)
        self.experiments = experiments
        # Empty (the default, and what a study uses): a round's seeds are drawn at random.
        # Set: they are derived from it, the writer and the system (``derived_seed``), so a
        # benchmark can replay the same generation work in two server configurations.
        self.seed_salt = seed_salt
        # Called after each committed action with (experiment id, session id, event type);
        # e.g. the researcher's live dashboard. A listener must not raise.
        self.listeners: list[Callable[[str, str, str], None]] = []
        # session id -> (number of the last event folded, the state after it)
        self._states: OrderedDict[str, tuple[int, State]] = OrderedDict()
        self._states_lock = threading.Lock()

    def db(self):
        return store.connect(self.database)

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
        self,
        exp: Experiment,
        participant: dict[str, str],
        user_agent: str = "",
        language: str | None = None,
    ) -> str | None:
        """A new session for the participant in ``exp``, or None when they have one already
        (also when another request created it a moment ago): who may resume that one is for
        the caller to decide (:mod:`cyoa.cowriting.pages`).

        ``participant`` has ``external_id`` and ``id_source`` (and optionally ``study_id``,
        ``platform_session_id``); ``language`` is the BCP 47 code of the language the
        writer's pages are shown in (the study's when not given), recorded in the
        ``session_started`` event: a study may let the browser choose among several, so the
        study's own is not enough."""
        db = self.db()
        try:
            if cowriting_store.find_session_for_participant(db, exp.id, participant["external_id"]):
                return None
            counts = cowriting_store.sessions_per_pair(db, exp.id)
            probability = None
            if exp.pairing == "adaptive":
                choices = cowriting_store.counted_choices(db, exp.id)
                pair, probability = assign_adaptive(exp.pairs, counts, choices, _rng)
            else:
                pair = assign_pair(exp.pairs, counts, _rng)
            first_event: dict[str, Any] = {
                "experiment": exp.id,
                "language": language or exp.language,
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
            if probability is not None:
                first_event["pair_probability"] = probability
            proposed = new_token()
            session_id = cowriting_store.create_session(
                db,
                session_id=proposed,
                exp_id=exp.id,
                participant=participant,
                pair=pair,
                completion_code=new_completion_code(),
                user_agent=user_agent,
                first_event=first_event,
                pair_probability=probability,
            )
        finally:
            db.close()
        if session_id != proposed:
            return None
        for listener in self.listeners:
            listener(exp.id, session_id, "session_started")
        return session_id

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
            return cowriting_store.get_session(db, session_id)
        finally:
            db.close()

    def state(self, session_id: str) -> tuple[dict[str, Any], State]:
        """The session's row and its state: its events folded by the rules."""
        db = self.db()
        try:
            session = cowriting_store.get_session(db, session_id)
            if session is None:
                raise RuleError(
                    sentence("This session does not exist. Please use your study link again.")
                )
            state, _ = self._fold(db, session)
            return session, state
        finally:
            db.close()

    def _fold(self, db, session: dict[str, Any]) -> tuple[State, int]:
        """The session's state and the number of its last event: the state kept from the
        last fold with the events recorded since folded in (all of them the first time)."""
        exp = self.experiments[session["experiment_id"]]
        with self._states_lock:
            kept = self._states.get(session["id"])
        if kept is not None and kept[1].limits == exp.limits:
            seq, state = kept
        else:
            seq, state = 0, State(limits=exp.limits)
        for e in cowriting_store.load_events(db, session["id"], after=seq):
            state = apply(state, Event(e["type"], e["payload"]))
            seq = e["seq"]
        self._keep(session["id"], seq, state)
        return state, seq

    def _keep(self, session_id: str, seq: int, state: State) -> None:
        """Remember a committed state (never an older one than is kept already)."""
        with self._states_lock:
            kept = self._states.get(session_id)
            if kept is None or kept[0] <= seq:
                self._states[session_id] = (seq, state)
            self._states.move_to_end(session_id)
            while len(self._states) > STATES_KEPT:
                self._states.popitem(last=False)

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
        returns the first outcome with ``duplicate=True``. So is a draft that repeats the
        slot's saved draft: there is nothing new to record."""
        if client_action_id is not None and (
            not isinstance(client_action_id, str)
            or len(client_action_id) > CLIENT_ACTION_ID_MAX
            or not client_action_id.isprintable()
        ):
            raise RuleError(sentence("The request was malformed. Please reload the page."))
        if holds_nul(payload):
            raise RuleError(NUL_SENTENCE)
        client_action_id = client_action_id or None  # an empty id is no id
        db = self.db()
        try:
            # Decided first on the committed state, without the write lock: a refusal (or a
            # resend) needs no lock. Then again under the lock, where nothing can come
            # between the check and the write.
            decided = self._decide(db, session_id, event_type, payload, client_action_id)
            if isinstance(decided, Outcome):
                return decided
            with write_transaction(db, lock=("session", session_id)):
                decided = self._decide(db, session_id, event_type, payload, client_action_id)
                if isinstance(decided, Outcome):
                    return decided
                seq = decided.seq + 1
                event = self._with_record_check(db, decided, payload)
                new_state = recording.record(
                    db,
                    decided.session,
                    seq,
                    decided.state,
                    event,
                    client_action_id=client_action_id,
                    extra=decided.extra,
                )
            self._keep(session_id, seq, new_state)
        finally:
            db.close()
        for listener in self.listeners:
            listener(decided.session["experiment_id"], session_id, event.type)
        return Outcome(new_state, event, seq)

    def _with_record_check(self, db, decided: _Accepted, payload: dict[str, Any]) -> Event:
        """The event to record, with the record check (:mod:`cyoa.cowriting.process.check`)
        in its payload as ``record`` when it is a line, a draft or a turn, the experiment
        keeps the keystroke record and the page said through which row it had recorded the
        text (``record_seq``). The check never refuses the action."""
        event, through = decided.event, payload.get("record_seq")
        exp = self.experiments[decided.session["experiment_id"]]
        if (
            event.type not in record_check.CHECKED
            or not exp.record_keystrokes
            or type(through) is not int
            or not 0 <= through < 2**31
        ):
            return event
        rnd, session_id = decided.state.current, decided.session["id"]
        slot = None if event.type == "line_submitted" else event.payload["slot"]
        outcome = record_check.record_outcome(
            event.type,
            load_operations(db, session_id, round_number=rnd.number, through=through),
            through=through,
            stored=stored_through(db, session_id, through),
            slot=slot,
            start="" if slot is None else rnd.suggestions.get(slot, ""),
            submitted=event.payload["text"],
        )
        return Event(event.type, {**event.payload, "record": outcome})

    def _decide(
        self,
        db,
        session_id: str,
        event_type: str,
        payload: Any,
        client_action_id: str | None,
    ) -> Outcome | _Accepted:
        """What an action comes to on the session's state as the database has it now: an
        outcome with nothing to record (a resend, an unchanged draft), or the event to
        record. Raises :class:`Refused` when the rules refuse it."""
        session = cowriting_store.get_session(db, session_id)
        if session is None:
            raise RuleError(sentence("This session does not exist. Please use your study link."))
        state, seq = self._fold(db, session)
        if client_action_id:
            previous = cowriting_store.find_action(db, session_id, client_action_id)
            if previous is not None:
                event = Event(previous["type"], previous["payload"])
                return Outcome(state, event, previous["seq"], duplicate=True)
        exp = self.experiments[session["experiment_id"]]
        try:
            if event_type in WRITER_ACTIONS:
                check_round(state, payload)
            payload, extra = self._enrich(db, exp, session, state, event_type, payload)
            event = check(state, event_type, payload)
        except RuleError as exc:
            raise Refused(str(exc), session, state) from None
        saved = state.current.drafts.get(event.payload.get("slot"))
        if event.type == "draft_saved" and saved == event.payload["text"]:
            return Outcome(state, event, seq, duplicate=True)
        return _Accepted(session, state, seq, event, extra)

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
            raise RuleError(sentence("The request was malformed. Please reload the page."))
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
                participant = cowriting_store.participant_external_id(db, session["participant_id"])
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
        if event_type in recording.SUGGESTION_OUTCOMES:
            asked = cowriting_store.generation_requested_at(db, session["id"], rnd.number)
            waited = None if asked is None else round(cowriting_store.seconds_since(asked), 4)
            return {**payload, "waited_seconds": waited}, None
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
        view["completion_code"] = shown_code(exp.completion_code, session["completion_code"])
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
