"""The rating planner: power of the mixed model's between-source test over stories × raters."""

import numpy as np
import pytest
from scipy import stats
from threadpoolctl import threadpool_limits

from cyoa.rating.analysis.mixed import source_model
from cyoa.rating.planning import (
    RatingAssumptions,
    estimate_pilot,
    plan_rating,
    planned_layout,
    planned_power,
    simulate_study,
    simulated_power,
)
from cyoa.research.planning import Options, make_plan

TRUTH = RatingAssumptions(difference=0.4, story_sd=0.5, rater_sd=0.4, residual_sd=0.8)


def test_a_planned_layout_gives_each_story_its_raters_and_each_rater_their_stories():
    layout = planned_layout(6, 3, 2)
    assert layout.groupby("story_id").size().eq(3).all()
    assert layout.groupby("rater_id").size().eq(2).all()
    assert layout.groupby("source")["story_id"].nunique().tolist() == [6, 6]
    assert not layout.duplicated(["story_id", "rater_id"]).any()


def test_with_one_rater_per_story_a_design_is_refused_with_a_sentence():
    with pytest.raises(ValueError, match="at least 2 raters per story"):
        planned_layout(10, 1, 2)


def test_with_no_rater_effect_and_balanced_stories_the_power_is_the_noncentral_t_s():
    # Every story rated by k raters, no rater variance: the source means are means of story
    # means with variance σ²_story + σ²_residual/k, the test a two-sample t with 2n − 2 df.
    n, k = 15, 3
    assumptions = RatingAssumptions(0.5, 0.5, 0.0, 0.8)
    se = np.sqrt(2 * (0.5**2 + 0.8**2 / k) / n)
    df = 2 * n - 2
    critical = stats.t.ppf(0.975, df)
    shift = 0.5 / se
    expected = stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift)
    cell = planned_power(assumptions, n, k, 2)
    assert cell.power == pytest.approx(expected, abs=0.01)


def test_the_pilot_s_variance_components_and_difference_come_from_the_rating_model():
    pilot = simulate_study(TRUTH, 60, 3, 2, seed=1)
    estimate = estimate_pilot(pilot)
    with threadpool_limits(1):
        model = source_model(pilot, "score")
    assert estimate.story_sd == pytest.approx(np.sqrt(model.components.story))
    assert estimate.difference == pytest.approx(abs(model.differences[0].difference))


def test_a_pilot_of_one_source_gives_its_variance_components_and_no_difference():
    pilot = simulate_study(TRUTH, 60, 3, 10, seed=1)  # each rater rates 5 stories of A
    own = pilot[pilot["source"] == "A"]
    estimate = estimate_pilot(own)
    with threadpool_limits(1):
        model = source_model(own, "score")
    assert estimate.sources == ("A",) and estimate.difference is None
    assert estimate.story_sd == pytest.approx(np.sqrt(model.components.story))
    assert estimate.residual_sd == pytest.approx(np.sqrt(model.components.residual))


def test_the_plan_names_the_fewest_ratings_that_reach_the_target_power():
    plan = plan_rating(TRUTH, stories=(10, 20, 40, 80), raters_per_story=(2, 3, 5))
    reaching = [cell for cell in plan.cells if cell.power >= 0.8]
    fewest = min(2 * cell.stories * cell.raters_per_story for cell in reaching)
    assert 2 * plan.chosen.stories * plan.chosen.raters_per_story == fewest


def test_planned_power_from_a_pilot_is_the_power_realised_by_cyoa_s_own_analysis():
    pilot = simulate_study(TRUTH, 150, 3, 2, seed=2)
    assumptions = estimate_pilot(pilot)
    plan = plan_rating(
        RatingAssumptions(TRUTH.difference, assumptions.story_sd, assumptions.rater_sd,
                          assumptions.residual_sd),
        stories=(10, 15, 20, 25, 30, 40), raters_per_story=(3,), target=0.6,
    )  # fmt: skip
    chosen = plan.chosen
    realised = simulated_power(TRUTH, chosen.stories, chosen.raters_per_story, 2, 200, seed=3)
    assert realised.power == pytest.approx(chosen.power, abs=0.03)


def test_a_difference_of_dozens_of_standard_errors_has_power_one_not_nan():
    cell = planned_power(RatingAssumptions(1.2, 0.0, 0.1, 0.3), 40, 3, 2)
    assert cell.power == pytest.approx(1.0)


def test_a_pilot_whose_raters_rate_both_sources_gives_the_rater_by_source_sd_of_its_model():
    truth = RatingAssumptions(0.4, 0.5, 0.4, 0.8, rater_source_sd=0.5)
    pilot = simulate_study(truth, 60, 3, 10, seed=4)
    estimate = estimate_pilot(pilot)
    with threadpool_limits(1):
        model = source_model(pilot, "score")
    assert estimate.rater_source_sd == pytest.approx(np.sqrt(model.components.rater_source))
    assert 0.2 < estimate.rater_source_sd < 0.8


def test_a_typed_rater_by_source_sd_enters_the_rating_plan_and_lowers_its_power():
    typed = {"difference": 0.4, "story_sd": 0.5, "rater_sd": 0.4, "residual_sd": 0.8}
    plain = make_plan(None, None, "rating", typed, Options())
    record = make_plan(None, None, "rating", {**typed, "rater_source_sd": 0.3}, Options())
    assert record.inputs["rater_source_sd"] == {"value": 0.3, "source": "typed"}
    assert "rater × source 0.300" in record.text
    assert record.curve[-1]["power"] < plain.curve[-1]["power"]
