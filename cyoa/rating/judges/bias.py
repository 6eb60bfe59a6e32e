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

**Position** (pairwise judging): :func:`cyoa.pairwise.position_bias`, shared with the
co-writing judges; its names are re-exported here.

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

import numpy as np
import pandas as pd

from cyoa.pairwise import FLIP_THRESHOLD as FLIP_THRESHOLD
from cyoa.pairwise import PairVerdict as PairVerdict
from cyoa.pairwise import PositionBias
from cyoa.pairwise import position_bias as position_bias
from cyoa.rating.instruments.types import Instrument

ALPHA = 0.05
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
    from scipy import stats

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
