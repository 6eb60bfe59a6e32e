"""The judges of a co-writing experiment's rounds as ``analyze`` and the results page show
them: each judge's :class:`~cyoa.cowriting.judges.figures.WriterAgreement` over one pair of
systems' rounds, as JSON-ready dicts, Markdown lines and CSV rows."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from cyoa.cowriting.analysis.data import StudyData
from cyoa.cowriting.judges.figures import (
    RESAMPLES,
    RoundVerdict,
    WriterAgreement,
    agreement_with_writers,
)
from cyoa.cowriting.judges.runs import experiment_round_runs
from cyoa.db.facade import Db
from cyoa.pairwise import FLIP_THRESHOLD

TITLE = "## Judges of the writers' choices"


def round_verdicts(db: Db, experiment: str, judge: str) -> list[RoundVerdict]:
    """Every stored verdict of ``judge`` about ``experiment``'s rounds."""
    return [
        RoundVerdict(row[0], int(row[1]), row[2], row[3])
        for row in db.execute(
            "SELECT session_id, round, shown_order, chosen_slot FROM round_verdicts"
            " WHERE experiment_id = ? AND judge = ? ORDER BY session_id, round, shown_order",
            [experiment, judge],
        )
    ]


def study_judges(db: Db, data: StudyData, resamples: int = RESAMPLES) -> list[WriterAgreement]:
    """Each judge run of ``data``'s experiment against the writers of ``data`` (one pair of
    systems), by judge name; a judge with no verdict about these rounds is left out."""
    found = []
    for run in experiment_round_runs(db, data.experiment):
        verdicts = round_verdicts(db, data.experiment, run.judge)
        agreement = agreement_with_writers(
            data.rounds, verdicts, run.judge, run.model, resamples=resamples
        )
        if agreement.verdicts:
            found.append(agreement)
    return found


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def to_dicts(agreements: list[WriterAgreement]) -> list[dict[str, Any]]:
    """Every field of each agreement, position bias included; NaN as None."""
    return [_plain(dataclasses.asdict(agreement)) for agreement in agreements]


def _pct(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def _interval(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"{_pct(low)} – {_pct(high)}"


def display_rows(agreements: list[WriterAgreement]) -> list[tuple[str, ...]]:
    """One row per judge: judge (model), agreement with the writers [95% CI], verdicts read
    (unread), slot-A share, flip rate [95% CI], and whether the position bias is flagged."""
    rows = []
    for a in agreements:
        position = a.position
        slot_a = position.slot_a.share if position.slot_a is not None else None
        rows.append(
            (
                f"{a.judge} ({a.model})" if a.model and a.model != a.judge else a.judge,
                f"{_pct(a.share)} [{_interval(a.ci_low, a.ci_high)}]",
                f"{a.read} ({a.unread} unread)",
                _pct(slot_a),
                f"{_pct(position.flip_rate)} "
                f"[{_interval(position.flip_ci_low, position.flip_ci_high)}]",
                "flagged" if position.flagged else "no",
            )
        )
    return rows


COLUMNS = (
    "Judge",
    "Agrees with the writer [95% CI]",
    "Verdicts read",
    "Slot A chosen",
    "Flip rate [95% CI]",
    "Position bias",
)
NOTE = (
    "Each round with a choice is shown to the judge twice, the suggestions swapped. Agreement: "
    "the share of read verdicts choosing the writer's suggestion (0.5 by chance), 95% "
    "interval by the writer-clustered bootstrap. Flip rate: the share of rounds whose chosen "
    "suggestion changes when the suggestions swap places. Position bias flagged when the "
    f"slot-A share differs from one half (binomial p < 0.05) and the flip rate exceeds "
    f"{FLIP_THRESHOLD}."
)


def markdown_lines(agreements: list[WriterAgreement]) -> list[str]:
    """The judges' table as Markdown, with its note (nothing without a judge)."""
    if not agreements:
        return []
    lines = [TITLE, "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(row) + " |" for row in display_rows(agreements)]
    notes = [a.note for a in agreements if a.note]
    return [*lines, "", NOTE + (" " + " ".join(sorted(set(notes))) if notes else ""), ""]


def _flat(prefix: str, value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [pair for key, item in value.items() for pair in _flat(f"{prefix}{key} ", item)]
    return [(prefix.strip(), value)]


def csv_rows(agreements: list[WriterAgreement]) -> list[tuple[str, str, str, Any]]:
    """``(table, row, column, value)`` rows of the judges: table ``judges``, row the judge,
    column the field (``position flip_rate``, ``position slot_a p_value``)."""
    return [
        ("judges", found["judge"], field, value)
        for found in to_dicts(agreements)
        for field, value in _flat("", found)
    ]
