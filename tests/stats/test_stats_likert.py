"""Likert summaries: counts per level, mean and median."""

import pytest

from cyoa.stats import LikertSummary, likert_summaries, likert_summary


def test_likert_summary_hand_computed():
    # Answers 1, 2, 2, 5, 4 and one unanswered: mean 14/5 = 2.8; sorted 1 2 2 4 5 -> median 2.
    summary = likert_summary([1, 2, 2, 5, None, 4])
    assert summary == LikertSummary(
        counts={1: 1, 2: 2, 3: 0, 4: 1, 5: 1}, n=5, missing=1, mean=2.8, median=2.0
    )


def test_likert_median_of_even_count_is_the_middle_mean():
    # 1 2 4 5: median (2 + 4) / 2 = 3; mean 12/4 = 3.
    summary = likert_summary([5, 1, 4, 2])
    assert (summary.median, summary.mean) == (3.0, 3.0)
    # 4 4 5 5: median 4.5.
    assert likert_summary([4, 5, 4, 5]).median == 4.5


def test_likert_item_without_answers():
    summary = likert_summary([None, None])
    assert summary.counts == {1: 0, 2: 0, 3: 0, 4: 0, 5: 0}
    assert (summary.n, summary.missing, summary.mean, summary.median) == (0, 2, None, None)


@pytest.mark.parametrize("bad", [0, 6, 2.5, True, "3"])
def test_likert_refuses_answers_off_the_scale(bad):
    with pytest.raises(ValueError, match="integers 1 to 5"):
        likert_summary([3, bad])


def test_likert_summaries_per_item():
    summaries = likert_summaries({"Q1": [5, 5, 4], "Q2": [1]})
    assert list(summaries) == ["Q1", "Q2"]
    assert summaries["Q1"].mean == pytest.approx(14 / 3)
    assert summaries["Q2"].counts[1] == 1
