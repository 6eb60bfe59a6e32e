"""Agreement between raters who judged the same stories.

- :func:`krippendorff_alpha`: Krippendorff's α at the nominal, ordinal or interval level, with
  a bootstrap interval over stories and Hayes & Krippendorff's q(α < .667).
- :func:`gwet_ac1`: Gwet's AC1 for categorical answers, which stays near the raters' observed
  agreement when one answer is rare (where κ and α fall towards 0).
- :func:`fleiss_kappa`: Fleiss' κ for categorical answers when every unit has the same number
  of raters.
- :func:`icc_2k`: ICC(2,k), the reliability of a story's mean rating, for Likert items.
- :func:`exact_agreement`: the share of units on which all raters gave the same answer.
- :func:`agreement_table`: these for each scored item of an instrument, over all stories
  and per source.

A *unit* is what several raters judged: one story's answer to one item. Its *ratings* are the
raters' answers (raters need not be the same people from unit to unit).

References:
    Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
    Communication, University of Pennsylvania (departmental paper 43).
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
    Bulletin 76(5).
    Karpinska, M., Akoury, N. and Iyyer, M. (2021). The Perils of Using Mechanical Turk to
    Evaluate Open-Ended Text Generation. EMNLP (agreement reported as α and as the share of
    stories on which all raters agreed, per attribute and per kind of story).
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 13
    (percentile intervals).
    Field, C. A. and Welsh, A. H. (2007). Bootstrapping clustered data. JRSS B 69(3)
    (resampling whole clusters: here, stories with all their items).
    Hayes, A. F. and Krippendorff, K. (2007). Answering the call for a standard reliability
    measure for coding data. Communication Methods and Measures 1(1) (q(α < α_min)).
    Krippendorff, K. (2004). Content Analysis, 2nd ed., §11.4 (α ≥ .667 as the lowest
    acceptable value for tentative conclusions).
    Gwet, K. L. (2008). Computing inter-rater reliability and its variance in the presence of
    high agreement. British Journal of Mathematical and Statistical Psychology 61(1).
    Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed. Advanced Analytics.
    Shrout, P. E. and Fleiss, J. L. (1979). Intraclass correlations: uses in assessing rater
    reliability. Psychological Bulletin 86(2).
    McGraw, K. O. and Wong, S. P. (1996). Forming inferences about some intraclass
    correlation coefficients. Psychological Methods 1(1).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from cyoa.rating.analysis.scales import coded_values
from cyoa.rating.instruments.types import Instrument, Item
from cyoa.words import counted

Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")
ALL_SOURCES = "all"
ALL_ITEMS = "all items"
# The level of measurement of yes/no and true/false items; Likert items default to ordinal.
NOMINAL_KINDS = ("yes_no", "true_false")
# An interval resting on fewer stories than this is flagged. A percentile bootstrap over n
# stories has only C(2n − 1, n) distinct replicates (126 for 5 stories, 92,378 for 10) and its
# coverage falls short of the nominal with few clusters (Field & Welsh 2007); below 10 the
# interval says more about the few stories drawn than about the population of stories.
MIN_STORIES = 10
# Replicates of α this close are the same value: the same ratings' pattern resampled gives
# the same α up to rounding in the last bits.
SAME_VALUE = 1e-12
# Krippendorff's (2004, §11.4) smallest α for tentative conclusions: q(α < ALPHA_MIN) is
# reported with every α (Hayes & Krippendorff 2007).
ALPHA_MIN = 0.667


@dataclass(frozen=True)
class Alpha:
    """Krippendorff's α of a set of units (see :func:`krippendorff_alpha`).

    ``units``/``ratings``: the units with at least two ratings, and their ratings (the
    pairable values); ``stories``: the stories those units belong to, the unit the bootstrap
    resamples. ``ci_low``/``ci_high``: percentile bootstrap interval from
    ``valid_resamples`` of ``resamples`` replicates (a replicate in which every rating has the
    same value has no α and is left out); ``interval`` says what was resampled and how many.
    ``q_below_min``: the share of valid replicates below :data:`ALPHA_MIN` (Hayes &
    Krippendorff 2007). ``warnings``: sentences on what makes the interval thin (fewer than
    :data:`MIN_STORIES` stories, replicates left out). ``reason``: why ``alpha`` or the
    interval is ``None``.
    """

    alpha: float | None
    ci_low: float | None
    ci_high: float | None
    level: str
    units: int
    ratings: int
    resamples: int
    valid_resamples: int
    seed: int
    confidence: float
    reason: str | None = None
    stories: int = 0
    interval: str = ""
    q_below_min: float | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class GwetAC1:
    """Gwet's AC1 of a set of units (see :func:`gwet_ac1`): ``pa`` the observed and ``pe`` the
    chance agreement, with a percentile bootstrap interval over ``stories`` (``interval``
    says what was resampled). ``reason`` when ``ac1`` is ``None``."""

    ac1: float | None
    ci_low: float | None
    ci_high: float | None
    pa: float | None
    pe: float | None
    units: int
    stories: int
    resamples: int
    valid_resamples: int
    interval: str
    reason: str | None = None


@dataclass(frozen=True)
class Icc:
    """ICC(2,k) of a Likert item (see :func:`icc_2k`) over ``stories`` rated by the same
    ``raters`` (k), of the ``rated`` stories with any rating, with its F-based 95% interval;
    ``note`` says which stories were used, ``reason`` why ``icc`` is ``None``."""

    icc: float | None
    ci_low: float | None
    ci_high: float | None
    stories: int
    raters: int
    note: str = ""
    reason: str | None = None
    rated: int = 0


# Why an experiment whose rater ids are positions has no rater-based coefficient.
POSITIONAL_RATERS = (
    "rater ids are positions within each story (import-ratings --rater-ids positions), not "
    "people: ICC(2,k) needs the same raters across stories"
)


@dataclass(frozen=True)
class Fleiss:
    """Fleiss' κ of a set of units (see :func:`fleiss_kappa`); ``reason`` when ``kappa`` is
    ``None``."""

    kappa: float | None
    units: int
    raters: int | None
    reason: str | None = None


@dataclass(frozen=True)
class ExactAgreement:
    """Share of ``units`` (with at least two ratings) on which every rating is the same."""

    share: float | None
    agreed: int
    units: int


@dataclass(frozen=True)
class ItemAgreement:
    """Agreement on one item (or :data:`ALL_ITEMS`), over the stories of ``scope`` (a source,
    or :data:`ALL_SOURCES`). ``fleiss`` and ``ac1`` are ``None`` for Likert items, ``icc`` for
    the others and for the pooled row."""

    item_id: str
    scope: str
    kind: str
    alpha: Alpha
    fleiss: Fleiss | None
    exact: ExactAgreement
    ac1: GwetAC1 | None = None
    icc: Icc | None = None


def _units(units: Sequence[Sequence[float]]) -> list[np.ndarray]:
    """The units as float arrays without missing ratings."""
    cleaned = []
    for unit in units:
        values = np.asarray(unit, dtype=float)
        cleaned.append(values[~np.isnan(values)])
    return cleaned


def value_counts(units: Sequence[Sequence[float]], domain: Sequence[float]) -> np.ndarray:
    """Units × values matrix: how many ratings of each unit have each value of ``domain``
    (NaN ratings are missing and not counted). Raises ``ValueError`` for a rating outside
    ``domain``."""
    domain_array = np.asarray(domain, dtype=float)
    counts = np.zeros((len(units), len(domain_array)), dtype=np.int64)
    for row, values in enumerate(_units(units)):
        positions = np.searchsorted(domain_array, values)
        inside = (positions < len(domain_array)) & (
            domain_array[np.minimum(positions, len(domain_array) - 1)] == values
        )
        if not inside.all():
            raise ValueError(
                f"Rating {values[~inside][0]} is not one of the values {list(domain)}: "
                f"check the item's scale."
            )
        np.add.at(counts[row], positions, 1)
    return counts


def _alpha_of_counts(counts: np.ndarray, domain: np.ndarray, level: Level) -> float | None:
    if np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    import krippendorff  # at use, as statsmodels below: the app imports this module at start

    return float(
        krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level)
    )


def _story_index(stories: Sequence[Hashable] | None, count: int) -> np.ndarray:
    """Each unit's story as a number 0, 1, …; without ``stories`` each unit is its own."""
    if stories is None:
        return np.arange(count)
    if len(stories) != count:
        raise ValueError(f"stories names {len(stories)} units' stories; there are {count} units.")
    return np.unique(np.asarray([str(story) for story in stories]), return_inverse=True)[1]


def _story_draws(stories: int, bootstrap: int, seed: int) -> Iterator[np.ndarray]:
    """The stories each of ``bootstrap`` replicates draws: ``numpy.random.default_rng(seed)``,
    one ``integers(0, stories, stories)`` per replicate, in order."""
    rng = np.random.default_rng(seed)
    for _ in range(bootstrap):
        yield rng.integers(0, stories, stories)


def cluster_resamples(story_index: np.ndarray, bootstrap: int, seed: int) -> Iterator[np.ndarray]:
    """The unit positions of each of ``bootstrap`` replicates of a cluster bootstrap: each
    draws as many stories as there are, with replacement (``numpy.random.default_rng(seed)``,
    one ``integers(0, stories, stories)`` per replicate), and takes every unit of each story
    drawn. With one unit per story this is the ordinary bootstrap over units. Resampling whole
    stories keeps the dependence between a story's items (Field & Welsh 2007)."""
    stories = int(story_index.max()) + 1 if story_index.size else 0
    members = [np.flatnonzero(story_index == story) for story in range(stories)]
    for drawn in _story_draws(stories, bootstrap, seed):
        yield np.concatenate([members[story] for story in drawn])


# Replicates whose weights are held at once: a chunk × units float matrix.
CHUNK = 100


def replicate_weights(
    story_index: np.ndarray, bootstrap: int, seed: int, chunk: int = CHUNK
) -> Iterator[np.ndarray]:
    """The replicates of :func:`cluster_resamples` as weights, ``chunk`` replicates at a time:
    a replicates × units matrix whose entry is how many times the replicate drew the unit's
    story (the same draws, in the same order, for the same seed). A statistic that is a sum
    over units is then the weights' product with the per-unit terms (Field & Welsh 2007)."""
    stories = int(story_index.max()) + 1 if story_index.size else 0
    draws = _story_draws(stories, bootstrap, seed)
    for start in range(0, bootstrap, chunk):
        size = min(chunk, bootstrap - start)
        drawn = np.stack([next(draws) for _ in range(size)])
        offsets = stories * np.arange(size)[:, None]
        times = np.bincount((drawn + offsets).ravel(), minlength=size * stories)
        yield times.reshape(size, stories)[:, story_index].astype(float)


def _fixed_distances(domain: np.ndarray, level: str) -> np.ndarray:
    """δ²_ck of the levels whose distance does not depend on the data (Krippendorff 2011;
    as the ``krippendorff`` package computes them): nominal [c ≠ k], interval (c − k)²,
    ratio ((c − k) / (c + k))² (0 where c + k = 0)."""
    first, second = domain[:, None], domain[None, :]
    if level == "nominal":
        return (first != second).astype(float)
    if level == "interval":
        return (first - second) ** 2
    total = first + second
    ratio = np.divide(first - second, total, out=np.zeros(total.shape), where=total != 0)
    return ratio**2


def _ordinal_distances(marginals: np.ndarray) -> np.ndarray:
    """δ²_ck of the ordinal level for each replicate's marginals n_g (replicates × values):
    (Σ_{g=c..k} n_g − (n_c + n_k)/2)² (Krippendorff 2011, §4), replicates × values × values."""
    values = marginals.shape[1]
    cumulative = np.concatenate([np.zeros((len(marginals), 1)), marginals.cumsum(axis=1)], axis=1)
    low = np.minimum.outer(np.arange(values), np.arange(values))
    high = np.maximum.outer(np.arange(values), np.arange(values))
    between = cumulative[:, high + 1] - cumulative[:, low]
    ends = (marginals[:, :, None] + marginals[:, None, :]) / 2
    return (between - ends) ** 2


def alpha_replicates(
    counts: np.ndarray,
    domain: np.ndarray,
    level: str,
    story_index: np.ndarray,
    bootstrap: int,
    seed: int,
) -> tuple[np.ndarray, int]:
    """Krippendorff's α of each replicate of :func:`cluster_resamples` over the units ×
    values ``counts``, and how many replicates had fewer than two values and no α.

    As the ``krippendorff`` package computes it (Krippendorff 2011), with w_u the times a
    replicate drew unit u's story: the coincidences o_ck = Σ_u w_u (n_uc n_uk − [c = k] n_uc)
    / (max(n_u, 2) − 1) (a unit with one rating adds nothing), n_c = Σ_k o_ck, n = Σ_c n_c,
    e_ck = (n_c n_k − [c = k] n_c) / (n − 1), α = 1 − Σ o_ck δ²_ck / Σ e_ck δ²_ck; δ² of the
    ordinal level from each replicate's n_c. A replicate whose ratings (of any unit) take
    fewer than two values has no α. Level ``ordinal``, ``nominal``, ``interval`` or ``ratio``.
    """
    counts = np.asarray(counts, dtype=float)
    values = counts.shape[1]
    pairs = np.maximum(counts.sum(axis=1), 2) - 1
    per_unit = counts[:, :, None] * counts[:, None, :] - counts[:, :, None] * np.eye(values)
    per_unit = (per_unit / pairs[:, None, None]).reshape(len(counts), values * values)
    fixed = None if level == "ordinal" else _fixed_distances(np.asarray(domain, float), level)
    found, dropped = [], 0
    for weights in replicate_weights(story_index, bootstrap, seed):
        varied = np.count_nonzero(weights @ counts, axis=1) >= 2
        dropped += int(np.count_nonzero(~varied))
        weights = weights[varied]
        coincidences = (weights @ per_unit).reshape(len(weights), values, values)
        marginals = coincidences.sum(axis=1)
        total = marginals.sum(axis=1)
        expected = marginals[:, :, None] * marginals[:, None, :] - marginals[:, :, None] * np.eye(
            values
        )
        expected /= (total - 1)[:, None, None]
        distances = _ordinal_distances(marginals) if fixed is None else fixed[None]
        observed = (coincidences * distances).sum(axis=(1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            found.append(1 - observed / (expected * distances).sum(axis=(1, 2)))
    return (np.concatenate(found) if found else np.zeros(0)), dropped


def ac1_replicates(
    counts: np.ndarray, story_index: np.ndarray, bootstrap: int, seed: int
) -> tuple[np.ndarray, int]:
    """Gwet's AC1 of each replicate of :func:`cluster_resamples` over the units × categories
    ``counts`` (every unit rated), and how many replicates had no unit with two ratings.

    With w_u the times a replicate drew unit u's story (Gwet 2008, Eq. 19–20, as
    :func:`gwet_ac1`): p_a = Σ_u w_u [r_u ≥ 2] a_u / Σ_u w_u [r_u ≥ 2], a_u = Σ_k r_uk (r_uk −
    1) / (r_u (r_u − 1)); π_k = Σ_u w_u r_uk / r_u / Σ_u w_u; p_e = Σ_k π_k (1 − π_k) / (q − 1);
    AC1 = (p_a − p_e) / (1 − p_e)."""
    counts = np.asarray(counts, dtype=float)
    totals = counts.sum(axis=1)
    pairable = (totals >= 2).astype(float)
    sizes = np.where(totals >= 2, totals, 2)
    agreeing = pairable * (counts * (counts - 1)).sum(axis=1) / (sizes * (sizes - 1))
    shares_of_unit = counts / totals[:, None]
    found, dropped = [], 0
    for weights in replicate_weights(story_index, bootstrap, seed):
        paired = weights @ pairable
        defined = paired > 0
        dropped += int(np.count_nonzero(~defined))
        weights, paired = weights[defined], paired[defined]
        pa = (weights @ agreeing) / paired
        shares = (weights @ shares_of_unit) / weights.sum(axis=1)[:, None]
        pe = (shares * (1 - shares)).sum(axis=1) / (counts.shape[1] - 1)
        found.append((pa - pe) / (1 - pe))
    return (np.concatenate(found) if found else np.zeros(0)), dropped


def interval_label(stories: int, bootstrap: int, seed: int) -> str:
    """What a bootstrap interval resampled, e.g. "percentile bootstrap over 48 stories, 1,000
    replicates, seed 0"."""
    return f"percentile bootstrap over {stories:,} stories, {bootstrap:,} replicates, seed {seed}"


def _thin_interval(
    stories: int, bootstrap: int, valid: int, spread: float | None = None
) -> tuple[str, ...]:
    """The warnings of an interval over ``stories`` with ``valid`` of ``bootstrap`` replicates
    defined, whose values span ``spread`` (largest − smallest; None when unknown): an
    interval whose replicates all agree (within :data:`SAME_VALUE`) has no width, and its
    bounds are equal because nothing varied between resamples, not because α is precise."""
    found = []
    if stories < MIN_STORIES:
        found.append(
            f"The interval rests on {counted(stories, 'story')} (fewer than {MIN_STORIES}): it "
            f"shows little of how the coefficient varies between stories; collect more stories."
        )
    if valid and spread is not None and spread <= SAME_VALUE:
        found.append(
            f"All {valid:,} bootstrap replicates gave the same α, so its interval has no width: "
            f"every resample of the stories gave the same ratings' pattern (e.g. one story, or "
            f"stories rated alike); it says nothing of α's uncertainty."
        )
    if valid < bootstrap:
        found.append(
            f"{bootstrap - valid:,} of {bootstrap:,} bootstrap replicates had a single value and "
            f"no α: left out."
        )
    return tuple(found)


def krippendorff_alpha(
    units: Sequence[Sequence[float]],
    level: Level,
    domain: Sequence[float] | None = None,
    *,
    stories: Sequence[Hashable] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Alpha:
    """Krippendorff's α of ``units`` (each a sequence of ratings; NaN is missing).

    α = 1 − D_o / D_e: the observed disagreement between ratings of the same unit over the
    disagreement expected from all pairable ratings, both weighted by the distance of
    ``level`` (nominal: 0 for equal values, 1 otherwise; ordinal: squared count of ratings
    between the two values, Krippendorff 2011 §4; interval: squared difference). Units with
    fewer than two ratings are not pairable and left out. 1 is perfect agreement, 0 the
    agreement of chance, below 0 systematic disagreement. Computed by the ``krippendorff``
    package from the units × values counts; ``domain`` is the scale's values (default: the
    values seen; a value nobody used carries no ratings and does not change α).

    Interval: a percentile cluster bootstrap over stories (:func:`cluster_resamples`;
    ``stories`` names each unit's story, default one story per unit): ``bootstrap``
    replicates, their (1 − confidence)/2 and (1 + confidence)/2 quantiles. A replicate whose
    ratings all have one value has no α and is left out, and counted. ``q_below_min`` is the
    share of replicates below :data:`ALPHA_MIN`, Hayes & Krippendorff's (2007) q. Intervals
    over fewer than :data:`MIN_STORIES` stories, or with replicates left out, carry warnings.

    ``alpha`` is ``None`` (with ``reason``) when fewer than two units are pairable or every
    rating has the same value (D_e = 0). Units: α is a coefficient, at most 1.
    Reference: Krippendorff (2011); Efron & Tibshirani (1993), ch. 13; Field & Welsh (2007);
    Hayes & Krippendorff (2007).
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}.")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be 0 or more replicates, got {bootstrap}.")
    cleaned = _units(units)
    keep = [index for index, values in enumerate(cleaned) if values.size >= 2]
    pairable = [cleaned[index] for index in keep]
    all_stories = _story_index(stories, len(cleaned))
    story_index = np.unique(all_stories[keep], return_inverse=True)[1]
    story_count = int(story_index.max()) + 1 if keep else 0
    seen = sorted({float(value) for values in pairable for value in values})
    domain_array = np.asarray(seen if domain is None else sorted(domain), dtype=float)
    base = Alpha(
        alpha=None,
        ci_low=None,
        ci_high=None,
        level=level,
        units=len(pairable),
        ratings=int(sum(values.size for values in pairable)),
        resamples=bootstrap,
        valid_resamples=0,
        seed=seed,
        confidence=confidence,
        stories=story_count,
        interval=interval_label(story_count, bootstrap, seed),
    )
    if len(pairable) < 2:
        return replace(base, reason="fewer than 2 stories with two or more ratings")
    counts = value_counts(pairable, domain_array)
    alpha = _alpha_of_counts(counts, domain_array, level)
    if alpha is None:
        return replace(base, reason="every rating has the same value: no variation to compare")
    replicates = alpha_replicates(counts, domain_array, level, story_index, bootstrap, seed)[0]
    spread = float(np.ptp(replicates)) if replicates.size else None
    thin = _thin_interval(story_count, bootstrap, replicates.size, spread)
    base = replace(base, alpha=alpha, valid_resamples=replicates.size, warnings=thin)
    if not replicates.size:
        return replace(base, reason="no bootstrap replicate had two different values")
    tail = (1 - confidence) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    q = float(np.mean(replicates < ALPHA_MIN))
    return replace(base, ci_low=float(low), ci_high=float(high), q_below_min=q)


def _ac1_of_counts(counts: np.ndarray) -> tuple[float, float, float] | None:
    """(AC1, p_a, p_e) of a units × categories count matrix (every unit has a rating), or
    ``None`` when no unit has two ratings."""
    totals = counts.sum(axis=1)
    pairable = totals >= 2
    if not pairable.any():
        return None
    paired, sizes = counts[pairable], totals[pairable]
    pa = float(np.mean((paired * (paired - 1)).sum(axis=1) / (sizes * (sizes - 1))))
    shares = (counts / totals[:, None]).mean(axis=0)
    pe = float((shares * (1 - shares)).sum() / (counts.shape[1] - 1))
    return (pa - pe) / (1 - pe), pa, pe


def gwet_ac1(
    units: Sequence[Sequence[float]],
    categories: Sequence[float],
    *,
    stories: Sequence[Hashable] | None = None,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> GwetAC1:
    """Gwet's first-order agreement coefficient AC1 of categorical ``units`` (each a sequence
    of ratings from ``categories``; NaN is missing).

    With r_i the ratings of unit i and r_ik those in category k, q the number of categories:
    p_a = mean over units with r_i ≥ 2 of Σ_k r_ik (r_ik − 1) / (r_i (r_i − 1)) (the share of
    agreeing rater pairs); π_k = mean over units with a rating of r_ik / r_i;
    p_e = Σ_k π_k (1 − π_k) / (q − 1); AC1 = (p_a − p_e) / (1 − p_e). Unlike κ's chance
    agreement Σ π_k², p_e is small when one category dominates, so AC1 stays near the
    observed agreement when a "Yes" is rare, where κ and α fall towards 0 (the prevalence
    paradox). Raters may differ from unit to unit. Interval: the percentile cluster
    bootstrap over ``stories`` of :func:`krippendorff_alpha` (same draws for the same seed).

    ``ac1`` is ``None`` (with ``reason``) when no unit has two ratings. Units: a coefficient,
    at most 1. Reference: Gwet (2008), Eq. 19–20; Gwet (2014), ch. 4 (its 4-rater, 12-subject
    example gives AC1 = 0.7754).
    """
    if len(categories) < 2:
        raise ValueError("Gwet's AC1 needs at least two categories.")
    cleaned = _units(units)
    keep = [index for index, values in enumerate(cleaned) if values.size >= 1]
    story_index = np.unique(_story_index(stories, len(cleaned))[keep], return_inverse=True)[1]
    story_count = int(story_index.max()) + 1 if keep else 0
    base = GwetAC1(
        ac1=None,
        ci_low=None,
        ci_high=None,
        pa=None,
        pe=None,
        units=len(keep),
        stories=story_count,
        resamples=bootstrap,
        valid_resamples=0,
        interval=interval_label(story_count, bootstrap, seed),
    )
    counts = value_counts([cleaned[index] for index in keep], sorted(categories))
    point = _ac1_of_counts(counts)
    if point is None:
        return replace(base, reason="no story has two or more ratings")
    ac1, pa, pe = point
    replicates = ac1_replicates(counts, story_index, bootstrap, seed)[0]
    base = replace(base, ac1=ac1, pa=pa, pe=pe, valid_resamples=replicates.size)
    if not replicates.size:
        return base
    tail = (1 - confidence) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    return replace(base, ci_low=float(low), ci_high=float(high))


def _icc_2k_of(
    matrix: np.ndarray, confidence: float
) -> tuple[float | None, float | None, float | None]:
    """ICC(2,k) of a complete stories × raters ``matrix`` with the interval of McGraw & Wong
    (1996), case 2A (as ``pingouin.intraclass_corr`` computes it); no interval when the
    error mean square is 0, no ICC when the variance it divides by is not positive."""
    from scipy import stats as scipy_stats

    n, k = matrix.shape
    grand = matrix.mean()
    ss_stories = k * float(((matrix.mean(axis=1) - grand) ** 2).sum())
    ss_raters = n * float(((matrix.mean(axis=0) - grand) ** 2).sum())
    ss_error = float(((matrix - grand) ** 2).sum()) - ss_stories - ss_raters
    bms, jms = ss_stories / (n - 1), ss_raters / (k - 1)
    ems = max(ss_error, 0.0) / ((n - 1) * (k - 1))
    total = bms + (jms - ems) / n
    if total <= 0:
        return None, None, None
    icc = (bms - ems) / total
    if ems <= 0:
        return icc, None, None
    with np.errstate(invalid="ignore", divide="ignore"):
        single = np.float64(bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n)
        fj, df_stories, df_error = np.float64(jms) / ems, n - 1, (n - 1) * (k - 1)
        spread = n * (1 + (k - 1) * single) - k * single
        dof = (df_error * (k * single * fj + spread) ** 2) / (
            df_stories * k**2 * single**2 * fj**2 + spread**2
        )
        upper_f = scipy_stats.f.ppf((1 + confidence) / 2, df_stories, dof)
        lower_f = scipy_stats.f.ppf((1 + confidence) / 2, dof, df_stories)
        scale = k * jms + (k * n - k - n) * ems
        low = n * (bms - upper_f * ems) / (upper_f * scale + n * bms)
        high = n * (lower_f * bms - ems) / (scale + n * lower_f * bms)
    if not (math.isfinite(low) and math.isfinite(high)):
        # With an ICC near 0 the Satterthwaite degrees of freedom are undefined.
        return icc, None, None
    return icc, _spearman_brown(low, k), _spearman_brown(high, k)


def _spearman_brown(single: float, k: int) -> float:
    """The reliability of the mean of ``k`` raters from one rater's, k·r / (1 + (k − 1)·r):
    increasing on (−1/(k − 1), 1], unbounded below as r falls to −1/(k − 1). An interval end
    of one rater's ICC at or below that pole has no finite image: −∞ (an interval without
    a lower bound), never the positive value the formula gives past the pole."""
    if single <= -1 / (k - 1):
        return -math.inf
    return float(single * k / (1 + single * (k - 1)))


def icc_2k(rows: pd.DataFrame, confidence: float = 0.95) -> Icc:
    """ICC(2,k) of ``rows`` (columns ``story_id``, ``rater_id``, ``value``; NaN missing): how
    reliable a story's mean over its k raters is, raters taken as a random sample.

    From the two-way ANOVA of n stories × k raters: mean squares for stories (BMS), raters
    (JMS) and error (EMS), ICC(2,k) = (BMS − EMS) / (BMS + (JMS − EMS) / n), with the F-based
    interval of McGraw & Wong (1996, case 2A, carried to k raters by Spearman–Brown). The same
    numbers as ``pingouin.intraclass_corr``'s row ``ICC(A,k)`` (a test checks it), computed
    here from the matrix because the agreement table needs one per item and source and
    pingouin's pandas ANOVA takes a fifth of a second each.

    The model needs every rater to rate every story. With gaps, the stories rated by all the
    raters who rated any story here are used (complete cases; ``note`` says how many);
    ``icc`` is ``None`` with a reason when fewer than two stories or raters remain, which is
    the case in a crowd design where each story has raters of its own. Units: a
    coefficient, at most 1. Reference: Shrout & Fleiss (1979), ICC(2,k), Table 4 (.62 for
    their Table 2 data); McGraw & Wong (1996).
    """
    answered = rows.dropna(subset=["value"]).drop_duplicates(["story_id", "rater_id"])
    wide = answered.set_index(["story_id", "rater_id"])["value"].unstack()
    raters, total = int(wide.shape[1]), int(wide.shape[0])
    complete = wide.dropna().to_numpy(dtype=float)
    stories = int(complete.shape[0])
    if raters < 2:
        return Icc(None, None, None, stories, raters, reason="fewer than 2 raters", rated=total)
    if stories < 2:
        return Icc(
            None,
            None,
            None,
            stories,
            raters,
            reason=f"fewer than 2 stories were rated by all {raters} raters: ICC(2,k) needs "
            "every rater to rate every story (a crossed design)",
            rated=total,
        )
    note = (
        f"all {total} stories, each rated by the same {raters} raters"
        if stories == total
        else f"{stories} of {total} stories (those rated by all {raters} raters)"
    )
    if np.all(complete == complete[0, 0]):
        return Icc(None, None, None, stories, raters, note, "every rating is the same", total)
    icc, low, high = _icc_2k_of(complete, confidence)
    if icc is None:
        why = "the stories' and raters' mean ratings hardly differ: no variance to compare"
        return Icc(None, None, None, stories, raters, note, why, total)
    return Icc(icc, low, high, stories, raters, note, rated=total)


def fleiss_kappa(units: Sequence[Sequence[float]], categories: Sequence[float]) -> Fleiss:
    """Fleiss' κ of categorical ``units`` (each a sequence of ratings from ``categories``).

    With N units, n ratings each, n_ij the ratings of unit i in category j:
    P_i = (Σ_j n_ij² − n) / (n(n − 1)), P̄ = mean P_i, p_j = Σ_i n_ij / (N n),
    P_e = Σ_j p_j², κ = (P̄ − P_e) / (1 − P_e). Computed by
    ``statsmodels.stats.inter_rater.fleiss_kappa(method="fleiss")`` on the units × categories
    counts. It needs at least two units and the same number of ratings (at least two) for
    every unit: otherwise, or when every rating falls in one category (P_e = 1), ``kappa`` is
    ``None`` with ``reason``.
    Units with no rating at all are left out.

    Units: κ is a coefficient, 1 for perfect agreement, 0 for chance. Reference: Fleiss (1971).
    """
    rated = [values for values in _units(units) if values.size > 0]
    sizes = sorted({values.size for values in rated})
    if not rated:
        return Fleiss(None, 0, None, reason="no ratings")
    if len(sizes) > 1:
        return Fleiss(
            None,
            len(rated),
            None,
            reason=f"stories have {sizes[0]} to {sizes[-1]} ratings; Fleiss' κ needs the same "
            f"number for every story",
        )
    if sizes[0] < 2:
        return Fleiss(None, len(rated), sizes[0], reason="each story has one rating only")
    if len(rated) < 2:
        return Fleiss(None, len(rated), sizes[0], reason="fewer than 2 stories")
    counts = value_counts(rated, sorted(categories))
    if np.count_nonzero(counts.sum(axis=0)) < 2:
        return Fleiss(None, len(rated), sizes[0], reason="every rating is in the same category")
    from statsmodels.stats import inter_rater  # statsmodels: 2 s of CPU at each app start

    kappa = inter_rater.fleiss_kappa(counts, method="fleiss")
    return Fleiss(float(kappa), len(rated), sizes[0])


def exact_agreement(units: Sequence[Sequence[float]]) -> ExactAgreement:
    """The share of units with at least two ratings on which all ratings are equal (the
    subscript of Karpinska et al. 2021, Tables 1–2). Units: a fraction."""
    pairable = [values for values in _units(units) if values.size >= 2]
    agreed = sum(1 for values in pairable if np.all(values == values[0]))
    share = agreed / len(pairable) if pairable else None
    return ExactAgreement(share=share, agreed=agreed, units=len(pairable))


def _domain(item: Item) -> list[float]:
    """The values an item's answers take: its points, or 0/1."""
    if item.kind == "likert":
        return [float(point) for point in item.scale]
    return [0.0, 1.0]


@dataclass(frozen=True)
class _Settings:
    """How :func:`agreement_table` computes each row; ``raters_known`` False when rater ids
    are positions (no ICC)."""

    likert_level: Level
    bootstrap: int
    seed: int
    raters_known: bool = True


def _agreement(
    item_id: str, scope: str, kind: str, rows: pd.DataFrame, domain: list[float], how: _Settings
) -> ItemAgreement:
    """One row of :func:`agreement_table`: ``rows`` are the coded answers of the item (or of
    every item, pooled: a unit is then a story × item, and the bootstrap draws stories)."""
    level: Level = "nominal" if kind in NOMINAL_KINDS else how.likert_level
    pooled = item_id == ALL_ITEMS
    keys = ["story_id", "item"] if pooled else ["story_id"]
    grouped = rows.groupby(keys, sort=True)["coded"]
    units = [group.tolist() for _, group in grouped]
    stories = [key[0] if pooled else key for key, _ in grouped]
    resampling = {"stories": stories, "bootstrap": how.bootstrap, "seed": how.seed}
    categorical = kind != "likert"
    return ItemAgreement(
        item_id=item_id,
        scope=scope,
        kind=kind,
        alpha=krippendorff_alpha(units, level, domain, **resampling),
        fleiss=fleiss_kappa(units, domain) if categorical else None,
        exact=exact_agreement(units),
        ac1=gwet_ac1(units, domain, **resampling) if categorical else None,
        icc=None if categorical or pooled else _icc(rows, how.raters_known),
    )


def _icc(rows: pd.DataFrame, raters_known: bool) -> Icc:
    """ICC(2,k) of an item's coded answers, or none (with the reason) where rater ids are
    positions: "rater 1" of two stories need not be one person, so a rater column of the
    story × rater matrix would not be a rater."""
    if not raters_known:
        stories = int(rows["story_id"].nunique())
        return Icc(None, None, None, 0, 0, reason=POSITIONAL_RATERS, rated=stories)
    return icc_2k(rows[["story_id", "rater_id", "coded"]].rename(columns={"coded": "value"}))


def agreement_table(
    instrument: Instrument,
    judgements: pd.DataFrame,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    likert_level: Level = "ordinal",
    raters_known: bool = True,
) -> tuple[ItemAgreement, ...]:
    """Agreement on each scored item, over all stories and, with several sources, per source.

    ``judgements``: the rating contract of :func:`cyoa.rating.analysis.ratings.analyze_ratings`
    (``story_id``, ``source``, ``item``, ``value``; NaN is a missing answer). A unit is a
    story's answers to the item, reverse-coded (which changes no single item's α, but lets
    the pooled row compare items on one direction). α is nominal for yes/no and true/false
    items and ``likert_level`` (ordinal unless told; interval treats the points as equally
    spaced) for Likert items; Fleiss' κ is computed for yes/no and true/false items only.

    Gwet's AC1 is computed beside κ for yes/no and true/false items, ICC(2,k) for each
    Likert item (:func:`icc_2k`) unless ``raters_known`` is False (rater ids are positions
    within each story, not people: no ICC, with :data:`POSITIONAL_RATERS` as its reason).

    When all scored items share one kind and scale, a last row per scope (item
    :data:`ALL_ITEMS`) pools every story × item as a unit: the agreement over the whole
    instrument. Its bootstrap resamples stories, each with all its items (a story's items
    share the story and its raters, so they are not independent units). FEI probes, each
    asked about one story, get this pooled row only. Each bootstrap uses ``seed``.
    """
    scored = [item for item in instrument.items if item.scored]
    judgements = judgements[judgements["item"].isin([item.id for item in scored])]
    judgements = judgements.assign(coded=coded_values(instrument, judgements))
    if likert_level not in LEVELS:
        raise ValueError(f"likert_level must be one of {', '.join(LEVELS)}, got {likert_level!r}.")
    how = _Settings(likert_level, bootstrap, seed, raters_known)
    sources = sorted(judgements["source"].unique())
    scopes = [ALL_SOURCES] + (sources if len(sources) > 1 else [])
    rows: list[ItemAgreement] = []
    shapes = {(item.kind, item.points, item.low) for item in scored}
    for scope in scopes:
        subset = judgements if scope == ALL_SOURCES else judgements[judgements["source"] == scope]
        by_item = dict(tuple(subset.groupby("item", sort=False)))
        for item in scored:
            # An FEI probe is asked about one story only: it has no agreement of its own.
            if item.id not in by_item or item.story_id is not None:
                continue
            rows.append(_agreement(item.id, scope, item.kind, by_item[item.id], _domain(item), how))
        if len(shapes) == 1 and len(scored) > 1 and not subset.empty:
            kind = scored[0].kind
            rows.append(_agreement(ALL_ITEMS, scope, kind, subset, _domain(scored[0]), how))
    return tuple(rows)
