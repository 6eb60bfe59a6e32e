"""Statistical tests of the CYOA analysis, on plain Python data (no database).

- Q1 preference: exact binomial test against 0.5 with a Clopper–Pearson interval
  (:func:`preference`, also :func:`position_bias`), and a writer-clustered analysis
  (:func:`clustered_preference`) because each writer makes several choices.
- Q2 edit metrics: Mann–Whitney U with the rank-biserial effect size (:func:`mann_whitney`), the
  one-sided p-value that scipy returned by default in 2021 (:func:`mann_whitney_scipy_2021`),
  and Holm's correction across a family of tests (:func:`holm`).
- Likert answers: counts per level, mean and median (:func:`likert_summary`).

Shares, intervals and p-values are fractions in [0, 1] throughout.

References:
    Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits
    illustrated in the case of the binomial. Biometrika 26(4).
    Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random variables is
    stochastically larger than the other. Annals of Mathematical Statistics 18(1).
    Kerby, D. S. (2014). The simple difference formula: an approach to teaching nonparametric
    correlation. Comprehensive Psychology 3.
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian
    Journal of Statistics 6(2).
    Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application,
    section 3.8 (resampling clustered data). Cambridge University Press.
    Donner, A. and Klar, N. (2000). Design and Analysis of Cluster Randomization Trials in Health
    Research, chapter 6 (analysis of cluster-level summaries). Arnold.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np
from scipy import stats

Alternative = Literal["two-sided", "greater", "less"]
ALTERNATIVES: tuple[Alternative, ...] = ("two-sided", "greater", "less")
LIKERT_LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)

# Resampled writers per chunk of bootstrap replicates: bounds memory to about 32 MB.
_BOOTSTRAP_CHUNK_CELLS = 4_000_000


def _check_alternative(alternative: str) -> None:
    if alternative not in ALTERNATIVES:
        raise ValueError(
            f"alternative must be one of {', '.join(ALTERNATIVES)}, got {alternative!r}."
        )


@dataclass(frozen=True)
class Preference:
    """Share of ``total`` choices that went one way, tested against ``null``.

    ``p_value`` is the exact binomial test's, for ``alternative``; ``ci_low``/``ci_high`` is the
    two-sided Clopper–Pearson interval at ``confidence``, whatever the alternative.
    """

    chosen: int
    total: int
    share: float
    p_value: float
    alternative: Alternative
    ci_low: float
    ci_high: float
    confidence: float
    null: float = 0.5


def preference(
    chosen_count: int,
    total: int,
    alternative: Alternative = "two-sided",
    confidence: float = 0.95,
) -> Preference:
    """Preference for a model: share of rounds in which it was chosen, tested against 0.5.

    ``share = chosen_count / total``. The p-value is the exact binomial test of
    H0: P(chosen) = 0.5 (``scipy.stats.binomtest``; "two-sided" sums the probabilities of all
    outcomes no more likely than the observed one; "greater" is P(X ≥ k), "less" P(X ≤ k)).
    The CYOA script called ``scipy.stats.binom_test(k, n)``: the same two-sided test.
    The interval is the exact two-sided Clopper–Pearson interval (``method="exact"``).

    Paper check: 345 of 525 gives 65.7%, p = 5.3e-13 (two-sided); 275 of 515 gives 53.4%,
    p = 0.134 two-sided and 0.067 one-sided ("greater").

    Units: share, interval and p-value are fractions. Reference: Clopper & Pearson (1934);
    Clark & Smith (2021).
    """
    _check_alternative(alternative)
    if total < 1 or not 0 <= chosen_count <= total:
        raise ValueError(
            f"Need 0 <= chosen_count <= total and total >= 1, got {chosen_count} of {total}."
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}.")
    test = stats.binomtest(chosen_count, total, p=0.5, alternative=alternative)
    interval = stats.binomtest(chosen_count, total, p=0.5).proportion_ci(
        confidence_level=confidence, method="exact"
    )
    return Preference(
        chosen=chosen_count,
        total=total,
        share=chosen_count / total,
        p_value=float(test.pvalue),
        alternative=alternative,
        ci_low=float(interval.low),
        ci_high=float(interval.high),
        confidence=confidence,
    )


def position_bias(
    slot1_chosen: int, total: int, alternative: Alternative = "two-sided"
) -> Preference:
    """Position bias: is the suggestion shown in slot 1 chosen more or less often than half?

    The same exact binomial test and Clopper–Pearson interval as :func:`preference`, on the
    number of rounds in which the writer chose whichever suggestion was shown first. With models
    assigned to slots at random, a share far from 0.5 is a bias of the interface, not of a model.

    Units: fractions. Reference: Clopper & Pearson (1934).
    """
    return preference(slot1_chosen, total, alternative)


@dataclass(frozen=True)
class ClusteredPreference:
    """Writer-clustered preference analysis (see :func:`clustered_preference`)."""

    writers: int
    chosen: int
    total: int
    share: float
    bootstrap_low: float
    bootstrap_high: float
    confidence: float
    resamples: int
    seed: int
    mean_writer_share: float
    t_statistic: float
    df: int
    p_value: float
    alternative: Alternative


def _writer_t_test(shares: list[Fraction], alternative: Alternative) -> tuple[float, float]:
    count = len(shares)
    mean = float(sum(shares) / count)
    if len(set(shares)) == 1:
        return math.nan, math.nan
    values = np.array([float(share) for share in shares])
    t = (mean - 0.5) / (values.std(ddof=1) / math.sqrt(count))
    df = count - 1
    if alternative == "two-sided":
        p = 2 * stats.t.sf(abs(t), df)
    elif alternative == "greater":
        p = stats.t.sf(t, df)
    else:
        p = stats.t.cdf(t, df)
    return float(t), float(min(p, 1.0))


def clustered_preference(
    per_writer: Iterable[tuple[int, int]],
    alternative: Alternative = "two-sided",
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ClusteredPreference:
    """Preference with the writer as the unit: each writer's choices are not independent.

    ``per_writer`` holds one ``(chosen, rounds)`` pair per writer: how many of the writer's
    rounds chose the model, out of how many rounds.

    - Interval: cluster (writer) percentile bootstrap of the pooled share
      ``sum(chosen) / sum(rounds)``. Each of ``resamples`` replicates (default 10,000) draws as
      many writers as there are, with replacement, from a ``numpy.random.default_rng(seed)``
      stream; the interval is the (1 − confidence)/2 and (1 + confidence)/2 quantiles of the
      replicate shares (``numpy.quantile``, linear interpolation). Same seed, same interval.
    - Test: one-sample t-test of the per-writer shares ``chosen / rounds`` against 0.5 with
      ``writers − 1`` degrees of freedom (analysis of cluster-level summaries). With equal
      rounds per writer, the mean writer share equals the pooled share. When every writer has
      the same share there is no between-writer variance: the test is undefined and
      ``t_statistic`` and ``p_value`` are NaN.

    Needs at least two writers, each with at least one round.

    Units: fractions. Reference: Davison & Hinkley (1997), §3.8; Donner & Klar (2000), ch. 6.
    """
    _check_alternative(alternative)
    pairs = [(int(chosen), int(rounds)) for chosen, rounds in per_writer]
    if len(pairs) < 2:
        raise ValueError("A writer-clustered analysis needs at least two writers.")
    for chosen, rounds in pairs:
        if rounds < 1 or not 0 <= chosen <= rounds:
            raise ValueError(
                f"Each writer needs 0 <= chosen <= rounds and rounds >= 1, "
                f"got {chosen} of {rounds}."
            )
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}.")

    chosen_counts = np.array([chosen for chosen, _ in pairs], dtype=np.int64)
    round_counts = np.array([rounds for _, rounds in pairs], dtype=np.int64)
    writers = len(pairs)
    rng = np.random.default_rng(seed)
    chunk = max(1, _BOOTSTRAP_CHUNK_CELLS // writers)
    replicate_shares = np.empty(resamples)
    for start in range(0, resamples, chunk):
        stop = min(start + chunk, resamples)
        drawn = rng.integers(0, writers, size=(stop - start, writers))
        drawn_chosen = chosen_counts[drawn].sum(axis=1)
        replicate_shares[start:stop] = drawn_chosen / round_counts[drawn].sum(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(replicate_shares, [tail, 1 - tail])

    shares = [Fraction(chosen, rounds) for chosen, rounds in pairs]
    t, p = _writer_t_test(shares, alternative)
    total_chosen = int(chosen_counts.sum())
    total_rounds = int(round_counts.sum())
    return ClusteredPreference(
        writers=writers,
        chosen=total_chosen,
        total=total_rounds,
        share=total_chosen / total_rounds,
        bootstrap_low=float(low),
        bootstrap_high=float(high),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        mean_writer_share=float(sum(shares) / writers),
        t_statistic=t,
        df=writers - 1,
        p_value=p,
        alternative=alternative,
    )


@dataclass(frozen=True)
class MannWhitney:
    """Mann–Whitney U test of two samples x and y (see :func:`mann_whitney`).

    ``u`` is the statistic the test reports (for :func:`mann_whitney`, U of x; for
    :func:`mann_whitney_scipy_2021`, min(U_x, U_y)); ``rank_biserial`` is always
    2·U_x/(n_x·n_y) − 1, positive when x tends to be larger than y.
    """

    u: float
    p_value: float
    alternative: str
    method: str
    n_x: int
    n_y: int
    rank_biserial: float


def _u_of_x(x: np.ndarray, y: np.ndarray) -> float:
    ranks = stats.rankdata(np.concatenate([x, y]))
    return float(ranks[: len(x)].sum() - len(x) * (len(x) + 1) / 2)


def _samples(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    xs = np.asarray(x, dtype=float)
    ys = np.asarray(y, dtype=float)
    if xs.size == 0 or ys.size == 0:
        raise ValueError("Mann–Whitney U needs at least one value in each sample.")
    if np.isnan(xs).any() or np.isnan(ys).any():
        raise ValueError("Mann–Whitney U got a NaN: drop missing values before testing.")
    return xs, ys


def mann_whitney(
    x: Sequence[float],
    y: Sequence[float],
    alternative: Alternative = "two-sided",
    method: Literal["auto", "asymptotic", "exact"] = "auto",
) -> MannWhitney:
    """Mann–Whitney U test of x against y, with the rank-biserial correlation as effect size.

    ``scipy.stats.mannwhitneyu(x, y, alternative=alternative, method=method)`` with scipy's
    other defaults (continuity correction for the normal approximation, tie correction).
    ``u`` is U of x: the number of pairs (x_i, y_j) with x_i > y_j, ties counting one half.
    "greater" means x is stochastically greater than y. ``method="auto"`` uses the exact
    distribution when a sample has at most 8 values and there are no ties, the normal
    approximation otherwise.

    Effect size (Kerby, 2014): rank-biserial r = 2·U_x/(n_x·n_y) − 1, in [−1, 1]; the share of
    pairs where x is larger minus the share where y is larger.

    Units: p-value and r are fractions. Reference: Mann & Whitney (1947); Kerby (2014).
    """
    _check_alternative(alternative)
    xs, ys = _samples(x, y)
    result = stats.mannwhitneyu(xs, ys, alternative=alternative, method=method)
    u_x = float(result.statistic)
    return MannWhitney(
        u=u_x,
        p_value=float(result.pvalue),
        alternative=alternative,
        method=method,
        n_x=int(xs.size),
        n_y=int(ys.size),
        rank_biserial=2 * u_x / (xs.size * ys.size) - 1,
    )


def mann_whitney_scipy_2021(x: Sequence[float], y: Sequence[float]) -> MannWhitney:
    """The Mann–Whitney result the CYOA script got in 2021 from ``scipy.stats.mannwhitneyu(x, y)``.

    Before scipy 1.7 the default was ``alternative=None``: normal approximation with tie and
    continuity correction, z = (max(U_x, U_y) − n_x·n_y/2 − 0.5) / σ with
    σ = sqrt(T · n_x·n_y·(n_x + n_y + 1) / 12) and T the tie correction, a one-sided
    p = P(Z > |z|) (half the two-sided p), and the statistic min(U_x, U_y). All values equal:
    scipy raised an error; so does this function. ``alternative`` reads
    ``"one-sided (scipy<1.7 default)"``.

    Reference: scipy 1.6 ``scipy/stats/stats.py::mannwhitneyu``; Mann & Whitney (1947).
    """
    xs, ys = _samples(x, y)
    n_x, n_y = xs.size, ys.size
    ranks = stats.rankdata(np.concatenate([xs, ys]))
    tie_correction = stats.tiecorrect(ranks)
    if tie_correction == 0:
        raise ValueError("All numbers are identical: the 2021 Mann–Whitney test is undefined.")
    u_x = _u_of_x(xs, ys)
    u_y = n_x * n_y - u_x
    sigma = math.sqrt(tie_correction * n_x * n_y * (n_x + n_y + 1) / 12.0)
    z = (max(u_x, u_y) - (n_x * n_y / 2.0 + 0.5)) / sigma
    return MannWhitney(
        u=min(u_x, u_y),
        p_value=float(stats.norm.sf(abs(z))),
        alternative="one-sided (scipy<1.7 default)",
        method="asymptotic",
        n_x=int(n_x),
        n_y=int(n_y),
        rank_biserial=2 * u_x / (n_x * n_y) - 1,
    )


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the order given.

    With the m p-values sorted ascending, p_(1) ≤ … ≤ p_(m), the adjusted value of p_(i) is
    max over j ≤ i of min(1, (m − j + 1)·p_(j)). Rejecting where the adjusted p ≤ α controls the
    family-wise error rate at α under any dependence. Ties keep their input order.

    Units: fractions. Reference: Holm (1979).
    """
    values = [float(p) for p in p_values]
    for p in values:
        if not 0 <= p <= 1:
            raise ValueError(f"p-values must lie in [0, 1], got {p}.")
    count = len(values)
    order = sorted(range(count), key=lambda index: values[index])
    adjusted = [0.0] * count
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (count - rank) * values[index]))
        adjusted[index] = running
    return adjusted


@dataclass(frozen=True)
class LikertSummary:
    """Answers to one Likert item: ``counts`` per level 1–5, ``n`` answers, ``missing``
    unanswered, and the mean and median of the answers (``None`` when there is none)."""

    counts: dict[int, int]
    n: int
    missing: int
    mean: float | None
    median: float | None


def likert_summary(responses: Iterable[int | None]) -> LikertSummary:
    """Counts per level (1–5), mean and median of one Likert item's answers.

    ``None`` is an unanswered item: counted in ``missing`` and left out of everything else.
    Any other value must be an integer from 1 to 5. The median of an even number of answers is
    the mean of the two middle ones (``statistics.median``), so it can end in .5.

    Units: levels of the 1–5 scale. Reference: the CYOA script reports
    ``pandas.DataFrame.describe()`` of Q1–Q5 (count, mean, std, quartiles).
    """
    answers: list[int] = []
    missing = 0
    for response in responses:
        if response is None:
            missing += 1
            continue
        if isinstance(response, bool) or not isinstance(response, int | np.integer):
            raise ValueError(f"Likert answers must be integers 1 to 5, got {response!r}.")
        if int(response) not in LIKERT_LEVELS:
            raise ValueError(f"Likert answers must be integers 1 to 5, got {response!r}.")
        answers.append(int(response))
    counts = {level: answers.count(level) for level in LIKERT_LEVELS}
    return LikertSummary(
        counts=counts,
        n=len(answers),
        missing=missing,
        mean=statistics.fmean(answers) if answers else None,
        median=float(statistics.median(answers)) if answers else None,
    )


def likert_summaries(items: Mapping[str, Iterable[int | None]]) -> dict[str, LikertSummary]:
    """:func:`likert_summary` of each item, keyed as given (e.g. ``{"Q1": [...], ...}``)."""
    return {item: likert_summary(responses) for item, responses in items.items()}
