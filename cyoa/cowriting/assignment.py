"""Which pair of systems a new writer compares, and which system sits in which slot.

Pure functions of the counts (or choices) so far and a random source, so the design is
testable. Two pairings (the spec's ``pairing``): ``balanced`` gives each new writer the pair
with the fewest writers (:func:`assign_pair`); ``adaptive`` gives them, mostly, the pair that
most narrows the ranking so far and otherwise a pair at random
(:func:`adaptive_pair_probabilities`, :func:`assign_adaptive`), and the probability drawn with
is stored with the session for the analysis's weighted check.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from cyoa.cowriting.analysis.style_control import newton_fit

# Adaptive pairing: the share of the probability spread evenly over the K pairs, so that
# every pair keeps at least UNIFORM_SHARE / K (the floor); the strength of the Gaussian prior
# (ridge) on the interim strengths, so that they exist from the first writer; and the
# pseudo-writers each pair starts with, so that the criterion exists before any writer.
UNIFORM_SHARE = 0.2
INTERIM_RIDGE = 1.0
PRIOR_WRITERS = 0.5


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


def interim_strengths(
    systems: Sequence[str], choices: Sequence[tuple[str, str, str]]
) -> np.ndarray:
    """The systems' strengths (centred log-odds, in the order of ``systems``) from the choices
    so far as ``(writer, chosen system, other system)``: the Bradley–Terry fit with a Gaussian
    prior of precision :data:`INTERIM_RIDGE`, so that it exists from the first choice (all 0
    before any). Choices naming another system are left out."""
    index = {name: i for i, name in enumerate(systems)}
    wins = Counter((c, o) for _, c, o in choices if c in index and o in index and c != o)
    if not wins:
        return np.zeros(len(systems))
    x = np.zeros((len(wins), len(systems)))
    for row, (chosen, other) in enumerate(wins):
        x[row, index[chosen]], x[row, index[other]] = 1.0, -1.0
    counts = np.array(list(wins.values()), dtype=float)
    theta, _ = newton_fit(x, np.ones(len(wins)), counts, len(systems), INTERIM_RIDGE)
    return theta


def trace_reductions(
    pairs: Sequence[tuple[str, str]], writers: Sequence[float], strengths: Mapping[str, float]
) -> np.ndarray:
    """For each pair, by how much one more writer on it would shrink the trace of the
    covariance of the centred strengths (their summed variance, log-odds², in units of one
    writer's information) — the A-optimality criterion (Atkinson, Donev & Tobias 2007).

    ``writers[k]`` is how many writers pair ``k`` has (assigned, whether or not they have
    chosen yet), ``strengths`` the current estimates. One writer's information on pair
    ``k = (i, j)`` is ``h_k v_k v_kᵀ`` with ``v_k = e_i − e_j`` and the Bradley–Terry Fisher
    information ``h_k = p_k(1 − p_k)``, ``p_k = σ(θ_i − θ_j)`` (per choice; the rounds per
    writer scale every pair alike and do not change the order). With ``H`` the summed
    information and ``C = H⁺`` the covariance of the centred strengths, one more writer on
    ``k`` shrinks ``tr C`` by ``h_k‖C v_k‖² / (1 + h_k v_kᵀ C v_k)`` (Sherman–Morrison).
    A writer is worth most on a pair of near-equal systems (``p_k`` near ½) whose strengths
    are still uncertain; far-apart pairs waste comparisons. Requires the pairs with writers
    to connect every system (:func:`adaptive_pair_probabilities` gives every pair
    :data:`PRIOR_WRITERS`).
    """
    systems = list(dict.fromkeys(name for pair in pairs for name in pair))
    index = {name: i for i, name in enumerate(systems)}
    n = len(systems)
    v = np.zeros((len(pairs), n))
    for row, (a, b) in enumerate(pairs):
        v[row, index[a]], v[row, index[b]] = 1.0, -1.0
    theta = np.array([strengths[name] for name in systems])
    p = 1.0 / (1.0 + np.exp(-(v @ theta)))
    h = p * (1.0 - p)
    information = (v * (np.asarray(writers, dtype=float) * h)[:, None]).T @ v
    # H has the null space 1; adding J/n makes it invertible without changing C on the rest.
    centre = np.full((n, n), 1.0 / n)
    covariance = np.linalg.inv(information + centre) - centre
    cv = v @ covariance
    return h * np.sum(cv * cv, axis=1) / (1.0 + h * np.sum(cv * v, axis=1))


def adaptive_pair_probabilities(
    pairs: Sequence[tuple[str, str]],
    counts: Mapping[tuple[str, str], int],
    choices: Sequence[tuple[str, str, str]],
    uniform_share: float = UNIFORM_SHARE,
) -> dict[tuple[str, str], float]:
    """The probability of each unordered pair in ``pairs`` for the next writer: with
    probability ``1 − uniform_share`` the pair that most narrows the ranking
    (:func:`trace_reductions` at the :func:`interim_strengths` of ``choices``, each pair
    counting its writers so far, from ``counts`` of ordered pairs, plus
    :data:`PRIOR_WRITERS`; ties share), otherwise a pair drawn uniformly, so that every pair
    keeps at least ``uniform_share / K`` (K pairs) and stays estimable.

    This is the sequential construction of an A-optimal design (Wynn 1970; Fedorov 1972):
    each writer goes where the next writer's information is worth most at the current
    estimates, which converges to the allocation minimising the summed variance of the
    strengths (for Bradley–Terry: Graßhoff & Schwabe 2008). Counting assigned writers, not
    only those who have chosen, spreads writers who start at the same time. The design
    depends only on earlier writers' outcomes, so under the model the unweighted likelihood
    stays valid (:mod:`cyoa.cowriting.analysis.rankings`).

    References:
        Wynn, H. P. (1970). The sequential generation of D-optimum experimental designs.
        Annals of Mathematical Statistics 41(5), 1655–1664.
        Fedorov, V. V. (1972). Theory of Optimal Experiments. Academic Press.
        Atkinson, A. C., Donev, A. N. and Tobias, R. D. (2007). Optimum Experimental Designs,
        with SAS. Oxford University Press.
        Graßhoff, U. and Schwabe, R. (2008). Optimal design for the Bradley–Terry paired
        comparison model. Statistical Methods and Applications 17(3), 275–289.
    """
    pairs = [(a, b) for a, b in pairs]
    systems = list(dict.fromkeys(name for pair in pairs for name in pair))
    theta = dict(zip(systems, interim_strengths(systems, choices), strict=True))
    writers = [PRIOR_WRITERS + counts.get((a, b), 0) + counts.get((b, a), 0) for a, b in pairs]
    gain = trace_reductions(pairs, writers, theta)
    best = np.isclose(gain, gain.max(), rtol=1e-9, atol=0.0)
    k = len(pairs)
    chances = (1.0 - uniform_share) * best / best.sum() + uniform_share / k
    return {pair: float(c) for pair, c in zip(pairs, chances, strict=True)}


def assign_adaptive(
    pairs: Sequence[tuple[str, str]],
    counts: dict[tuple[str, str], int],
    choices: Sequence[tuple[str, str, str]],
    rng: random.Random,
) -> tuple[tuple[str, str], float]:
    """The ordered pair for a new writer drawn with :func:`adaptive_pair_probabilities`, and
    the probability it was drawn with. The orientation is balanced as in
    :func:`assign_pair` (it does not change the probability of the unordered pair)."""
    chances = adaptive_pair_probabilities(pairs, counts, choices)
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
