"""The FEI planner: readers per question, from the exact binomial moments of the entropy."""

import numpy as np
import pytest

from cyoa.rating.fei_planning import entropy_moments, plan_readers, simulated_power


def test_a_fair_question_read_by_three_readers_scores_0_69_bits_on_average():
    # x true of 3: P = 1/8, 3/8, 3/8, 1/8; H(1/3) = H(2/3) = 0.9183 bits, so E[H] = 0.75 × 0.9183.
    mean, _ = entropy_moments(0.5, 3)
    assert mean[0] == pytest.approx(0.75 * 0.918296, abs=1e-6)
    assert round(float(mean[0]), 2) == 0.69


def test_the_entropy_s_bias_shrinks_as_readers_are_added():
    biases = [1 - entropy_moments(0.5, m)[0][0] for m in (2, 5, 15)]
    assert biases[0] > biases[1] > biases[2] > 0


def test_the_exact_moments_are_those_of_simulated_readers():
    rng = np.random.default_rng(0)
    x = rng.binomial(6, 0.3, 200_000) / 6
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.nan_to_num(-x * np.log2(x) - (1 - x) * np.log2(1 - x))
    mean, var = entropy_moments(0.3, 6)
    assert mean[0] == pytest.approx(h.mean(), abs=0.003)
    assert var[0] == pytest.approx(h.var(), rel=0.02)


def test_two_sources_that_do_not_differ_are_told_apart_about_alpha_of_the_time():
    power, low, high = simulated_power(([0.3], [0.3]), 5, 30, 4, simulations=1000, seed=1)
    assert low <= 0.05 <= high or abs(power - 0.05) < 0.02


def test_the_chosen_readers_are_the_fewest_within_tolerance_reaching_the_power():
    plan = plan_readers(([0.1], [0.35]), 20, 5, simulations=200)
    fits = [c.readers for c in plan.cells if max(map(abs, c.bias)) <= 0.1 and c.power >= 0.8]
    assert plan.chosen is not None and plan.chosen.readers == min(fits)
    assert plan.true[0] < plan.true[1]


def test_a_source_s_spread_of_entropy_falls_with_more_questions():
    few = plan_readers(([0.2], [0.4]), 10, 2, readers=(3,), simulations=50)
    many = plan_readers(([0.2], [0.4]), 40, 2, readers=(3,), simulations=50)
    assert many.cells[0].sd[0] == pytest.approx(few.cells[0].sd[0] / 2)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: entropy_moments(1.5, 3), "lies in"),
        (lambda: plan_readers(([0.2], [0.4]), 1, 3), "at least 2 stories"),
        (lambda: plan_readers(([0.2], [0.4]), 10, 3, tolerance=2), "tolerance"),
    ],
)
def test_impossible_plans_are_refused_with_a_sentence(call, message):
    with pytest.raises(ValueError, match=message):
        call()
