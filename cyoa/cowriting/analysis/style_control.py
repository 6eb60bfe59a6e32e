"""Bradley–Terry as a logistic regression, with style covariates, weights and intervals
clustered by writer.

Model (Bradley & Terry 1952, written as a logistic regression as in Agresti 2013, §11.6): the
suggestion in slot 1 (system ``a``) is chosen over the one in slot 2 (system ``b``) with
probability ``σ(θ_a − θ_b + γ·(x_a − x_b))``, where ``θ`` are the systems' strengths on the
log-odds scale, ``σ`` the logistic function and ``x`` the *style* of each suggestion. With
covariates this is lmarena's "style control" (Li et al. 2024): ``θ`` is then the strength of
a system at equal style, and ``γ`` says how much style alone moves a writer's choice. Without
covariates it is the plain Bradley–Terry model of
:mod:`cyoa.cowriting.analysis.bradley_terry`, whose shares are ``softmax(θ)``.

Style covariates (:func:`style_differences`), one value per comparison:

- ``length``: ``(w_a − w_b) / (w_a + w_b)``, the normalised difference of the two
  suggestions' lengths in words (whitespace-separated), 0 when both are empty; lmarena's
  normalisation (Li et al. 2024), so the coefficient does not depend on the typical length.
- ``dialogue``: ``d_a − d_b``, the difference of the suggestions' dialogue shares (the
  fraction of characters inside quotation marks, ``"…"`` or ``“…”``, marks included).

Identification: the strengths are centred (``Σθ = 0``), so ``θ_i`` reads as "log-odds above
the average system". The fit is Newton–Raphson on the weighted log-likelihood with the
centring as a penalty ``½(Σθ)²``, which is zero at the solution and changes nothing else.

Weights: each comparison may carry a weight in the log-likelihood (as arena-rank's
``weights``; Chiang et al. 2024, §5, weight by the inverse sampling probability). The ranking
itself is unweighted; the check beside it under adaptive pairing weighs every pair the same
(:func:`cyoa.cowriting.analysis.rankings.pair_weights`).

Intervals: Wald intervals ``estimate ± z·SE`` with the sandwich covariance clustered by writer
(Liang & Zeger 1986; CR0, no small-sample factor): ``A⁻¹ B A⁻¹`` with ``A = Σ w·p(1−p)·x xᵀ``
and ``B = Σ_writers g gᵀ``, ``g`` the sum of one writer's weighted scores ``w·(y − p)·x``. A
writer's rounds are thus not treated as independent; writers are. Shares get delta-method
intervals (``∂s/∂θ = diag(s) − s sᵀ``), clipped to [0, 1].

References:
    Bradley, R. A. and Terry, M. E. (1952). Biometrika 39(3/4), 324–345.
    Agresti, A. (2013). Categorical Data Analysis, 3rd ed., §11.6. Wiley.
    Li, T., Angelopoulos, A., Chiang, W.-L. et al. (2024). Does style matter? Disentangling
    style and substance in Chatbot Arena. LMSYS blog, 2024-08-29.
    Chiang, W.-L. et al. (2024). Chatbot Arena: an open platform for evaluating LLMs by human
    preference. ICML 2024.
    Liang, K.-Y. and Zeger, S. L. (1986). Longitudinal data analysis using generalized linear
    models. Biometrika 73(1), 13–22.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cyoa.cowriting.analysis.bradley_terry import NotEstimable

COVARIATES = ("length", "dialogue")
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')


@dataclass(frozen=True)
class Comparison:
    """One choice between two suggestions: ``first`` (slot 1) and ``second`` (slot 2) are
    systems, ``first_chosen`` whether slot 1 was chosen, ``style`` the covariate differences
    (first minus second, :func:`style_differences`), ``weight`` its weight in the
    log-likelihood (1 unless a check reweighs it)."""

    writer: str
    first: str
    second: str
    first_chosen: bool
    style: tuple[float, ...] = ()
    weight: float = 1.0


@dataclass(frozen=True)
class Estimate:
    """A number with its Wald interval (``None`` when the covariance is not available)."""

    name: str
    estimate: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class StyleSystem:
    """One system: ``strength`` (centred log-odds) and ``share`` (``softmax`` of the
    strengths, a fraction) with their intervals."""

    system: str
    strength: Estimate
    share: Estimate


@dataclass(frozen=True)
class LogitRanking:
    """Systems from strongest to weakest, the style coefficients (log-odds per unit of each
    covariate difference), and the covariance of ``(θ, γ)`` in spec order of systems."""

    systems: tuple[StyleSystem, ...]
    covariates: tuple[Estimate, ...]
    writers: int
    comparisons: int
    confidence: float
    weighted: bool
    covariance: tuple[tuple[float, ...], ...]


def dialogue_share(text: str) -> float:
    """The fraction of ``text``'s characters inside quotation marks (marks included)."""
    if not text:
        return 0.0
    return sum(len(m.group()) for m in _QUOTED.finditer(text)) / len(text)


def style_differences(first: str, second: str) -> tuple[float, float]:
    """``(length, dialogue)`` of the module docstring for two suggestions' texts."""
    words_a, words_b = len(first.split()), len(second.split())
    total = words_a + words_b
    length = 0.0 if total == 0 else (words_a - words_b) / total
    return length, dialogue_share(first) - dialogue_share(second)


def _design(
    comparisons: Sequence[Comparison], systems: Sequence[str], covariates: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    index = {name: i for i, name in enumerate(systems)}
    n = len(systems)
    x = np.zeros((len(comparisons), n + covariates))
    for row, c in enumerate(comparisons):
        if c.first == c.second:
            raise ValueError(f"A comparison needs two different systems, got {c.first!r} twice.")
        if len(c.style) != covariates:
            raise ValueError(f"Each comparison needs {covariates} style values.")
        x[row, index[c.first]] = 1.0
        x[row, index[c.second]] = -1.0
        x[row, n:] = c.style
    y = np.array([1.0 if c.first_chosen else 0.0 for c in comparisons])
    w = np.array([c.weight for c in comparisons], dtype=float)
    writers = sorted({c.writer for c in comparisons})
    position = {name: i for i, name in enumerate(writers)}
    groups = np.array([position[c.writer] for c in comparisons], dtype=int)
    return x, y, w, groups


def newton_fit(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    systems: int,
    ridge: float = 0.0,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> tuple[np.ndarray, np.ndarray]:
    """The weighted maximum-likelihood ``(θ, γ)`` (strengths centred) and the penalised
    information matrix at it. ``ridge`` > 0 adds ``½·ridge·Σθ²`` (a Gaussian prior on the
    strengths, for an interim estimate that always exists); 0 is the plain likelihood.
    Raises :class:`NotEstimable` when Newton's method does not converge (the data separate
    the systems, Hunter 2004, Assumption 1)."""
    k = x.shape[1]
    penalty = np.zeros((k, k))
    penalty[:systems, :systems] = 1.0 + ridge * np.eye(systems)
    beta = np.zeros(k)

    def objective(b: np.ndarray) -> float:
        eta = x @ b
        loglik = float(np.sum(w * (y * eta - np.logaddexp(0.0, eta))))
        return loglik - 0.5 * float(b @ penalty @ b)

    current = objective(beta)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        gradient = x.T @ (w * (y - p)) - penalty @ beta
        information = (x * (w * p * (1.0 - p))[:, None]).T @ x + penalty
        try:
            step = np.linalg.solve(information, gradient)
        except np.linalg.LinAlgError:
            break
        scale = 1.0
        while scale > 1e-8:
            trial = beta + scale * step
            value = objective(trial)
            if value >= current - 1e-12:
                break
            scale /= 2.0
        beta, current = trial, value
        if float(np.max(np.abs(scale * step))) < tol:
            p = 1.0 / (1.0 + np.exp(-(x @ beta)))
            information = (x * (w * p * (1.0 - p))[:, None]).T @ x + penalty
            if np.max(np.abs(beta[:systems])) <= 30:
                return beta, information
            break
    raise NotEstimable(
        "The choices do not determine every strength yet (some system was always or never "
        "chosen against the others, Hunter 2004, Assumption 1): more choices are needed."
    )


def clustered_covariance(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    groups: np.ndarray,
    beta: np.ndarray,
    information: np.ndarray,
) -> np.ndarray:
    """The writer-clustered sandwich ``A⁻¹ B A⁻¹`` (CR0) of the module docstring."""
    p = 1.0 / (1.0 + np.exp(-(x @ beta)))
    scores = x * (w * (y - p))[:, None]
    per_group = np.zeros((int(groups.max()) + 1, x.shape[1]))
    np.add.at(per_group, groups, scores)
    inverse = np.linalg.inv(information)
    return inverse @ (per_group.T @ per_group) @ inverse


def _interval(name: str, value: float, variance: float, z: float, clip: bool) -> Estimate:
    if not math.isfinite(variance) or variance < 0:
        return Estimate(name, value, None, None)
    half = z * math.sqrt(variance)
    low, high = value - half, value + half
    if clip:
        low, high = max(0.0, low), min(1.0, high)
    return Estimate(name, value, low, high)


def logit_rank(
    comparisons: Sequence[Comparison],
    systems: Sequence[str],
    covariates: Sequence[str] = COVARIATES,
    confidence: float = 0.95,
) -> LogitRanking:
    """Fit the module's model to ``comparisons`` (``covariates`` names their ``style``
    values; ``()`` for the plain model) and rank the systems by strength. Raises
    :class:`NotEstimable` when the strengths are not determined."""
    systems = tuple(systems)
    if len(systems) < 2 or not comparisons:
        raise NotEstimable("A ranking needs choices between at least two systems.")
    x, y, w, groups = _design(comparisons, systems, len(covariates))
    n = len(systems)
    if np.linalg.matrix_rank(x) < x.shape[1] - 1:
        raise NotEstimable(
            "The pairs compared so far do not connect every system (or a style covariate "
            "never varies): more choices are needed."
        )
    beta, information = newton_fit(x, y, w, n)
    covariance = clustered_covariance(x, y, w, groups, beta, information)
    from scipy.stats import norm  # here: scipy.stats costs the app's start a second

    z = float(norm.ppf(0.5 + confidence / 2.0))
    theta = beta[:n]
    shares = np.exp(theta) / np.exp(theta).sum()
    jacobian = np.diag(shares) - np.outer(shares, shares)
    share_variance = np.diag(jacobian @ covariance[:n, :n] @ jacobian.T)
    ranked = sorted(
        (
            StyleSystem(
                system=name,
                strength=_interval(name, float(theta[i]), covariance[i, i], z, clip=False),
                share=_interval(name, float(shares[i]), float(share_variance[i]), z, clip=True),
            )
            for i, name in enumerate(systems)
        ),
        key=lambda s: -s.strength.estimate,
    )
    coefficients = tuple(
        _interval(name, float(beta[n + j]), covariance[n + j, n + j], z, clip=False)
        for j, name in enumerate(covariates)
    )
    return LogitRanking(
        systems=tuple(ranked),
        covariates=coefficients,
        writers=int(groups.max()) + 1,
        comparisons=len(comparisons),
        confidence=confidence,
        weighted=bool(np.any(w != 1.0)),
        covariance=tuple(tuple(float(v) for v in row) for row in covariance),
    )
