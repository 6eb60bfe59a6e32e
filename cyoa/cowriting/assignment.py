"""Which pair of systems a new writer compares, and which system sits in which slot.

Pure functions of the counts (or choices) so far and a random source, so the design is
testable. Two pairings (the spec's ``pairing``): ``balanced`` gives each new writer the pair
with the fewest writers (:func:`assign_pair`); ``adaptive`` draws the pair at random with the
probabilities of :func:`adaptive_pair_probabilities` (:func:`assign_adaptive`), and the
probability drawn with is stored with the session for the analysis's weights.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import numpy as np

from cyoa.cowriting.analysis.style_control import newton_fit

# Adaptive pairing: the share of the probability spread evenly over the K pairs, so that
# every pair keeps at least UNIFORM_SHARE / K (the floor ε); and the strength of the
# Gaussian prior (ridge) on the interim strengths, so that they exist from the first writer.
UNIFORM_SHARE = 0.25
INTERIM_RIDGE = 1.0
# Pseudo-writers at the binomial variance behind each pair's writer-level variance.
PRIOR_WRITERS = 2.0


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


def adaptive_pair_probabilities(
    pairs: Sequence[tuple[str, str]],
    choices: Sequence[tuple[str, str, str]],
    uniform_share: float = UNIFORM_SHARE,
) -> dict[tuple[str, str], float]:
    """The probability of each unordered pair in ``pairs`` for the next writer, given the
    choices so far as ``(writer, chosen system, other system)``: the allocation that would
    narrow the ranking most if the quantities below were known (estimated from the writers so
    far, it is not narrower in simulation: bench/results/ranking.md).

    The ranking's estimator is the inverse-propensity-weighted Bradley–Terry fit with
    writer-clustered errors (:mod:`cyoa.cowriting.analysis.style_control`). Its variance,
    summed over the centred strengths, is proportional to ``Σ_k a_k / π_k`` with
    ``a_k = V_k · v_kᵀ H⁻² v_k``: ``v_k = e_i − e_j`` for pair ``k = (i, j)``,
    ``H = Σ_k p_k(1 − p_k) v_k v_kᵀ / K`` the information per choice under uniform pairing
    (``p_k`` the modelled chance that ``i`` is chosen over ``j``), and ``V_k`` the variance of
    one writer's score on pair ``k`` (the square of ``Σ (y − p_k)`` over their choices,
    averaged over the pair's writers, with :data:`PRIOR_WRITERS` pseudo-writers at the
    binomial value ``m·p_k(1 − p_k)``, ``m`` choices per writer): pairs on which writers
    disagree more, or whose systems are closer, need more writers. Minimising the sum subject
    to ``Σ π_k = 1`` gives ``π_k ∝ √a_k`` (Neyman allocation, Neyman 1934; the
    variance-minimising sampling of Chiang et al. 2024, §5, applied to the strengths). The
    strengths are the current fit with a Gaussian prior (:data:`INTERIM_RIDGE`); before any
    choice every pair is equally likely. ``uniform_share`` of the probability is spread
    evenly, so each pair keeps at least ``uniform_share / K``.

    References:
        Neyman, J. (1934). On the two different aspects of the representative method. JRSS
        97(4), 558–625.
        Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by
        human preference. ICML 2024.
    """
    pairs = [(a, b) for a, b in pairs]
    systems = list(dict.fromkeys(name for pair in pairs for name in pair))
    index = {name: i for i, name in enumerate(systems)}
    n, k = len(systems), len(pairs)
    differences = np.zeros((k, n))
    for row, (a, b) in enumerate(pairs):
        differences[row, index[a]], differences[row, index[b]] = 1.0, -1.0
    known = [(w, a, b) for w, a, b in choices if a in index and b in index and a != b]
    theta = np.zeros(n)
    if known:
        x = np.zeros((len(known), n))
        for row, (_, a, b) in enumerate(known):
            x[row, index[a]], x[row, index[b]] = 1.0, -1.0
        theta, _ = newton_fit(x, np.ones(len(known)), np.ones(len(known)), n, INTERIM_RIDGE)
    p = 1.0 / (1.0 + np.exp(-(differences @ theta)))
    spread = p * (1.0 - p)
    information = (differences * spread[:, None]).T @ differences / k + np.ones((n, n))
    inverse = np.linalg.inv(information)
    reach = np.einsum("ki,ij,kj->k", differences, inverse @ inverse, differences)
    variance = spread * _choices_per_writer(known)
    scores: dict[tuple[int, str], float] = {}
    row_of = {frozenset(pair): row for row, pair in enumerate(pairs)}
    for writer, chosen, other in known:
        row = row_of.get(frozenset((chosen, other)))
        if row is not None:
            won = 1.0 if chosen == pairs[row][0] else 0.0
            scores[(row, writer)] = scores.get((row, writer), 0.0) + won - p[row]
    for row in range(k):
        squares = [v * v for (r, _), v in scores.items() if r == row]
        variance[row] = (PRIOR_WRITERS * variance[row] + sum(squares)) / (
            PRIOR_WRITERS + len(squares)
        )
    weight = np.sqrt(np.maximum(variance * reach, 0.0))
    adaptive = weight / weight.sum() if weight.sum() > 0 else np.full(k, 1.0 / k)
    chances = (1.0 - uniform_share) * adaptive + uniform_share / k
    return {pair: float(c) for pair, c in zip(pairs, chances, strict=True)}


def _choices_per_writer(choices: Sequence[tuple[str, str, str]]) -> float:
    writers = {w for w, _, _ in choices}
    return len(choices) / len(writers) if writers else 1.0


def assign_adaptive(
    pairs: Sequence[tuple[str, str]],
    counts: dict[tuple[str, str], int],
    choices: Sequence[tuple[str, str, str]],
    rng: random.Random,
) -> tuple[tuple[str, str], float]:
    """The ordered pair for a new writer drawn with :func:`adaptive_pair_probabilities`, and
    the probability it was drawn with. The orientation is balanced as in
    :func:`assign_pair` (it does not change the probability of the unordered pair)."""
    chances = adaptive_pair_probabilities(pairs, choices)
    listed = list(chances)
    a, b = rng.choices(listed, weights=[chances[p] for p in listed])[0]
    forward, backward = counts.get((a, b), 0), counts.get((b, a), 0)
    if forward == backward:
        ordered = (a, b) if rng.random() < 0.5 else (b, a)
    else:
        ordered = (a, b) if forward < backward else (b, a)
    return ordered, chances[(a, b)]


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
