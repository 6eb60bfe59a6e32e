"""Cliff's δ between two samples with its confidence interval (Cliff 1993; Feng & Cliff 2004),
checked against a hand-worked example and the R package effsize."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cyoa.stats import cliffs_delta, mann_whitney


def test_cliffs_delta_and_its_interval_by_hand():
    # x = 1, 2, 4; y = 3, 5. Dominance d_ij = sign(x_i − y_j): rows (−1, −1), (−1, −1),
    # (+1, −1); δ = −4/6 = −2/3. Row means −1, −1, 0; column means −1/3, −1.
    # Σ(d_i. − δ)² = 1/9 + 1/9 + 4/9 = 2/3; Σ(d_.j − δ)² = 1/9 + 1/9 = 2/9;
    # ΣΣ(d_ij − δ)² = 5 · 1/9 + 25/9 = 10/3.
    # s² = (n_y²·2/3 + n_x²·2/9 − 10/3) / (n_x·n_y·(n_x − 1)(n_y − 1)) = (4/3)/12 = 1/9,
    # not below its floor (1 − δ²)/(n_x·n_y − 1) = 1/9. t = t(.975, 3) = 3.182446.
    # Interval (δ − δ³ ± t·s·√((1 − δ²)² + t²s²)) / (1 − δ² + t²s²) = (−0.370370 ∓ 1.270315)
    # / 1.680885 = [−0.976082, 0.535397].
    result = cliffs_delta([1, 2, 4], [3, 5])
    assert result.delta == pytest.approx(-2 / 3)
    assert result.variance == pytest.approx(1 / 9)
    assert result.ci_low == pytest.approx(-0.976082, abs=1e-6)
    assert result.ci_high == pytest.approx(0.535397, abs=1e-6)
    assert (result.n_x, result.n_y, result.confidence) == (3, 2, 0.95)


def test_cliffs_delta_matches_the_r_package_effsize():
    # effsize's example (Hogarty & Kromrey 1999 data), cliff.delta(treatment, control) with its
    # defaults (unbiased variance, Student t): delta estimate −0.25, 95 percent confidence
    # interval −0.7265846 to 0.3890062.
    treatment = [10, 10, 20, 20, 20, 30, 30, 30, 40, 50]
    control = [10, 20, 30, 40, 40, 50]
    result = cliffs_delta(treatment, control)
    assert result.delta == -0.25
    assert result.ci_low == pytest.approx(-0.7265846, abs=1e-7)
    assert result.ci_high == pytest.approx(0.3890062, abs=1e-7)
    # Its "consistent" variance from the three terms effsize's source lists for these data,
    # s²_i. = 0.2669753, s²_.j = 0.447, s²_ij = 1.0055556:
    # ((6 − 1)·0.2669753 + (10 − 1)·0.447 + 1.0055556) / 60 = 0.1060572.
    consistent = cliffs_delta(treatment, control, variance="consistent", critical="normal")
    assert consistent.variance == pytest.approx(0.1060572, abs=1e-7)


def test_disjoint_samples_get_an_interval_that_reaches_the_bound_they_share():
    # δ = 1: the variance is taken at δ = (n_x·n_y − 1)/(n_x·n_y) as in effsize, so the
    # interval has a width, and its upper end is 1.
    result = cliffs_delta([5, 6, 7, 8, 9], [1, 2, 3, 4])
    assert result.delta == 1.0
    assert result.ci_high == 1.0
    assert 0 < result.ci_low < 1
    assert cliffs_delta([1, 2], [5, 6, 7]).ci_low == -1.0


def test_one_value_in_a_sample_gives_delta_without_an_interval():
    result = cliffs_delta([3.0], [1.0, 2.0, 4.0])
    assert result.delta == pytest.approx(1 / 3)
    assert result.ci_low is None and result.ci_high is None


@given(
    st.lists(st.integers(0, 6), min_size=2, max_size=12),
    st.lists(st.integers(0, 6), min_size=2, max_size=12),
)
def test_cliffs_delta_is_the_rank_biserial_r_and_its_interval_holds_it(x, y):
    result = cliffs_delta(x, y)
    assert result.delta == pytest.approx(mann_whitney(x, y).rank_biserial)
    assert -1 <= result.ci_low <= result.delta <= result.ci_high <= 1


def test_cliffs_delta_interval_covers_the_truth_about_95_percent_of_the_time():
    # Two normal samples of 15 shifted by 0.5 sd: true δ = 2·Φ(0.5/√2) − 1 = 0.276326.
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(400):
        result = cliffs_delta(rng.normal(0.5, 1, 15), rng.normal(0, 1, 15))
        covered += result.ci_low <= 0.276326 <= result.ci_high
    assert 0.92 <= covered / 400 <= 0.98
