"""The bias card of a judge (pure): does its verdict follow the story's length, and, when it
compares two texts, the slot a text is shown in, rather than what the text says?

**Length.** Each story's *score* by a panel (:func:`story_scores`): the share of Yes over the
panel's Yes/No judgements about it (an instrument with Yes/No or true/false items), else the
mean coded Likert point. Stories are cut into length terciles (:func:`length_bias`), and
three Spearman correlations with the story's length in words are given with their p-values:
the judge's score, the humans' score, and the judge's *excess* (judge − humans, per story).
The excess is what the judge adds beyond following the humans, so a length effect the
humans share is not held against the judge. **Flag**: the judge's own ρ and its excess's ρ
both have p < :data:`ALPHA`, with the same sign: the judge's verdict follows length, and
further than the humans' does (a judge whose verdict never moves is not flagged because the
humans' does).

**Position** (pairwise judging). A :class:`PairVerdict` row is one showing of a pair of texts:
``pair_id``, ``order`` (``AB``: the pair's first text in slot A, the first slot shown;
``BA``: swapped) and ``chosen_slot`` (``A``, ``B``, or None when the answer could not be
read). :func:`position_bias` gives the share of slot-A choices with the exact binomial test
against one half and its Clopper–Pearson interval (:func:`cyoa.stats.position_bias`), and the
*flip rate*: over the pairs judged in both orders, the share whose chosen *text* changes when
the two texts swap places (the judge chose the same slot both times), with its exact
Clopper–Pearson interval. A judge that reads the texts flips on no pair; one that picks at
random flips on half; a judge choosing slot A with probability p flips on p² + (1 − p)².
**Flag**: the slot-A share's p < :data:`ALPHA` and the flip rate above :data:`FLIP_THRESHOLD`.

References:
    Spearman, C. (1904). The proof and measurement of association between two things.
    American Journal of Psychology 15(1).
    Zheng, L. et al. (2023). Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena. NeurIPS
    Datasets and Benchmarks (position bias: the verdict when the two answers swap places).
    Wang, P. et al. (2024). Large Language Models are not Fair Evaluators. ACL.
    Dubois, Y. et al. (2024). Length-Controlled AlpacaEval: A Simple Way to Debias Automatic
    Evaluators. COLM.
    Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits
    illustrated in the case of the binomial. Biometrika 26(4).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats

from cyoa.rating.instruments.types import Instrument
from cyoa.stats import Preference
from cyoa.stats import position_bias as slot_preference

ALPHA = 0.05
FLIP_THRESHOLD = 0.2
BINARY_KINDS = ("yes_no", "true_false")
TERCILES = ("shortest third", "middle third", "longest third")


@dataclass(frozen=True)
class Correlation:
    """Spearman's ρ of a per-story value with the story's length over ``stories`` stories,
    with its two-sided p-value (scipy); both None when either never varies or fewer than
    three stories have both."""

    stories: int
    rho: float | None
    p_value: float | None


@dataclass(frozen=True)
class LengthBand:
    """One length tercile: its stories, their shortest and longest length in words, and the
    mean over its stories of the judge's and the humans' score (None: no story scored)."""

    label: str
    stories: int
    min_words: int
    max_words: int
    judge: float | None
    human: float | None


@dataclass(frozen=True)
class LengthBias:
    """The judge's score against story length (see the module); ``measure`` names the score
    (``share of Yes`` or ``mean score``), ``without_length`` counts the stories the judge
    scored whose length is unknown (text not stored), left out."""

    measure: str
    bands: tuple[LengthBand, ...]
    judge: Correlation
    human: Correlation
    excess: Correlation
    without_length: int
    flagged: bool


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


@dataclass(frozen=True)
class BiasCard:
    """A judge's bias card: its length bias and, when it judged pairs, its position bias."""

    judge: str
    length: LengthBias
    position: PositionBias | None = None


def score_measure(instrument: Instrument) -> str:
    """``share of Yes`` for an instrument with Yes/No (or true/false) items, else
    ``mean score``."""
    binary = any(item.kind in BINARY_KINDS for item in instrument.items)
    return "share of Yes" if binary else "mean score"


def story_scores(instrument: Instrument, rows: pd.DataFrame) -> dict[str, float]:
    """Story id → its score by the panel whose judgements are ``rows`` (columns ``story_id``,
    ``item``, ``value``; NaN values left out): the mean of its Yes/No answers as 1/0 (the
    share of Yes) when the instrument has Yes/No items, else the mean coded Likert point
    (reverse keying applied, :meth:`Instrument.coded`)."""
    binary = score_measure(instrument) == "share of Yes"
    kinds = BINARY_KINDS if binary else ("likert",)
    items = {item.id for item in instrument.items if item.kind in kinds}
    kept = rows[rows["item"].isin(items) & rows["value"].notna()]
    totals: dict[str, list[float]] = {}
    for story, item, value in kept[["story_id", "item", "value"]].itertuples(index=False):
        score = float(value) if binary else instrument.coded(str(item), float(value))
        totals.setdefault(str(story), []).append(score)
    return {story: sum(values) / len(values) for story, values in totals.items()}


def spearman_with_length(words: Mapping[str, int], values: Mapping[str, float]) -> Correlation:
    """Spearman's ρ (scipy ``spearmanr``, ties ranked by their mean) between the stories'
    length in words and ``values``, over the stories both have; see :class:`Correlation`."""
    stories = sorted(set(words) & set(values))
    lengths = [words[story] for story in stories]
    scores = [values[story] for story in stories]
    if len(stories) < 3 or len(set(lengths)) < 2 or len(set(scores)) < 2:
        return Correlation(len(stories), None, None)
    result = stats.spearmanr(lengths, scores)
    return Correlation(len(stories), float(result.statistic), float(result.pvalue))


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def length_bands(
    words: Mapping[str, int], judge: Mapping[str, float], human: Mapping[str, float]
) -> tuple[LengthBand, ...]:
    """The judged stories with a length cut into three bands of as equal a number of stories
    as can be (the first bands one larger; numpy ``array_split``), shortest first, ties in
    length broken by story id."""
    stories = sorted((s for s in judge if s in words), key=lambda s: (words[s], s))
    if len(stories) < 3:
        return ()
    bands = []
    for label, part in zip(TERCILES, np.array_split(np.array(stories), 3), strict=True):
        chosen = [str(story) for story in part]
        bands.append(
            LengthBand(
                label=label,
                stories=len(chosen),
                min_words=words[chosen[0]],
                max_words=words[chosen[-1]],
                judge=_mean(judge[s] for s in chosen),
                human=_mean(human[s] for s in chosen if s in human),
            )
        )
    return tuple(bands)


def length_bias(
    measure: str,
    words: Mapping[str, int],
    judge: Mapping[str, float],
    human: Mapping[str, float],
) -> LengthBias:
    """The judge's per-story scores ``judge`` and the humans' ``human`` against the stories'
    length in words ``words`` (see the module)."""
    excess = spearman_with_length(
        words, {story: judge[story] - human[story] for story in judge if story in human}
    )
    own = spearman_with_length(words, judge)
    return LengthBias(
        measure=measure,
        bands=length_bands(words, judge, human),
        judge=own,
        human=spearman_with_length(words, human),
        excess=excess,
        without_length=sum(1 for story in judge if story not in words),
        flagged=_significant(own) and _significant(excess) and (own.rho > 0) == (excess.rho > 0),
    )


def _significant(found: Correlation) -> bool:
    return found.p_value is not None and found.p_value < ALPHA


def _clopper_pearson(successes: int, total: int) -> tuple[float, float]:
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
