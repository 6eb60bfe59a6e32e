"""The rater's journey as a pure state machine, the same shape as the writer's
(:mod:`cyoa.cowriting.flow`): :func:`check` decides whether an action is allowed and returns the
event to record, :func:`apply` folds a recorded event into the state, :func:`replay` rebuilds
a rater from their stored events (resume, audit, exports).

A rater is assigned stories when they start (``rater_started``, decided by the server: the
stories in order and, per story, the order of its questions). For each story in turn: the
server records when it was first shown (``story_shown``: time on task is measured from it),
the rater answers its questions in any order and may change an answer (``answer_given``, the
last one counts), and finishes the story when every required question is answered
(``story_finished``). After the last story the rater is done.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from cyoa.rating.instruments import Instrument, InstrumentError, Item
from cyoa.web.language import plural_sentence, sentence

# "At least a sentence" (TTCW asks 1–3 sentences): enough words to say why.
RATIONALE_MIN_WORDS = 5
RATIONALE_MAX_CHARS = 2000
TEXT_MAX_CHARS = 5000


class Phase(StrEnum):
    RATING = "rating"
    DONE = "done"


class RuleError(ValueError):
    """An action the rules do not allow; the message is shown to the rater as is."""


@dataclass(frozen=True)
class Event:
    type: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    value: float | str
    rationale: str | None = None


@dataclass(frozen=True)
class StoryTask:
    """One assigned story: the ids of its questions in the order shown, its answers so far,
    whether it was shown and finished."""

    story_id: str
    questions: tuple[str, ...]
    answers: dict[str, Answer] = field(default_factory=dict)
    shown: bool = False
    finished: bool = False

    def unanswered(self, required: frozenset[str]) -> list[str]:
        """The required questions of this story not answered yet, in order."""
        return [q for q in self.questions if q in required and q not in self.answers]


@dataclass(frozen=True)
class RaterState:
    phase: Phase = Phase.RATING
    tasks: tuple[StoryTask, ...] = ()

    @property
    def current(self) -> StoryTask | None:
        """The first story not finished yet (None when done)."""
        return next((task for task in self.tasks if not task.finished), None)

    @property
    def position(self) -> int:
        """1-based number of the current story (``len(tasks)`` when done)."""
        return sum(1 for task in self.tasks if task.finished) + (self.current is not None)


@dataclass(frozen=True)
class Questions:
    """What a rating study asks: its instrument's items, and the attention checks (extra
    items, scored by :mod:`cyoa.rating.quality`, not by the instrument's analysis)."""

    instrument: Instrument
    checks: tuple[Item, ...] = ()

    def item(self, item_id: str) -> Item:
        for check in self.checks:
            if check.id == item_id:
                return check
        return self.instrument.item(item_id)

    def required(self) -> frozenset[str]:
        """Every question but free-text ones must be answered before a story is finished."""
        items = (*self.instrument.items, *self.checks)
        return frozenset(item.id for item in items if item.kind != "text")

    def parse(self, item_id: str, raw: object) -> float | str:
        return self.item(item_id).parse(raw, self.instrument.id)


def check(state: RaterState, questions: Questions, event_type: str, payload: Any) -> Event:
    """Validate a rater's action and return the event to record; :class:`RuleError` with a
    sentence for the rater otherwise. Server-decided events (``rater_started``,
    ``story_shown``) are checked for their place in the journey only."""
    if not isinstance(payload, dict):
        raise RuleError(sentence("The request was malformed. Please reload the page."))
    if event_type == "rater_started":
        if state.tasks:
            raise RuleError(sentence("You have started already."))
        return Event(event_type, payload)
    if state.phase == Phase.DONE:
        raise RuleError(sentence("You have rated every story of this study. Thank you!"))
    task = state.current
    story = payload.get("story")
    if task is None or story != task.story_id:
        raise RuleError(sentence("That story is not the one to rate now. Please reload the page."))
    if event_type == "story_shown":
        return Event(event_type, {"story": story})
    if not task.shown:
        raise RuleError(sentence("Please reload the page to see the story first."))
    if event_type == "answer_given":
        return Event(event_type, _answer(task, questions, payload))
    if event_type == "story_finished":
        missing = task.unanswered(questions.required())
        if missing:
            raise RuleError(
                plural_sentence(
                    "Please answer every question first (%(num)s left: the first is question "
                    "%(first)s).",
                    "Please answer every question first (%(num)s left: the first is question "
                    "%(first)s).",
                    len(missing),
                    first=task.questions.index(missing[0]) + 1,
                )
            )
        return Event(event_type, {"story": story})
    raise RuleError(sentence("The request was malformed. Please reload the page."))


def _answer(task: StoryTask, questions: Questions, payload: dict[str, Any]) -> dict[str, Any]:
    item_id = payload.get("item")
    if not isinstance(item_id, str) or item_id not in task.questions:
        raise RuleError(
            sentence("That question is not one of this story's. Please reload the page.")
        )
    item = questions.item(item_id)
    raw = payload.get("value")
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise RuleError(sentence("Please choose an answer."))
    try:
        value = questions.parse(item_id, raw)
    except InstrumentError:
        raise RuleError(sentence("Please choose one of the answers offered.")) from None
    if isinstance(value, str) and len(value) > TEXT_MAX_CHARS:
        raise RuleError(
            sentence("Please keep your answer under %(n)s characters.", n=TEXT_MAX_CHARS)
        )
    rationale = payload.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        raise RuleError(sentence("The request was malformed. Please reload the page."))
    rationale = (rationale or "").strip() or None
    if item.rationale:
        if rationale is None or len(rationale.split()) < RATIONALE_MIN_WORDS:
            raise RuleError(
                sentence(
                    "Please explain your answer in at least a sentence (%(n)s words or more).",
                    n=RATIONALE_MIN_WORDS,
                )
            )
        if len(rationale) > RATIONALE_MAX_CHARS:
            raise RuleError(
                sentence(
                    "Please keep your explanation under %(n)s characters.", n=RATIONALE_MAX_CHARS
                )
            )
    return {"story": task.story_id, "item": item_id, "value": value, "rationale": rationale}


def apply(state: RaterState, event: Event) -> RaterState:
    """Fold a recorded (already checked) event into the state."""
    p = event.payload
    if event.type == "rater_started":
        tasks = tuple(
            StoryTask(story_id=story["story"], questions=tuple(story["questions"]))
            for story in p["stories"]
        )
        return RaterState(phase=Phase.RATING if tasks else Phase.DONE, tasks=tasks)
    tasks = list(state.tasks)
    index = next(i for i, task in enumerate(tasks) if task.story_id == p["story"])
    task = tasks[index]
    if event.type == "story_shown":
        tasks[index] = replace(task, shown=True)
    elif event.type == "answer_given":
        answers = {**task.answers, p["item"]: Answer(p["value"], p.get("rationale"))}
        tasks[index] = replace(task, answers=answers)
    elif event.type == "story_finished":
        tasks[index] = replace(task, finished=True)
    done = all(task.finished for task in tasks)
    return replace(state, tasks=tuple(tasks), phase=Phase.DONE if done else Phase.RATING)


def replay(events: list[Event]) -> RaterState:
    """The state after ``events``, in order, from a rater who has not started."""
    state = RaterState()
    for event in events:
        state = apply(state, event)
    return state
