"""The betting confidence sequence and its anytime-valid p-value (cyoa.sequential), against the
numbers of the reference implementation, confseq 0.0.11 (Howard & Waudby-Smith, PyPI).

The expected values were printed by confseq 0.0.11's own ``confseq/betting.py`` (its pure
Python part, run from the sdist with ``numpy.float_`` aliased, since the package cannot be
installed on numpy 2): ``betting_cs(x, alpha=α, running_intersection=True)`` for the bounds
and ``betting_mart(x, m, alpha=α)`` for the capital at m."""

import math

import numpy as np
import pytest

from cyoa.sequential import confidence_sequence, hedged_capital

# Twenty writers' shares (five rounds each) in the order they finished.
SHARES = [0.8, 0.6, 1.0, 0.4, 0.8, 0.6, 0.2, 1.0, 0.8, 0.6,
          0.8, 1.0, 0.4, 0.6, 0.8, 0.6, 1.0, 0.8, 0.6, 0.8]  # fmt: skip
CONFSEQ_LOWS = [0.0, 0.0, 0.134, 0.166, 0.218, 0.252, 0.252, 0.291, 0.324, 0.342,
                0.368, 0.399, 0.399, 0.41, 0.428, 0.436, 0.458, 0.472, 0.478, 0.49]  # fmt: skip
CONFSEQ_HIGHS = [1.0, 1.0, 1.0, 1.0, 1.0, 0.954, 0.897, 0.897, 0.897, 0.886,
                 0.88, 0.88, 0.868, 0.856, 0.853, 0.843, 0.843, 0.843, 0.841, 0.84]  # fmt: skip
# confseq's running maximum of betting_mart(SHARES, 0.5) at looks 1, 3, 12 and 20.
CONFSEQ_CAPITAL_AT_HALF = {1: 0.65, 3: 1.0725, 12: 4.0414368369375016, 20: 15.954297149651184}


def test_the_sequence_is_confseqs_betting_cs_with_running_intersection():
    cs = confidence_sequence(SHARES)
    assert list(cs.lows) == pytest.approx(CONFSEQ_LOWS, abs=1e-12)
    assert list(cs.highs) == pytest.approx(CONFSEQ_HIGHS, abs=1e-12)
    assert (cs.n, cs.mean, cs.low, cs.high) == (20, pytest.approx(0.71), 0.49, 0.84)


def test_the_anytime_p_value_is_one_over_the_largest_capital_so_far():
    cs = confidence_sequence(SHARES)
    for look, capital in CONFSEQ_CAPITAL_AT_HALF.items():
        assert cs.p_values[look - 1] == pytest.approx(min(1.0, 1 / capital), rel=1e-12)
    assert cs.p_value == pytest.approx(0.06267903816883995, rel=1e-12)
    assert list(cs.p_values) == sorted(cs.p_values, reverse=True)


def test_another_level_and_mean_match_confseq_too():
    values = np.random.default_rng(7).beta(2, 5, size=200)
    cs = confidence_sequence(values, alpha=0.1, null=0.3)
    looks = [9, 49, 99, 199]
    assert [cs.lows[i] for i in looks] == pytest.approx([0.12, 0.22, 0.226, 0.24], abs=1e-12)
    assert [cs.highs[i] for i in looks] == pytest.approx([0.555, 0.366, 0.314, 0.292], abs=1e-12)
    capital = np.exp(hedged_capital(values, np.array([0.3]), 0.1)[0])
    expected = [0.7478085283936426, 0.7410811963036283, 3.3309137403485605, 8.957196864248916]
    assert list(capital[looks]) == pytest.approx(expected, rel=1e-10)


def test_the_p_value_crosses_alpha_when_the_null_leaves_the_sequence():
    values = [1.0, 0.8] * 30
    cs = confidence_sequence(values)
    crossed = next(i for i, p in enumerate(cs.p_values) if p <= 0.05)
    assert cs.lows[crossed] >= 0.5 - 1e-3 and cs.lows[crossed - 1] < 0.5
    assert cs.lows[-1] > 0.5 and cs.p_value < 0.05


def test_a_sequence_is_wider_than_the_fixed_sample_interval_at_the_same_n():
    values = np.random.default_rng(1).integers(0, 6, size=60) / 5
    cs = confidence_sequence(values)
    half_t = 2.0 * values.std(ddof=1) / math.sqrt(values.size)
    assert cs.high - cs.low > 2 * half_t


@pytest.mark.parametrize(
    "values, alpha, message",
    [([], 0.05, "at least one value"), ([0.5, 1.2], 0.05, "between 0 and 1"),
     ([0.5], 1.0, "strictly between")],
)  # fmt: skip
def test_bad_input_is_refused_with_a_sentence(values, alpha, message):
    with pytest.raises(ValueError, match=message):
        confidence_sequence(values, alpha=alpha)


def test_peeking_at_every_writer_keeps_the_false_positive_rate_under_alpha():
    """300 seeded null studies of 60 writers' shares (5 rounds, writer SD 0.5 on the
    log-odds), looked at after every writer: the anytime-valid p is ever ≤ .05 in at most 5%
    (bench/results/cowriting-sequential.md: 1.0% over 2,000 studies at 11 looks)."""
    rng = np.random.default_rng(11)
    ever = 0
    for _ in range(300):
        chance = 1 / (1 + np.exp(-rng.normal(0.0, 0.5, 60)))
        ever += min(confidence_sequence(rng.binomial(5, chance) / 5).p_values) <= 0.05
    assert ever / 300 <= 0.05
