"""Kruskal–Wallis H between three or more samples: an exact permutation p for small samples,
the χ² approximation for large ones."""

import math

import numpy as np
import pytest
from scipy import stats

from cyoa.stats import kruskal_wallis


def test_small_samples_get_the_exact_permutation_p_not_the_chi_squared_approximation():
    # Ranks 1–6 in groups (1, 2) (3, 4) (5, 6): H = 4.571429, the largest H there is. Of the
    # 6!/(2!·2!·2!) = 90 ways to deal the values into groups of 2, the 3! = 6 that keep the
    # pairs {1, 2}, {3, 4}, {5, 6} together reach it: p = 6/90 = .067, where χ²₂ says .102.
    result = kruskal_wallis([[1, 2], [3, 4], [5, 6]])
    assert result.h == pytest.approx(4.571429, abs=1e-6)
    assert result.p_value == pytest.approx(6 / 90)
    assert result.method == "permutation (exact enumeration)"
    assert result.epsilon_squared == pytest.approx(4.571429 / 5, abs=1e-6)
    assert result.n == (2, 2, 2)
    approximate = kruskal_wallis([[1, 2], [3, 4], [5, 6]], method="asymptotic")
    assert approximate.p_value == pytest.approx(math.exp(-4.571429 / 2), abs=1e-6)
    assert approximate.method == "chi-squared approximation"


def test_the_exact_p_with_ties_counts_the_splits_of_the_midranks():
    samples = [[1, 1, 2], [2, 3, 3], [3, 4, 4]]
    result = kruskal_wallis(samples)
    assert result.method == "permutation (exact enumeration)"
    reference = stats.permutation_test(
        samples,
        lambda *s: stats.kruskal(*s).statistic,
        permutation_type="independent",
        alternative="greater",
        n_resamples=math.inf,
    )
    assert result.p_value == pytest.approx(reference.pvalue)
    assert result.h == pytest.approx(stats.kruskal(*samples).statistic)


def test_large_samples_get_the_chi_squared_approximation_with_tie_correction():
    rng = np.random.default_rng(2)
    samples = [rng.integers(1, 6, size=25).astype(float) for _ in range(3)]
    result = kruskal_wallis(samples)
    assert result.method == "chi-squared approximation"
    assert result.p_value == pytest.approx(stats.kruskal(*samples).pvalue)


def test_a_small_group_among_large_ones_gets_a_seeded_monte_carlo_permutation_p():
    rng = np.random.default_rng(4)
    samples = [[2.0, 3.0, 3.0], *(rng.integers(1, 6, size=30).astype(float) for _ in range(2))]
    result = kruskal_wallis(samples)
    assert result.method == "permutation (Monte Carlo, 20,000 random splits, seed 0)"
    assert kruskal_wallis(samples).p_value == result.p_value
    assert result.p_value == pytest.approx(stats.kruskal(*samples).pvalue, abs=0.05)


def test_kruskal_wallis_refuses_fewer_than_two_samples_or_identical_values():
    with pytest.raises(ValueError, match="at least two samples"):
        kruskal_wallis([[1.0, 2.0]])
    with pytest.raises(ValueError, match="every value is the same"):
        kruskal_wallis([[1.0, 1.0], [1.0], [1.0]])
