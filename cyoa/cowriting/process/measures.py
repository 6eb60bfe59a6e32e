"""How a writer wrote one round, measured from the keystroke record (``text_operations``).

Pure: the round's operations in (dicts in the record's stored format, see
docs/data-dictionary.md, "text_operations"), one :class:`RoundMeasures` out. Times are the
writer's clock in milliseconds, so only intervals within a session are used; characters are
Unicode code points, as the record's positions are.

The measures follow the keystroke-logging literature: time to first keystroke and pauses as
in Inputlog (Leijten & Van Waes 2013, "Keystroke logging in writing research: Using Inputlog
to analyze and visualize writing processes", Written Communication 30(3)), the 2-second pause
threshold of writing research (Wengelin 2006, "Examining pauses in writing: Theory, methods
and empirical data", in Sullivan & Lindgren (eds.), Computer Key-Stroke Logging and Writing),
and the character provenance of CoAuthor (Lee, Liang & Yang, CHI 2022, §4: each character of
the final text is the writer's or the model's, found by replaying the operations).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cyoa.cowriting.process.operations import BOXES, RecordMismatch
from cyoa.cowriting.process.timeline import PAUSE_MS

SUGGESTION = "suggestion"
TYPED = "typed"
PASTED = "pasted"
OTHER = "other"
_ORIGIN_OF_SOURCE = {"typed": TYPED, "pasted": PASTED, "dropped": PASTED}


@dataclass(frozen=True)
class RoundMeasures:
    """One writer's round, measured from the record (see :func:`round_measures`).

    None means "not measurable in this round" (no suggestion was seen, nothing was typed).
    """

    first_keystroke_ms: int | None
    visible_ms: Mapping[int, int]
    focused_ms: Mapping[int, int]
    focus_switches: int
    typed_chars: Mapping[str, int]
    pasted_chars: Mapping[str, int]
    other_chars: int
    kept_chars: int | None
    kept_share: float | None
    revisions: int
    deleted_chars: int
    pauses: int
    pause_ms: int
    median_interkey_ms: float | None


def _text_ops(ops: Iterable[Mapping]) -> list[Mapping]:
    return [op for op in ops if op["kind"] == "text"]


def origins(start: str, start_origin: str, ops: Iterable[Mapping]) -> list[tuple[str, str]]:
    """The text that ``ops`` (text operations of one box, in ``seq`` order) make of
    ``start``, each character with where it came from: ``start_origin`` for the characters of
    ``start`` that survive, then the origin of the operation that inserted it: ``typed``,
    ``pasted`` (pasted or dropped) or ``other`` (undo, redo, IME, autocorrect: the record
    does not say where an undone or autocorrected character came from, so it is counted as
    neither typed nor the model's).

    Applying an operation: ``text[:position] + inserted + text[position + len(deleted):]``;
    when the characters at ``position`` are not ``deleted``, raises
    :class:`~cyoa.cowriting.process.operations.RecordMismatch`.
    """
    chars = [(c, start_origin) for c in start]
    for op in ops:
        position, deleted, inserted = op["position"], op["deleted"] or "", op["inserted"] or ""
        here = "".join(c for c, _ in chars[position : position + len(deleted)])
        if position > len(chars) or here != deleted:
            raise RecordMismatch(
                f"Operation {op.get('seq')} of round {op.get('round')} deletes {deleted!r} at "
                f"{position}, but the text there is {here!r}: the record of this round is "
                "broken, so it is not measured."
            )
        origin = _ORIGIN_OF_SOURCE.get(op["source"], OTHER)
        chars[position : position + len(deleted)] = [(c, origin) for c in inserted]
    return chars


def _intervals(ops: Sequence[Mapping], slot: int, on: str, off: str, end_ms: int) -> int:
    """Milliseconds ``slot`` spent between an ``on`` and the next ``off`` view operation; an
    interval still open at the end of the round closes at ``end_ms``."""
    total, since = 0, None
    for op in ops:
        if op["kind"] != "view" or op["slot"] != slot:
            continue
        if op["source"] == on and since is None:
            since = op["at_ms"]
        elif op["source"] == off and since is not None:
            total += op["at_ms"] - since
            since = None
    if since is not None:
        total += max(0, end_ms - since)
    return total


def _focus_switches(ops: Sequence[Mapping]) -> int:
    """How many times the focused (or hovered) suggestion changed from one slot to the
    other."""
    switches, last = 0, None
    for op in ops:
        if op["kind"] == "view" and op["source"] == "focus":
            if last is not None and op["slot"] != last:
                switches += 1
            last = op["slot"]
    return switches


def _first_keystroke_ms(ops: Sequence[Mapping]) -> int | None:
    shown = next((op["at_ms"] for op in ops if op["kind"] == "view"), None)
    if shown is None:
        return None
    first = next((op["at_ms"] for op in ops if op["kind"] == "text" and op["at_ms"] >= shown), None)
    return None if first is None else first - shown


def interkey_intervals(ops: Sequence[Mapping]) -> list[int]:
    """Milliseconds between consecutive text operations of the same box (the writer's line,
    or the edit boxes together, so that a switch between suggestions counts as a pause but
    the wait for the models between the line and the edit does not)."""
    gaps: list[int] = []
    for box in ("line", "edit"):
        times = [op["at_ms"] for op in ops if op["kind"] == "text" and op["box"] == box]
        gaps += [b - a for a, b in zip(times, times[1:], strict=False)]
    return gaps


def round_measures(
    ops: Sequence[Mapping], suggestions: Mapping[int, str], chosen_slot: int | None
) -> RoundMeasures:
    """The measures of one writer's round from its operations (all kinds, ``seq`` order):

    - ``first_keystroke_ms``: from the first suggestion view operation of the round (the
      suggestions appeared) to the first text operation at or after it; None without either.
    - ``visible_ms`` / ``focused_ms``: per slot, milliseconds between ``visible`` and
      ``hidden`` (in the viewport) and between ``focus`` and ``blur`` (keyboard focus or
      pointer hover); over the whole round, since the record has no writer's-clock time of the
      choice (choices are events, on the server's clock): an interval still open closes at the
      round's last operation.
    - ``focus_switches``: changes of the focused suggestion from one slot to the other (the
      choices' own switches are in the ``preference`` table's ``switches``).
    - ``typed_chars`` / ``pasted_chars``: per box (``line``, the writer's own sentence;
      ``edit``, the edit boxes), characters inserted by typing and by pasting or dropping;
      ``other_chars``: inserted otherwise (undo, redo, IME, autocorrect), both boxes.
    - ``kept_chars``: characters of the chosen suggestion that survive into the submitted
      turn: the chosen slot's edit box starts as the suggestion, each character marked as the
      model's; replaying its operations (:func:`origins`) removes the deleted ones; what is
      left marked is kept (a character deleted and typed again is the writer's).
      ``kept_share`` = kept_chars / characters of the suggestion (0–1). None without a
      choice.
    - ``revisions``: operations that delete something (a backspace, a cut, a replaced
      selection); ``deleted_chars``: the characters they deleted.
    - ``pauses`` / ``pause_ms``: inter-key intervals (:func:`interkey_intervals`) longer than
      :data:`~cyoa.cowriting.process.timeline.PAUSE_MS` (2 s, Wengelin 2006), their count
      and total; ``median_interkey_ms`` their median (None with fewer than two operations
      in a box).

    ``suggestions``: the text of each slot's suggestion as shown (the edit box's start).
    Raises :class:`~cyoa.cowriting.process.operations.RecordMismatch` if the chosen slot's
    operations do not apply.
    """
    text = _text_ops(ops)
    end_ms = max((op["at_ms"] for op in ops), default=0)
    inserted = {(origin, box): 0 for origin in (TYPED, PASTED, OTHER) for box in BOXES}
    for op in text:
        origin = _ORIGIN_OF_SOURCE.get(op["source"], OTHER)
        inserted[origin, op["box"]] += len(op["inserted"] or "")
    kept = share = None
    if chosen_slot is not None and chosen_slot in suggestions:
        chosen = suggestions[chosen_slot]
        edits = [op for op in text if op["box"] == "edit" and op["slot"] == chosen_slot]
        kept = sum(1 for _, o in origins(chosen, SUGGESTION, edits) if o == SUGGESTION)
        share = kept / len(chosen) if chosen else None
    gaps = interkey_intervals(ops)
    long = [g for g in gaps if g > PAUSE_MS]
    deletions = [op for op in text if op["deleted"]]
    return RoundMeasures(
        first_keystroke_ms=_first_keystroke_ms(ops),
        visible_ms={s: _intervals(ops, s, "visible", "hidden", end_ms) for s in (1, 2)},
        focused_ms={s: _intervals(ops, s, "focus", "blur", end_ms) for s in (1, 2)},
        focus_switches=_focus_switches(ops),
        typed_chars={box: inserted[TYPED, box] for box in BOXES},
        pasted_chars={box: inserted[PASTED, box] for box in BOXES},
        other_chars=sum(inserted[OTHER, box] for box in BOXES),
        kept_chars=kept,
        kept_share=share,
        revisions=len(deletions),
        deleted_chars=sum(len(op["deleted"]) for op in deletions),
        pauses=len(long),
        pause_ms=sum(long),
        median_interkey_ms=float(statistics.median(gaps)) if gaps else None,
    )


def rounds_of(ops: Iterable[Mapping]) -> dict[int, list[Mapping]]:
    """A session's operations grouped by round, each in ``seq`` order."""
    grouped: dict[int, list[Mapping]] = {}
    for op in sorted(ops, key=lambda op: op["seq"]):
        grouped.setdefault(op["round"], []).append(op)
    return grouped
