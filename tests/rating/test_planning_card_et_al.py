"""Card et al. (2020)'s simulated power for Likert human evaluations, set beside CYOA's rating
planner.

Card, D., Henderson, P., Khandelwal, U., Jia, R., Mahowald, K. and Jurafsky, D. (2020). With
little power comes great responsibility. EMNLP 2020. Settings: ``simulate_power_params`` in
``notebooks_for_power_calculations/power_sim.R``; published power:
``data/human_eval/highvar_lowmer_lmer.csv``; both at github.com/dallascard/NLP-power-analysis,
commit a3f63b5efc1ef4f0dbbbbb69c33d0241d256e231.

Their design: ``workers`` workers each rate every one of ``items`` items under both models
(fully crossed, within item); the model is coded ±1 with coefficient ``diff``, so the two
models' means differ by 2·diff; random intercepts and model slopes for item and worker,
uncorrelated; a rating's residual SD σ. Each cell is 200 simulated studies, fitted by lme4 with
ML, and power is the share whose Wald t exceeds 1.96 (one-sided, normal critical value).

The mapping onto CYOA (see docs/analysis.md, "Card et al.'s power, reproduced"): an item's
output from one model is a CYOA story; every rater rates every story (``stories_per_rater`` =
all of them); CYOA's difference is 2·diff; the story SD is √2 × their item-slope SD (the
contrast then has their variance: two stories of an item differ by twice the item slope);
the rater SD is their worker intercept; the rater × source SD is √2 × their worker slope (a
worker's offsets under the two models differ by twice the slope, variance 4·slope², and a
rater's two cells by variance 2·σ²_rater×source). In a fully crossed design the rater
intercept cancels from the difference, so the intercepts' covariance, which the cell
component cannot make negative, does not enter.
"""

import math

import numpy as np
import pytest
from scipy import stats

from cyoa.rating.planning import RatingAssumptions, planned_power

# SDs from power_sim.R's calls (item.model, item.Intercept, worker.model, worker.Intercept, σ).
SETTINGS = {
    "high": {"item_slope": 0.14, "item": 0.04, "worker_slope": 0.11, "worker": 0.01, "sigma": 0.26},
    "low": {"item_slope": 0.13, "item": 0.01, "worker_slope": 0.04, "worker": 0.01, "sigma": 0.16},
}
SIMULATIONS = 200
# (setting, diff, items, workers, published power); the low-variance cells at power 1 are left out.
PUBLISHED = [
    ("high", 0.05, 50, 3, 0.235), ("high", 0.05, 50, 10, 0.24),
    ("high", 0.05, 100, 3, 0.27), ("high", 0.05, 100, 10, 0.315),
    ("high", 0.05, 500, 3, 0.27), ("high", 0.05, 500, 10, 0.34),
    ("high", 0.1, 50, 3, 0.44), ("high", 0.1, 50, 10, 0.7),
    ("high", 0.1, 100, 3, 0.555), ("high", 0.1, 100, 10, 0.795),
    ("high", 0.1, 500, 3, 0.545), ("high", 0.1, 500, 10, 0.87),
    ("high", 0.15, 50, 3, 0.69), ("high", 0.15, 50, 10, 0.955),
    ("high", 0.15, 100, 3, 0.75), ("high", 0.15, 100, 10, 0.98),
    ("high", 0.15, 500, 3, 0.75), ("high", 0.15, 500, 10, 0.995),
    ("high", 0.2, 50, 3, 0.89), ("high", 0.2, 50, 10, 0.995),
    ("high", 0.2, 100, 3, 0.885), ("high", 0.2, 100, 10, 1.0),
    ("high", 0.2, 500, 3, 0.92), ("high", 0.2, 500, 10, 1.0),
    ("low", 0.05, 50, 3, 0.455), ("low", 0.05, 50, 10, 0.575),
    ("low", 0.05, 100, 3, 0.6), ("low", 0.05, 100, 10, 0.835),
    ("low", 0.05, 500, 3, 0.665), ("low", 0.05, 500, 10, 0.95),
    ("low", 0.1, 50, 3, 0.94), ("low", 0.1, 50, 10, 0.985),
    ("low", 0.1, 100, 3, 0.945), ("low", 0.1, 500, 3, 0.975),
]  # fmt: skip


def _cyoa_cell(setting, diff, items, workers):
    """CYOA's planned power and SE for their design, mapped as the module docstring says."""
    s = SETTINGS[setting]
    assumptions = RatingAssumptions(
        2 * diff, math.sqrt(2) * s["item_slope"], s["worker"], s["sigma"],
        math.sqrt(2) * s["worker_slope"],
    )  # fmt: skip
    return planned_power(assumptions, items, workers, stories_per_rater=2 * items)


def _their_power(setting, diff, items, workers, draws=200_000):
    """The power of their test: CYOA's planned SE (worker slope included), and the ML Wald z
    of a balanced fully crossed design. There the worker part of the contrast's
    variance, Q = 4·slope²/W + 2σ²/(I·W), is estimated from the workers' mean square with
    W − 1 df divided by W (ML), so SE_ML² = SE² − Q + Q·χ²(W − 1)/W, independent of the
    estimate; the item part (hundreds of df) is taken as known and the estimate's truncation
    at zero is ignored. Power: P(estimate > 1.96·SE_ML), by Monte Carlo."""
    s = SETTINGS[setting]
    se2 = _cyoa_cell(setting, diff, items, workers).se ** 2
    q = 4 * s["worker_slope"] ** 2 / workers + 2 * s["sigma"] ** 2 / (items * workers)
    rng = np.random.default_rng(2020)
    estimate = 2 * diff + math.sqrt(se2) * rng.standard_normal(draws)
    se_ml = np.sqrt(se2 - q + q * rng.chisquare(workers - 1, draws) / workers)
    return float(np.mean(estimate > 1.96 * se_ml)), math.sqrt(se2)


def _monte_carlo_se(power):
    """Their Monte-Carlo SE: binomial, 200 studies (floored at p(1 − p) = 0.01 near 0 or 1)."""
    return math.sqrt(max(power * (1 - power), 0.01) / SIMULATIONS)


@pytest.mark.parametrize(("items", "workers"), [(50, 3), (100, 10), (500, 3)])
def test_cyoa_s_planned_se_for_their_crossed_design_is_their_model_s_worker_slope_included(
    items, workers
):
    s = SETTINGS["high"]
    theirs = 2 * math.sqrt(
        s["item_slope"] ** 2 / items
        + s["worker_slope"] ** 2 / workers
        + s["sigma"] ** 2 / (2 * items * workers)
    )
    assert _cyoa_cell("high", 0.1, items, workers).se == pytest.approx(theirs, rel=1e-9)


@pytest.mark.parametrize(("setting", "diff", "items", "workers", "published"), PUBLISHED)
def test_their_test_on_cyoa_s_planned_se_gives_each_published_power_within_its_monte_carlo_error(
    setting, diff, items, workers, published
):
    reproduced, _ = _their_power(setting, diff, items, workers)
    assert published == pytest.approx(reproduced, abs=3 * _monte_carlo_se(reproduced))


def test_their_three_worker_power_is_above_what_a_test_that_keeps_its_level_can_reach():
    # With 3 workers the ML estimate of the worker slope rests on 2 df and is on average 2/3
    # of the truth: their Wald z rejects too often, under the null and under the alternative.
    for setting, diff, items, workers, published in PUBLISHED:
        if setting == "high" and workers == 3 and diff <= 0.15:
            _, se = _their_power(setting, diff, items, workers)
            level_keeping = stats.norm.sf(1.96 - 2 * diff / se)
            assert published > level_keeping + 2 * _monte_carlo_se(published)
    null, _ = _their_power("high", 0.0, 100, 3)
    assert null > 0.08  # a one-sided 0.025 test


def test_where_raters_disagree_about_the_models_cyoa_s_planned_power_levels_off_with_items():
    # Their worker slope is the rater × source component: more items barely help, more
    # workers do, as in their published cells (0.795 at 100 items, 0.87 at 500, 10 workers).
    hundred, five_hundred = _cyoa_cell("high", 0.1, 100, 10), _cyoa_cell("high", 0.1, 500, 10)
    assert five_hundred.power - hundred.power < 0.05
    assert five_hundred.power < 0.8
    s = SETTINGS["high"]
    without = RatingAssumptions(0.2, math.sqrt(2) * s["item_slope"], s["worker"], s["sigma"])
    assert planned_power(without, 500, 10, stories_per_rater=1000).power > 0.99
    twenty = _cyoa_cell("high", 0.1, 500, 20)
    assert twenty.power > five_hundred.power + 0.1


def test_cyoa_s_planned_power_is_below_theirs_by_its_t_test_with_satterthwaite_df():
    # CYOA tests with t on the rater × source df (W − 1 = 9 here) where they use z and an ML
    # variance: at 500 items and 10 workers 0.72 against their 0.87.
    cell = _cyoa_cell("high", 0.1, 500, 10)
    assert 8 < cell.df < 12
    assert cell.power == pytest.approx(0.716, abs=0.005)
    assert _their_power("high", 0.1, 500, 10)[0] == pytest.approx(
        0.87, abs=3 * _monte_carlo_se(0.87)
    )
