"""A Bradley–Terry ranking of N systems from pairwise choices, with writer-level bootstrap
intervals.

Model (Bradley & Terry 1952): system ``i`` has a strength ``p_i > 0`` and is chosen over ``j``
with probability ``p_i / (p_i + p_j)``. The maximum-likelihood strengths are found with the
MM algorithm of Hunter (2004, eq. 3): ``p_i ← W_i / Σ_j n_ij / (p_i + p_j)``, where ``W_i``
counts the choices ``i`` won and ``n_ij`` the comparisons of ``i`` with ``j``, renormalised
after each step. Strengths are reported as *shares* that sum to 1.

Only the comparisons that happened enter the likelihood: a pair of systems that no writer
compared contributes nothing (no pseudo-counts, no invented ties; ties do not exist in this
protocol). The maximum-likelihood estimate exists when every split of the systems into two
groups has some system in each group that was chosen over one in the other (Hunter 2004,
Assumption 1: the directed "was chosen over" graph is strongly connected); otherwise
:class:`NotEstimable` is raised with what is missing.

Intervals resample *writers* with replacement (each writer's choices stay together, since one
writer makes several choices), refit, and take percentiles of each share; resamples in which
the estimate does not exist are left out and counted (``skipped``).

References:
    Bradley, R. A. and Terry, M. E. (1952). Rank analysis of incomplete block designs: I. The
    method of paired comparisons. Biometrika 39(3/4), 324–345.
    Hunter, D. R. (2004). MM algorithms for generalized Bradley–Terry models. The Annals of
    Statistics 32(1), 384–406.
    Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application,
    section 3.8 (resampling clustered data). Cambridge University Press.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Choice = tuple[str, str]  # (chosen system, the other system)


class NotEstimable(ValueError):
    """The choices do not determine every strength (see the module docstring)."""


@dataclass(frozen=True)
class BradleyTerry:
    """Fitted strengths: ``shares[i]`` of ``systems[i]`` (sum 1). ``wins[i][j]`` counts the
    choices of ``systems[i]`` over ``systems[j]``; ``iterations`` the MM steps taken."""

    systems: tuple[str, ...]
    shares: tuple[float, ...]
    wins: tuple[tuple[int, ...], ...]
    iterations: int

    def share(self, system: str) -> float:
        return self.shares[self.systems.index(system)]

    def probability(self, system: str, other: str) -> float:
        """Modelled probability that ``system`` is chosen over ``other`` (a fraction)."""
        a, b = self.share(system), self.share(other)
        return a / (a + b)


@dataclass(frozen=True)
class RankedSystem:
    """One system of a ranking: its share with a bootstrap interval (fractions), and the
    choices it won out of the comparisons it took part in."""

    system: str
    share: float
    ci_low: float | None
    ci_high: float | None
    won: int
    compared: int


@dataclass(frozen=True)
class Ranking:
    """Systems from strongest to weakest. ``resamples`` were drawn with ``seed``; ``skipped``
    of them had no estimate and are left out of the intervals."""

    systems: tuple[RankedSystem, ...]
    writers: int
    choices: int
    resamples: int
    skipped: int
    confidence: float
    seed: int


def _win_matrix(choices: Sequence[Choice], systems: Sequence[str]) -> np.ndarray:
    index = {name: i for i, name in enumerate(systems)}
    wins = np.zeros((len(systems), len(systems)))
    for chosen, other in choices:
        if chosen == other:
            raise ValueError(f"A choice needs two different systems, got {chosen!r} twice.")
        wins[index[chosen], index[other]] += 1
    return wins


def _check_estimable(wins: np.ndarray, systems: Sequence[str]) -> None:
    """Hunter's Assumption 1: every system reaches every other along "chosen over" edges."""
    beats = wins > 0
    for start in range(len(systems)):
        for graph, relation in ((beats, "chosen over"), (beats.T, "passed over for")):
            seen = {start}
            frontier = [start]
            while frontier:
                node = frontier.pop()
                for nxt in np.flatnonzero(graph[node]):
                    if int(nxt) not in seen:
                        seen.add(int(nxt))
                        frontier.append(int(nxt))
            if len(seen) < len(systems):
                missing = sorted(systems[i] for i in set(range(len(systems))) - seen)
                raise NotEstimable(
                    f"{systems[start]} was never {relation} {', '.join(missing)}, directly or "
                    "through other systems, so the strengths are not determined yet (Hunter "
                    "2004, Assumption 1): more choices are needed."
                )


def _mm(wins: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, int]:
    """Hunter's MM iteration on a stack of win matrices (shape ``(R, N, N)``) at once;
    returns the shares (``(R, N)``, rows sum to 1) and the number of steps taken."""
    comparisons = wins + np.swapaxes(wins, 1, 2)
    won = wins.sum(axis=2)
    shares = np.full(won.shape, 1.0 / won.shape[1])
    steps = 0
    while steps < max_iter:
        steps += 1
        denominators = (comparisons / (shares[:, :, None] + shares[:, None, :])).sum(axis=2)
        updated = won / denominators
        updated /= updated.sum(axis=1, keepdims=True)
        change = float(np.max(np.abs(updated - shares)))
        shares = updated
        if change <= tol:
            break
    return shares, steps


def fit(
    choices: Sequence[Choice],
    systems: Sequence[str] | None = None,
    tol: float = 1e-12,
    max_iter: int = 100_000,
) -> BradleyTerry:
    """Maximum-likelihood Bradley–Terry shares for ``choices`` (``(chosen, other)`` pairs).

    ``systems`` fixes the order (default: first appearance); a listed system without any
    choice makes the fit :class:`NotEstimable`. Iterates Hunter's MM step until no share
    changes by more than ``tol`` (a fraction) or ``max_iter`` steps."""
    if systems is None:
        systems = list(dict.fromkeys(name for pair in choices for name in pair))
    systems = tuple(systems)
    if len(systems) < 2:
        raise NotEstimable("A ranking needs choices between at least two systems.")
    wins = _win_matrix(choices, systems)
    _check_estimable(wins, systems)
    shares, iterations = _mm(wins[None], tol, max_iter)
    return BradleyTerry(
        systems=systems,
        shares=tuple(float(s) for s in shares[0]),
        wins=tuple(tuple(int(w) for w in row) for row in wins),
        iterations=iterations,
    )


def rank(
    choices_by_writer: Mapping[str, Sequence[Choice]],
    systems: Sequence[str],
    resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
    tol: float = 1e-9,
) -> Ranking:
    """The systems ranked by their fitted share, with writer-level percentile bootstrap
    intervals (``confidence`` two-sided, e.g. 0.95; resampled fits stop at ``tol``).

    Raises :class:`NotEstimable` when the choices of all writers do not determine the
    shares. A resample without an estimate is skipped; when every resample is skipped the
    intervals are ``None``."""
    systems = tuple(systems)
    writers = [w for w, choices in choices_by_writer.items() if choices]
    every = [choice for w in writers for choice in choices_by_writer[w]]
    model = fit(every, systems)
    per_writer = np.stack([_win_matrix(choices_by_writer[w], systems) for w in writers])
    rng = np.random.default_rng(seed)
    # How often each writer is drawn in each resample, then their choices added up.
    picks = rng.multinomial(len(writers), [1.0 / len(writers)] * len(writers), size=resamples)
    stacked = np.einsum("rw,wij->rij", picks, per_writer)
    usable = []
    for r in range(resamples):
        try:
            _check_estimable(stacked[r], systems)
        except NotEstimable:
            continue
        usable.append(r)
    skipped = resamples - len(usable)
    alpha = (1.0 - confidence) / 2.0
    bounds = None
    if usable:
        draws, _ = _mm(stacked[usable], tol, 100_000)
        bounds = np.quantile(draws, [alpha, 1.0 - alpha], axis=0)
    wins = np.array(model.wins)
    ranked = []
    for i, name in enumerate(model.systems):
        ranked.append(
            RankedSystem(
                system=name,
                share=model.shares[i],
                ci_low=None if bounds is None else float(bounds[0, i]),
                ci_high=None if bounds is None else float(bounds[1, i]),
                won=int(wins[i].sum()),
                compared=int(wins[i].sum() + wins[:, i].sum()),
            )
        )
    ranked.sort(key=lambda r: -r.share)
    return Ranking(
        systems=tuple(ranked),
        writers=len(writers),
        choices=len(every),
        resamples=resamples,
        skipped=skipped,
        confidence=confidence,
        seed=seed,
    )
