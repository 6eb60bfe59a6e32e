"""Statistical tests of the CYOA analysis, on plain Python data (no database).

- Q1 preference: exact binomial test against 0.5 with a Clopper–Pearson interval
  (:func:`preference`, also :func:`position_bias`), and a writer-clustered analysis
  (:func:`clustered_preference`: writer bootstrap, and the t-test and t interval of the
  writers' shares, CYOA's headline) because each writer makes several choices.
- A writer-clustered ratio of sums (:func:`clustered_ratio`: characters kept of characters
  suggested, milliseconds per round), with the writer bootstrap of :func:`clustered_preference`.
- Q2 within writers: the paired t-test of writer-level differences between two systems
  (:func:`writer_difference`), CYOA's test of the edit metrics.
- Q2 edit metrics: Mann–Whitney U with the rank-biserial effect size (:func:`mann_whitney`), the
  one-sided p-value that scipy returned by default in 2021 (:func:`mann_whitney_scipy_2021`),
  and Holm's correction across a family of tests (:func:`holm`).
- Rank tests of rating studies: Kruskal–Wallis H for three or more samples
  (:func:`kruskal_wallis`) and Cliff's δ with its confidence interval (:func:`cliffs_delta`).
  Both rank tests give an exact or permutation p-value for small samples and the normal (χ²)
  approximation for large ones, and name which (:data:`EXACT_SPLITS`, :data:`SMALL_SAMPLE`).
- Likert answers: counts per level, mean and median (:func:`likert_summary`).

Shares, intervals and p-values are fractions in [0, 1] throughout.

References:
    Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or fiducial limits
    illustrated in the case of the binomial. Biometrika 26(4).
    Mann, H. B. and Whitney, D. R. (1947). On a test of whether one of two random variables is
    stochastically larger than the other. Annals of Mathematical Statistics 18(1).
    Kerby, D. S. (2014). The simple difference formula: an approach to teaching nonparametric
    correlation. Comprehensive Psychology 3.
    Student (1908). The probable error of a mean. Biometrika 6(1).
    Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed.
    Donner, A. and Klar, N. (2000). Design and Analysis of Cluster Randomization Trials in
    Health Research, ch. 6.
    Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scandinavian
    Journal of Statistics 6(2).
    Kruskal, W. H. and Wallis, W. A. (1952). Use of ranks in one-criterion variance analysis.
    JASA 47(260).
    Tomczak, M. and Tomczak, E. (2014). The need to report effect size estimates revisited.
    Trends in Sport Sciences 21(1).
    Cliff, N. (1993). Dominance statistics: ordinal analyses to answer ordinal questions.
    Psychological Bulletin 114(3).
    Feng, D. and Cliff, N. (2004). Monte Carlo evaluation of ordinal d with improved confidence
    interval. Journal of Modern Applied Statistical Methods 3(2).
    Phipson, B. and Smyth, G. K. (2010). Permutation p-values should never be zero.
    Statistical Applications in Genetics and Molecular Biology 9(1).
    Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application,
    section 3.8 (resampling clustered data). Cambridge University Press.
    Donner, A. and Klar, N. (2000). Design and Analysis of Cluster Randomization Trials in Health
    Research, chapter 6 (analysis of cluster-level summaries). Arnold.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

import numpy as np

Alternative = Literal["two-sided", "greater", "less"]
ALTERNATIVES: tuple[Alternative, ...] = ("two-sided", "greater", "less")
LIKERT_LEVELS: tuple[int, ...] = (1, 2, 3, 4, 5)

# Resampled writers per chunk of bootstrap replicates: bounds memory to about 32 MB.
_BOOTSTRAP_CHUNK_CELLS = 4_000_000

RankMethod = Literal["auto", "asymptotic", "exact"]
# A rank test's p-value is exact when there are at most this many ways to split its values.
EXACT_SPLITS = 100_000
# With more splits, samples smaller than this get a Monte Carlo permutation p rather than the
# normal (χ²) approximation.
SMALL_SAMPLE = 20
# Random splits of a Monte Carlo permutation p, and their seed.
PERMUTATIONS = 20_000
PERMUTATION_SEED = 0
# How a p-value was found, as the results say it.
EXACT = "exact"
PERMUTATION_EXACT = "permutation (exact enumeration)"
PERMUTATION_MONTE_CARLO = (
    f"permutation (Monte Carlo, {PERMUTATIONS:,} random splits, seed {PERMUTATION_SEED})"
)
NORMAL = "normal approximation"
CHI_SQUARED = "chi-squared approximation"


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
    from scipy import stats

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
    t_low: float
    t_high: float


def _t_interval(values: np.ndarray, confidence: float) -> tuple[float, float]:
    """The two-sided Student t interval of the mean of ``values`` (NaN when they do not vary)."""
    from scipy import stats

    spread = values.std(ddof=1)
    if not spread > 0:
        return math.nan, math.nan
    half = (
        float(stats.t.ppf((1 + confidence) / 2, values.size - 1)) * spread / math.sqrt(values.size)
    )
    mean = float(values.mean())
    return mean - half, mean + half


def _t_p_value(t: float, df: int, alternative: Alternative) -> float:
    from scipy import stats

    if alternative == "two-sided":
        p = 2 * stats.t.sf(abs(t), df)
    elif alternative == "greater":
        p = stats.t.sf(t, df)
    else:
        p = stats.t.cdf(t, df)
    return float(min(p, 1.0))


def _writer_t_test(shares: list[Fraction], alternative: Alternative) -> tuple[float, float]:
    count = len(shares)
    mean = float(sum(shares) / count)
    if len(set(shares)) == 1:
        return math.nan, math.nan
    values = np.array([float(share) for share in shares])
    t = (mean - 0.5) / (values.std(ddof=1) / math.sqrt(count))
    return float(t), _t_p_value(float(t), count - 1, alternative)


def _cluster_bootstrap(
    chosen_counts: np.ndarray,
    round_counts: np.ndarray,
    resamples: int,
    seed: int,
    confidence: float,
) -> tuple[float, float]:
    """The percentile interval of the pooled share over ``resamples`` replicates that draw
    the writers with replacement (see :func:`clustered_preference`)."""
    writers = chosen_counts.size
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
    return float(low), float(high)


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
    - Interval of the test: ``t_low``–``t_high``, the two-sided Student t interval at
      ``confidence`` of the mean writer share, mean ± t_{(1+confidence)/2, writers−1}·s/√writers
      (s the writers' standard deviation), whatever the alternative, cut to [0, 1] where it
      reaches past it (a share cannot, so the cut loses no coverage); it excludes 0.5 exactly
      when the two-sided test has p < 1 − confidence. NaN when every writer has the same share.
      This interval and the t-test are the headline of CYOA's own analysis: the writers are
      independent, their rounds are not, and the t-test of their shares keeps its level when
      writers differ (bench/results/cowriting-coverage.md).

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
    low, high = _cluster_bootstrap(chosen_counts, round_counts, resamples, seed, confidence)

    shares = [Fraction(chosen, rounds) for chosen, rounds in pairs]
    t, p = _writer_t_test(shares, alternative)
    t_low, t_high = _t_interval(np.array([float(share) for share in shares]), confidence)
    t_low, t_high = (float(np.clip(bound, 0.0, 1.0)) for bound in (t_low, t_high))
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
        t_low=t_low,
        t_high=t_high,
    )


@dataclass(frozen=True)
class ClusteredRatio:
    """A pooled ratio ``value`` = Σ numerators / Σ denominators over ``writers``, with its
    writer-bootstrap percentile interval ``low``–``high`` at ``confidence`` (NaN with fewer
    than two writers), see :func:`clustered_ratio`."""

    writers: int
    value: float
    low: float
    high: float
    confidence: float


def clustered_ratio(
    per_writer: Iterable[tuple[float, float]],
    resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> ClusteredRatio:
    """A ratio of sums with the writer as the unit: ``per_writer`` holds one
    ``(numerator, denominator)`` per writer (their summed characters kept and characters
    suggested, their summed milliseconds and rounds), each denominator > 0. The value is
    Σ numerator / Σ denominator (each round weighs alike); the interval is the cluster
    percentile bootstrap of :func:`clustered_preference` (writers drawn with replacement,
    ``numpy.random.default_rng(seed)``), because a writer's rounds are not independent.

    Units: the numerator's per the denominator's. Reference: Davison & Hinkley (1997), §3.8;
    Donner & Klar (2000), ch. 6."""
    pairs = [(float(n), float(d)) for n, d in per_writer]
    if not pairs:
        raise ValueError("A writer-clustered ratio needs at least one writer.")
    if any(not d > 0 for _, d in pairs):
        raise ValueError("Each writer needs a denominator above 0: leave out who has none.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}.")
    numerators = np.array([n for n, _ in pairs])
    denominators = np.array([d for _, d in pairs])
    value = float(numerators.sum() / denominators.sum())
    low = high = math.nan
    if len(pairs) >= 2:
        low, high = _cluster_bootstrap(numerators, denominators, resamples, seed, confidence)
    return ClusteredRatio(len(pairs), value, low, high, confidence)


@dataclass(frozen=True)
class WriterDifference:
    """A within-writer comparison of one measure between two systems (see
    :func:`writer_difference`): ``difference`` is the mean over ``writers`` of each writer's
    mean for x minus their mean for y, in the measure's unit, with its two-sided Student t
    interval ``ci_low``–``ci_high`` at ``confidence``, the t-test of no difference (``t``,
    ``df``, ``p_value`` for ``alternative``) and ``dz`` = difference ÷ the writers' standard
    deviation of it (Cohen's d_z). ``left_out``: writers with values for one system only.
    Undefined values are NaN."""

    writers: int
    left_out: int
    difference: float
    ci_low: float
    ci_high: float
    confidence: float
    t: float
    df: int
    p_value: float
    alternative: Alternative
    dz: float


def writer_difference(
    per_writer: Iterable[tuple[Sequence[float], Sequence[float]]],
    alternative: Alternative = "two-sided",
    confidence: float = 0.95,
) -> WriterDifference:
    """Whether a measure differs between two systems *within* writers: a paired t-test of
    writer-level differences.

    ``per_writer`` holds, for each writer, the values of the rounds in which they took x's
    suggestion and those in which they took y's (for an edit metric: its value for each
    accepted suggestion). Each writer who took both gives one difference
    d_i = mean(x values) − mean(y values); a writer who took one system only says nothing
    about the difference and is counted in ``left_out``. The test is the one-sample t-test
    of the d_i against 0 with writers − 1 degrees of freedom, the interval the Student t
    interval of their mean; effect size d_z = mean(d) / sd(d) (Cohen 1988, §2.3.5).

    Why within writers: writers differ in how much they edit, and how much they edit may go
    with which system they prefer. A test that pools rounds (Mann–Whitney over all accepted
    suggestions, the paper's) then compares heavy editors with light ones and rejects a true
    null far more often than its level; comparing each writer with themselves removes the
    writer's level, and the writers are independent (analysis of cluster-level summaries,
    Donner & Klar 2000, ch. 6; bench/results/cowriting-coverage.md). The estimand is the mean
    within-writer difference over writers who took both systems.

    Needs two writers who took both systems for a test (else NaN). Units: the measure's own
    for the difference and its interval; p and d_z unitless. Reference: Student (1908);
    Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed.;
    Donner & Klar (2000).
    """
    _check_alternative(alternative)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}.")
    differences: list[float] = []
    left_out = 0
    for x, y in per_writer:
        xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        if np.isnan(xs).any() or np.isnan(ys).any():
            raise ValueError("A within-writer difference got a NaN: drop missing values first.")
        if xs.size and ys.size:
            differences.append(float(xs.mean() - ys.mean()))
        else:
            left_out += 1
    values = np.array(differences)
    count = values.size
    mean = float(values.mean()) if count else math.nan
    low = high = t = p = dz = math.nan
    if count >= 2 and values.std(ddof=1) > 0:
        spread = float(values.std(ddof=1))
        low, high = _t_interval(values, confidence)
        t = mean / (spread / math.sqrt(count))
        p = _t_p_value(t, count - 1, alternative)
        dz = mean / spread
    return WriterDifference(
        writers=count,
        left_out=left_out,
        difference=mean,
        ci_low=low,
        ci_high=high,
        confidence=confidence,
        t=t,
        df=max(count - 1, 0),
        p_value=p,
        alternative=alternative,
        dz=dz,
    )


@dataclass(frozen=True)
class MannWhitney:
    """Mann–Whitney U test of two samples x and y (see :func:`mann_whitney`).

    ``u`` is the statistic the test reports (for :func:`mann_whitney`, U of x; for
    :func:`mann_whitney_scipy_2021`, min(U_x, U_y)); ``rank_biserial`` is always
    2·U_x/(n_x·n_y) − 1, positive when x tends to be larger than y. ``method`` says how the
    p-value was found: "exact", "permutation (exact enumeration)", "permutation (Monte Carlo,
    20,000 random splits, seed 0)" or "normal approximation" (:func:`mann_whitney`).
    """

    u: float
    p_value: float
    alternative: str
    method: str
    n_x: int
    n_y: int
    rank_biserial: float


def _u_of_x(x: np.ndarray, y: np.ndarray) -> float:
    from scipy import stats

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


def _splits(sizes: Sequence[int]) -> int:
    """The number of ways to deal sum(sizes) values into groups of these sizes (the
    multinomial coefficient; C(n, n_x) for two groups)."""
    count, left = 1, sum(sizes)
    for size in sizes:
        count *= math.comb(left, size)
        left -= size
    return count


def _p_method(sizes: Sequence[int], ties: bool, method: RankMethod) -> str:
    """How a rank test's p-value is found (see :data:`EXACT_SPLITS` and :data:`SMALL_SAMPLE`)."""
    if method == "asymptotic":
        return "asymptotic"
    if method == "exact" or _splits(sizes) <= EXACT_SPLITS:
        return PERMUTATION_EXACT if ties else EXACT
    return PERMUTATION_MONTE_CARLO if min(sizes) < SMALL_SAMPLE else "asymptotic"


def _first_group_splits(n: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Every way to pick ``size`` of positions 0 … n − 1: the picked positions (one row per
    way) and, in the same rows, the positions left, in order."""
    picked = np.array(list(itertools.combinations(range(n), size)), dtype=np.intp)
    picked = picked.reshape(-1, size)
    chosen = np.zeros((len(picked), n), dtype=bool)
    chosen[np.arange(len(picked))[:, None], picked] = True
    return picked, np.argsort(chosen, axis=1, kind="stable")[:, : n - size]


def _label_splits(sizes: Sequence[int]) -> np.ndarray:
    """Every way to deal positions 0 … n − 1 into groups of ``sizes``: one row per split, the
    group (0, 1, …) of each position."""
    n = sum(sizes)
    if len(sizes) == 1:
        return np.zeros((1, n), dtype=np.int16)
    picked, left = _first_group_splits(n, sizes[0])
    rest = _label_splits(sizes[1:]) + 1
    labels = np.zeros((len(picked), len(rest), n), dtype=np.int16)
    rows = np.arange(len(picked))[:, None, None]
    labels[rows, np.arange(len(rest))[None, :, None], left[:, None, :]] = rest[None, :, :]
    return labels.reshape(-1, n)


def _all_split_sums(ranks: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Rank sums of each group (columns) for every split of ``ranks`` into ``sizes`` (rows):
    the first group's picks, times every split of the values left among the other groups (as
    a product of the left values with each group's indicator, to keep memory to the splits)."""
    picked, left = _first_group_splits(ranks.size, sizes[0])
    first = ranks[picked].sum(axis=1)
    rest = _label_splits(sizes[1:])
    others = [ranks[left] @ (rest == group).T for group in range(len(sizes) - 1)]
    sums = np.stack([np.repeat(first[:, None], len(rest), axis=1), *others], axis=2)
    return sums.reshape(-1, len(sizes))


def _rank_sum_distribution(ranks: np.ndarray, n_x: int) -> tuple[np.ndarray, np.ndarray]:
    """The rank sums that n_x of ``ranks`` can have, and over how many of the C(n, n_x) splits
    each comes up: every split counted, by dynamic programming over the midranks (multiples of
    one half, so twice them are integers)."""
    doubled = np.rint(2 * ranks).astype(np.int64)
    top = int(np.sort(doubled)[-n_x:].sum())
    counts = np.zeros((n_x + 1, top + 1))
    counts[0, 0] = 1.0
    for rank in doubled:
        counts[1:, rank:] = counts[1:, rank:] + counts[:-1, : top + 1 - rank]
    sums = np.flatnonzero(counts[n_x])
    return sums / 2, counts[n_x, sums]


def _random_split_sums(ranks: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Rank sums of each group for :data:`PERMUTATIONS` random splits of ``ranks`` into
    ``sizes`` (random permutations from ``numpy.random.default_rng(PERMUTATION_SEED)``)."""
    rng = np.random.default_rng(PERMUTATION_SEED)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    chunk = max(1, _BOOTSTRAP_CHUNK_CELLS // ranks.size)
    sums = []
    for start in range(0, PERMUTATIONS, chunk):
        count = min(chunk, PERMUTATIONS - start)
        shuffled = rng.permuted(np.tile(ranks, (count, 1)), axis=1)
        sums.append(np.add.reduceat(shuffled, starts, axis=1))
    return np.concatenate(sums)


def _permutation_p(observed: float, null: np.ndarray, weights: np.ndarray | None = None) -> float:
    """Share of the null statistics at least as large as ``observed``. ``weights``: how many
    splits give each of ``null`` (every split counted: an exact p); without them ``null`` holds
    random draws and the p is (1 + count) / (1 + draws) (Phipson & Smyth 2010)."""
    reached = null >= observed - 1e-9 * max(1.0, abs(observed))
    if weights is not None:
        return float(weights[reached].sum() / weights.sum())
    return (int(np.count_nonzero(reached)) + 1) / (null.size + 1)


def _rank_sum_p(ranks: np.ndarray, n_x: int, alternative: Alternative, p_method: str) -> float:
    """Permutation p of the rank sum of the first ``n_x`` of ``ranks`` (x), ``alternative``
    as in :func:`mann_whitney`; two-sided: the distance from the null mean n_x(n + 1)/2."""
    if p_method == PERMUTATION_MONTE_CARLO:
        null, weights = _random_split_sums(ranks, (n_x, ranks.size - n_x))[:, 0], None
    else:
        null, weights = _rank_sum_distribution(ranks, n_x)
    observed = float(ranks[:n_x].sum())
    if alternative == "greater":
        return _permutation_p(observed, null, weights)
    if alternative == "less":
        return _permutation_p(-observed, -null, weights)
    centre = n_x * (ranks.size + 1) / 2
    return _permutation_p(abs(observed - centre), np.abs(null - centre), weights)


def mann_whitney(
    x: Sequence[float],
    y: Sequence[float],
    alternative: Alternative = "two-sided",
    method: RankMethod = "auto",
) -> MannWhitney:
    """Mann–Whitney U test of x against y, with the rank-biserial correlation as effect size.

    ``u`` is U of x: the number of pairs (x_i, y_j) with x_i > y_j, ties counting one half.
    "greater" means x is stochastically greater than y. The p-value (``method="auto"``):

    - at most :data:`EXACT_SPLITS` (100,000) ways to split the n = n_x + n_y values into
      samples of n_x and n_y, C(n, n_x): **exact**. Without ties, the exact distribution of U
      (``scipy.stats.mannwhitneyu(method="exact")``, "exact"); with ties, the permutation
      distribution of the rank sum of x over the midranks, counted over every split
      ("permutation (exact enumeration)"). The normal approximation is off for such samples
      (x = 4, 4.33, 4.33, 5 against y = 2.33, 3.33, 3.33, 4: .040 where the 70 splits give
      4/70 = .057).
    - more splits and the smaller sample under :data:`SMALL_SAMPLE` (20) values: a Monte Carlo
      permutation p from :data:`PERMUTATIONS` (20,000) random splits, seed 0, as
      (1 + count) / (1 + 20,000): standard error about .0015 at p = .05.
    - otherwise the normal approximation with tie and continuity correction
      (``scipy.stats.mannwhitneyu(method="asymptotic")``).

    A two-sided permutation p counts the splits whose rank sum of x lies at least as far from
    its null mean n_x(n + 1)/2 as the observed one, as |z| does in the normal approximation
    (with ties the null distribution need not be symmetric, so this is not always twice the
    one-sided p). ``method="exact"`` forces the exact p at any size (slow for large samples);
    ``"asymptotic"`` the normal approximation.

    Effect size (Kerby, 2014): rank-biserial r = 2·U_x/(n_x·n_y) − 1, in [−1, 1]; the share of
    pairs where x is larger minus the share where y is larger (Cliff's δ, :func:`cliffs_delta`).

    Units: p-value and r are fractions. Reference: Mann & Whitney (1947); Kerby (2014);
    Phipson & Smyth (2010).
    """
    from scipy import stats

    _check_alternative(alternative)
    xs, ys = _samples(x, y)
    ranks = stats.rankdata(np.concatenate([xs, ys]))
    ties = np.unique(ranks).size < ranks.size
    p_method = _p_method((xs.size, ys.size), ties, method)
    if p_method in (EXACT, "asymptotic"):
        scipy_method = "exact" if p_method == EXACT else "asymptotic"
        result = stats.mannwhitneyu(xs, ys, alternative=alternative, method=scipy_method)
        p_value = float(result.pvalue)
    else:
        p_value = min(1.0, _rank_sum_p(ranks, xs.size, alternative, p_method))
    u_x = _u_of_x(xs, ys)
    return MannWhitney(
        u=u_x,
        p_value=p_value,
        alternative=alternative,
        method=NORMAL if p_method == "asymptotic" else p_method,
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
    from scipy import stats

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


@dataclass(frozen=True)
class KruskalWallis:
    """Kruskal–Wallis H test of three or more samples (see :func:`kruskal_wallis`): ``h``
    (tie-corrected), ``p_value`` found as ``method`` says, the samples' sizes ``n`` and
    ε² = H / (N − 1)."""

    h: float
    p_value: float
    method: str
    n: tuple[int, ...]
    epsilon_squared: float


def _rank_sum_squares(sums: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Σ_g S_g² / n_g per row of rank sums: H up to a positive linear map that is the same for
    every split of the same values, so it orders splits as H does."""
    return (sums**2 / np.asarray(sizes, dtype=float)).sum(axis=1)


def kruskal_wallis(
    samples: Sequence[Sequence[float]], method: RankMethod = "auto"
) -> KruskalWallis:
    """Kruskal–Wallis H test that the samples come from one distribution, with ε².

    H = (12 / (N(N + 1)) · Σ R_g² / n_g − 3(N + 1)) / T over midranks, R_g the rank sum of
    sample g, N all values and T = 1 − Σ(t³ − t)/(N³ − N) the tie correction
    (``scipy.stats.kruskal``). The p-value (``method="auto"``), as for :func:`mann_whitney`:

    - at most :data:`EXACT_SPLITS` (100,000) ways to deal the N values into samples of these
      sizes (N! / Π n_g!): the share of all of them whose H is at least the observed
      ("permutation (exact enumeration)", ties or not). The χ² approximation is off for such
      samples: (1, 2), (3, 4), (5, 6) give H = 4.57, χ²₂ p = .102 where 6 of the 90 splits
      reach it, p = .067.
    - more splits and a sample under :data:`SMALL_SAMPLE` (20) values: a Monte Carlo
      permutation p from :data:`PERMUTATIONS` (20,000) random splits, seed 0.
    - otherwise the χ² approximation with k − 1 degrees of freedom.

    ``method="exact"`` forces enumeration, ``"asymptotic"`` the χ² approximation. Effect size
    ε² = H / (N − 1), in [0, 1] (Tomczak & Tomczak 2014). Needs at least two samples with
    values and not every value the same.

    Units: p-value and ε² are fractions. Reference: Kruskal & Wallis (1952); Tomczak & Tomczak
    (2014); Phipson & Smyth (2010).
    """
    from scipy import stats

    arrays = [np.asarray(sample, dtype=float) for sample in samples]
    if len(arrays) < 2 or any(array.size == 0 for array in arrays):
        raise ValueError("Kruskal–Wallis H needs at least two samples, each with a value.")
    if any(np.isnan(array).any() for array in arrays):
        raise ValueError("Kruskal–Wallis H got a NaN: drop missing values before testing.")
    pooled = np.concatenate(arrays)
    if np.all(pooled == pooled[0]):
        raise ValueError("Kruskal–Wallis H is undefined when every value is the same.")
    sizes = tuple(int(array.size) for array in arrays)
    h, p_value = (float(value) for value in stats.kruskal(*arrays))
    ranks = stats.rankdata(pooled)
    p_method = _p_method(sizes, ties=True, method=method)
    if p_method != "asymptotic":
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        observed = _rank_sum_squares(np.add.reduceat(ranks, starts)[None, :], sizes)[0]
        if p_method == PERMUTATION_MONTE_CARLO:
            null = _rank_sum_squares(_random_split_sums(ranks, sizes), sizes)
            p_value = _permutation_p(observed, null)
        else:
            null = _rank_sum_squares(_all_split_sums(ranks, sizes), sizes)
            p_value = _permutation_p(observed, null, np.ones_like(null))
    return KruskalWallis(
        h=h,
        p_value=min(1.0, p_value),
        method=CHI_SQUARED if p_method == "asymptotic" else p_method,
        n=sizes,
        epsilon_squared=h / (pooled.size - 1),
    )


@dataclass(frozen=True)
class CliffsDelta:
    """Cliff's δ of x against y with its interval at ``confidence`` (see :func:`cliffs_delta`);
    ``variance`` is the estimated variance of δ. The interval is ``None`` when a sample has
    fewer than two values."""

    delta: float
    ci_low: float | None
    ci_high: float | None
    variance: float | None
    confidence: float
    n_x: int
    n_y: int


def _dominance(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The dominance matrix d_ij = sign(x_i − y_j) summed up without building it: its row means
    (for each x_i, (#y below − #y above) / n_y), its column means (for each y_j, (#x above −
    #x below) / n_x), and the number of pairs with x_i > y_j and with x_i < y_j."""
    sorted_x, sorted_y = np.sort(xs), np.sort(ys)
    below_x = np.searchsorted(sorted_y, xs, side="left")
    above_x = ys.size - np.searchsorted(sorted_y, xs, side="right")
    below_y = np.searchsorted(sorted_x, ys, side="left")
    above_y = xs.size - np.searchsorted(sorted_x, ys, side="right")
    rows = (below_x - above_x) / ys.size
    columns = (above_y - below_y) / xs.size
    return rows, columns, int(below_x.sum()), int(above_x.sum())


def _cliffs_variance(
    xs: np.ndarray, ys: np.ndarray, delta: float, variance: Literal["unbiased", "consistent"]
) -> float:
    """Variance of Cliff's δ (Cliff 1993's "unbiased" estimate, with its floor, or the
    "consistent" one), from the dominance matrix's row means d_i., column means d_.j and
    Σ_ij (d_ij − δ)², taken about ``delta``."""
    n_x, n_y = xs.size, ys.size
    rows, columns, greater, less = _dominance(xs, ys)
    pairs = n_x * n_y
    ties = pairs - greater - less
    squares = greater * (1 - delta) ** 2 + ties * delta**2 + less * (1 + delta) ** 2
    row_squares = float(((rows - delta) ** 2).sum())
    column_squares = float(((columns - delta) ** 2).sum())
    if variance == "consistent":
        return (
            row_squares * (n_y - 1) / (n_x - 1)
            + column_squares * (n_x - 1) / (n_y - 1)
            + squares / ((n_x - 1) * (n_y - 1))
        ) / pairs
    unbiased = (n_y**2 * row_squares + n_x**2 * column_squares - squares) / (
        pairs * (n_x - 1) * (n_y - 1)
    )
    return max(unbiased, (1 - delta**2) / (pairs - 1))


def cliffs_delta(
    x: Sequence[float],
    y: Sequence[float],
    confidence: float = 0.95,
    variance: Literal["unbiased", "consistent"] = "unbiased",
    critical: Literal["t", "normal"] = "t",
) -> CliffsDelta:
    """Cliff's δ of x against y with the asymmetric interval of Cliff (1993) and Feng & Cliff
    (2004).

    δ = P(X > Y) − P(X < Y) estimated over all n_x·n_y pairs: the mean of the dominance
    matrix d_ij = sign(x_i − y_j), in [−1, 1]. It equals the rank-biserial r of the
    Mann–Whitney test, 2·U_x/(n_x·n_y) − 1 (:func:`mann_whitney`).

    Interval: (δ − δ³ ± z·s·√((1 − δ²)² + z²s²)) / (1 − δ² + z²s²), which stays inside
    [−1, 1], with s² the variance of δ:

    - ``variance="unbiased"`` (default): s² = (n_y²·Σ(d_i. − δ)² + n_x²·Σ(d_.j − δ)²
      − ΣΣ(d_ij − δ)²) / (n_x·n_y·(n_x − 1)(n_y − 1)), at least (1 − δ²)/(n_x·n_y − 1) (the
      unbiased estimate can fall below it, even below 0, in small samples; Cliff 1993).
      ``"consistent"``: ((n_y − 1)·s²_i. + (n_x − 1)·s²_.j + s²_ij) / (n_x·n_y).
    - z: Student's t with n_x + n_y − 2 degrees of freedom (``critical="t"``, Feng & Cliff
      2004) or the normal quantile (``"normal"``), at (1 + confidence)/2.

    When the samples do not overlap (δ = ±1) s² is taken at δ·(n_x·n_y − 1)/(n_x·n_y) and the
    end at the bound is set to ±1, as the R package effsize does; its defaults are these
    (unbiased, t). No interval when a sample has fewer than two values.

    Units: δ and its interval are fractions in [−1, 1]. Reference: Cliff, N. (1993).
    Dominance statistics: ordinal analyses to answer ordinal questions. Psychological
    Bulletin 114(3); Feng, D. and Cliff, N. (2004). Monte Carlo evaluation of ordinal d with
    improved confidence interval. Journal of Modern Applied Statistical Methods 3(2);
    Torchiano, M. effsize (R package), ``cliff.delta``.
    """
    from scipy import stats

    xs, ys = _samples(x, y)
    n_x, n_y = int(xs.size), int(ys.size)
    _, _, greater, less = _dominance(xs, ys)
    delta = (greater - less) / (n_x * n_y)
    if n_x < 2 or n_y < 2:
        return CliffsDelta(delta, None, None, None, confidence, n_x, n_y)
    pairs = n_x * n_y
    d = delta * (pairs - 1) / pairs if abs(delta) == 1 else delta
    s2 = _cliffs_variance(xs, ys, d, variance)
    tail = (1 + confidence) / 2
    z = float(stats.t.ppf(tail, n_x + n_y - 2) if critical == "t" else stats.norm.ppf(tail))
    spread = z * math.sqrt(s2) * math.sqrt((1 - d**2) ** 2 + z**2 * s2)
    low = (d - d**3 - spread) / (1 - d**2 + z**2 * s2)
    high = (d - d**3 + spread) / (1 - d**2 + z**2 * s2)
    if delta == 1:
        high = 1.0
    if delta == -1:
        low = -1.0
    return CliffsDelta(delta, max(-1.0, low), min(1.0, high), s2, confidence, n_x, n_y)


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
