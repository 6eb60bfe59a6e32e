"""The co-writing spec's process-flag exclusion rule (pure): which writers' flags leave them
out of the analysis, and the sentence that says so wherever results are shown.

A flag (:mod:`cyoa.cowriting.process.flags`) is evidence for review, never grounds for
exclusion by itself; a study may still decide, before it opens, that a writer with a named
flag is left out, as a rating study's ``[[exclusions]]`` rules leave raters out
(:mod:`cyoa.rating.quality`). The rule is written in the same form::

    [[exclusions]]
    rule = "process_flags"
    flags = ["pasted_line", "hidden_tab"]

No rule, nobody left out. Pre-registering exclusions rather than choosing them after seeing
the data follows Simmons, Nelson & Simonsohn (2011), "False-Positive Psychology",
Psychological Science 22(11), requirement 4 (report every exclusion and why).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cyoa.cowriting.process.flags import KINDS, Flag

RULE = "process_flags"


class ExclusionRuleError(ValueError):
    """A spec's exclusion rule that cannot be used; the message names the spec and says what
    to write instead."""


def flag_rule(spec: Mapping[str, Any], where: str = "spec") -> tuple[str, ...]:
    """The flag identifiers the spec's ``[[exclusions]]`` rule names (in :data:`KINDS`
    order; ``()`` without a rule). :class:`ExclusionRuleError` for anything else."""
    raw = spec.get("exclusions", [])
    if not isinstance(raw, list) or not all(isinstance(r, Mapping) for r in raw):
        raise ExclusionRuleError(
            f"{where}: 'exclusions' must be a list of tables ([[exclusions]] in TOML), each "
            f'with rule = "{RULE}".'
        )
    named: set[str] = set()
    for number, rule in enumerate(raw, start=1):
        if rule.get("rule") != RULE or set(rule) - {"rule", "flags"}:
            raise ExclusionRuleError(
                f'{where}: exclusion rule {number} must read rule = "{RULE}" and flags = '
                "[…], the only exclusion rule of a co-writing study."
            )
        flags = rule.get("flags")
        unknown = [f for f in flags if f not in KINDS] if isinstance(flags, list) else [flags]
        if not flags or unknown:
            raise ExclusionRuleError(
                f"{where}: exclusion rule {number} must name flags from {', '.join(KINDS)} "
                f"(it says {flags!r})."
            )
        named.update(flags)
    return tuple(kind for kind in KINDS if kind in named)


@dataclass(frozen=True)
class LeftOut:
    """A writer the rule leaves out: the session, the writer's external id, and the flags
    of a named kind that they have."""

    session_id: str
    writer: str
    flags: tuple[Flag, ...]


def left_out(
    flags: Iterable[tuple[str, str, Sequence[Flag]]], kinds: Sequence[str]
) -> tuple[LeftOut, ...]:
    """The writers whose flags (``(session_id, writer, flags)`` each) include one of
    ``kinds``, in the order given; none when ``kinds`` is empty."""
    out = []
    for session_id, writer, found in flags:
        named = tuple(flag for flag in found if flag.kind in kinds)
        if named:
            out.append(LeftOut(session_id, writer, named))
    return tuple(out)


def reason(writer: LeftOut) -> str:
    """Why one writer is left out, for the participants table."""
    kinds = sorted({flag.kind for flag in writer.flags}, key=KINDS.index)
    return f"left out by the spec's process-flag rule ({', '.join(kinds)})"


def sentence(writers: Sequence[LeftOut], kinds: Sequence[str]) -> str:
    """The results' line on who the rule naming ``kinds`` left out: "2 writers left out by
    the spec's process-flag rule: w1 (pasted_line), w3 (hidden_tab).", or that it left out
    nobody; '' without a rule."""
    if not kinds:
        return ""
    if not writers:
        return f"No writer left out by the spec's process-flag rule ({', '.join(kinds)})."
    count = f"{len(writers)} writer{'s' if len(writers) != 1 else ''}"
    names = ", ".join(
        f"{w.writer} ({', '.join(sorted({f.kind for f in w.flags}, key=KINDS.index))})"
        for w in writers
    )
    return f"{count} left out by the spec's process-flag rule: {names}."
