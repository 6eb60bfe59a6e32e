"""Pairwise judging (pure): does a judge shown two texts choose by the slot a text is shown in
rather than by what it says? Shared by both study kinds: a rating judge comparing two stories
and a co-writing judge comparing a round's two suggestions.

A :class:`PairVerdict` row is one showing of a pair of texts: ``pair_id``, ``order`` (``AB``:
the pair's first text in slot A, the first slot shown; ``BA``: swapped) and ``chosen_slot``
(``A``, ``B``, or None when the answer could not be read). :func:`position_bias` gives the
share of slot-A choices with the exact binomial test against one half and its Clopper–Pearson
interval (:func:`cyoa.stats.position_bias`), and the *flip rate*: over the pairs judged in
both orders, the share whose chosen *text* changes when the two texts swap places (the judge
chose the same slot both times), with its exact Clopper–Pearson interval. A judge that reads
the texts flips on no pair; one that picks at random flips on half; a judge choosing slot A
with probability p flips on p² + (1 − p)². **Flag**: the slot-A share's p < :data:`ALPHA` and
the flip rate above :data:`FLIP_THRESHOLD`.

References:
    Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena. NeurIPS
    Datasets and Benchmarks (position bias: the verdict when the two answers swap places).
    Wang, P. et al. (2024). Large Language Models are not Fair Evaluators. ACL.
    Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits
    illustrated in the case of the binomial. Biometrika 26(4).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from cyoa.stats import Preference
from cyoa.stats import position_bias as slot_preference

ALPHA = 0.05
FLIP_THRESHOLD = 0.2


@dataclass(frozen=True)
class PairVerdict:
    """One showing of a pair of texts to a judge (see the module)."""

    pair_id: str
    order: Literal["AB", "BA"]
    chosen_slot: Literal["A", "B"] | None


@dataclass(frozen=True)
class PositionBias:
    """The judge's choices by slot (see the module): ``slot_a`` the share of slot-A choices
    over the read verdicts with its binomial test and interval, ``pairs`` judged in both
    orders (both read), ``flips`` among them, the flip rate with its 95% interval, and the
    verdicts that could not be read."""

    verdicts: int
    unread: int
    slot_a: Preference | None
    pairs: int
    flips: int
    flip_rate: float | None
    flip_ci_low: float | None
    flip_ci_high: float | None
    flagged: bool


def _clopper_pearson(successes: int, total: int) -> tuple[float, float]:
    from scipy import stats

    interval = stats.binomtest(successes, total).proportion_ci(method="exact")
    return float(interval.low), float(interval.high)


def position_bias(verdicts: Iterable[PairVerdict]) -> PositionBias:
    """The judge's pairwise ``verdicts`` by slot (see the module). A pair shown more than once
    in one order counts its last read verdict in that order for the flip rate."""
    rows = list(verdicts)
    read = [row for row in rows if row.chosen_slot is not None]
    slot_a = None
    if read:
        slot_a = slot_preference(sum(1 for row in read if row.chosen_slot == "A"), len(read))
    chosen: dict[str, dict[str, str]] = {}
    for row in read:
        first = row.chosen_slot == "A"
        text = "first" if first == (row.order == "AB") else "second"
        chosen.setdefault(row.pair_id, {})[row.order] = text
    both = [orders for orders in chosen.values() if len(orders) == 2]
    flips = sum(1 for orders in both if orders["AB"] != orders["BA"])
    rate = low = high = None
    if both:
        rate = flips / len(both)
        low, high = _clopper_pearson(flips, len(both))
    flagged = (
        slot_a is not None and slot_a.p_value < ALPHA and rate is not None and rate > FLIP_THRESHOLD
    )
    return PositionBias(
        verdicts=len(rows),
        unread=len(rows) - len(read),
        slot_a=slot_a,
        pairs=len(both),
        flips=flips,
        flip_rate=rate,
        flip_ci_low=low,
        flip_ci_high=high,
        flagged=flagged,
    )
