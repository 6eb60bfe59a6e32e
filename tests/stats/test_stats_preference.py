"""Q1 preference tests: binomial test, Clopper–Pearson, position bias, writer clustering."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cyoa.stats import clustered_preference, position_bias, preference

# --- the paper's numbers -------------------------------------------------------------------


def test_paper_experiment_one_345_of_525():
    # Clark & Smith (2021): the model was chosen in 345 of 525 rounds (65.7%).
    result = preference(345, 525)
    assert result.share == pytest.approx(0.657, abs=5e-4)
    assert result.alternative == "two-sided"
    assert result.p_value == pytest.approx(5.325e-13, rel=1e-3)
    assert result.ci_low == pytest.approx(0.6148, abs=1e-4)
    assert result.ci_high == pytest.approx(0.6977, abs=1e-4)


def test_paper_experiment_two_275_of_515_one_and_two_sided():
    # 275 of 515 (53.4%): p = 0.067 one-sided, 0.134 two-sided.
    one_sided = preference(275, 515, alternative="greater")
    two_sided = preference(275, 515)
    assert one_sided.share == pytest.approx(0.534, abs=5e-4)
    assert round(one_sided.p_value, 3) == 0.067
    assert round(two_sided.p_value, 3) == 0.134
    assert one_sided.alternative == "greater"
    # Under p = 0.5 the binomial is symmetric: two-sided is exactly twice one-sided.
    assert two_sided.p_value == pytest.approx(2 * one_sided.p_value)
    # The interval is two-sided whatever the test's alternative.
    assert (one_sided.ci_low, one_sided.ci_high) == (two_sided.ci_low, two_sided.ci_high)


# --- hand-computed -------------------------------------------------------------------------


def test_binomial_test_hand_computed():
    # 9 of 10: P(X >= 9) = (C(10,9) + C(10,10)) / 2^10 = 11/1024.
    assert preference(9, 10, "greater").p_value == pytest.approx(11 / 1024)
    # two-sided: outcomes as unlikely as 9 are 0, 1, 9, 10 -> 22/1024.
    assert preference(9, 10).p_value == pytest.approx(22 / 1024)
    # "less": P(X <= 9) = 1 - 1/1024.
    assert preference(9, 10, "less").p_value == pytest.approx(1023 / 1024)


def test_clopper_pearson_hand_computed():
    # 10 of 10: lower limit solves p^10 = 0.025 -> 0.025^(1/10); upper limit is 1.
    result = preference(10, 10)
    assert result.ci_low == pytest.approx(0.025**0.1)
    assert result.ci_high == 1.0
    # 9 of 10: upper limit solves P(X <= 9 | p) = 1 - p^10 = 0.025 -> 0.975^(1/10).
    assert preference(9, 10).ci_high == pytest.approx(0.975**0.1)


def test_preference_refuses_impossible_counts():
    with pytest.raises(ValueError, match="chosen_count <= total"):
        preference(6, 5)
    with pytest.raises(ValueError, match="total >= 1"):
        preference(0, 0)
    with pytest.raises(ValueError, match="alternative"):
        preference(1, 2, alternative="bigger")


def test_position_bias_is_the_binomial_test_on_slot_one():
    # Slot 1 chosen in 60 of 100 rounds: same test as a preference of 60 / 100.
    assert position_bias(60, 100) == preference(60, 100)


# --- writer-clustered analysis -------------------------------------------------------------


def test_writer_t_test_hand_computed():
    # Shares 3/5, 2/5, 5/5, 4/5 = 0.6, 0.4, 1.0, 0.8; mean 0.7.
    # Squared deviations .01 + .09 + .09 + .01 = .2; variance .2/3; sd = 0.2582;
    # se = sd/2 = 0.1291; t = (0.7 - 0.5)/0.1291 = sqrt(2.4) = 1.5492 on 3 df.
    result = clustered_preference([(3, 5), (2, 5), (5, 5), (4, 5)], alternative="greater")
    assert result.mean_writer_share == pytest.approx(0.7)
    assert result.share == pytest.approx(14 / 20)
    assert result.t_statistic == pytest.approx(math.sqrt(2.4))
    assert result.df == 3
    # P(T_3 > 1.5492) = 0.1096 (t table).
    assert result.p_value == pytest.approx(0.1096, abs=1e-4)


def test_cluster_bootstrap_hand_computed():
    # Two writers, 5/5 and 0/5. A replicate draws 2 writers: both the first (share 1, prob
    # 1/4), one of each (0.5, prob 1/2), or both the second (0, prob 1/4). The 2.5% and 97.5%
    # quantiles of 10,000 replicates are therefore 0 and 1.
    result = clustered_preference([(5, 5), (0, 5)], seed=1)
    assert (result.bootstrap_low, result.bootstrap_high) == (0.0, 1.0)
    assert result.resamples == 10_000
    # Writer shares 1 and 0: mean 0.5, t = 0, p = 1.
    assert result.t_statistic == 0.0
    assert result.p_value == pytest.approx(1.0)


def test_cluster_bootstrap_is_reproducible_and_seeded():
    writers = [(3, 5), (2, 5), (5, 5), (4, 5), (1, 5), (3, 5)]
    first = clustered_preference(writers, seed=7)
    assert clustered_preference(writers, seed=7) == first
    assert clustered_preference(writers, seed=8) != first


def test_writers_without_spread_make_the_t_test_undefined():
    result = clustered_preference([(3, 5), (3, 5), (3, 5)])
    assert math.isnan(result.t_statistic) and math.isnan(result.p_value)
    assert (result.bootstrap_low, result.bootstrap_high) == (0.6, 0.6)


def test_clustered_preference_needs_two_writers_with_rounds():
    with pytest.raises(ValueError, match="at least two writers"):
        clustered_preference([(3, 5)])
    with pytest.raises(ValueError, match="rounds >= 1"):
        clustered_preference([(3, 5), (0, 0)])


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.integers(min_value=1, max_value=8).flatmap(
            lambda rounds: st.tuples(st.integers(min_value=0, max_value=rounds), st.just(rounds))
        ),
        min_size=2,
        max_size=30,
    )
)
def test_bootstrap_interval_is_within_the_writers_range(writers):
    result = clustered_preference(writers, resamples=200)
    shares = [chosen / rounds for chosen, rounds in writers]
    assert min(shares) - 1e-12 <= result.bootstrap_low <= result.bootstrap_high
    assert result.bootstrap_high <= max(shares) + 1e-12
