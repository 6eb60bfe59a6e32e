"""How writers wrote with each system: descriptive tables from the keystroke record.

Pure: the ``process`` export rows (one per writer × submitted round, see
:func:`cyoa.cowriting.research.exports.process_rows`) in, one :class:`ProcessTable` out: per
system, each measure pooled over the rounds in which writers took that system's suggestion
(the time on a suggestion: over the rounds in which it was shown), with a writer-clustered
bootstrap interval (:func:`cyoa.stats.clustered_ratio`): the writer is the independent unit,
their rounds are not. Descriptive only: no test is made, since which suggestion a writer took
is itself their choice, so the rounds of one system are not a random sample of the writer's
rounds (the comparison is not randomised).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from cyoa.stats import ClusteredRatio, clustered_ratio

Row = Mapping[str, object]


@dataclass(frozen=True)
class Measure:
    """One row of the table: its ``label`` (with unit), the ``scale`` its value is shown at,
    which rounds count for a system (``counts``) and each round's numerator and denominator
    (``part``; None leaves the round out)."""

    key: str
    label: str
    scale: float
    percent: bool
    counts: Callable[[Row, str], bool]
    part: Callable[[Row, str], tuple[float, float] | None]


def _chosen(row: Row, system: str) -> bool:
    return row["chosen_system"] == system


def _shown(row: Row, system: str) -> bool:
    return system in (row["slot1_system"], row["slot2_system"])


def _per_round(column: str) -> Callable[[Row, str], tuple[float, float] | None]:
    def part(row: Row, system: str) -> tuple[float, float] | None:
        value = row[column]
        return None if value is None else (float(value), 1.0)

    return part


def _kept(row: Row, system: str) -> tuple[float, float] | None:
    if row["kept_chars"] is None or not row["suggestion_chars"]:
        return None
    return float(row["kept_chars"]), float(row["suggestion_chars"])


def _focused(row: Row, system: str) -> tuple[float, float] | None:
    slot = 1 if row["slot1_system"] == system else 2
    value = row[f"slot{slot}_focused_ms"]
    return None if value is None else (float(value), 1.0)


MEASURES = (
    Measure("kept", "Characters kept of the suggestion", 1.0, True, _chosen, _kept),
    Measure(
        "first_keystroke",
        "Seconds to the first keystroke after the suggestions appeared",
        1 / 1000,
        False,
        _chosen,
        _per_round("first_keystroke_ms"),
    ),
    Measure(
        "focused",
        "Seconds the suggestion had focus or the pointer (rounds shown)",
        1 / 1000,
        False,
        _shown,
        _focused,
    ),
    Measure(
        "typed",
        "Characters typed into the edit",
        1.0,
        False,
        _chosen,
        _per_round("edit_typed_chars"),
    ),
    Measure(
        "pasted",
        "Characters pasted into the edit",
        1.0,
        False,
        _chosen,
        _per_round("edit_pasted_chars"),
    ),
    Measure("revisions", "Revisions (deletions)", 1.0, False, _chosen, _per_round("revisions")),
    Measure("pauses", "Pauses over 2 s", 1.0, False, _chosen, _per_round("pauses")),
)


@dataclass(frozen=True)
class ProcessTable:
    """Per measure key and system, the pooled value (None: no round measured) and the
    number of recorded rounds; ``recorded`` and ``rounds`` count the rounds with a record of
    all submitted ones."""

    systems: tuple[str, ...]
    cells: Mapping[tuple[str, str], ClusteredRatio | None]
    recorded: int
    rounds: int
    resamples: int
    seed: int


def of_pair(rows: Sequence[Row], pair: Sequence[str], left_out: Collection[str] = ()) -> list[Row]:
    """The rows of the writers who compared ``pair``, but for the sessions in ``left_out``
    (those the spec's process-flag rule leaves out, :mod:`cyoa.cowriting.process.exclusion`)."""
    return [
        r
        for r in rows
        if {r["slot1_system"], r["slot2_system"]} == set(pair) and r["session_id"] not in left_out
    ]


def process_table(
    rows: Sequence[Row], systems: Sequence[str], resamples: int = 2000, seed: int = 0
) -> ProcessTable:
    """The measures of :data:`MEASURES` per system from the ``process`` rows: for each, every
    writer's numerators and denominators summed over their counted rounds, then pooled with
    a writer-bootstrap interval (``resamples``, ``seed``). Rounds without a record, or whose
    record did not apply, count for nothing."""
    measured = [r for r in rows if r["recorded"] and not r["record_problem"]]
    cells: dict[tuple[str, str], ClusteredRatio | None] = {}
    for measure in MEASURES:
        for system in systems:
            sums: dict[object, list[float]] = {}
            for row in measured:
                if not measure.counts(row, system):
                    continue
                part = measure.part(row, system)
                if part is None:
                    continue
                total = sums.setdefault(row["session_id"], [0.0, 0.0])
                total[0] += part[0]
                total[1] += part[1]
            pairs = [(n, d) for n, d in sums.values() if d > 0]
            cells[measure.key, system] = (
                clustered_ratio(pairs, resamples=resamples, seed=seed) if pairs else None
            )
    return ProcessTable(tuple(systems), cells, len(measured), len(rows), resamples, seed)


def _shown_value(measure: Measure, value: float) -> str:
    scaled = value * measure.scale
    return f"{scaled:.0%}" if measure.percent else f"{scaled:.1f}"


def cell_text(measure: Measure, cell: ClusteredRatio | None) -> str:
    """A table cell: the value and its interval, e.g. ``71% (64%–78%)``; ``—`` when no round
    was measured; the interval left out with one writer."""
    if cell is None:
        return "—"
    text = _shown_value(measure, cell.value)
    if math.isnan(cell.low):
        return text
    return f"{text} ({_shown_value(measure, cell.low)}–{_shown_value(measure, cell.high)})"


def display_rows(table: ProcessTable) -> list[tuple[str, ...]]:
    """One row per measure: its label, then one cell per system."""
    return [
        (m.label, *(cell_text(m, table.cells[m.key, s]) for s in table.systems)) for m in MEASURES
    ]


def headline(table: ProcessTable) -> str:
    """The table in a sentence: "Writers kept 71% of alpha's characters and 48% of beta's."
    ('' when nothing was kept in any measured round)."""
    kept = [(s, table.cells["kept", s]) for s in table.systems if table.cells["kept", s]]
    if not kept:
        return ""
    parts = [f"{cell.value:.0%} of {system}'s" for system, cell in kept]
    parts[0] += " characters"
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"Writers kept {listed}."


def notes(table: ProcessTable) -> list[str]:
    """What the table rests on: how many rounds had a record, the unit, the interval."""
    if not table.recorded:
        return [
            "This study has no keystroke record (its spec turned it off, or its rounds were "
            "written before the record existed): there are no writing-process measures."
        ]
    return [
        f"{table.recorded} of {table.rounds} submitted rounds have a keystroke record. Each "
        "measure is pooled over the rounds in which the writer took the system's suggestion "
        "(the time on a suggestion: the rounds it was shown), with a writer-bootstrap 95% "
        f"interval ({table.resamples:,} resamples, seed {table.seed}): writers are the "
        "independent unit. Descriptive: the writer chose which suggestion to take, so no "
        "test compares the systems.",
    ]


def to_dict(table: ProcessTable) -> dict[str, object]:
    """The table as JSON-ready data: per measure and system, value, interval and writers."""
    return {
        "recorded_rounds": table.recorded,
        "rounds": table.rounds,
        "measures": {
            m.key: {
                s: None
                if (c := table.cells[m.key, s]) is None
                else {
                    "value": c.value * m.scale,
                    "low": None if math.isnan(c.low) else c.low * m.scale,
                    "high": None if math.isnan(c.high) else c.high * m.scale,
                    "writers": c.writers,
                }
                for s in table.systems
            }
            for m in MEASURES
        },
    }


def markdown_lines(table: ProcessTable) -> list[str]:
    """The table as a Markdown section for ``analyze``."""
    lines = ["", f"## How writers wrote: {' vs '.join(table.systems)} (keystroke record)", ""]
    if table.recorded:
        lines += [
            "| Measure | " + " | ".join(table.systems) + " |",
            "|---" * (len(table.systems) + 1) + "|",
            *("| " + " | ".join(r) + " |" for r in display_rows(table)),
            "",
        ]
        lines += [headline(table), ""] if headline(table) else []
    return lines + notes(table) + [""]
