"""The co-writing planner: power of CYOA's preference tests over writers × rounds."""

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from cyoa.cowriting.planning import (
    binomial_p_values,
    detectable_preference,
    estimate_pilot,
    plan_cowriting,
    simulate_power,
)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_the_planner_s_binomial_p_values_are_scipy_s_binomtest(alternative):
    for n in (1, 7, 30):
        expected = [stats.binomtest(k, n, 0.5, alternative).pvalue for k in range(n + 1)]
        assert binomial_p_values(n, alternative) == pytest.approx(expected, rel=1e-9)


def _exact_power(n, p, alpha):
    rejects = [k for k in range(n + 1) if stats.binomtest(k, n, 0.5).pvalue <= alpha]
    return float(stats.binom.pmf(rejects, n, p).sum())


@pytest.mark.parametrize(("writers", "rounds", "p"), [(10, 10, 0.6), (20, 10, 0.6), (8, 5, 0.7)])
def test_without_writer_spread_the_binomial_test_s_power_is_the_exact_binomial_power(
    writers, rounds, p
):
    simulated = simulate_power(writers, rounds, p, 0.0, "binomial", simulations=20_000, seed=1)
    assert simulated.power == pytest.approx(_exact_power(writers * rounds, p, 0.05), abs=0.01)


def test_without_writer_spread_a_large_study_s_power_matches_statsmodels_normal_formula():
    # Where the binomial is close to normal: at 400 choices the exact test's discreteness
    # still costs 0.03 of power against the formula, at 1,600 under 0.005.
    n, p = 1600, 0.535
    effect = proportion_effectsize(p, 0.5)
    normal = NormalIndPower().power(effect, nobs1=n, alpha=0.05, ratio=0)
    simulated = simulate_power(40, 40, p, 0.0, "binomial", simulations=40_000, seed=2)
    assert simulated.power == pytest.approx(normal, abs=0.01)


def test_a_simulated_power_carries_a_monte_carlo_interval_around_it():
    cell = simulate_power(10, 10, 0.6, 0.5, "writers", simulations=2000, seed=0)
    assert cell.low < cell.power < cell.high
    assert cell.high - cell.low < 0.05


def test_under_the_null_each_test_rejects_about_alpha_of_the_time_when_writers_agree():
    for test in ("binomial", "writers"):
        cell = simulate_power(20, 10, 0.5, 0.0, test, simulations=20_000, seed=3)
        assert cell.power <= 0.05 + 0.006


def test_writer_spread_makes_the_binomial_test_reject_a_true_null_too_often():
    cell = simulate_power(20, 10, 0.5, 1.0, "binomial", simulations=20_000, seed=4)
    assert cell.power > 0.10


def test_the_pilot_s_writer_spread_is_recovered_from_the_writers_choice_shares():
    rng = np.random.default_rng(5)
    writers, rounds, sd, intercept = 4000, 10, 0.8, 0.5
    chance = 1 / (1 + np.exp(-(intercept + rng.normal(0, sd, writers))))
    chosen = rng.binomial(rounds, chance)
    estimate = estimate_pilot([(int(c), rounds) for c in chosen])
    assert estimate.writer_sd == pytest.approx(sd, abs=0.08)
    assert estimate.preference == pytest.approx(chosen.sum() / (writers * rounds))


def test_writers_who_all_chose_alike_give_no_spread():
    estimate = estimate_pilot([(5, 10), (5, 10), (5, 10)])
    assert estimate.writer_sd == 0.0


def test_the_plan_names_the_fewest_choices_that_reach_the_target_power():
    plan = plan_cowriting(
        0.65, 0.0, writers=(5, 10, 20, 40), rounds=(5, 10), test="binomial", simulations=2000
    )
    reaching = [cell for cell in plan.cells if cell.power >= 0.8]
    assert plan.chosen == min(reaching, key=lambda cell: (cell.writers * cell.rounds, cell.writers))
    assert plan.chosen.writers * plan.chosen.rounds <= 100


def test_the_plan_searches_writer_counts_between_the_grid_s_steps_to_one_writer():
    plan = plan_cowriting(0.6, 0.5, writers=(40, 60), rounds=(5,), simulations=2000)
    chosen = plan.chosen
    assert 40 < chosen.writers < 60
    one_fewer = next(cell for cell in plan.cells if cell.writers == chosen.writers - 1)
    assert one_fewer.power < plan.target <= chosen.power
    assert [cell.writers for cell in plan.cells] == sorted(cell.writers for cell in plan.cells)
    # Bisection: about log2(20) cells between 40 and 60, not all nineteen.
    assert len(plan.cells) <= 2 + 5


def test_a_plan_that_no_cell_can_reach_says_so_with_no_chosen_design():
    plan = plan_cowriting(0.52, 0.0, writers=(5,), rounds=(5,), simulations=500)
    assert plan.chosen is None


def test_the_smallest_detectable_preference_of_ten_writers_by_ten_rounds_is_about_0_64():
    found = detectable_preference(10, 10, 0.0, test="binomial", simulations=4000)
    assert 0.63 <= found <= 0.66
