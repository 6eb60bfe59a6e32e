"""Pair and slot assignment: balanced across writers, recorded, random where it is a tie;
adaptive pairing with its probabilities and their floor."""

import random
from collections import Counter

import pytest

from cyoa.cowriting.assignment import (
    UNIFORM_SHARE,
    adaptive_pair_probabilities,
    assign_adaptive,
    assign_pair,
    balanced_slot_plan,
    slot_systems,
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


def test_adaptive_pairing_is_uniform_before_any_choice():
    chances = adaptive_pair_probabilities(FOUR, [])
    assert sum(chances.values()) == pytest.approx(1.0)
    assert all(c == pytest.approx(1 / 6) for c in chances.values())


def test_a_pair_on_which_writers_disagree_gets_more_writers_and_every_pair_keeps_the_floor():
    # Every pair is an even split overall, but each writer of (a, b) takes one system in all
    # five rounds while the others' writers split 3–2: a writer of (a, b) says less.
    choices = []
    for n, (x, y) in enumerate(FOUR * 4):
        writer = f"w{n}"
        if (x, y) == ("a", "b"):
            winner, loser = (x, y) if (n // 6) % 2 else (y, x)
            choices += [(writer, winner, loser)] * 5
        else:
            first, second = (x, y) if (n // 6) % 2 else (y, x)
            choices += [(writer, first, second)] * 3 + [(writer, second, first)] * 2
    chances = adaptive_pair_probabilities(FOUR, choices)
    assert sum(chances.values()) == pytest.approx(1.0)
    assert min(chances.values()) >= UNIFORM_SHARE / 6
    assert chances[("a", "b")] == max(chances.values())
    assert chances[("a", "b")] > 1.5 * chances[("c", "d")]


def test_an_adaptive_assignment_returns_the_probability_it_drew_with():
    rng = random.Random(4)
    choices = [("w1", "a", "b")] * 5 + [("w2", "b", "a")] * 5 + [("w3", "c", "d")] * 5
    chances = adaptive_pair_probabilities(FOUR, choices)
    drawn = Counter()
    for _ in range(3000):
        pair, probability = assign_adaptive(FOUR, {}, choices, rng)
        unordered = tuple(sorted(pair))
        assert probability == pytest.approx(chances[unordered])
        drawn[unordered] += 1
    for pair, chance in chances.items():
        # 3000 draws: within five binomial standard errors of the stated probability.
        assert abs(drawn[pair] / 3000 - chance) < 5 * (chance * (1 - chance) / 3000) ** 0.5
