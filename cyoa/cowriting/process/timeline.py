"""A session's keystroke record laid out for the researcher's replay (pure).

The replay page plays the record back row by row (``static/js/research/keystrokes.js``
applies each operation to its box, as :mod:`cyoa.cowriting.process.operations` does) on a
timeline that marks what a reader of writing processes looks for first: pauses longer than
:data:`PAUSE_MS` (the 2-second threshold of keystroke-logging studies of writing, e.g.
Wengelin 2006 and Leijten & Van Waes 2013's Inputlog), pastes (and drops), and switches
between the suggestions. A switch is read from the record itself: the first change of a
suggestion's edit box in a round whose previous edit was of the other one (a switch with no
editing on either side is in the turn-by-turn view only, from the events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cyoa.cowriting.process.operations import RecordMismatch, reconstruct
from cyoa.cowriting.process.store import COLUMNS

PAUSE_MS = 2000
PASTED = ("pasted", "dropped")


@dataclass(frozen=True)
class Mark:
    """A place on the timeline: the row's index (from 0), its time since the first row in
    milliseconds, what it is (``pause``, ``paste``, ``switch``) and a phrase for a person."""

    index: int
    ms: int
    kind: str
    label: str


@dataclass(frozen=True)
class Timeline:
    """The rows as the page's player takes them (lists in :data:`COLUMNS` order, ``at_ms``
    made milliseconds since the first row), the suggestions each edit box starts from
    (``"round:slot"`` → text), the marks, the whole duration in milliseconds, and the
    sentence saying why the record cannot be played when it is broken (else empty)."""

    rows: list[list[Any]]
    suggestions: dict[str, str]
    marks: list[Mark]
    duration_ms: int
    broken: str = ""


def keystroke_timeline(
    ops: Sequence[Mapping[str, Any]], suggestions: Mapping[tuple[int, int], str]
) -> Timeline:
    """The timeline of a session's record (``ops`` in ``seq`` order) with its rounds'
    suggestions (``(round, slot)`` → text). Each round is rebuilt on its own (every text
    starts afresh at a round): a round that does not replay (:class:`RecordMismatch`) is
    left out and named in ``broken``, so one broken round does not hide the others."""
    ops, broken = _replayable(ops, suggestions)
    first = ops[0]["at_ms"] if ops else 0
    rows = [[op[c] if c != "at_ms" else op[c] - first for c in COLUMNS] for op in ops]
    marks: list[Mark] = []
    last_edit: dict[int, int] = {}  # round -> slot of its last edit-box change
    for index, op in enumerate(ops):
        ms = op["at_ms"] - first
        if index and op["at_ms"] - ops[index - 1]["at_ms"] > PAUSE_MS:
            seconds = (op["at_ms"] - ops[index - 1]["at_ms"]) / 1000
            marks.append(Mark(index, ms, "pause", f"a pause of {seconds:.1f} s"))
        if op["kind"] != "text":
            continue
        where = "the line" if op["box"] == "line" else f"suggestion {op['slot']}"
        if op["source"] in PASTED:
            label = f"{op['source']} {len(op['inserted'] or '')} characters into {where}"
            marks.append(Mark(index, ms, "paste", label))
        if op["box"] == "edit":
            before = last_edit.get(op["round"])
            if before is not None and before != op["slot"]:
                marks.append(Mark(index, ms, "switch", f"switched to suggestion {op['slot']}"))
            last_edit[op["round"]] = op["slot"]
    duration = ops[-1]["at_ms"] - first if ops else 0
    starts = {f"{r}:{s}": text for (r, s), text in suggestions.items()}
    return Timeline(rows, starts, marks, duration, broken=broken)


def _replayable(
    ops: Sequence[Mapping[str, Any]], suggestions: Mapping[tuple[int, int], str]
) -> tuple[list[Mapping[str, Any]], str]:
    """The rows of the rounds that replay, in ``seq`` order, and a sentence per round that
    does not (or '')."""
    rounds: dict[int, list[Mapping[str, Any]]] = {}
    for op in ops:
        rounds.setdefault(op["round"], []).append(op)
    kept: list[Mapping[str, Any]] = []
    problems: list[str] = []
    for number, round_ops in sorted(rounds.items()):
        try:
            reconstruct(round_ops, suggestions)
        except RecordMismatch as mismatch:
            problems.append(f"Round {number} is left out: {mismatch}")
            continue
        kept += round_ops
    return sorted(kept, key=lambda op: op["seq"]), " ".join(problems)
