"""Which pair of systems a new writer compares, and which system sits in which slot.

Pure functions of the counts so far and a random source, so the design is testable.
"""

from __future__ import annotations

import random


def assign_pair(
    pairs: list[tuple[str, str]], counts: dict[tuple[str, str], int], rng: random.Random
) -> tuple[str, str]:
    """The ordered pair ``(system_a, system_b)`` for a new writer.

    Balances writers across the unordered pairs first (the pair with the fewest writers so
    far), then across the two orientations of that pair (which system is ``system_a``);
    ties are broken at random. ``counts`` maps ordered pairs to their number of writers.
    """

    def total(pair: tuple[str, str]) -> int:
        a, b = pair
        return counts.get((a, b), 0) + counts.get((b, a), 0)

    fewest = min(total(p) for p in pairs)
    a, b = rng.choice([p for p in pairs if total(p) == fewest])
    forward, backward = counts.get((a, b), 0), counts.get((b, a), 0)
    if forward == backward:
        return (a, b) if rng.random() < 0.5 else (b, a)
    return (a, b) if forward < backward else (b, a)


def balanced_slot_plan(rounds: int, rng: random.Random) -> list[int]:
    """For each round, 0 if ``system_a`` takes slot 1 and 1 if ``system_b`` does.

    ``system_a`` takes slot 1 in ceil(rounds / 2) rounds, in a random order; since the
    orientation of pairs is itself balanced across writers (:func:`assign_pair`), each system
    is shown first equally often overall."""
    plan = [0] * ((rounds + 1) // 2) + [1] * (rounds // 2)
    rng.shuffle(plan)
    return plan


def slot_systems(pair: tuple[str, str], flip: int) -> list[str]:
    """The systems in slot 1 and slot 2 for one round (``flip`` 1 puts ``system_b`` first)."""
    a, b = pair
    return [b, a] if flip else [a, b]
