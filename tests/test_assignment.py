"""Pair and slot assignment: balanced across writers, recorded, random where it is a tie."""

import random
from collections import Counter

from cyoa.cowriting.assignment import assign_pair, balanced_slot_plan, slot_systems

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
