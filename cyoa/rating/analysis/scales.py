"""Likert scales (such as the AISS): item and factor summaries per source, reliability, and
tests between sources; and the per-source summaries and tests every rating analysis shares.

The unit of a story-generation comparison is the **story**: a source is judged by the stories
it wrote, and the raters of one story share that story, so their answers are not independent.
So every mean per source here is a mean over stories of the story's mean over its raters, with
a 95% Student t interval over those story means (:func:`mean_interval`), and the tests between
sources compare story means (:func:`compare_sources`). With the same number of raters per story
the mean equals the mean of all answers. Answer counts per point are over all answers.

Factor scores follow the AISS's scoring (reverse-keyed items coded ``points + 1 − answer``,
then the mean of the factor's items) and are computed per rater × story
(:func:`factor_scores`).

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
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pingouin
from scipy import stats as scipy_stats
from statsmodels.multivariate.factor import Factor

from cyoa.rating.analysis.mixed import ModelEstimate, source_model
from cyoa.rating.instruments.types import Instrument, Item
from cyoa.stats import holm, mann_whitney

CONFIDENCE = 0.95
# Below this uniqueness an item's one-factor loading is (nearly) 1: a Heywood case.
HEYWOOD_UNIQUENESS = 0.01
# One-factor fits from this many fixed starting values (seeds 0, 1, …); the best is kept.
FACTOR_STARTS = 5


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
class SourceTest:
    """A test of whether ``what`` differs between sources (see :func:`compare_sources`).

    ``effect``: the rank-biserial r of the first source against the second (Mann–Whitney) or
    ε² (Kruskal–Wallis), named by ``effect_name``. ``p_holm``: Holm-adjusted across the family
    of tests it was reported with. ``reason``: why the test has no p-value.
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


def compare_sources(groups: Mapping[str, Sequence[float]], what: str) -> SourceTest | None:
    """Test whether the values of ``what`` differ between sources; ``None`` with fewer than
    two sources that have values.

    Two sources: two-sided Mann–Whitney U (:func:`cyoa.stats.mann_whitney`; the
    statistic is U of the first source in sorted order) with the rank-biserial r. More:
    Kruskal–Wallis H (``scipy.stats.kruskal``, tie-corrected, χ² approximation with k − 1
    degrees of freedom) with ε² = H / (n − 1). When every value is the same there is nothing
    to test and ``p_value`` is ``None``. Units: p-values are fractions; r lies in [−1, 1],
    ε² in [0, 1].
    Reference: Mann & Whitney (1947); Kruskal & Wallis (1952); Tomczak & Tomczak (2014).
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
    effect_name = f"rank-biserial r ({names[0]} vs {names[1]})" if two else "epsilon squared"
    pooled = np.concatenate(list(samples.values()))
    if np.all(pooled == pooled[0]):
        return SourceTest(
            what, method, names, n, None, None, None, effect_name, reason="every value is the same"
        )
    if two:
        result = mann_whitney(samples[names[0]], samples[names[1]])
        return SourceTest(
            what, method, names, n, result.u, result.p_value, result.rank_biserial, effect_name
        )
    h, p = scipy_stats.kruskal(*samples.values())
    return SourceTest(
        what, method, names, n, float(h), float(p), float(h) / (pooled.size - 1), effect_name
    )


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
    """The ``value`` column after reverse coding: ``points + 1 − value`` for the instrument's
    reverse-keyed Likert items, ``value`` for every other item (NaN stays NaN), as
    :meth:`~cyoa.rating.instruments.types.Instrument.coded` does one value at a time."""
    reversed_points = {
        item.id: float(item.points) for item in instrument.items if item.reverse and item.points
    }
    values = judgements["value"].astype(float)
    points = judgements["item"].map(reversed_points).astype(float)  # float even when empty
    return values.where(points.isna(), points + 1 - values)


def _story_means(frame: pd.DataFrame, column: str) -> pd.Series:
    """Per story: the mean of ``column`` over the story's rows (NaN left out)."""
    return frame.groupby("story_id")[column].mean().dropna()


@dataclass(frozen=True)
class ItemSummary:
    """One Likert item's answers from one source's stories, as answered (not reverse-coded).

    ``counts``: answers per point 1…points; ``answers`` and ``stories`` with an answer;
    ``mean``: over stories of the story's mean answer, with the t interval over stories.
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
    """Internal consistency of one factor over the complete rater × story rows (``n``).

    ``cronbach_alpha`` with its Feldt interval; ``omega``: McDonald's ω from a one-factor
    model (see :func:`mcdonald_omega`), ``None`` with ``omega_reason`` when it cannot be
    estimated.
    """

    factor: str
    items: int
    n: int
    cronbach_alpha: float | None
    alpha_ci_low: float | None
    alpha_ci_high: float | None
    omega: float | None
    omega_reason: str | None


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


def scale_bounds(item: Item) -> tuple[float, float]:
    """The lowest and highest answer of a Likert item, where its intervals are cut."""
    return (1.0, float(item.points or 1))


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
    ``item <id>``), intervals cut at the scale's bounds (:func:`scale_bounds`)."""
    models = []
    for factor, item_ids in instrument.factors().items():
        rows = scores[scores["factor"] == factor]
        likert = [instrument.item(i) for i in item_ids if instrument.item(i).kind == "likert"]
        if rows.empty or not likert:
            continue
        bounds = (
            min(scale_bounds(item)[0] for item in likert),
            max(scale_bounds(item)[1] for item in likert),
        )
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
                frame, f"item {item.id}", scale_bounds(item),
                raters_known=raters_known, confidence=confidence,
            )
        )  # fmt: skip
    return tuple(model for model in models if model is not None)


def factor_scores(instrument: Instrument, judgements: pd.DataFrame) -> pd.DataFrame:
    """Factor score per rater × story: the mean of the factor's Likert items after reverse
    coding (:func:`coded_values`), in the items' points (1 … points).

    Returns columns ``story_id``, ``source``, ``rater_id``, ``factor``, ``score``. A rater ×
    story gets a score only when they answered every item of the factor: a mean over fewer
    items would weigh the answered ones more. Reference: the AISS's scoring (reverse-code,
    then average the factor's items).
    """
    columns = ["story_id", "source", "rater_id", "factor", "score"]
    frames = []
    for factor, item_ids in instrument.factors().items():
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
            counts = {point: int((values == point).sum()) for point in range(1, item.points + 1)}
            means = _story_means(rows, "value")
            summaries.append(
                ItemSummary(
                    item_id=item.id,
                    source=source,
                    counts=counts,
                    answers=int(values.size),
                    stories=int(means.size),
                    mean=mean_interval(means.to_numpy(), confidence, (1, item.points)),
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


def reliability(instrument: Instrument, judgements: pd.DataFrame) -> tuple[Reliability, ...]:
    """:class:`Reliability` of each factor of Likert items, over all sources' rater × story
    rows that answered every item of the factor (reverse-coded)."""
    results = []
    for factor, item_ids in instrument.factors().items():
        likert = [i for i in item_ids if instrument.item(i).kind == "likert"]
        if not likert:
            continue
        wide = _wide(instrument, judgements, likert).dropna()
        alpha, low, high = cronbach_alpha(wide)
        omega, reason = mcdonald_omega(wide)
        results.append(
            Reliability(
                factor=factor,
                items=len(likert),
                n=int(wide.shape[0]),
                cronbach_alpha=alpha,
                alpha_ci_low=low,
                alpha_ci_high=high,
                omega=omega,
                omega_reason=reason,
            )
        )
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
    """
    scores = factor_scores(instrument, judgements)
    sources = sorted(judgements["source"].unique())
    factors = []
    tests = []
    for factor, item_ids in instrument.factors().items():
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
            points = max(instrument.item(i).points or 1 for i in item_ids)
            factors.append(
                FactorSummary(
                    factor=factor,
                    source=source,
                    items=tuple(i for i in item_ids if instrument.item(i).kind == "likert"),
                    scores=int(own.shape[0]),
                    stories=int(means.size),
                    mean=mean_interval(means.to_numpy(), confidence, (1, points)),
                    median=float(own["score"].median()),
                )
            )
        test = compare_sources(story_scores, factor)
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
            "for two, Kruskal–Wallis H for more), Holm-adjusted across factors."
        ),
    )
