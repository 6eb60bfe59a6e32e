"""Likert scales (such as the AISS): item and factor summaries per source, reliability, and
tests between sources; and the per-source summaries and tests every rating analysis shares.

The unit of a story-generation comparison is the **story**: a source is judged by the stories
it wrote, and the raters of one story share that story, so their answers are not independent.
So every mean per source here is a mean over stories of the story's mean over its raters, with
a 95% Student t interval over those story means (:func:`mean_interval`), and the tests between
sources compare story means (:func:`compare_sources`), with every pair of sources compared on
its own (Mann–Whitney U, Holm within the pairs, Cliff's δ with its interval). With the same
number of raters per story the mean equals the mean of all answers. Answer counts per point are
over all answers.

Factor scores follow the AISS's scoring (reverse-keyed items coded ``low + high − answer``,
that is ``points + 1 − answer`` on a scale from 1, then the mean of the factor's items) and
are computed per rater × story (:func:`factor_scores`). Every figure is on the items' own
points (0 … 10 for a 0–10 rubric), and intervals are cut at the scale's ends. An instrument
whose Likert items declare no factor is one scale of all its Likert items
(:func:`likert_scales`).

References:
    Student (1908). The probable error of a mean. Biometrika 6(1).
    Cronbach, L. J. (1951). Coefficient alpha and the internal structure of tests.
    Psychometrika 16(3).
    Feldt, L. S. (1965). The approximate sampling distribution of Kuder–Richardson reliability
    coefficient twenty. Psychometrika 30(3) (the interval of α).
    McDonald, R. P. (1999). Test Theory: A Unified Treatment, ch. 6 (ω).
    Mann, H. B. and Whitney, D. R. (1947); Kruskal, W. H. and Wallis, W. A. (1952). Use of ranks
    in one-criterion variance analysis. JASA 47(260).
    Tomczak, M. and Tomczak, E. (2014). The need to report effect size estimates revisited.
    Trends in Sport Sciences 21(1) (ε² for Kruskal–Wallis).
    Holm, S. (1979).
    Cliff, N. (1993). Dominance statistics: ordinal analyses to answer ordinal questions.
    Psychological Bulletin 114(3); Feng, D. and Cliff, N. (2004). Monte Carlo evaluation of
    ordinal d with improved confidence interval. JMASM 3(2) (Cliff's δ and its interval).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from cyoa.rating.analysis.mixed import ModelEstimate, source_model
from cyoa.rating.instruments.types import Instrument
from cyoa.stats import cliffs_delta, holm, kruskal_wallis, mann_whitney

CONFIDENCE = 0.95
# The scope of a figure over every source's stories (as opposed to one source's).
ALL_SOURCES = "all"
# Below this uniqueness an item's one-factor loading is (nearly) 1: a Heywood case.
HEYWOOD_UNIQUENESS = 0.01
# One-factor fits from this many fixed starting values (seeds 0, 1, …); the best is kept.
FACTOR_STARTS = 5
# The one scale of an instrument whose Likert items declare no factor (see likert_scales).
ALL_ITEMS_SCALE = "all items"


@dataclass(frozen=True)
class MeanInterval:
    """Mean of ``n`` values with a two-sided Student t interval at ``confidence``.

    ``mean`` is ``None`` without values; the interval and ``sd`` (sample standard deviation,
    n − 1 in the denominator) are ``None`` with fewer than two. ``clipped``: an end of the
    interval reached past the bounds of the scale and was cut at the bound.
    """

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    sd: float | None
    n: int
    confidence: float = CONFIDENCE
    clipped: bool = False


def mean_interval(
    values: Sequence[float],
    confidence: float = CONFIDENCE,
    bounds: tuple[float, float] | None = None,
) -> MeanInterval:
    """Mean of ``values`` (NaN left out) with the t interval mean ± t(n − 1) · sd / √n.

    ``t(n − 1)`` is the (1 + confidence)/2 quantile of Student's t with n − 1 degrees of
    freedom. Units: those of the values. ``bounds`` (low, high): the values the scale can
    take; a mean of them lies between the two, so an end of the interval past a bound is cut
    at the bound (which leaves the interval's coverage as it was) and ``clipped`` says so.
    Reference: Student (1908).
    """
    from scipy import stats as scipy_stats

    array = np.asarray(values, dtype=float)
    array = array[~np.isnan(array)]
    n = int(array.size)
    if n == 0:
        return MeanInterval(None, None, None, None, 0, confidence)
    mean = float(array.mean())
    if n == 1:
        return MeanInterval(mean, None, None, None, 1, confidence)
    sd = float(array.std(ddof=1))
    half = float(scipy_stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is None or bounds[0] <= low and high <= bounds[1]:
        return MeanInterval(mean, low, high, sd, n, confidence)
    low, high = max(low, float(bounds[0])), min(high, float(bounds[1]))
    return MeanInterval(mean, low, high, sd, n, confidence, clipped=True)


@dataclass(frozen=True)
class PairComparison:
    """Two sources compared on their own (see :func:`compare_sources`): Mann–Whitney U of
    ``first`` against ``second`` with its p-value (found as ``p_method`` says; ``None`` when
    every value of the two is the same), ``p_holm`` Holm-adjusted across the pairs of the
    same test, and Cliff's δ of ``first`` against ``second`` with its 95% interval (``None``
    when a source has fewer than two values)."""

    first: str
    second: str
    n_first: int
    n_second: int
    u: float
    p_value: float | None
    p_method: str
    p_holm: float | None
    delta: float
    delta_ci_low: float | None
    delta_ci_high: float | None


@dataclass(frozen=True)
class SourceTest:
    """A test of whether ``what`` differs between sources (see :func:`compare_sources`).

    ``effect``: Cliff's δ (= the rank-biserial r) of the first source against the second
    (Mann–Whitney) or ε² (Kruskal–Wallis), named by ``effect_name``. ``p_holm``: Holm-adjusted
    across the family of tests it was reported with. ``reason``: why the test has no p-value.
    ``p_method``: how the p-value was found ("exact", "permutation (exact enumeration)",
    "permutation (Monte Carlo, …)", "normal approximation" or "chi-squared approximation").
    ``pairs``: every pair of sources compared on its own, Holm-adjusted within the pairs.
    """

    what: str
    method: str
    sources: tuple[str, ...]
    n: dict[str, int]
    statistic: float | None
    p_value: float | None
    effect: float | None
    effect_name: str
    p_holm: float | None = None
    reason: str | None = None
    p_method: str | None = None
    pairs: tuple[PairComparison, ...] = ()


def compare_pairs(samples: Mapping[str, np.ndarray]) -> tuple[PairComparison, ...]:
    """Every pair of sources (in the order given, first against later): two-sided Mann–Whitney
    U (:func:`cyoa.stats.mann_whitney`) and Cliff's δ with its 95% interval
    (:func:`cyoa.stats.cliffs_delta`), the p-values Holm-adjusted across the pairs. A pair
    whose values are all the same has no p-value. Reference: Mann & Whitney (1947); Cliff
    (1993); Feng & Cliff (2004); Holm (1979)."""
    pairs = []
    for first, second in itertools.combinations(samples, 2):
        x, y = samples[first], samples[second]
        test = mann_whitney(x, y)
        delta = cliffs_delta(x, y, CONFIDENCE)
        constant = np.all(np.concatenate([x, y]) == x[0])
        p_value = None if constant or math.isnan(test.p_value) else test.p_value
        pairs.append(
            PairComparison(
                first, second, int(x.size), int(y.size), test.u, p_value, test.method, None,
                delta.delta, delta.ci_low, delta.ci_high,
            )
        )  # fmt: skip
    tested = [index for index, pair in enumerate(pairs) if pair.p_value is not None]
    adjusted = holm([pairs[index].p_value for index in tested])
    for index, p in zip(tested, adjusted, strict=True):
        pairs[index] = replace(pairs[index], p_holm=p)
    return tuple(pairs)


def compare_sources(groups: Mapping[str, Sequence[float]], what: str) -> SourceTest | None:
    """Test whether the values of ``what`` differ between sources; ``None`` with fewer than
    two sources that have values.

    Two sources: two-sided Mann–Whitney U (:func:`cyoa.stats.mann_whitney`; the
    statistic is U of the first source in sorted order) with Cliff's δ, which for two groups
    is the rank-biserial r = 2U/(n₁n₂) − 1. More: Kruskal–Wallis H
    (:func:`cyoa.stats.kruskal_wallis`, tie-corrected) with ε² = H / (n − 1). Either way the
    p-value is exact or a permutation p for small samples and the normal (χ²) approximation
    for large ones, as ``p_method`` says, and ``pairs`` compares every pair of sources
    (:func:`compare_pairs`: the post-hoc comparisons after Kruskal–Wallis, and δ's interval
    with two sources). When every value is the same there is nothing to test and ``p_value``
    is ``None``. Units: p-values are fractions; δ lies in [−1, 1], ε² in [0, 1].
    Reference: Mann & Whitney (1947); Kruskal & Wallis (1952); Tomczak & Tomczak (2014);
    Cliff (1993).
    """
    samples = {}
    for source in sorted(groups):
        array = np.asarray(groups[source], dtype=float)
        array = array[~np.isnan(array)]
        if array.size:
            samples[source] = array
    if len(samples) < 2:
        return None
    names = tuple(samples)
    n = {source: int(values.size) for source, values in samples.items()}
    two = len(samples) == 2
    method = "Mann–Whitney U (two-sided)" if two else "Kruskal–Wallis H"
    effect_name = (
        f"Cliff's δ = rank-biserial r ({names[0]} vs {names[1]})" if two else "epsilon squared"
    )
    pooled = np.concatenate(list(samples.values()))
    if np.all(pooled == pooled[0]):
        return SourceTest(
            what, method, names, n, None, None, None, effect_name, reason="every value is the same"
        )
    pairs = compare_pairs(samples)
    if two:
        (pair,) = pairs
        return SourceTest(
            what, method, names, n, pair.u, pair.p_value, pair.delta, effect_name,
            p_method=pair.p_method, pairs=pairs,
        )  # fmt: skip
    omnibus = kruskal_wallis(list(samples.values()))
    return SourceTest(
        what, method, names, n, omnibus.h, omnibus.p_value, omnibus.epsilon_squared,
        effect_name, p_method=omnibus.method, pairs=pairs,
    )  # fmt: skip


# Why a test over story means has no p where raters are nested in sources.
NESTED_RATERS_REASON = "raters nested in sources"
NESTED_RATERS_NOTE = (
    "No p for the tests over story means: raters are nested in sources (each rater rated "
    "one source's stories only, some rated several), so a source's story means share its "
    "raters and are not independent; a rank test over them treats a lenient rater's "
    "stories as independent evidence and rejects a true null far more often than its level "
    "(19% at .05 in bench/results/rating-coverage.md). The mixed model's difference, which counts "
    "the raters, is the test; U and the effect size stay, to describe the story means."
)


def story_means_share_raters(judgements: pd.DataFrame, raters_known: bool = True) -> bool:
    """True when the story means of different stories of a source share raters while no
    rater rated two sources (raters *nested* in sources): then a source's story means are
    correlated through its raters' leniency, and a rank test over story means (which takes
    them as independent) is not valid. False when rater ids are positions (who rated what is
    unknown), when some rater rated two sources (crossed: a rater's leniency falls on both
    sides) or when every rater rated a single story. ``judgements``: ``story_id``,
    ``source``, ``rater_id``. Reference: Judd, Westfall & Kenny (2012), JPSP 103(1), on
    treating stimuli (here stories) as fixed when raters vary."""
    if not raters_known or judgements.empty:
        return False
    by_rater = judgements.groupby("rater_id")
    nested = not (by_rater["source"].nunique() > 1).any()
    return nested and bool((by_rater["story_id"].nunique() > 1).any())


def without_p(test: SourceTest, reason: str) -> SourceTest:
    """``test`` with no p-value (nor Holm's, nor its pairs'), ``reason`` saying why; the
    statistic and effect size stay, as descriptions."""
    pairs = tuple(replace(pair, p_value=None, p_holm=None) for pair in test.pairs)
    return replace(test, p_value=None, p_holm=None, reason=reason, pairs=pairs)


def with_holm(tests: Sequence[SourceTest]) -> tuple[SourceTest, ...]:
    """``tests`` with ``p_holm`` set: Holm's adjustment across those that have a p-value
    (:func:`cyoa.stats.holm`). Reference: Holm (1979)."""
    tested = [index for index, test in enumerate(tests) if test.p_value is not None]
    adjusted = holm([tests[index].p_value for index in tested])
    result = list(tests)
    for index, p in zip(tested, adjusted, strict=True):
        result[index] = replace(tests[index], p_holm=p)
    return tuple(result)


def coded_values(instrument: Instrument, judgements: pd.DataFrame) -> pd.Series:
    """The ``value`` column after reverse coding: ``low + high − value`` for the instrument's
    reverse-keyed Likert items, ``value`` for every other item (NaN stays NaN), as
    :meth:`~cyoa.rating.instruments.types.Instrument.coded` does one value at a time."""
    ends = {
        item.id: float(item.low + item.high)
        for item in instrument.items
        if item.reverse and item.kind == "likert"
    }
    values = judgements["value"].astype(float)
    mirror = judgements["item"].map(ends).astype(float)  # float even when empty
    return values.where(mirror.isna(), mirror - values)


def likert_scales(instrument: Instrument) -> dict[str, tuple[str, ...]]:
    """The scales of ``instrument`` that get scores, tests between sources and reliability:
    its factors that hold a Likert item (name → item ids, in the instrument's order); or,
    when no Likert item declares a factor, one scale :data:`ALL_ITEMS_SCALE` of all its
    Likert items, provided they share one range of points (items on different ranges are
    not averaged; each is still summarised on its own). Empty without Likert items."""
    factors = {
        factor: item_ids
        for factor, item_ids in instrument.factors().items()
        if any(instrument.item(i).kind == "likert" for i in item_ids)
    }
    if factors:
        return factors
    likert = [item for item in instrument.items if item.kind == "likert"]
    if not likert or len({item.bounds() for item in likert}) > 1:
        return {}
    return {ALL_ITEMS_SCALE: tuple(item.id for item in likert)}


def scale_bounds(instrument: Instrument, item_ids: Sequence[str]) -> tuple[float, float]:
    """The lowest and highest value a mean of the Likert items ``item_ids`` can take: the
    lowest of their lowest points and the highest of their highest (their common ends when
    they share a range); ``(1, 1)`` without Likert items."""
    ends = [instrument.item(i).bounds() for i in item_ids if instrument.item(i).kind == "likert"]
    if not ends:
        return (1.0, 1.0)
    return (min(low for low, _ in ends), max(high for _, high in ends))


def _story_means(frame: pd.DataFrame, column: str) -> pd.Series:
    """Per story: the mean of ``column`` over the story's rows (NaN left out)."""
    return frame.groupby("story_id")[column].mean().dropna()


@dataclass(frozen=True)
class ItemSummary:
    """One Likert item's answers from one source's stories, as answered (not reverse-coded).

    ``counts``: answers per point, the item's lowest to highest; ``answers`` and
    ``stories`` with an answer; ``mean``: over stories of the story's mean answer, with the
    t interval over stories (cut at the item's lowest and highest points).
    """

    item_id: str
    source: str
    counts: dict[int, int]
    answers: int
    stories: int
    mean: MeanInterval


@dataclass(frozen=True)
class FactorSummary:
    """One factor's scores for one source: ``scores`` (rater × story scores), ``stories``,
    ``mean`` over stories of the story's mean score with the t interval, and the ``median``
    of the rater × story scores."""

    factor: str
    source: str
    items: tuple[str, ...]
    scores: int
    stories: int
    mean: MeanInterval
    median: float | None


@dataclass(frozen=True)
class Reliability:
    """Internal consistency of one factor over the complete rater × story rows (``n``) of
    ``scope``: :data:`ALL_SOURCES` (pooled) or one source.

    ``cronbach_alpha`` with its Feldt interval; ``omega``: McDonald's ω from a one-factor
    model (see :func:`mcdonald_omega`), ``None`` with ``omega_reason`` when it cannot be
    estimated. ``warnings``: a negative α, an item that never varies
    (:func:`reliability_warnings`).
    """

    factor: str
    items: int
    n: int
    cronbach_alpha: float | None
    alpha_ci_low: float | None
    alpha_ci_high: float | None
    omega: float | None
    omega_reason: str | None
    scope: str = "all"
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScaleAnalysis:
    """Likert items and factors per source, reliability per factor, and one test between
    sources per factor (Holm-adjusted across factors)."""

    items: tuple[ItemSummary, ...]
    factors: tuple[FactorSummary, ...]
    reliability: tuple[Reliability, ...]
    tests: tuple[SourceTest, ...]
    method: str
    models: tuple[ModelEstimate, ...] = ()

    def model(self, what: str) -> ModelEstimate | None:
        """The model estimate of a factor (its name) or an item (``item <id>``)."""
        return next((model for model in self.models if model.what == what), None)


def scale_models(
    instrument: Instrument,
    judgements: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    raters_known: bool = True,
    confidence: float = CONFIDENCE,
) -> tuple[ModelEstimate, ...]:
    """The crossed story × rater model (:func:`cyoa.rating.analysis.mixed.source_model`) of
    each factor's scores (``what``: the factor) and each Likert item's answers (``what``:
    ``item <id>``), intervals cut at the scale's bounds (:func:`scale_bounds`); the factors
    are those of :func:`likert_scales` (one scale of all items for an instrument without)."""
    models = []
    for factor, item_ids in likert_scales(instrument).items():
        rows = scores[scores["factor"] == factor]
        likert = [i for i in item_ids if instrument.item(i).kind == "likert"]
        if rows.empty or not likert:
            continue
        bounds = scale_bounds(instrument, likert)
        model = source_model(rows, factor, bounds, raters_known=raters_known, confidence=confidence)
        models.append(model)
    answered = judgements.dropna(subset=["value"])
    for item in instrument.items:
        rows = answered[answered["item"] == item.id]
        if item.kind != "likert" or rows.empty:
            continue
        frame = rows.assign(score=rows["value"].astype(float))
        models.append(
            source_model(
                frame, f"item {item.id}", item.bounds(),
                raters_known=raters_known, confidence=confidence,
            )
        )  # fmt: skip
    return tuple(model for model in models if model is not None)


def factor_scores(instrument: Instrument, judgements: pd.DataFrame) -> pd.DataFrame:
    """Factor score per rater × story: the mean of the factor's Likert items after reverse
    coding (:func:`coded_values`), in the items' points (``low`` … ``high``), for each scale
    of :func:`likert_scales` (its name in ``factor``).

    Returns columns ``story_id``, ``source``, ``rater_id``, ``factor``, ``score``. A rater ×
    story gets a score only when they answered every item of the factor: a mean over fewer
    items would weigh the answered ones more. Reference: the AISS's scoring (reverse-code,
    then average the factor's items).
    """
    columns = ["story_id", "source", "rater_id", "factor", "score"]
    frames = []
    for factor, item_ids in likert_scales(instrument).items():
        likert = [i for i in item_ids if instrument.item(i).kind == "likert"]
        rows = judgements[judgements["item"].isin(likert)].dropna(subset=["value"])
        if rows.empty:
            continue
        rows = rows.assign(coded=coded_values(instrument, rows))
        grouped = rows.groupby(["story_id", "source", "rater_id"])["coded"]
        summary = grouped.agg(["mean", "count"]).reset_index()
        summary = summary[summary["count"] == len(likert)]
        frames.append(summary.assign(factor=factor).rename(columns={"mean": "score"})[columns])
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames, ignore_index=True)


def item_summaries(
    instrument: Instrument, judgements: pd.DataFrame, confidence: float = CONFIDENCE
) -> tuple[ItemSummary, ...]:
    """:class:`ItemSummary` of each Likert item for each source (item order, then source)."""
    summaries = []
    answered = judgements.dropna(subset=["value"])
    sources = sorted(judgements["source"].unique())
    by_key = dict(tuple(answered.groupby(["item", "source"])))
    for item in instrument.items:
        if item.kind != "likert":
            continue
        for source in sources:
            rows = by_key.get((item.id, source))
            if rows is None:
                continue
            values = rows["value"].astype(int)
            counts = {point: int((values == point).sum()) for point in item.scale}
            means = _story_means(rows, "value")
            summaries.append(
                ItemSummary(
                    item_id=item.id,
                    source=source,
                    counts=counts,
                    answers=int(values.size),
                    stories=int(means.size),
                    mean=mean_interval(means.to_numpy(), confidence, item.bounds()),
                )
            )
    return tuple(summaries)


def cronbach_alpha(scores: pd.DataFrame) -> tuple[float | None, float | None, float | None]:
    """Cronbach's α of ``scores`` (rows: respondents, columns: items, already reverse-coded)
    with its 95% interval: ``pingouin.cronbach_alpha`` on the complete rows.

    α = k / (k − 1) · (1 − Σ var(item) / var(total)) for k items (sample variances); the
    interval is Feldt's, from the F distribution. ``(None, None, None)`` with fewer than two
    items or two complete rows, or when the total has no variance.
    Units: a coefficient, at most 1. Reference: Cronbach (1951); Feldt (1965).
    """
    complete = scores.dropna()
    if complete.shape[1] < 2 or complete.shape[0] < 2 or complete.sum(axis=1).var() == 0:
        return None, None, None
    import pingouin  # here, not at the top: 2 s of CPU at each start of the app

    alpha, interval = pingouin.cronbach_alpha(data=complete, nan_policy="listwise")
    low, high = (float(value) for value in interval)
    return (
        float(alpha),
        None if math.isnan(low) else low,
        None if math.isnan(high) else high,
    )


def mcdonald_omega(scores: pd.DataFrame) -> tuple[float | None, str | None]:
    """McDonald's ω (total) of ``scores`` (rows: respondents, columns: reverse-coded items)
    from a one-factor model, and why it is ``None`` when it is.

    The model is fitted by maximum likelihood to the items' correlation matrix
    (``statsmodels.multivariate.factor.Factor(n_factor=1, method="ml")`` on the complete
    rows, the best of several fixed starts: :func:`_one_factor_fit`), giving standardised
    loadings λ_i and uniquenesses ψ_i = 1 − λ_i²; then ω = (Σ λ_i)² / ((Σ λ_i)² + Σ ψ_i), the
    share of the variance of the sum of the *standardised* items that the common factor explains.

    Not estimated (``None``) with fewer than three items (a one-factor model of two items is
    not identified: the AISS paper reports none for its 2-item factor either), with no more
    complete rows than items, when an item has no variance, when the fit does not converge,
    or in a Heywood case (a uniqueness below 0.01). Units: a coefficient in [0, 1].
    Reference: McDonald (1999), ch. 6.
    """
    complete = scores.dropna()
    items = complete.shape[1]
    if items < 3:
        return None, "fewer than 3 items: a one-factor model is not identified"
    if complete.shape[0] <= items:
        return None, f"{complete.shape[0]} complete answers for {items} items: too few"
    if (complete.var() == 0).any():
        return None, "an item has the same answer everywhere"
    fit = _one_factor_fit(complete.to_numpy(dtype=float))
    if fit is None:
        return None, "the one-factor model could not be fitted (fitting did not converge)"
    loadings, uniqueness = fit
    if (uniqueness < HEYWOOD_UNIQUENESS).any():
        return None, "Heywood case: an item's uniqueness is (nearly) zero"
    common = float(loadings.sum()) ** 2
    return common / (common + float(uniqueness.sum())), None


def _one_factor_fit(data: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The loadings and uniquenesses of the one-factor maximum-likelihood fit of ``data``'s
    correlation matrix, or None when no fit converges. statsmodels draws its starting values
    at random, and from some it stops in a local optimum or not at all; so the fit is made
    from :data:`FACTOR_STARTS` fixed starts and the converged one of highest likelihood is
    kept: the same data always give the same ω."""
    from statsmodels.multivariate.factor import Factor  # at use: 2 s of CPU to import

    correlation = np.corrcoef(data, rowvar=False)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for seed in range(FACTOR_STARTS):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit = Factor(data, n_factor=1, method="ml").fit(rng=seed)
        if caught:
            continue
        loadings = np.asarray(fit.loadings, dtype=float).ravel()
        uniqueness = np.asarray(fit.uniqueness, dtype=float)
        likelihood = _factor_likelihood(correlation, loadings, uniqueness)
        if best is None or likelihood > best[0] + 1e-12:
            best = (likelihood, loadings, uniqueness)
    return None if best is None else (best[1], best[2])


def _factor_likelihood(
    correlation: np.ndarray, loadings: np.ndarray, uniqueness: np.ndarray
) -> float:
    """The normal log-likelihood of a factor model, up to constants: −log|Σ| − tr(Σ⁻¹R) with
    Σ = λλᵀ + diag(ψ) and R the items' correlation matrix (Lawley & Maxwell 1971)."""
    implied = np.outer(loadings, loadings) + np.diag(uniqueness)
    sign, log_det = np.linalg.slogdet(implied)
    if sign <= 0:
        return -math.inf
    return float(-log_det - np.trace(np.linalg.solve(implied, correlation)))


def _wide(
    instrument: Instrument, judgements: pd.DataFrame, item_ids: Sequence[str]
) -> pd.DataFrame:
    """Rows: rater × story; columns: ``item_ids``; values: reverse-coded answers."""
    rows = judgements[judgements["item"].isin(item_ids)].dropna(subset=["value"])
    rows = rows.assign(coded=coded_values(instrument, rows))
    wide = rows.pivot_table(
        index=["story_id", "rater_id"], columns="item", values="coded", aggfunc="first"
    )
    return wide.reindex(columns=list(item_ids))


def reliability_warnings(scores: pd.DataFrame, alpha: float | None) -> tuple[str, ...]:
    """What to check about the reliability of ``scores`` (rows: respondents, columns:
    reverse-coded items, complete rows only): a negative Cronbach's α (the items covary
    negatively on the whole: usually an item keyed the wrong way round), and each item with the
    same answer in every row (it has no variance to share)."""
    found = []
    if alpha is not None and alpha < 0:
        found.append(
            "Cronbach's α is negative: an item is probably keyed the wrong way round (check "
            "which items are reverse-coded) or the items do not measure one thing."
        )
    if scores.shape[0] >= 2:
        for item in scores.columns[(scores.nunique() == 1).to_numpy()]:
            value = scores[item].iloc[0]
            found.append(
                f"Item {item} has the same answer ({value:g}) in all {scores.shape[0]} rows: it "
                "cannot add to α or ω; check it."
            )
    return tuple(found)


def _reliability_of(factor: str, scope: str, wide: pd.DataFrame) -> Reliability:
    alpha, low, high = cronbach_alpha(wide)
    omega, reason = mcdonald_omega(wide)
    return Reliability(
        factor=factor,
        items=int(wide.shape[1]),
        n=int(wide.shape[0]),
        cronbach_alpha=alpha,
        alpha_ci_low=low,
        alpha_ci_high=high,
        omega=omega,
        omega_reason=reason,
        scope=scope,
        warnings=reliability_warnings(wide, alpha),
    )


def reliability(instrument: Instrument, judgements: pd.DataFrame) -> tuple[Reliability, ...]:
    """:class:`Reliability` of each scale of :func:`likert_scales` over the rater × story rows that
    answered every item of the factor (reverse-coded): pooled over all sources and, with
    several sources, within each source (factor by factor).

    Differences between sources make a factor's items covary in the pooled rows even when
    they hardly covary within any source, so the pooled α can be high while every source's is
    low; the within-source figures say how consistently the items measure one thing among
    stories of one kind. Reference: Cronbach (1951); McDonald (1999).
    """
    results = []
    sources = sorted(judgements["source"].unique())
    scopes = [ALL_SOURCES] + (sources if len(sources) > 1 else [])
    for factor, item_ids in likert_scales(instrument).items():
        likert = [i for i in item_ids if instrument.item(i).kind == "likert"]
        if not likert:
            continue
        for scope in scopes:
            rows = judgements if scope == ALL_SOURCES else judgements[judgements["source"] == scope]
            wide = _wide(instrument, rows, likert).dropna()
            results.append(_reliability_of(factor, scope, wide))
    return tuple(results)


def analyze_scales(
    instrument: Instrument,
    judgements: pd.DataFrame,
    confidence: float = CONFIDENCE,
    *,
    raters_known: bool = True,
) -> ScaleAnalysis:
    """The Likert part of a rating analysis (see the module docstring for the method).

    ``judgements``: the rating contract of :func:`cyoa.rating.analysis.ratings.analyze_ratings`
    (``story_id``, ``source``, ``rater_id``, ``item``, ``value`` as answered).
    ``raters_known``: False when rater ids are positions (no rater effect in the model).
    Where raters are nested in sources (:func:`story_means_share_raters`) the tests over
    story means keep U (or H) and the effect but have no p (:data:`NESTED_RATERS_NOTE`).
    """
    scores = factor_scores(instrument, judgements)
    sources = sorted(judgements["source"].unique())
    nested = story_means_share_raters(judgements, raters_known)
    factors = []
    tests = []
    for factor, item_ids in likert_scales(instrument).items():
        rows = scores[scores["factor"] == factor]
        if rows.empty:
            continue
        story_scores = {}
        for source in sources:
            own = rows[rows["source"] == source]
            if own.empty:
                continue
            means = _story_means(own, "score")
            story_scores[source] = means.to_numpy()
            factors.append(
                FactorSummary(
                    factor=factor,
                    source=source,
                    items=tuple(i for i in item_ids if instrument.item(i).kind == "likert"),
                    scores=int(own.shape[0]),
                    stories=int(means.size),
                    mean=mean_interval(
                        means.to_numpy(), confidence, scale_bounds(instrument, item_ids)
                    ),
                    median=float(own["score"].median()),
                )
            )
        test = compare_sources(story_scores, factor)
        if test is not None and nested and test.p_value is not None:
            test = without_p(test, NESTED_RATERS_REASON)
        if test is not None:
            tests.append(test)
    return ScaleAnalysis(
        items=item_summaries(instrument, judgements, confidence),
        factors=tuple(factors),
        reliability=reliability(instrument, judgements),
        tests=with_holm(tests),
        models=scale_models(
            instrument, judgements, scores, raters_known=raters_known, confidence=confidence
        ),
        method=(
            "Headline: means and differences from a linear mixed model with random story and "
            "rater effects (cyoa.rating.analysis.mixed). Also: means per source are over "
            "stories (each story's mean over its raters) with a "
            f"{int(confidence * 100)}% t interval; item means as answered, factor scores "
            "after reverse coding; tests compare story means between sources (Mann–Whitney U "
            "for two, Kruskal–Wallis H for more; exact or permutation p for small samples), "
            "Holm-adjusted across factors; every pair of sources is compared too (Mann–Whitney "
            "U, Holm within the pairs, Cliff's δ with its 95% interval)."
        ),
    )
