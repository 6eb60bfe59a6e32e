"""Writers as the unit: the t interval of the writers' shares (the headline of CYOA's own
analysis) and the within-writer difference of a measure between two systems (its edit test)."""

import math

import pytest
from scipy import stats

from cyoa.stats import clustered_preference, writer_difference


def test_the_headline_interval_is_the_t_interval_of_the_writers_shares():
    # Shares 0.6, 0.4, 1.0, 0.8: mean 0.7, sd sqrt(.2/3) = 0.2582, se 0.1291;
    # t(.975, 3) = 3.1824 (t table), so 0.7 ± 0.4109: 0.2891 – 1.1109, cut to 1 (a share).
    result = clustered_preference([(3, 5), (2, 5), (5, 5), (4, 5)])
    assert result.t_low == pytest.approx(0.7 - 3.1824 * 0.12910, abs=1e-4)
    assert result.t_high == 1.0
    shares = [0.6, 0.4, 0.6, 0.8, 0.4, 0.6, 0.8, 0.6]
    result = clustered_preference([(round(5 * s), 5) for s in shares])
    scipy_ci = stats.ttest_1samp(shares, 0.5).confidence_interval()
    assert (result.t_low, result.t_high) == pytest.approx((scipy_ci.low, scipy_ci.high))


def test_the_headline_interval_excludes_half_exactly_when_the_test_rejects():
    writers = [(4, 5)] * 9 + [(1, 5)] * 3 + [(3, 5)] * 4
    result = clustered_preference(writers, confidence=0.95)
    assert (result.p_value < 0.05) == (result.t_low > 0.5)
    assert result.t_low < result.mean_writer_share < result.t_high


def test_writers_without_spread_have_no_headline_interval():
    result = clustered_preference([(3, 5), (3, 5)])
    assert math.isnan(result.t_low) and math.isnan(result.t_high)


def test_the_within_writer_difference_hand_computed():
    # Differences 15 − 5 = 10, 4 − 4 = 0, 8 − 2 = 6; the third writer took x only.
    # Mean 16/3 = 5.333, sd sqrt(76/3) = 5.0332, se 2.9059, t = 1.8353 on 2 df.
    per_writer = [([10, 20], [5]), ([4], [6, 2]), ([3], []), ([8], [2])]
    result = writer_difference(per_writer)
    assert (result.writers, result.left_out, result.df) == (3, 1, 2)
    assert result.difference == pytest.approx(16 / 3)
    assert result.t == pytest.approx(1.8353, abs=1e-4)
    assert result.dz == pytest.approx((16 / 3) / math.sqrt(76 / 3))
    reference = stats.ttest_1samp([10, 0, 6], 0.0)
    assert result.p_value == pytest.approx(reference.pvalue)
    ci = reference.confidence_interval()
    assert (result.ci_low, result.ci_high) == pytest.approx((ci.low, ci.high))


def test_the_one_sided_within_writer_test_halves_the_p_in_its_direction():
    per_writer = [([10, 20], [5]), ([4], [6, 2]), ([8], [2])]
    two_sided = writer_difference(per_writer).p_value
    assert writer_difference(per_writer, "greater").p_value == pytest.approx(two_sided / 2)
    assert writer_difference(per_writer, "less").p_value == pytest.approx(1 - two_sided / 2)


def test_the_within_writer_difference_is_paired_not_pooled():
    # Each writer edits x and y alike; heavy editors take x more often. Pooled, x looks
    # edited far more (the Mann–Whitney's view); within writers there is no difference.
    per_writer = [([30, 30, 30], [30]), ([30, 30], [30]), ([2], [2, 2, 2]), ([2], [2, 2])]
    result = writer_difference(per_writer)
    assert result.difference == 0 and math.isnan(result.p_value)
    assert stats.mannwhitneyu([30] * 5 + [2] * 2, [30] * 2 + [2] * 5).pvalue < 0.2


def test_fewer_than_two_writers_with_both_systems_give_no_test():
    result = writer_difference([([1.0], [2.0]), ([3.0], [])])
    assert (result.writers, result.left_out, result.difference) == (1, 1, -1.0)
    assert math.isnan(result.p_value) and math.isnan(result.ci_low)


def test_a_nan_value_is_refused_with_a_sentence():
    with pytest.raises(ValueError, match="drop missing values"):
        writer_difference([([math.nan], [1.0])])
