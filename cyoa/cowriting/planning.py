"""How many writers and rounds a co-writing comparison needs: the power of the preference tests
CYOA reports (:func:`cyoa.cowriting.analysis.tables.preference_table`), by simulation.

The model of a study: writer i chooses the first system in each of their rounds with chance
``expit(μ + u_i)``, ``u_i ~ N(0, σ_w²)`` (a writer effect on the log-odds), independently
across rounds; μ is set so that the share expected over writers is the preference ``p``. A
simulated study draws ``writers`` writers with ``rounds`` counted rounds each and applies:

- ``"binomial"``: the exact binomial test of the pooled share against 0.5 (Table 1's
  headline, :func:`cyoa.stats.preference`). It treats every choice as independent, so when
  writers differ (σ_w > 0) it rejects a true null more often than α;
- ``"writers"``: the one-sample t-test of the writers' shares against 0.5
  (:func:`cyoa.stats.clustered_preference`), which keeps its level when writers differ; the
  default of a plan.

Power is the share of ``simulations`` studies that reject at ``alpha`` (two-sided unless
stated), with a 95% Clopper–Pearson interval for its Monte-Carlo error. Simulation is
vectorised over studies (one numpy array of writers × studies per cell) and seeded.

References:
    Card, D., Henderson, P., Khandelwal, U., Jia, R., Mahowald, K. and Jurafsky, D. (2020).
    With little power comes great responsibility. EMNLP 2020.
    Clopper, C. J. and Pearson, E. S. (1934). Biometrika 26(4).
    Donner, A. and Klar, N. (2000). Design and Analysis of Cluster Randomization Trials in
    Health Research, ch. 6. Arnold.

scipy is imported by the functions that use it: the app's start imports this module (the
table of kinds' planner) without drawing a plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from cyoa.stats import ALTERNATIVES, Alternative

Test = Literal["binomial", "writers"]
TESTS: tuple[Test, ...] = ("binomial", "writers")
WRITERS = (5, 10, 15, 20, 30, 40, 60, 80, 100)
ROUNDS = (5, 10, 15, 20)
SIMULATIONS = 2000
TARGET = 0.8
ALPHA = 0.05
# Gauss–Hermite nodes for expectations over the writer effect.
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(60)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class PowerCell:
    """Power of one design: ``writers`` × ``rounds`` counted rounds each; ``low``–``high``
    the 95% Clopper–Pearson interval of its ``simulations`` studies (fractions)."""

    writers: int
    rounds: int
    power: float
    low: float
    high: float
    simulations: int


@dataclass(frozen=True)
class PilotEstimate:
    """A pilot's pooled ``preference`` (fraction) and writer spread ``writer_sd`` (log-odds),
    from ``writers`` writers with ``median_rounds`` counted rounds."""

    preference: float
    writer_sd: float
    writers: int
    median_rounds: int


@dataclass(frozen=True)
class CowritingPlan:
    """The power of each design of a grid, the smallest reaching ``target`` (``chosen``,
    None when none does) and what was assumed."""

    preference: float
    writer_sd: float
    test: Test
    alternative: Alternative
    alpha: float
    target: float
    seed: int
    simulations: int
    cells: tuple[PowerCell, ...]
    chosen: PowerCell | None


def _check(preference: float, writer_sd: float, test: str, alternative: str) -> None:
    if not 0 < preference < 1:
        raise ValueError(f"The preference must lie strictly between 0 and 1, got {preference}.")
    if not writer_sd >= 0:
        raise ValueError(f"The writer spread (log-odds SD) must be 0 or more, got {writer_sd}.")
    if test not in TESTS:
        raise ValueError(f"The test must be one of {', '.join(TESTS)}, got {test!r}.")
    if alternative not in ALTERNATIVES:
        raise ValueError(f"The alternative must be one of {', '.join(ALTERNATIVES)}.")


def intercept_for(preference: float, writer_sd: float) -> float:
    """μ with E[expit(μ + u)] = ``preference`` for u ~ N(0, ``writer_sd``²) (Gauss–Hermite
    quadrature): the log-odds intercept whose writers choose the first system ``preference``
    of the time on average. With no spread it is logit(``preference``)."""
    from scipy import optimize, special

    if writer_sd == 0:
        return float(special.logit(preference))

    def gap(mu: float) -> float:
        return float(_WEIGHTS @ special.expit(mu + writer_sd * _NODES)) - preference

    return float(optimize.brentq(gap, -50, 50))


def binomial_p_values(n: int, alternative: Alternative = "two-sided") -> np.ndarray:
    """The exact binomial test's p-value against 0.5 for every count k = 0..n, as
    ``scipy.stats.binomtest`` gives it: "greater" P(X ≥ k), "less" P(X ≤ k), "two-sided"
    (the distribution being symmetric) 2·P(X ≤ min(k, n − k)), at most 1."""
    from scipy import stats

    k = np.arange(n + 1)
    if alternative == "greater":
        return stats.binom.sf(k - 1, n, 0.5)
    if alternative == "less":
        return stats.binom.cdf(k, n, 0.5)
    return np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(k, n - k), n, 0.5))


def _writer_p_values(shares: np.ndarray, alternative: Alternative) -> np.ndarray:
    """The writer-level t-test's p per study (rows), NaN where every writer's share is the
    same, as :func:`cyoa.stats.clustered_preference` reports it."""
    from scipy import stats

    writers = shares.shape[1]
    spread = shares.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (shares.mean(axis=1) - 0.5) / (spread / math.sqrt(writers))
    t = np.where(np.ptp(shares, axis=1) == 0, np.nan, t)
    df = writers - 1
    if alternative == "greater":
        return stats.t.sf(t, df)
    if alternative == "less":
        return stats.t.cdf(t, df)
    return np.minimum(1.0, 2 * stats.t.sf(np.abs(t), df))


def _interval(rejections: int, simulations: int) -> tuple[float, float]:
    from scipy import stats

    ci = stats.binomtest(rejections, simulations).proportion_ci(0.95, method="exact")
    return float(ci.low), float(ci.high)


def simulate_power(
    writers: int,
    rounds: int,
    preference: float,
    writer_sd: float,
    test: Test = "writers",
    *,
    alpha: float = ALPHA,
    alternative: Alternative = "two-sided",
    simulations: int = SIMULATIONS,
    seed: int = 0,
) -> PowerCell:
    """Power of ``test`` for ``writers`` × ``rounds`` under the module's model: the share of
    ``simulations`` seeded studies (``numpy.random.default_rng(seed)``) with p ≤ ``alpha``.
    A study whose writer-level test is undefined (every share equal) does not reject."""
    from scipy import special

    _check(preference, writer_sd, test, alternative)
    if writers < 2 or rounds < 1 or simulations < 1:
        raise ValueError("A design needs at least 2 writers, 1 round and 1 simulation.")
    rng = np.random.default_rng(seed)
    mu = intercept_for(preference, writer_sd)
    chance = special.expit(mu + writer_sd * rng.standard_normal((simulations, writers)))
    chosen = rng.binomial(rounds, chance)
    if test == "binomial":
        p = binomial_p_values(writers * rounds, alternative)[chosen.sum(axis=1)]
    else:
        p = _writer_p_values(chosen / rounds, alternative)
    rejections = int(np.sum(p <= alpha))
    low, high = _interval(rejections, simulations)
    return PowerCell(writers, rounds, rejections / simulations, low, high, simulations)


def plan_cowriting(
    preference: float,
    writer_sd: float,
    *,
    writers: Sequence[int] = WRITERS,
    rounds: Sequence[int] = ROUNDS,
    test: Test = "writers",
    alpha: float = ALPHA,
    alternative: Alternative = "two-sided",
    target: float = TARGET,
    simulations: int = SIMULATIONS,
    seed: int = 0,
    progress: Progress | None = None,
) -> CowritingPlan:
    """Power over the grid ``writers`` × ``rounds`` (:func:`simulate_power`, each cell
    seeded with ``seed`` so cells share their random stream), then, for each round count, the
    writer counts between the grid's last below ``target`` and its first reaching it, by
    bisection to one writer (:func:`_writers_between`; a coarse grid would otherwise choose
    60 writers where 50 already reach the target). ``cells``: every cell computed, by writers
    then rounds. The chosen design: the cell with power ≥ ``target`` and the fewest choices
    (writers × rounds), then the fewest writers. ``progress(done, total)`` is called after
    each cell of the grid."""
    _check(preference, writer_sd, test, alternative)
    if not 0 < target < 1 or not 0 < alpha < 1:
        raise ValueError("The target power and α must lie strictly between 0 and 1.")
    grid = [(w, r) for w in sorted(set(writers)) for r in sorted(set(rounds))]

    def power(w: int, r: int) -> PowerCell:
        return simulate_power(
            w, r, preference, writer_sd, test,
            alpha=alpha, alternative=alternative, simulations=simulations, seed=seed,
        )  # fmt: skip

    found: dict[tuple[int, int], PowerCell] = {}
    for done, (w, r) in enumerate(grid, start=1):
        found[w, r] = power(w, r)
        if progress:
            progress(done, len(grid))
    for r in sorted(set(rounds)):
        found.update(_writers_between(found, r, target, power))
    cells = [found[key] for key in sorted(found)]
    reaching = [cell for cell in cells if cell.power >= target]
    chosen = min(reaching, key=lambda c: (c.writers * c.rounds, c.writers), default=None)
    return CowritingPlan(
        preference, writer_sd, test, alternative, alpha, target, seed, simulations,
        tuple(cells), chosen,
    )  # fmt: skip


def _writers_between(
    found: dict[tuple[int, int], PowerCell],
    rounds: int,
    target: float,
    power: Callable[[int, int], PowerCell],
) -> dict[tuple[int, int], PowerCell]:
    """The cells a bisection over writer counts adds at ``rounds`` rounds: between the
    grid's largest writer count below ``target`` (under the smallest that reaches it) and
    that smallest one, halving the gap until the two are neighbours, so the fewest writers
    reaching the target is found to one writer (power rises with writers; the same seed
    keeps the steps comparable). Nothing is added when no grid count reaches the target, or
    the smallest grid count already does."""
    counts = sorted(w for w, r in found if r == rounds)
    reach = [w for w in counts if found[w, rounds].power >= target]
    below = [w for w in counts if reach and w < reach[0]]
    if not reach or not below:
        return {}
    low, high = below[-1], reach[0]
    added = {}
    while high - low > 1:
        middle = (low + high) // 2
        cell = added[middle, rounds] = power(middle, rounds)
        low, high = (low, middle) if cell.power >= target else (middle, high)
    return added


def detectable_preference(
    writers: int,
    rounds: int,
    writer_sd: float,
    *,
    test: Test = "writers",
    alpha: float = ALPHA,
    target: float = TARGET,
    simulations: int = SIMULATIONS,
    seed: int = 0,
) -> float | None:
    """The smallest preference above 0.5, in steps of 0.01, that ``writers`` × ``rounds``
    detects with power ≥ ``target`` (two-sided test at ``alpha``); None if even 0.99 is not
    detected. Each step is simulated with the same ``seed`` (common random numbers), so
    power rises smoothly along the steps."""
    for step in range(51, 100):
        preference = step / 100
        cell = simulate_power(
            writers, rounds, preference, writer_sd, test,
            alpha=alpha, simulations=simulations, seed=seed,
        )  # fmt: skip
        if cell.power >= target:
            return preference
    return None


def estimate_pilot(per_writer: Iterable[tuple[int, int]]) -> PilotEstimate:
    """The preference and writer spread of a pilot, from each writer's ``(chosen, rounds)``.

    Preference: the pooled share Σchosen / Σrounds. Spread, by the method of moments on the
    logit-normal model: the variance of the writers' true chances is estimated as
    τ² = s² − mean(p̂ᵢ(1 − p̂ᵢ) / (nᵢ − 1)), s² the sample variance of the writers' shares
    p̂ᵢ and the subtracted term their binomial noise (unbiased: E[p̂(1 − p̂)] = p(1 − p)(1 − 1/n));
    σ_w is then the writer SD on the log-odds scale whose chances have variance τ² around
    the pooled share (quadrature, :func:`intercept_for`); 0 when τ² ≤ 0. Writers with a
    single round carry no within-writer information and are left out of the noise term.

    Reference: Fleiss, J. L., Levin, B. and Paik, M. C. (2003). Statistical Methods for Rates
    and Proportions, 3rd ed., §15 (clustered binary data). Wiley.
    """
    pairs = [(int(c), int(n)) for c, n in per_writer if int(n) >= 1]
    if len(pairs) < 2:
        raise ValueError("A pilot needs at least two writers with a counted round.")
    chosen = np.array([c for c, _ in pairs], dtype=float)
    rounds = np.array([n for _, n in pairs], dtype=float)
    pooled = float(chosen.sum() / rounds.sum())
    if not 0 < pooled < 1:
        raise ValueError(
            f"Every pilot choice went one way (share {pooled:.0%}): the spread between writers "
            "cannot be estimated; plan from assumptions (--assume) instead."
        )
    shares = chosen / rounds
    several = rounds >= 2
    noise = np.mean(shares[several] * (1 - shares[several]) / (rounds[several] - 1))
    tau2 = float(np.var(shares, ddof=1) - (noise if several.any() else 0.0))
    return PilotEstimate(pooled, _sd_for_variance(pooled, tau2), len(pairs), int(np.median(rounds)))


def _sd_for_variance(preference: float, variance: float) -> float:
    """σ_w whose chances expit(μ + u) have ``variance`` around mean ``preference``."""
    from scipy import optimize, special

    if variance <= 0:
        return 0.0

    def gap(sd: float) -> float:
        chance = special.expit(intercept_for(preference, sd) + sd * _NODES)
        return float(_WEIGHTS @ (chance - preference) ** 2) - variance

    if gap(20.0) < 0:
        return 20.0
    return float(optimize.brentq(gap, 1e-9, 20.0))
