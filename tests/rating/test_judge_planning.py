"""The judge planner: stories needed to pin a judge's κ against the humans."""

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from cyoa.rating.judges.planning import agreement_table, plan_kappa, realised_width


@pytest.mark.parametrize(
    ("kappa", "prevalence", "judge"), [(0.4, 0.3, 0.3), (0.7, 0.5, 0.45), (0.2, 0.1, 0.2)]
)
def test_the_table_has_the_assumed_kappa_and_margins(kappa, prevalence, judge):
    table = agreement_table(kappa, prevalence, judge)
    assert cohens_kappa(table * 1000).kappa == pytest.approx(kappa)
    assert table.sum(axis=0)[1] == pytest.approx(prevalence)
    assert table.sum(axis=1)[1] == pytest.approx(judge)


@pytest.mark.parametrize(("kappa", "prevalence"), [(0.4, 0.3), (0.8, 0.5), (0.1, 0.2)])
def test_the_variance_of_kappa_is_statsmodels_fleiss_cohen_everitt_variance(kappa, prevalence):
    plan = plan_kappa(kappa, prevalence)
    n = 500
    expected = cohens_kappa(np.array(plan.table) * n).var_kappa * n
    assert plan.unit_variance == pytest.approx(expected, rel=1e-9)


def test_the_stories_needed_give_the_width_asked_for():
    plan = plan_kappa(0.4, 0.3, 0.2)
    # n = ⌈(2 × 1.96)² × 0.98629 / 0.2²⌉ = 379 stories.
    assert plan.stories == 379
    assert 2 * 1.959964 * np.sqrt(plan.unit_variance / plan.stories) <= 0.2


def test_cyoa_s_bootstrap_interval_at_the_planned_stories_has_the_planned_width():
    plan = plan_kappa(0.4, 0.3, 0.2)
    width, error = realised_width(plan, studies=30, bootstrap=300, seed=1)
    assert width == pytest.approx(0.2, abs=0.01)
    assert error < 0.005


def test_a_narrower_interval_needs_about_four_times_the_stories_for_half_the_width():
    assert plan_kappa(0.5, 0.4, 0.1).stories / plan_kappa(0.5, 0.4, 0.2).stories == pytest.approx(
        4, rel=0.01
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: plan_kappa(0.4, 1.2), "strictly between 0 and 1"),
        (lambda: plan_kappa(0.95, 0.1, judge_prevalence=0.5), "choose a κ nearer 0"),
        (lambda: plan_kappa(0.4, 0.3, width=0), "width"),
    ],
)
def test_impossible_assumptions_are_refused_with_a_sentence(call, message):
    with pytest.raises(ValueError, match=message):
        call()
