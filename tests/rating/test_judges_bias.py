"""A judge's bias card as its definitions say: story scores, length terciles and Spearman's ρ
with length (hand-worked, and scipy's p-value by the t formula), the judge's excess over the
humans flagged when it follows length, and, for pairwise judging, the slot-A share with its
binomial test and the flip rate with its Clopper–Pearson interval, hand-worked; a planted
judge that picks slot A 70% of the time whatever the texts say is flagged."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from cyoa.rating.instruments import AISS_V1 as AISS
from cyoa.rating.instruments import TTCW
from cyoa.rating.judges.bias import (
    FLIP_THRESHOLD,
    PairVerdict,
    length_bands,
    length_bias,
    position_bias,
    score_measure,
    spearman_with_length,
    story_scores,
)


def frame(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["story_id", "item", "value"])


def test_a_story_s_yes_no_score_is_its_share_of_yes_over_every_read_answer():
    rows = frame([("s1", "1", 1.0), ("s1", "1", 0.0), ("s1", "2", 1.0), ("s1", "3", np.nan)])
    assert score_measure(TTCW) == "share of Yes"
    assert story_scores(TTCW, rows) == {"s1": pytest.approx(2 / 3)}


def test_a_story_s_likert_score_is_its_mean_coded_point_with_reverse_keying():
    reverse = next(item for item in AISS.items if item.reverse)
    plain = next(item for item in AISS.items if not item.reverse and item.kind == "likert")
    rows = frame([("s1", plain.id, 5.0), ("s1", reverse.id, 5.0)])
    # The reverse-keyed 5 codes as points + 1 − 5 = 1 on a 5-point item: (5 + 1) / 2 = 3.
    assert score_measure(AISS) == "mean score"
    assert story_scores(AISS, rows) == {"s1": pytest.approx((5 + reverse.points + 1 - 5) / 2)}


def test_spearman_with_length_is_the_hand_worked_rho_and_the_t_formula_p_value():
    words = {"a": 100, "b": 200, "c": 300, "d": 400}
    values = {"a": 0.1, "b": 0.2, "c": 0.4, "d": 0.3}
    # Ranks 1 2 4 3 against 1 2 3 4: Σd² = 2, ρ = 1 − 6·2 / (4·15) = 0.8.
    found = spearman_with_length(words, values)
    assert found.stories == 4 and found.rho == pytest.approx(0.8)
    t = 0.8 * math.sqrt(2 / (1 - 0.64))
    assert found.p_value == pytest.approx(2 * stats.t.sf(t, df=2))


def test_spearman_with_length_is_undefined_when_the_scores_never_vary_or_too_few_stories():
    assert spearman_with_length({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 1, "c": 1}).rho is None
    assert spearman_with_length({"a": 1, "b": 2}, {"a": 0, "b": 1}).p_value is None


def test_seven_stories_fall_into_terciles_of_three_two_and_two_shortest_first():
    words = {f"s{n}": 100 * (7 - n) for n in range(7)}  # s6 is the shortest
    judge = {f"s{n}": float(n % 2) for n in range(7)}
    human = {"s6": 1.0, "s5": 0.0}
    bands = length_bands(words, judge, human)
    assert [(b.stories, b.min_words, b.max_words) for b in bands] == [
        (3, 100, 300),
        (2, 400, 500),
        (2, 600, 700),
    ]
    # Shortest third: s6, s5, s4 → judge 0, 1, 0; humans only s6 and s5: 1, 0.
    assert bands[0].judge == pytest.approx(1 / 3) and bands[0].human == pytest.approx(0.5)
    assert bands[2].human is None


def test_a_judge_that_says_yes_more_the_longer_the_story_beyond_the_humans_is_flagged():
    words = {f"s{n}": 200 + 50 * n for n in range(12)}
    human = {f"s{n}": [0.2, 0.5, 0.3][n % 3] for n in range(12)}
    judge = {story: value + 0.04 * n for n, (story, value) in enumerate(human.items())}
    found = length_bias("share of Yes", {**words}, judge, human)
    assert found.excess.rho == pytest.approx(1.0) and found.flagged
    assert found.judge.rho > found.human.rho


def test_a_judge_that_follows_the_humans_is_not_flagged_even_when_they_follow_length():
    words = {f"s{n}": 200 + 50 * n for n in range(12)}
    human = {f"s{n}": n / 12 for n in range(12)}
    judge = {story: value + [0.1, -0.1, 0.05, 0.0][n % 4] for n, (story, value) in
             enumerate(human.items())}  # fmt: skip
    found = length_bias("share of Yes", words, judge, {**human, "no-text": 0.5})
    assert found.human.rho == pytest.approx(1.0) and found.judge.p_value < 0.05
    assert not found.flagged


def test_a_judge_that_says_yes_to_every_story_is_not_flagged_when_only_the_humans_follow_length():
    # The humans say Yes less to longer stories; the judge always says Yes: its excess over
    # the humans grows with length, but its own verdict does not follow length at all.
    words = {f"s{n}": 200 + 50 * n for n in range(12)}
    human = {f"s{n}": 1 - n / 12 for n in range(12)}
    judge = {story: 1.0 if n % 5 else 0.9 for n, story in enumerate(human)}
    found = length_bias("share of Yes", words, judge, human)
    assert found.excess.p_value < 0.05 and found.judge.p_value >= 0.05
    assert not found.flagged


def test_stories_without_a_stored_text_are_left_out_of_the_length_figures_and_counted():
    words = {"a": 100, "b": 200, "c": 300}
    judge = {"a": 0.0, "b": 0.5, "c": 1.0, "d": 1.0}
    found = length_bias("share of Yes", words, judge, {})
    assert found.without_length == 1 and found.judge.stories == 3
    assert found.excess.rho is None and not found.flagged


def test_the_position_figures_are_the_hand_worked_ones():
    verdicts = [
        PairVerdict("p1", "AB", "A"),
        PairVerdict("p1", "BA", "A"),  # slot A both times: the chosen text changes, a flip
        PairVerdict("p2", "AB", "A"),
        PairVerdict("p2", "BA", "B"),  # the first text both times
        PairVerdict("p3", "AB", "B"),
        PairVerdict("p3", "BA", "A"),  # the second text both times
        PairVerdict("p4", "AB", "A"),
        PairVerdict("p4", "BA", None),  # unread: p4 is not a pair judged in both orders
    ]
    found = position_bias(verdicts)
    assert (found.verdicts, found.unread, found.pairs, found.flips) == (8, 1, 3, 1)
    # 5 of 7 read verdicts chose slot A: P(X ≥ 5) = (21 + 7 + 1)/128, two-sided twice that.
    assert found.slot_a.chosen == 5 and found.slot_a.total == 7
    assert found.slot_a.p_value == pytest.approx(58 / 128)
    # 1 flip in 3 pairs; Clopper–Pearson: low 1 − 0.975^(1/3), high the Beta(2, 2) 97.5% point.
    assert found.flip_rate == pytest.approx(1 / 3)
    assert found.flip_ci_low == pytest.approx(1 - 0.975 ** (1 / 3))
    assert found.flip_ci_high == pytest.approx(stats.beta.ppf(0.975, 2, 2))
    assert not found.flagged


def planted(pairs: int, choose, seed: int = 7) -> list[PairVerdict]:
    """Each pair shown in both orders; ``choose(rng, order)`` gives the slot chosen."""
    rng = np.random.default_rng(seed)
    return [
        PairVerdict(f"pair-{n}", order, choose(rng, order))
        for n in range(pairs)
        for order in ("AB", "BA")
    ]


def test_a_planted_judge_that_says_slot_a_70_percent_of_the_time_is_flagged_by_the_bias_card():
    found = position_bias(planted(100, lambda rng, order: "A" if rng.random() < 0.7 else "B"))
    assert found.slot_a.share == pytest.approx(0.7, abs=0.05) and found.slot_a.p_value < 0.05
    # Expected flip rate 0.7² + 0.3² = 0.58.
    assert found.flip_rate > FLIP_THRESHOLD and found.flip_ci_low > FLIP_THRESHOLD
    assert found.flagged


def test_a_judge_that_reads_the_texts_never_flips_and_is_not_flagged():
    # It always prefers the pair's first text, wherever that is shown.
    found = position_bias(planted(100, lambda rng, order: "A" if order == "AB" else "B"))
    assert found.flips == 0 and found.flip_rate == 0 and found.slot_a.share == 0.5
    assert not found.flagged


def test_a_judge_that_picks_a_slot_at_random_flips_often_but_prefers_no_slot():
    found = position_bias(planted(100, lambda rng, order: "A" if rng.random() < 0.5 else "B"))
    assert found.flip_rate > FLIP_THRESHOLD and found.slot_a.p_value >= 0.05
    assert not found.flagged


def test_a_judge_with_no_read_verdict_has_no_position_figures():
    found = position_bias([PairVerdict("p1", "AB", None)])
    assert found.slot_a is None and found.flip_rate is None and not found.flagged
