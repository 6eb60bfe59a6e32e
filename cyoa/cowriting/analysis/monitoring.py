"""Watching a co-writing study as it runs: the anytime-valid view of the preference and the
study-status line that ties it to the plan.

Researchers look at the dashboard as writers arrive and stop when it looks decisive. A
fixed-sample p-value (binomial or writer t-test) is valid for one look at a size fixed in
advance; looked at after every few writers it rejects a true null several times more often
than α (bench/results/cowriting-sequential.md). This module gives, per pair of systems:

- the confidence sequence of the mean writer share of the first system and its anytime-valid
  p-value against 0.5 (:func:`cyoa.sequential.confidence_sequence`), over the writers whose
  story is complete, one share each (chosen ÷ counted rounds), in the order they completed
  it: valid however often and whenever it is looked at, so stopping at the first p ≤ α
  keeps the false-positive rate at most α;
- the status line: *decisive* once the anytime-valid p is at most α; otherwise *not yet*
  until the planned N (the latest stored plan's writers, :func:`planned_writers`) is reached,
  from which the fixed-sample test applies; and what the fixed-sample p-values mean at this
  size.

Reference: Waudby-Smith, I. and Ramdas, A. (2023). Estimating means of bounded random
variables by betting. JRSS-B 86(1); Howard, S. R. et al. (2021). Time-uniform,
nonparametric, nonasymptotic confidence sequences. Annals of Statistics 49(2).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cyoa.cowriting.analysis.data import StudyData
from cyoa.cowriting.analysis.results import Monitoring
from cyoa.sequential import ALPHA, confidence_sequence

DECISIVE = "decisive: the share is {side} 50% at any stopping time"
NOT_YET = "not yet: keep going to the planned N ({writers} of {planned} writers)"
REACHED = "the planned N is reached: the fixed-sample test applies ({writers} of {planned} writers)"
NO_PLAN = (
    "not yet decisive, and no planned N: store a plan to know when the fixed-sample test applies"
)
FIXED_BEFORE_PLAN = (
    "fixed-sample p-values: valid at the planned N only, not yet reached ({writers} of "
    "{planned} writers); read them as they stand, not as a reason to stop"
)
FIXED_AT_PLAN = "fixed-sample p-values: the planned N is reached, they apply"
FIXED_NO_PLAN = (
    "fixed-sample p-values: no planned N, so they hold for one look at a size fixed in "
    "advance, not for watching as writers arrive"
)


def planned_writers(plan: Mapping[str, Any] | None) -> int | None:
    """The writers of a stored co-writing plan's chosen design (``plan`` as
    :func:`cyoa.store.latest_plan` returns it), or ``None`` without one."""
    if plan is None:
        return None
    record = plan.get("record") or {}
    chosen = record.get("chosen")
    if record.get("kind") != "cowriting" or not chosen or "writers" not in chosen:
        return None
    return int(chosen["writers"])


def completed_shares(data: StudyData) -> list[float]:
    """Each complete story's share of counted rounds in which the first system was chosen, in
    the order the stories were completed (:attr:`StudyData.completed`); a story without a
    counted round has no share and is left out."""
    first = data.systems[0]
    counts: dict[str, list[int]] = {}
    for record in data.rounds:
        if record.counts_for_preference:
            tally = counts.setdefault(record.session_id, [0, 0])
            tally[0] += record.chosen_system == first
            tally[1] += 1
    return [counts[sid][0] / counts[sid][1] for sid in data.completed if sid in counts]


def status_line(decisive: bool, above: bool, writers: int, planned: int | None) -> tuple[str, str]:
    """The study-status line and the fixed-sample p-values' note for a study of ``writers``
    complete stories against the ``planned`` N: ``decisive`` (the anytime-valid p ≤ α) with
    the estimate ``above`` 0.5 or below it."""
    if planned is None:
        fixed = FIXED_NO_PLAN
    elif writers < planned:
        fixed = FIXED_BEFORE_PLAN.format(writers=writers, planned=planned)
    else:
        fixed = FIXED_AT_PLAN
    if decisive:
        return DECISIVE.format(side="above" if above else "below"), fixed
    if planned is None:
        return NO_PLAN, fixed
    if writers < planned:
        return NOT_YET.format(writers=writers, planned=planned), fixed
    return REACHED.format(writers=writers, planned=planned), fixed


def monitoring(data: StudyData, planned: int | None = None, alpha: float = ALPHA) -> Monitoring:
    """The anytime-valid view of ``data``'s preference against the ``planned`` N (writers):
    the confidence sequence at level 1 − ``alpha`` and its p-value against 0.5, and the
    status line (see the module docstring)."""
    shares = completed_shares(data)
    sequence = confidence_sequence(shares, alpha=alpha) if shares else None
    decisive = sequence is not None and sequence.p_value <= alpha
    above = sequence is not None and sequence.mean > 0.5
    status, fixed = status_line(decisive, above, len(shares), planned)
    return Monitoring(
        sequence=sequence,
        writers=len(shares),
        planned_writers=planned,
        alpha=alpha,
        decisive=decisive,
        status=status,
        fixed_sample=fixed,
    )
