"""Anytime-valid inference on the mean of values in [0, 1] that arrive one at a time: a
confidence sequence and the matching anytime-valid p-value, so that a study may be watched
after every participant and stopped whenever it looks decisive without losing its level.

A confidence sequence (CS) at level 1 − α is a sequence of intervals C_1, C_2, … with
P(μ ∈ C_t for every t) ≥ 1 − α: the guarantee holds at every look at once, hence at any
stopping time, however the looks were chosen. A fixed-sample interval holds at one planned n
only; looking at it after every writer and stopping at the first exclusion of 0.5 rejects a
true null far more often than α (docs/analysis.md, "Watching a study as it runs").

This module builds the *hedged betting* CS of Waudby-Smith & Ramdas (2023), Theorem 3, with
their predictable-plug-in empirical-Bernstein bets (PrPl-EB), exactly as the reference
implementation ``confseq.betting.betting_cs`` (confseq 0.0.11, Howard & Waudby-Smith) does
with its defaults, and its running intersection. That package cannot be installed here (it
needs a C++ build against Boost and its Python part uses ``numpy.float_``, gone in numpy 2),
so the method is written out below and checked against numbers the package printed
(tests/stats/test_sequential.py).

For a candidate mean m, two gamblers bet on the next value x_i being above (K⁺) or below (K⁻) m:

    K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m)·(x_i − m)),   K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m)·(x_i − m)),

with bets chosen before x_i is seen (predictable):

    λ_i = sqrt(2·log(1/(α/2)) / (σ̂²_{i−1} · i · log(1 + i))),
    μ̂_i = (1/2 + Σ_{j≤i} x_j) / (i + 1),  σ̂²_i = (1/4 + Σ_{j≤i} (x_j − μ̂_j)²) / (i + 1),
    λ⁺_i(m) = min(λ_i, c/m),  λ⁻_i(m) = min(λ_i, c/(1 − m)),  c = 1/2.

If the mean is m, both are nonnegative martingales starting at 1, and so is their hedge
K_t(m) = max(K⁺_t/2, K⁻_t/2) up to a union bound; Ville's inequality gives
P(∃t: K_t(m) ≥ 1/α) ≤ α. The CS is every m of a grid of ``breaks`` + 1 points whose capital
stays below 1/α, from its smallest to its largest such point, widened by one grid step
on each side, intersected with the earlier intervals. The anytime-valid p-value of
H0: μ = m₀ is p_t = min(1, 1 / max_{s≤t} K_s(m₀)): P(∃t: p_t ≤ α) ≤ α, and p_t ≤ α exactly
when the test at m₀ (before the grid's widening) has left the CS at level α. The bets are tuned
for ``alpha``; the p-value is valid at every level, and sharpest at that one.

Units: values, means, bounds and p-values are fractions.

References:
    Waudby-Smith, I. and Ramdas, A. (2023). Estimating means of bounded random variables by
    betting. Journal of the Royal Statistical Society, Series B 86(1).
    Howard, S. R., Ramdas, A., McAuliffe, J. and Sekhon, J. (2021). Time-uniform,
    nonparametric, nonasymptotic confidence sequences. Annals of Statistics 49(2).
    Ville, J. (1939). Étude critique de la notion de collectif. Gauthier-Villars.
    Howard, S. R. and Waudby-Smith, I. confseq 0.0.11 (PyPI), ``confseq/betting.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.05
BREAKS = 1000
TRUNCATION = 0.5
# Grid points × values whose capital is computed at once: about 16 MB per array.
_CHUNK_CELLS = 2_000_000


@dataclass(frozen=True)
class ConfidenceSequence:
    """A confidence sequence for the mean of ``values`` (see the module docstring), at every
    look t = 1 … n: ``lows[t − 1]``–``highs[t − 1]`` holds the mean at level 1 − ``alpha`` at
    every look at once, and ``p_values[t − 1]`` is the anytime-valid p-value of
    H0: mean = ``null`` after t values. ``mean`` is the plain mean of all n values."""

    n: int
    mean: float
    alpha: float
    null: float
    lows: tuple[float, ...]
    highs: tuple[float, ...]
    p_values: tuple[float, ...]

    @property
    def low(self) -> float:
        """The lower bound after the last value."""
        return self.lows[-1]

    @property
    def high(self) -> float:
        """The upper bound after the last value."""
        return self.highs[-1]

    @property
    def p_value(self) -> float:
        """The anytime-valid p-value after the last value."""
        return self.p_values[-1]


def predictable_bets(values: np.ndarray, alpha: float) -> np.ndarray:
    """The PrPl-EB bets λ_1 … λ_n before truncation (Waudby-Smith & Ramdas 2023, eq. (26)
    with prior mean 1/2, prior variance 1/4 and one prior observation, as
    ``confseq.betting_strategies.lambda_predmix_eb``): λ_i uses only x_1 … x_{i−1}."""
    t = np.arange(1, values.size + 1)
    mean = np.minimum((0.5 + np.cumsum(values)) / (t + 1), 1)
    variance = (0.25 + np.cumsum((values - mean) ** 2)) / (t + 1)
    before = np.concatenate([[0.25], variance[:-1]])
    return np.sqrt(2 * np.log(1 / alpha) / (t * np.log(1 + t) * before))


def hedged_capital(values: np.ndarray, means: np.ndarray, alpha: float) -> np.ndarray:
    """K_t(m) = max(K⁺_t(m)/2, K⁻_t(m)/2) for each candidate mean m in ``means`` (rows) and
    each look t (columns), on the log scale (see the module docstring)."""
    bets = predictable_bets(values, alpha / 2)
    m = means[:, None]
    with np.errstate(divide="ignore"):
        up = np.minimum(bets[None, :], TRUNCATION / m)
        down = np.minimum(bets[None, :], TRUNCATION / (1 - m))
    gap = values[None, :] - m
    log_up = np.cumsum(np.log1p(up * gap), axis=1)
    log_down = np.cumsum(np.log1p(-down * gap), axis=1)
    return np.maximum(log_up, log_down) + np.log(0.5)


def confidence_sequence(
    values: Sequence[float], alpha: float = ALPHA, null: float = 0.5, breaks: int = BREAKS
) -> ConfidenceSequence:
    """The hedged betting confidence sequence for the mean of ``values`` (each in [0, 1], in
    the order they arrived) at level 1 − ``alpha``, its running intersection, and the
    anytime-valid p-value of H0: mean = ``null`` (see the module docstring).

    Raises ``ValueError`` without values, for a value outside [0, 1], or for ``alpha`` or
    ``null`` outside (0, 1).

    Reference: Waudby-Smith & Ramdas (2023), Theorem 3 and eq. (26); confseq 0.0.11
    ``betting_cs(x, alpha=alpha, breaks=breaks, running_intersection=True)``.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("A confidence sequence needs at least one value.")
    if np.isnan(x).any() or x.min() < 0 or x.max() > 1:
        raise ValueError("A confidence sequence of a share needs values between 0 and 1.")
    if not 0 < alpha < 1 or not 0 < null < 1:
        raise ValueError(f"alpha and null must lie strictly between 0 and 1, got {alpha}, {null}.")
    grid = np.arange(0, 1 + 1 / breaks, step=1 / breaks)
    threshold = np.log(1 / alpha)
    first = np.full(x.size, -1)
    last = np.full(x.size, -1)
    chunk = max(1, _CHUNK_CELLS // x.size)
    for start in range(0, grid.size, chunk):
        inside = hedged_capital(x, grid[start : start + chunk], alpha) <= threshold
        found = inside.any(axis=0)
        lowest = start + inside.argmax(axis=0)
        highest = start + inside.shape[0] - 1 - inside[::-1].argmax(axis=0)
        first = np.where((first < 0) & found, lowest, first)
        last = np.where(found, highest, last)
    lows = np.where(first >= 0, grid[np.maximum(first, 0)], 0.0)
    highs = np.where(last >= 0, grid[np.maximum(last, 0)], 1.0)
    lows = np.maximum.accumulate(np.maximum(0.0, lows - 1 / breaks))
    highs = np.minimum.accumulate(np.minimum(1.0, highs + 1 / breaks))
    at_null = np.maximum.accumulate(hedged_capital(x, np.array([null]), alpha)[0])
    p_values = np.minimum(1.0, np.exp(-at_null))
    return ConfidenceSequence(
        n=int(x.size),
        mean=float(x.mean()),
        alpha=alpha,
        null=null,
        lows=tuple(float(v) for v in lows),
        highs=tuple(float(v) for v in highs),
        p_values=tuple(float(v) for v in p_values),
    )
