"""Q2 tests: Mann–Whitney U, rank-biserial effect size, scipy 2021 default, Holm."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from cyoa.stats import holm, mann_whitney, mann_whitney_scipy_2021


def test_mann_whitney_exact_hand_computed():
    # x = 1, 2, 3 all below y = 4, 5, 6, 7: U_x = 0 pairs with x > y.
    # Exact null: each of C(7,3) = 35 rank sets equally likely; U_x = 0 only for {1,2,3}.
    # less: 1/35; two-sided: 2/35.
    assert mann_whitney([1, 2, 3], [4, 5, 6, 7], alternative="less").p_value == (
        pytest.approx(1 / 35)
    )
    result = mann_whitney([1, 2, 3], [4, 5, 6, 7])
    assert result.u == 0.0
    assert result.p_value == pytest.approx(2 / 35)
    assert result.alternative == "two-sided"
    assert result.rank_biserial == -1.0


def test_rank_biserial_with_ties_hand_computed():
    # x = 1, 2, 2; y = 2, 3. Pairs with x > y: none; ties: (2,2) twice -> 2 * 0.5 = 1 = U_x.
    # r = 2 * 1 / (3 * 2) - 1 = -2/3.
    result = mann_whitney([1, 2, 2], [2, 3])
    assert result.u == 1.0
    assert result.rank_biserial == pytest.approx(-2 / 3)


def test_scipy_2021_default_is_the_one_sided_normal_approximation():
    # x = 1, 2, 3; y = 4..7; no ties: T = 1, sigma = sqrt(3*4*8/12) = sqrt(8).
    # z = (max(U) - 3*4/2 - 0.5) / sqrt(8) = (12 - 6.5) / 2.8284 = 1.9445; p = P(Z > z).
    result = mann_whitney_scipy_2021([1, 2, 3], [4, 5, 6, 7])
    assert result.u == 0.0  # min(U_x, U_y)
    assert result.p_value == pytest.approx(stats.norm.sf(5.5 / math.sqrt(8)))
    assert result.p_value == pytest.approx(0.025915, abs=1e-6)
    assert result.alternative == "one-sided (scipy<1.7 default)"


def test_scipy_2021_default_is_half_the_asymptotic_two_sided_p():
    x = [12.0, 30.5, 4.0, 4.0, 18.0, 22.0, 9.0, 41.0, 3.0]
    y = [25.0, 33.0, 4.0, 50.0, 29.0, 27.5, 60.0, 18.0]
    two_sided = mann_whitney(x, y, method="asymptotic").p_value
    assert mann_whitney_scipy_2021(x, y).p_value == pytest.approx(two_sided / 2)


def test_scipy_2021_default_refuses_identical_values_like_scipy_did():
    with pytest.raises(ValueError, match="identical"):
        mann_whitney_scipy_2021([1, 1], [1, 1, 1])


def test_mann_whitney_refuses_empty_or_missing_values():
    with pytest.raises(ValueError, match="at least one value"):
        mann_whitney([], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        mann_whitney([1.0, float("nan")], [2.0])


@given(
    st.lists(st.integers(0, 20), min_size=1, max_size=15),
    st.lists(st.integers(0, 20), min_size=1, max_size=15),
)
def test_rank_biserial_is_antisymmetric_and_bounded(x, y):
    # The effect size does not depend on how p is found: the fast approximation suffices here.
    forward = mann_whitney(x, y, method="asymptotic").rank_biserial
    assert -1.0 <= forward <= 1.0
    assert mann_whitney(y, x, method="asymptotic").rank_biserial == pytest.approx(-forward)


def test_holm_hand_computed():
    # sorted: 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> running max 0.06).
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # capped at 1: 0.5 x 2 = 1.0, then max(1.0, 0.6) = 1.0.
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    assert holm([]) == []


def test_holm_refuses_values_that_are_not_p_values():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])


@given(st.lists(st.floats(0, 1), max_size=12))
def test_holm_adjusts_upwards_and_keeps_the_order(p_values):
    adjusted = holm(p_values)
    assert all(p <= a <= 1.0 for p, a in zip(p_values, adjusted, strict=True))
    for i, j in itertools.product(range(len(p_values)), repeat=2):
        if p_values[i] <= p_values[j]:
            assert adjusted[i] <= adjusted[j]


def test_small_samples_with_ties_get_the_exact_permutation_p_not_the_normal_approximation():
    # Pooled midranks 1, 2.5, 2.5, 4.5, 4.5, 6.5, 6.5, 8; x holds 4.5, 6.5, 6.5, 8 (sum 25.5,
    # 7.5 above its null mean 18). Of the C(8, 4) = 70 splits, 4 lie as far from 18 or
    # further (the sums 25.5 and 10.5, twice each): p = 4/70 = .057, where the normal
    # approximation said .040.
    x = [4, 4.33, 4.33, 5]
    y = [2.33, 3.33, 3.33, 4]
    result = mann_whitney(x, y)
    assert result.p_value == pytest.approx(4 / 70)
    assert result.method == "permutation (exact enumeration)"
    assert result.u == 15.5
    asymptotic = mann_whitney(x, y, method="asymptotic")
    assert asymptotic.p_value == pytest.approx(0.0396087, abs=1e-6)
    assert asymptotic.method == "normal approximation"


def test_small_samples_without_ties_get_the_exact_distribution_of_u():
    result = mann_whitney([1.5, 2.5, 9.0, 11.0, 12.0], [3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    expected = stats.mannwhitneyu(
        [1.5, 2.5, 9.0, 11.0, 12.0], [3.0, 4.0, 5.0, 6.0, 7.0, 8.0], method="exact"
    )
    assert result.p_value == pytest.approx(expected.pvalue)
    assert result.method == "exact"


def test_one_sided_exact_permutation_p_counts_one_tail():
    # Rank sums of x at least 25.5: {4.5, 6.5, 6.5, 8} with either 4.5: 2 of 70 splits.
    result = mann_whitney([4, 4.33, 4.33, 5], [2.33, 3.33, 3.33, 4], alternative="greater")
    assert result.p_value == pytest.approx(2 / 70)


def test_a_small_sample_beside_a_large_one_gets_a_seeded_monte_carlo_permutation_p():
    # 3 beside 120 values: C(123, 3) = 302,621 splits, more than are enumerated, and a sample
    # of 3 is too small for the normal approximation.
    rng = np.random.default_rng(5)
    x = [3.0, 4.0, 4.0]
    y = list(rng.integers(1, 6, size=120).astype(float))
    result = mann_whitney(x, y)
    assert result.method == "permutation (Monte Carlo, 20,000 random splits, seed 0)"
    assert mann_whitney(x, y).p_value == result.p_value
    exact = mann_whitney(x, y, method="exact")
    assert exact.method == "permutation (exact enumeration)"
    assert result.p_value == pytest.approx(exact.p_value, abs=0.01)


def test_large_samples_get_the_normal_approximation_with_tie_and_continuity_correction():
    rng = np.random.default_rng(3)
    x = rng.integers(1, 6, size=25).astype(float)
    y = rng.integers(1, 6, size=30).astype(float)
    result = mann_whitney(x, y)
    assert result.method == "normal approximation"
    assert result.p_value == pytest.approx(stats.mannwhitneyu(x, y, method="asymptotic").pvalue)
