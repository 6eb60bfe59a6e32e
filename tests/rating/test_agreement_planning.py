"""The α-precision planner: the expected width of α's bootstrap interval over designs."""

import krippendorff
import numpy as np
import pytest

from cyoa.rating.agreement_planning import (
    alpha_of_sums,
    binary_assumptions,
    expected_width,
    interval_assumptions,
    plan_alpha_width,
    simulate_ratings,
    unit_sums,
)
from cyoa.rating.analysis.agreement import krippendorff_alpha

LIKERT = interval_assumptions(0.5, rater_sd=0.5, residual_sd=1.0)
YES_NO = binary_assumptions(0.4, 0.3)


@pytest.mark.parametrize(("assumptions", "level"), [(LIKERT, "interval"), (YES_NO, "nominal")])
def test_alpha_from_unit_sums_is_the_krippendorff_package_s(assumptions, level):
    ratings = simulate_ratings(assumptions, 25, 3, np.random.default_rng(3))[0]
    ours = alpha_of_sums(unit_sums(ratings, assumptions.binary).sum(axis=0), assumptions.binary)
    theirs = krippendorff.alpha(reliability_data=ratings.T, level_of_measurement=level)
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_an_assumed_agreement_level_sets_the_story_variance_share():
    assert LIKERT.expected_alpha == pytest.approx(0.5)
    assert LIKERT.story_sd == pytest.approx(np.sqrt(0.5**2 + 1.0))


def test_simulated_studies_have_the_assumed_alpha_on_average():
    for assumptions in (LIKERT, YES_NO):
        cell = expected_width(assumptions, 60, 3, studies=200, bootstrap=20, seed=1)
        assert cell.mean_alpha == pytest.approx(assumptions.expected_alpha, abs=0.03)


def test_the_planned_width_is_the_width_cyoa_s_own_alpha_interval_has():
    # CYOA's krippendorff_alpha on 16 seeded yes/no studies of 40 stories × 3 raters: its
    # mean interval width agrees with the planner's within 0.04 (about two Monte-Carlo errors
    # of the 16 studies' mean).
    planned = expected_width(YES_NO, 40, 3, studies=200, bootstrap=500, seed=2)
    rng = np.random.default_rng(9)
    widths = []
    for study in range(16):
        ratings = simulate_ratings(YES_NO, 40, 3, rng)[0]
        alpha = krippendorff_alpha(
            ratings.tolist(), "nominal", [0.0, 1.0], bootstrap=500, seed=study
        )
        widths.append(alpha.ci_high - alpha.ci_low)
    assert np.mean(widths) == pytest.approx(planned.width, abs=0.04)


def test_the_planned_interval_width_matches_cyoa_s_for_continuous_ratings_too():
    planned = expected_width(LIKERT, 30, 3, studies=200, bootstrap=300, seed=2)
    rng = np.random.default_rng(4)
    widths = []
    for study in range(6):
        ratings = simulate_ratings(LIKERT, 30, 3, rng)[0]
        alpha = krippendorff_alpha(ratings.tolist(), "interval", bootstrap=200, seed=study)
        widths.append(alpha.ci_high - alpha.ci_low)
    assert np.mean(widths) == pytest.approx(planned.width, abs=0.06)


def test_the_width_shrinks_as_one_over_the_square_root_of_the_stories():
    small = expected_width(LIKERT, 50, 3, studies=100, seed=5)
    large = expected_width(LIKERT, 200, 3, studies=100, seed=5)
    assert small.width / large.width == pytest.approx(2.0, rel=0.12)


def test_the_chosen_design_is_the_cheapest_that_reaches_the_width():
    plan = plan_alpha_width(YES_NO, width=0.3, stories=(20, 60, 120), raters_per_story=(2, 4))
    reaching = [cell for cell in plan.cells if cell.width <= 0.3]
    assert plan.chosen == min(reaching, key=lambda c: (c.ratings, c.raters_per_story))
    assert all(cell.width > 0.3 for cell in plan.cells if cell.ratings < plan.chosen.ratings)


def test_a_width_no_design_reaches_leaves_the_plan_without_a_choice():
    plan = plan_alpha_width(YES_NO, width=0.01, stories=(10, 20), raters_per_story=(2,))
    assert plan.chosen is None


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: interval_assumptions(1.2), "lies in"),
        (lambda: binary_assumptions(0.4, 1.0), "prevalence"),
        (lambda: expected_width(LIKERT, 10, 1), "2 raters per story"),
        (lambda: plan_alpha_width(LIKERT, width=0), "width"),
    ],
)
def test_impossible_assumptions_are_refused_with_a_sentence(make, message):
    with pytest.raises(ValueError, match=message):
        make()
