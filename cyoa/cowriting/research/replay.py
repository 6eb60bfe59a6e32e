"""A writer's session, turn by turn, rebuilt from its events (the source of truth).

Pure: a list of event rows in, :class:`Turn` objects out. Each turn has the writer's line,
every suggestion attempt (system, model, slot, timing), every choice and switch, the chosen
suggestion, the text the writer kept, a word-level diff between the two, and the timeline of
its steps with the seconds each took.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from cyoa.cowriting.research.progress import seconds_between

_TOKEN = re.compile(r"\s+|\w+(?:['’-]\w+)*|[^\w\s]")

STEP_LABELS = {
    "session_started": "Agreed and started",
    "line_submitted": "Wrote their line",
    "suggestion_completed": "Suggestion ready",
    "suggestion_failed": "Suggestion failed",
    "suggestions_retried": "Asked to try again",
    "suggestion_chosen": "Chose",
    "draft_saved": "Draft saved",
    "turn_submitted": "Added the turn",
    "survey_submitted": "Submitted the survey",
}


def tokenize(text: str) -> list[str]:
    """Words (with inner apostrophes and hyphens), punctuation marks and runs of spaces;
    joining the tokens gives the text back."""
    return _TOKEN.findall(text)


def word_diff(original: str, edited: str) -> list[tuple[str, str]]:
    """How ``edited`` differs from ``original``, word by word (:mod:`difflib`): a list of
    ``(op, text)`` with op ``equal``, ``delete`` (only in the original) or ``insert`` (only
    in the edit), in reading order. The ``equal`` and ``insert`` parts joined give ``edited``;
    the ``equal`` and ``delete`` parts give ``original``."""
    a, b = tokenize(original or ""), tokenize(edited or "")
    parts: list[tuple[str, str]] = []

    def add(op: str, text: str) -> None:
        if not text:
            return
        if parts and parts[-1][0] == op:
            parts[-1] = (op, parts[-1][1] + text)
        else:
            parts.append((op, text))

    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            add("equal", "".join(a[i1:i2]))
        else:
            add("delete", "".join(a[i1:i2]))
            add("insert", "".join(b[j1:j2]))
    return parts


@dataclass(frozen=True)
class Step:
    """One recorded event: when (server time), seconds since the previous step and since the
    session started, and what happened (``label``, ``detail``)."""

    seq: int
    type: str
    time: str
    seconds: float | None
    elapsed: float | None
    label: str
    detail: str


@dataclass(frozen=True)
class SuggestionAttempt:
    slot: int
    attempt: int
    system: str
    model: str
    status: str  # "done" or "failed"
    text: str
    sampling: dict[str, Any]
    generation_seconds: float | None
    error: str


@dataclass
class Turn:
    """One round of the story."""

    round: int
    writer_line: str | None = None
    slot_systems: list[str] = field(default_factory=list)
    slot_models: list[str] = field(default_factory=list)
    attempts: list[SuggestionAttempt] = field(default_factory=list)
    choices: list[tuple[int, str, bool, str]] = field(default_factory=list)
    chosen_slot: int | None = None
    final_text: str | None = None
    steps: list[Step] = field(default_factory=list)
    # The record checks of the round's line, drafts and turn (the events' ``record``):
    # (step label, check), in order (cyoa/cowriting/process/check.py).
    record_checks: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def shown(self) -> dict[int, SuggestionAttempt]:
        """Per slot, the suggestion the writer saw last (the last successful attempt, else
        the last failed one)."""
        shown: dict[int, SuggestionAttempt] = {}
        for attempt in self.attempts:
            current = shown.get(attempt.slot)
            if current is None or attempt.status == "done" or current.status != "done":
                shown[attempt.slot] = attempt
        return dict(sorted(shown.items()))

    @property
    def chosen_system(self) -> str | None:
        if self.chosen_slot is None or len(self.slot_systems) < self.chosen_slot:
            return None
        return self.slot_systems[self.chosen_slot - 1]

    @property
    def chosen_suggestion(self) -> str | None:
        shown = self.shown.get(self.chosen_slot) if self.chosen_slot else None
        return shown.text if shown and shown.status == "done" else None

    @property
    def switches(self) -> int:
        return sum(1 for _, _, switch, _ in self.choices if switch)

    @property
    def diff(self) -> list[tuple[str, str]]:
        """Word diff from the chosen suggestion to the text kept (empty until added)."""
        if self.final_text is None or self.chosen_suggestion is None:
            return []
        return word_diff(self.chosen_suggestion, self.final_text)

    @property
    def record_problems(self) -> list[tuple[str, str]]:
        """The round's record checks that did not match: (step label, the sentence)."""
        checks = self.record_checks
        return [(label, c.get("problem", "")) for label, c in checks if not c["matches"]]

    @property
    def seconds(self) -> float | None:
        """From the round's first step to its last."""
        if not self.steps:
            return None
        return seconds_between(self.steps[0].time, self.steps[-1].time)


@dataclass(frozen=True)
class Replay:
    """A session rebuilt: the start step, each turn, and the survey (item id → answer)."""

    start: Step | None
    turns: list[Turn]
    survey: dict[str, Any] | None
    survey_step: Step | None


def suggestions_shown(replay: Replay) -> dict[tuple[int, int], str]:
    """Each round's suggestions as the writer was shown them: ``(round, slot)`` → text, the
    text a suggestion's edit box starts from in the keystroke record."""
    return {
        (turn.round, slot): attempt.text
        for turn in replay.turns
        for slot, attempt in turn.shown.items()
        if attempt.status == "done"
    }


def _detail(event_type: str, payload: dict[str, Any]) -> str:
    if event_type == "suggestion_completed":
        seconds = payload.get("generation_seconds")
        timing = f" in {seconds:.1f} s" if isinstance(seconds, int | float) else ""
        return f"slot {payload.get('slot')}: {payload.get('system')}{timing}"
    if event_type == "suggestion_failed":
        return f"slot {payload.get('slot')}: {payload.get('system')} ({payload.get('error')})"
    if event_type == "suggestion_chosen":
        what = "switched to" if payload.get("switch") else "chose"
        return f"{what} slot {payload.get('slot')}"
    if event_type == "draft_saved":
        return f"slot {payload.get('slot')}, {len(payload.get('text') or '')} characters"
    if event_type == "turn_submitted":
        return f"slot {payload.get('slot')}, {len(payload.get('text') or '')} characters"
    if event_type == "suggestions_retried":
        return "slots " + ", ".join(str(s) for s in payload.get("slots", []))
    return ""


def build_replay(events: list[dict[str, Any]]) -> Replay:
    """The session of ``events`` (rows of ``events`` with decoded ``payload``, in order)."""
    turns: dict[int, Turn] = {}
    start: Step | None = None
    survey = survey_step = None
    first_time = events[0]["server_time"] if events else None
    previous = first_time
    for event in events:
        kind, payload, stamp = event["type"], event["payload"], event["server_time"]
        step = Step(
            seq=event["seq"],
            type=kind,
            time=stamp,
            seconds=seconds_between(previous, stamp),
            elapsed=seconds_between(first_time, stamp),
            label=STEP_LABELS.get(kind, kind),
            detail=_detail(kind, payload),
        )
        previous = stamp
        if kind == "session_started":
            start = step
            continue
        if kind == "survey_submitted":
            survey, survey_step = dict(payload), step
            continue
        number = payload.get("round")
        if not isinstance(number, int):
            continue
        turn = turns.setdefault(number, Turn(round=number))
        turn.steps.append(step)
        if isinstance(payload.get("record"), dict):
            turn.record_checks.append((step.label, payload["record"]))
        if kind == "line_submitted":
            turn.writer_line = payload.get("text")
            turn.slot_systems = list(payload.get("slot_systems") or [])
            turn.slot_models = list(payload.get("slot_models") or [])
        elif kind in ("suggestion_completed", "suggestion_failed"):
            turn.attempts.append(
                SuggestionAttempt(
                    slot=payload.get("slot"),
                    attempt=payload.get("attempt", 1),
                    system=payload.get("system") or "",
                    model=payload.get("model") or "",
                    status="done" if kind == "suggestion_completed" else "failed",
                    text=payload.get("text") or "",
                    sampling=payload.get("sampling") or {},
                    generation_seconds=payload.get("generation_seconds"),
                    error=payload.get("error") or "",
                )
            )
        elif kind == "suggestion_chosen":
            slot = payload.get("slot")
            system = turn.slot_systems[slot - 1] if slot in (1, 2) and turn.slot_systems else ""
            turn.choices.append((slot, system, bool(payload.get("switch")), stamp))
            turn.chosen_slot = slot
        elif kind == "turn_submitted":
            turn.chosen_slot = payload.get("slot", turn.chosen_slot)
            turn.final_text = payload.get("text")
    return Replay(
        start=start,
        turns=[turns[n] for n in sorted(turns)],
        survey=survey,
        survey_step=survey_step,
    )
