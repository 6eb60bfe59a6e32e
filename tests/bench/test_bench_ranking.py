"""The ranking benchmark (bench/ranking.py): what it counts as the truth and as covered."""

import pytest

from bench.ranking import Scenario, summarise, target


def test_the_target_is_the_strengths_themselves_when_writers_have_no_tastes_of_their_own():
    scenario = Scenario("no tastes", (0.9, 0.1, -0.4, -0.6), (0.0,) * 4, 10)
    assert target(scenario) == pytest.approx([0.9, 0.1, -0.4, -0.6], abs=1e-8)


def test_tastes_pull_the_target_towards_equal_strengths():
    scenario = Scenario("tastes", (0.9, 0.1, -0.4, -0.6), (1.0,) * 4, 10)
    theta = target(scenario)
    assert 0 < theta[0] < 0.9 and -0.6 < theta[3] < 0


def test_the_summary_counts_coverage_per_study_and_compares_widths_study_by_study():
    scenario = Scenario("two", (0.5, -0.5), (0.0, 0.0), 10)
    # Three studies per design: the uniform design's intervals are 1 wide; the other's are
    # 0.5 (half as wide: −50%), miss the truth in one study, and one fit failed.
    wide = {"s1": (0.0, 1.0), "s2": (-1.0, 0.0)}
    narrow = {"s1": (0.25, 0.75), "s2": (-0.75, -0.25)}
    missing = {"s1": (0.6, 1.1), "s2": (-1.1, -0.6)}
    summary = summarise(scenario, {"uniform": [wide] * 3, "adaptive": [narrow, missing, None]})
    assert summary["uniform"]["coverage"] == 1.0 and summary["uniform"]["change"] == 0.0
    adaptive = summary["adaptive"]
    assert adaptive["width"] == pytest.approx(0.5)
    assert adaptive["change"] == pytest.approx(-0.5)
    assert adaptive["coverage"] == pytest.approx(0.5) and adaptive["failed"] == 1
