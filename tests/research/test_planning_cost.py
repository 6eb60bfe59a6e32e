"""The cost of a planned study: pay, the platform's fee, and recruits for exclusions."""

import pytest

from cyoa.planning_cost import study_cost


def test_forty_writers_for_thirty_minutes_at_twelve_an_hour_with_a_third_fee_cost_320():
    cost = study_cost(40, 30, 12, fee_rate=1 / 3)
    assert cost.recruit == 40
    assert cost.pay == pytest.approx(240)
    assert cost.fee == pytest.approx(80)
    assert cost.total == pytest.approx(320)


def test_a_fifth_excluded_means_recruiting_a_quarter_more_and_paying_them_all():
    cost = study_cost(40, 30, 12, exclusion_rate=0.2)
    assert cost.recruit == 50
    assert cost.total == pytest.approx(300)


def test_recruits_round_up_to_whole_people():
    assert study_cost(10, 10, 12, exclusion_rate=0.3).recruit == 15


def test_an_exclusion_rate_of_one_is_refused_with_a_sentence():
    with pytest.raises(ValueError, match="no number of recruits"):
        study_cost(10, 10, 12, exclusion_rate=1.0)
