"""The writer's journey as a pure state machine.

A session is a sequence of events. :func:`check` decides whether a writer's (or the
generator's) action is allowed in the current state and returns the event to record;
:func:`apply` folds a recorded event into the state. :func:`replay` rebuilds a session from
its stored events, which is how resume, audit and replay work. Nothing here touches the
network, the database or a model, so every rule is testable on its own.

One round (Clark & Smith 2021, §3): the writer writes a line alone, two systems each suggest
a continuation (shown in a random slot order), the writer chooses one, may switch, edits it
and adds it. After the last round comes the survey.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from cyoa.web.language import sentence

SLOTS = (1, 2)
# A draft may overshoot the turn limit while the writer is editing; the limit is enforced
# when the turn is submitted. This cap only protects the server from huge payloads.
DRAFT_MAX_CHARS = 5000
_SURROGATE = re.compile("[\ud800-\udfff]")
STALE_ROUND = sentence(
    "Your story has gone on since this page last saw it (in another tab or window): the page "
    "now shows your story as it is saved."
)


class Phase(StrEnum):
    WRITING = "writing"  # the writer writes their own line
    SUGGESTING = "suggesting"  # the systems are generating
    CHOOSING = "choosing"  # suggestions shown: choose, switch, edit, add
    SURVEY = "survey"
    DONE = "done"


class RuleError(ValueError):
    """An action the rules do not allow; the message is shown to the writer as is."""


@dataclass(frozen=True)
class Limits:
    rounds: int = 5
    min_chars: int = 20
    max_chars: int = 260


@dataclass(frozen=True)
class Round:
    number: int
    writer_line: str | None = None
    slot_systems: tuple[str, ...] = ()
    suggestions: dict[int, str] = field(default_factory=dict)
    failures: dict[int, str] = field(default_factory=dict)
    chosen_slot: int | None = None
    drafts: dict[int, str] = field(default_factory=dict)
    final_text: str | None = None

    def pending_slots(self) -> list[int]:
        """Slots still waiting for a suggestion (neither finished nor failed)."""
        return [s for s in SLOTS if s not in self.suggestions and s not in self.failures]


@dataclass(frozen=True)
class State:
    limits: Limits
    phase: Phase = Phase.WRITING
    rounds: tuple[Round, ...] = (Round(number=1),)
    survey: dict[str, Any] | None = None
    # Per round, 1 if the pair's second system takes slot 1 (only for balanced slot order).
    slot_plan: tuple[int, ...] = ()

    @property
    def current(self) -> Round:
        return self.rounds[-1]

    def story(self) -> list[str]:
        """The story so far as its turns in order: writer, model, writer, model, …"""
        turns: list[str] = []
        for r in self.rounds:
            if r.writer_line is not None:
                turns.append(r.writer_line)
            if r.final_text is not None:
                turns.append(r.final_text)
        return turns


@dataclass(frozen=True)
class Event:
    type: str
    payload: dict[str, Any]


def normalize_text(text: str) -> str:
    """Text as it is stored: Unicode NFC, control characters and unpaired surrogates (half
    of a character, which a browser can send but no database can store) removed, newlines
    and tabs as spaces, surrounding whitespace stripped. Otherwise exactly as typed."""
    if not isinstance(text, str):
        raise RuleError(sentence("The text is missing. Please type your line and try again."))
    text = unicodedata.normalize("NFC", text)
    cleaned = []
    for ch in text:
        if ch in "\n\r\t":
            cleaned.append(" ")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs") and ch not in "\u200d":
            continue
        else:
            cleaned.append(ch)
    return "".join(cleaned).strip()


def without_unpaired_surrogates(text: str) -> str:
    """``text`` without unpaired surrogates (in a Python string every surrogate is unpaired:
    a pair sent as JSON escapes arrives as the one character it encodes)."""
    return _SURROGATE.sub("", text)


def validate_turn(text: Any, limits: Limits) -> str:
    """The normalised turn, or a RuleError saying how to fix its length."""
    # A text twice the limit is too long whatever normalising would strip from it; refusing
    # it here keeps a huge paste from costing the server a pass over every character.
    if isinstance(text, str) and len(text) > 2 * max(limits.max_chars, DRAFT_MAX_CHARS):
        raise RuleError(sentence("Too long — at most %(n)s characters.", n=limits.max_chars))
    text = normalize_text(text)
    if len(text) < limits.min_chars:
        raise RuleError(sentence("Too short — at least %(n)s characters.", n=limits.min_chars))
    if len(text) > limits.max_chars:
        raise RuleError(sentence("Too long — at most %(n)s characters.", n=limits.max_chars))
    return text


def is_slot(value: Any) -> bool:
    """True for the int 1 or 2 (not True, 1.0 or "1", which compare equal in Python)."""
    return type(value) is int and value in SLOTS


def _slot(value: Any) -> int:
    if not is_slot(value):
        raise RuleError(sentence("That suggestion does not exist. Please reload the page."))
    return value


def _require(state: State, *phases: Phase) -> None:
    if state.phase not in phases:
        messages = {
            Phase.WRITING: sentence("Please write your own line first."),
            Phase.SUGGESTING: sentence(
                "The suggestions are still being written. Please wait a moment."
            ),
            Phase.CHOOSING: sentence("Please choose a suggestion and add it to the story first."),
            Phase.SURVEY: sentence("The story is finished; please answer the survey."),
            Phase.DONE: sentence("This session is complete. Thank you!"),
        }
        raise RuleError(messages[state.phase])


def check_round(state: State, payload: Any) -> None:
    """Refuse a writer's action made for another round than the current one.

    The page names the round it made an action in (``payload["round"]``; optional, for
    clients that do not): an action kept by a page that was offline while the story went on
    in another tab or window is refused rather than recorded in a round it was not meant
    for (a turn written for round 1 kept as round 2's, say). The stored story wins."""
    if not isinstance(payload, dict) or "round" not in payload:
        return
    meant = payload["round"]
    if type(meant) is not int:
        raise RuleError(sentence("The request was malformed. Please reload the page."))
    if meant != state.current.number:
        raise RuleError(STALE_ROUND)


def check(state: State, event_type: str, payload: dict[str, Any]) -> Event:
    """Validate an action against the rules and return the event to record.

    Raises :class:`RuleError` with a message for the writer when the action is not allowed.
    Server-only fields (slot order, seeds, suggestion metadata) must already be in
    ``payload``; this function checks the rules, it does not invent data.
    """
    if not isinstance(payload, dict):
        raise RuleError(sentence("The request was malformed. Please reload the page."))
    rnd = state.current
    if event_type == "line_submitted":
        _require(state, Phase.WRITING)
        text = validate_turn(payload.get("text"), state.limits)
        slots = tuple(payload.get("slot_systems", ()))
        if len(slots) != len(SLOTS):
            raise ValueError("line_submitted needs one system per slot")
        return Event(event_type, {**payload, "round": rnd.number, "text": text})
    if event_type in ("suggestion_completed", "suggestion_failed"):
        _require(state, Phase.SUGGESTING)
        slot = _slot(payload.get("slot"))
        if payload.get("round") != rnd.number or slot not in rnd.pending_slots():
            raise RuleError(sentence("That suggestion is no longer awaited."))
        return Event(event_type, payload)
    if event_type == "suggestions_retried":
        _require(state, Phase.SUGGESTING)
        if not rnd.failures:
            raise RuleError(sentence("Nothing to retry: the suggestions are still being written."))
        return Event(event_type, {"round": rnd.number, "slots": sorted(rnd.failures)})
    if event_type == "suggestion_chosen":
        _require(state, Phase.CHOOSING)
        slot = _slot(payload.get("slot"))
        if slot not in rnd.suggestions:
            raise RuleError(
                sentence("That suggestion could not be written; please choose the other one.")
            )
        if slot == rnd.chosen_slot:
            raise RuleError(sentence("That suggestion is already chosen."))
        return Event(
            event_type,
            {"round": rnd.number, "slot": slot, "switch": rnd.chosen_slot is not None},
        )
    if event_type == "draft_saved":
        _require(state, Phase.CHOOSING)
        slot = _slot(payload.get("slot"))
        if slot not in rnd.suggestions:
            raise RuleError(sentence("That suggestion does not exist. Please reload the page."))
        text = payload.get("text")
        if not isinstance(text, str):
            raise RuleError(sentence("The draft is missing its text."))
        if len(text) > DRAFT_MAX_CHARS:
            raise RuleError(
                sentence(
                    "The draft is too long (more than %(n)s characters). Please shorten it.",
                    n=DRAFT_MAX_CHARS,
                )
            )
        text = without_unpaired_surrogates(text)
        return Event(event_type, {"round": rnd.number, "slot": slot, "text": text})
    if event_type == "turn_submitted":
        _require(state, Phase.CHOOSING)
        if rnd.chosen_slot is None:
            raise RuleError(sentence("Please choose one of the suggestions first."))
        text = validate_turn(payload.get("text"), state.limits)
        return Event(event_type, {"round": rnd.number, "slot": rnd.chosen_slot, "text": text})
    if event_type == "survey_submitted":
        _require(state, Phase.SURVEY)
        return Event(event_type, payload)
    raise RuleError(sentence("Unknown action. Please reload the page."))


def apply(state: State, event: Event) -> State:
    """Fold a recorded (already checked) event into the state."""
    p = event.payload
    rnd = state.current
    if event.type == "line_submitted":
        rnd = replace(rnd, writer_line=p["text"], slot_systems=tuple(p["slot_systems"]))
        return replace(state, phase=Phase.SUGGESTING, rounds=(*state.rounds[:-1], rnd))
    if event.type == "suggestion_completed":
        rnd = replace(rnd, suggestions={**rnd.suggestions, p["slot"]: p["text"]})
        return _after_suggestion(state, rnd)
    if event.type == "suggestion_failed":
        rnd = replace(rnd, failures={**rnd.failures, p["slot"]: p.get("error", "")})
        return _after_suggestion(state, rnd)
    if event.type == "suggestions_retried":
        failures = {s: e for s, e in rnd.failures.items() if s not in p["slots"]}
        rnd = replace(rnd, failures=failures)
        return replace(state, phase=Phase.SUGGESTING, rounds=(*state.rounds[:-1], rnd))
    if event.type == "suggestion_chosen":
        slot = p["slot"]
        drafts = rnd.drafts if slot in rnd.drafts else {**rnd.drafts, slot: rnd.suggestions[slot]}
        rnd = replace(rnd, chosen_slot=slot, drafts=drafts)
        return replace(state, rounds=(*state.rounds[:-1], rnd))
    if event.type == "draft_saved":
        rnd = replace(rnd, drafts={**rnd.drafts, p["slot"]: p["text"]})
        return replace(state, rounds=(*state.rounds[:-1], rnd))
    if event.type == "turn_submitted":
        rnd = replace(rnd, final_text=p["text"])
        rounds = (*state.rounds[:-1], rnd)
        if rnd.number >= state.limits.rounds:
            return replace(state, phase=Phase.SURVEY, rounds=rounds)
        return replace(state, phase=Phase.WRITING, rounds=(*rounds, Round(rnd.number + 1)))
    if event.type == "survey_submitted":
        return replace(state, phase=Phase.DONE, survey=dict(p))
    if event.type == "session_started":
        return replace(state, slot_plan=tuple(p.get("slot_plan", ())))
    return state


def _after_suggestion(state: State, rnd: Round) -> State:
    rounds = (*state.rounds[:-1], rnd)
    # The writer may choose as soon as every slot has settled and at least one succeeded;
    # a round where one system failed is playable with the other (and marked as such).
    if not rnd.pending_slots() and rnd.suggestions:
        return replace(state, phase=Phase.CHOOSING, rounds=rounds)
    return replace(state, rounds=rounds)


def replay(limits: Limits, events: list[Event]) -> State:
    """The state after ``events``, in order, starting from a fresh session."""
    state = State(limits=limits)
    for event in events:
        state = apply(state, event)
    return state
