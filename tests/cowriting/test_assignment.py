"""Pair and slot assignment: balanced across writers, recorded, random where it is a tie;
adaptive pairing: its criterion (known values), its probabilities and their floor."""

import random
from collections import Counter

import numpy as np
import pytest

from cyoa.cowriting.assignment import (
    UNIFORM_SHARE,
    adaptive_pair_probabilities,
    assign_adaptive,
    assign_pair,
    balanced_slot_plan,
    interim_strengths,
    slot_systems,
    trace_reductions,
)

PAIRS = [("a", "b"), ("a", "c"), ("b", "c")]


def assign_many(n: int, seed: int = 1) -> Counter:
    rng = random.Random(seed)
    counts: Counter = Counter()
    for _ in range(n):
        counts[assign_pair(PAIRS, counts, rng)] += 1
    return counts


def test_writers_are_spread_evenly_over_the_pairs_and_their_orientations():
    counts = assign_many(12)
    # 12 writers over 3 pairs × 2 orientations: exactly 2 each.
    assert sorted(counts.values()) == [2] * 6
    assert set(counts) == {(a, b) for a, b in PAIRS} | {(b, a) for a, b in PAIRS}


def test_the_least_used_pair_is_assigned_next():
    counts = {("a", "b"): 3, ("b", "a"): 2, ("a", "c"): 1, ("c", "a"): 1, ("b", "c"): 0}
    assert assign_pair(PAIRS, counts, random.Random(0)) in {("b", "c"), ("c", "b")}
    counts[("c", "b")] = 2
    assert assign_pair(PAIRS, counts, random.Random(0)) == ("b", "c")


def test_a_balanced_plan_puts_each_system_first_half_the_time():
    plan = balanced_slot_plan(5, random.Random(3))
    assert sorted(plan) == [0, 0, 0, 1, 1]
    assert sorted(balanced_slot_plan(4, random.Random(3))) == [0, 0, 1, 1]


def test_slot_systems_follow_the_plan():
    assert slot_systems(("x", "y"), 0) == ["x", "y"]
    assert slot_systems(("x", "y"), 1) == ["y", "x"]


FOUR = [(a, b) for i, a in enumerate("abcd") for b in "abcd"[i + 1 :]]


def test_adaptive_pairing_is_uniform_before_any_writer():
    chances = adaptive_pair_probabilities(FOUR, {}, [])
    assert sum(chances.values()) == pytest.approx(1.0)
    assert all(c == pytest.approx(1 / 6) for c in chances.values())


def test_one_more_writer_shrinks_the_summed_variance_by_the_known_amount():
    # Three equal systems, one writer per pair: H = ¼·L (L the triangle's Laplacian), so the
    # centred covariance is (I − J/3)/(3/4), trace 8/3; one more writer on a pair takes off
    # h‖Cv‖² / (1 + h·vᵀCv) = ¼·2·(4/3)² / (1 + ¼·2·4/3) = 8/15.
    gain = trace_reductions(PAIRS, [1, 1, 1], {"a": 0.0, "b": 0.0, "c": 0.0})
    assert gain == pytest.approx([8 / 15] * 3)
    # The same by brute force: the trace before less the trace after.
    v = np.array([[1.0, -1.0, 0.0], [1.0, 0.0, -1.0], [0.0, 1.0, -1.0]])
    before = np.trace(np.linalg.pinv(0.25 * v.T @ v))
    after = np.trace(np.linalg.pinv(0.25 * v.T @ v + 0.25 * np.outer(v[0], v[0])))
    assert before - after == pytest.approx(8 / 15)


def test_near_equal_systems_and_pairs_with_few_writers_are_worth_most():
    # Four systems a step of 1 apart, two writers per pair: a writer on neighbours (a, b) or
    # (c, d) shrinks the summed variance most, one on the far pair (a, d) least.
    gain = trace_reductions(FOUR, [2] * 6, {"a": 1.5, "b": 0.5, "c": -0.5, "d": -1.5})
    assert gain[0] == pytest.approx(gain[5]) == max(gain)
    assert gain[2] == min(gain) and gain[0] > 1.4 * gain[2]
    fewer = trace_reductions(PAIRS, [1, 3, 3], {"a": 0.0, "b": 0.0, "c": 0.0})
    assert fewer[0] == max(fewer) and fewer[1] == pytest.approx(fewer[2])


def test_the_interim_strengths_follow_the_choices_and_are_zero_before_any():
    assert interim_strengths("abc", []) == pytest.approx([0.0, 0.0, 0.0])
    choices = [("w1", "a", "b")] * 4 + [("w1", "b", "a")] + [("w2", "b", "c")] * 4
    theta = interim_strengths("abc", choices + [("w3", "a", "z")])
    assert theta[0] > theta[1] > theta[2] and sum(theta) == pytest.approx(0.0, abs=1e-9)


def test_the_next_writer_mostly_gets_the_most_informative_pair_and_every_pair_keeps_the_floor():
    # Four writers per pair, 20 choices each; the first system of a pair wins as below, so a
    # is strongest and d weakest. d is the least certain, and its nearest neighbour c is
    # where one more writer says most: (c, d) gets the writer unless the floor draws.
    wins = {("a", "b"): 13, ("b", "c"): 14, ("c", "d"): 14, ("a", "c"): 17, ("b", "d"): 17}
    choices = []
    for x, y in FOUR:
        for n in range(20):
            writer = f"{x}{y}{n // 5}"
            choices.append((writer, x, y) if n < wins.get((x, y), 19) else (writer, y, x))
    chances = adaptive_pair_probabilities(FOUR, Counter(dict.fromkeys(FOUR, 4)), choices)
    floor = UNIFORM_SHARE / 6
    assert sum(chances.values()) == pytest.approx(1.0)
    assert chances[("c", "d")] == pytest.approx(1 - UNIFORM_SHARE + floor)
    assert all(c == pytest.approx(floor) for p, c in chances.items() if p != ("c", "d"))


def test_writers_who_start_together_are_spread_before_anyone_has_chosen():
    # One writer has just started on (a, b): the next writer's best pair is another one.
    chances = adaptive_pair_probabilities(FOUR, {("b", "a"): 1}, [])
    assert chances[("a", "b")] == pytest.approx(UNIFORM_SHARE / 6)
    assert chances[("c", "d")] == max(chances.values())


def test_an_adaptive_assignment_returns_the_probability_it_drew_with():
    rng = random.Random(4)
    choices = [("w1", "a", "b")] * 5 + [("w2", "b", "a")] * 5 + [("w3", "c", "d")] * 5
    counts = {("a", "b"): 1, ("b", "a"): 1, ("c", "d"): 1}
    chances = adaptive_pair_probabilities(FOUR, counts, choices)
    drawn = Counter()
    for _ in range(3000):
        pair, probability = assign_adaptive(FOUR, counts, choices, rng)
        unordered = tuple(sorted(pair))
        assert probability == pytest.approx(chances[unordered])
        drawn[unordered] += 1
    for pair, chance in chances.items():
        # 3000 draws: within five binomial standard errors of the stated probability.
        assert abs(drawn[pair] / 3000 - chance) < 5 * (chance * (1 - chance) / 3000) ** 0.5


def test_over_a_study_adaptive_pairing_sends_fewer_writers_to_far_apart_systems():
    # Four systems a step of 1 apart; 120 writers, 5 choices each, drawn from the model.
    strengths = {"a": 1.5, "b": 0.5, "c": -0.5, "d": -1.5}
    rng, outcomes = random.Random(8), random.Random(9)
    counts: Counter = Counter()
    choices = []
    for n in range(120):
        pair, _ = assign_adaptive(FOUR, counts, choices, rng)
        counts[pair] += 1
        x, y = pair
        chance = 1 / (1 + np.exp(strengths[y] - strengths[x]))
        for _ in range(5):
            won = outcomes.random() < chance
            choices.append((f"w{n}", x, y) if won else (f"w{n}", y, x))
    per_pair = {p: counts[p] + counts[(p[1], p[0])] for p in FOUR}
    # Uniform pairing would give each pair 20; the far pair (a, d) gets fewer, the
    # neighbours more.
    assert per_pair[("a", "d")] < 12
    assert min(per_pair[("a", "b")], per_pair[("c", "d")]) > 20
