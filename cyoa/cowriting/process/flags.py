"""Writing-process flags: what in a writer's keystroke record a reviewer may want to look at.

Pure: a session's operations in (the record's stored format), :class:`Flag` objects out. A
flag is evidence for review, never grounds for exclusion by itself: a writer who drafts in
another editor and pastes, or types fast, may be doing the task well. This follows the
writing-process signals of Potato 2.7 (the annotation tool of Pei et al., EMNLP 2022 System
Demonstrations): paste and "transcribed" text marked for review, not rejected.

Three flags, each saying what it saw in a sentence:

- ``pasted_line``: the writer's submitted line was (almost) all pasted or dropped in;
- ``fast_typing``: text typed faster than a person sustains (:data:`MAX_CHARS_PER_SECOND`);
- ``hidden_tab``: text changed while the writer's tab was hidden.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cyoa.cowriting.process.measures import PASTED, origins, rounds_of
from cyoa.cowriting.process.operations import RecordMismatch

KINDS = ("pasted_line", "fast_typing", "hidden_tab")
"""Every flag's identifier, as a spec's process-flag exclusion rule names them
(:mod:`cyoa.cowriting.process.exclusion`)."""

PASTED_SHARE = 0.9
"""A line counts as pasted whole when at least this share of its non-space characters came
from a paste or a drop (a pasted line with a typo fixed is still pasted)."""

WORDS_PER_MINUTE = 200
CHARS_PER_WORD = 5
MAX_CHARS_PER_SECOND = WORDS_PER_MINUTE * CHARS_PER_WORD / 60
"""≈ 16.7 characters per second: 200 words per minute at the usual 5 characters per word.
Dhakal, Feit, Kristensson & Oulasvirta (CHI 2018), "Observations on Typing from 136 Million
Keystrokes", measured a mean of 52 words per minute and a fastest decile near 120 over
168,000 volunteers; sustained typing above 200 is beyond nearly all of them, so text typed
faster came from somewhere else (an autofill, a script, a macro)."""

MIN_FAST_CHARS = 20
"""The typing rate is judged over at least this many characters, so that one burst of two
keys in the same millisecond does not flag anyone."""


@dataclass(frozen=True)
class Flag:
    """One thing seen in the record: ``kind`` (see the module), the ``round``, and what was
    seen, as a sentence for the reviewer."""

    kind: str
    round: int
    says: str


def _pasted_line(number: int, ops: Sequence[Mapping]) -> Flag | None:
    line = [op for op in ops if op["kind"] == "text" and op["box"] == "line"]
    try:
        chars = [o for c, o in origins("", "", line) if not c.isspace()]
    except RecordMismatch:
        return None  # a line whose record does not apply is not judged (the record check says so)
    pasted = sum(1 for o in chars if o == PASTED)
    if not chars or pasted / len(chars) < PASTED_SHARE:
        return None
    return Flag(
        "pasted_line",
        number,
        f"Round {number}: {pasted} of the {len(chars)} characters of the writer's line "
        "were pasted or dropped in, not typed.",
    )


def fastest_typing(ops: Sequence[Mapping]) -> tuple[int, float] | None:
    """The fastest sustained typing in ``ops`` (text operations of one box, ``seq`` order):
    over each run of consecutive ``typed`` operations that put in one character each, for
    each operation the shortest span back to an earlier one that typed at least
    :data:`MIN_FAST_CHARS` characters after it; returns ``(characters, characters per
    second)`` of the fastest span, or None when no run is that long. A span of 0 ms is
    infinitely fast.

    Only keystrokes count: a typed operation that put in several characters at once (a
    dictated phrase arrives as one ``insertText``) ends the run. A character typed again
    right after itself is left out of the count (its time stays in the span), so holding a
    key down ("-----", "....."), which the keyboard auto-repeats at about 30 characters a
    second, is not typing faster than a person."""
    best: tuple[int, float] | None = None
    runs: list[list[Mapping]] = [[]]
    for op in ops:
        inserted = op["inserted"] or ""
        if op["source"] == "typed" and len(inserted) == 1:
            if not runs[-1] or runs[-1][-1]["inserted"] != inserted:
                runs[-1].append(op)
        elif runs[-1]:
            runs.append([])
    for run in runs:
        start, chars = 0, 0
        for end in range(1, len(run)):
            chars += len(run[end]["inserted"])
            while start + 1 < end and chars - len(run[start + 1]["inserted"]) >= MIN_FAST_CHARS:
                start += 1
                chars -= len(run[start]["inserted"])
            if chars < MIN_FAST_CHARS:
                continue
            elapsed = (run[end]["at_ms"] - run[start]["at_ms"]) / 1000
            rate = chars / elapsed if elapsed > 0 else float("inf")
            if best is None or rate > best[1]:
                best = (chars, rate)
    return best


def _fast_typing(number: int, ops: Sequence[Mapping]) -> Flag | None:
    boxes: dict[tuple, list[Mapping]] = {}
    for op in ops:
        if op["kind"] == "text":
            boxes.setdefault((op["box"], op["slot"]), []).append(op)
    fastest = max(
        (found for box in boxes.values() if (found := fastest_typing(box))),
        key=lambda found: found[1],
        default=None,
    )
    if fastest is None or fastest[1] <= MAX_CHARS_PER_SECOND:
        return None
    chars, rate = fastest
    speed = "at once" if rate == float("inf") else f"at {rate:.0f} characters a second"
    return Flag(
        "fast_typing",
        number,
        f"Round {number}: {chars} characters were typed {speed}, faster than the "
        f"{MAX_CHARS_PER_SECOND:.0f} a second ({WORDS_PER_MINUTE} words a minute) people "
        "sustain.",
    )


IN_USE = ("visible", "focus")
"""A ``view`` row of these sources shows the page in use (a suggestion scrolled into sight,
focused or hovered), so the tab is not hidden then, whatever the last ``page`` row said: a
reload records ``hidden`` as the old page unloads, and a page that did not record its
starting visibility would otherwise leave every later edit "hidden"."""


def _hidden_tab(ops: Iterable[Mapping]) -> list[Flag]:
    hidden, written = False, {}
    for op in sorted(ops, key=lambda op: op["seq"]):
        if op["kind"] == "page" and op["source"] in ("hidden", "visible"):
            hidden = op["source"] == "hidden"
        elif op["kind"] == "view" and op["source"] in IN_USE:
            hidden = False
        elif op["kind"] == "text" and hidden:
            changed = len(op["inserted"] or "") + len(op["deleted"] or "")
            written[op["round"]] = written.get(op["round"], 0) + changed
    return [
        Flag(
            "hidden_tab",
            number,
            f"Round {number}: {chars} characters of the text changed while the writer's tab "
            "was hidden.",
        )
        for number, chars in sorted(written.items())
    ]


def session_flags(ops: Iterable[Mapping]) -> list[Flag]:
    """Every flag of one session's operations, by round (pasted line, fast typing), then the
    rounds written with the tab hidden."""
    ops = list(ops)
    flags: list[Flag] = []
    for number, round_ops in sorted(rounds_of(ops).items()):
        flags += [
            f for f in (_pasted_line(number, round_ops), _fast_typing(number, round_ops)) if f
        ]
    return flags + _hidden_tab(ops)


def describe(flags: Sequence[Flag]) -> str:
    """The flags as one text for a table cell ('' when there are none)."""
    return " ".join(flag.says for flag in flags)
