"""How far one panel's verdicts are from another's, unit by unit (pure).

A *unit* is one story's answer to one item. The *candidate* is the panel being calibrated (a
judge model); the *reference* is the panel it is read against (the study's human raters, or
an imported expert panel), reduced to one value per unit by :func:`consensus`.

- :func:`consensus`: the reference's majority (Yes/No items) or mean (Likert items).
- :func:`kappa_of_tables`: Cohen's κ, unweighted or weighted, of confusion tables.
- :func:`cohen_kappa`: κ of paired verdicts with a percentile bootstrap interval over stories.
- :func:`binary_scores`: balanced accuracy, precision, recall, F1 and the correlation of
  Yes/No verdicts, as the TTCW release's evaluation notebook reports them.

References:
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20(1), 37–46.
    Cohen, J. (1968). Weighted kappa: nominal scale agreement with provision for scaled
    disagreement or partial credit. Psychological Bulletin 70(4), 213–220.
    Chakrabarty, T., Laban, P., Agarwal, D., Muresan, S. and Wu, C.-S. (2024). Art or
    Artifice? Large Language Models and the False Promise of Creativity. CHI, §6 and Table 6;
    its release's ``Art_or_Artifice/Evaluating_LLM.ipynb`` (salesforce/creativity_eval).
    Brodersen, K. H., Ong, C. S., Stephan, K. E. and Buhmann, J. M. (2010). The balanced
    accuracy and its posterior distribution. ICPR, 3121–3124.
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 13.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Weights = Literal["none", "linear", "quadratic"]
WEIGHTS: tuple[Weights, ...] = ("none", "linear", "quadratic")
BOOTSTRAP = 1000


def consensus(values: Sequence[float], binary: bool) -> float | None:
    """One unit's reference value: for a Yes/No item the majority verdict (1.0 when more
    than half of ``values`` are 1, 0.0 when more than half are 0), ``None`` on a tie (the
    unit is left out and counted as a tie, never settled by the order of the raters); for a
    Likert item the mean. NaN values (no answer) are ignored; ``None`` when none is left."""
    kept = [float(value) for value in values if not math.isnan(float(value))]
    if not kept:
        return None
    mean = sum(kept) / len(kept)
    if not binary:
        return mean
    if mean == 0.5:
        return None
    return 1.0 if mean > 0.5 else 0.0


def nearest_point(value: float) -> float:
    """``value`` rounded to the nearest whole point, halves upwards (3.5 → 4), as a
    reference mean is made a category for weighted κ."""
    return float(math.floor(value + 0.5))


def disagreement_weights(categories: int, weights: Weights) -> np.ndarray:
    """Cohen's (1968) disagreement weights for ``categories`` ordered categories: 1 off the
    diagonal (``none``), ``|i − j| / (k − 1)`` (``linear``) or ``((i − j) / (k − 1))²``
    (``quadratic``); 0 on the diagonal."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS)}, got {weights!r}.")
    index = np.arange(categories)
    distance = np.abs(index[:, None] - index[None, :]) / max(categories - 1, 1)
    if weights == "none":
        return (distance > 0).astype(float)
    return distance if weights == "linear" else distance**2


def kappa_of_tables(tables: np.ndarray, weights: Weights = "none") -> np.ndarray:
    """Cohen's κ of each confusion table in ``tables`` (shape ``(…, k, k)``: counts, rows
    the candidate's categories, columns the reference's).

    κ_w = 1 − Σ w_ij·p_ij / Σ w_ij·e_ij, with p the observed proportions, e the products of
    their margins (what chance would give) and w :func:`disagreement_weights`; unweighted it
    is (p_o − p_e) / (1 − p_e). 1 is perfect agreement, 0 the agreement of chance. NaN where
    a table is empty or chance already explains everything (one category used throughout).
    Reference: Cohen (1960; 1968)."""
    tables = np.asarray(tables, dtype=float)
    w = disagreement_weights(tables.shape[-1], weights)
    n = tables.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (w * tables).sum(axis=(-2, -1)) / n
        rows = tables.sum(axis=-1) / n[..., None]
        cols = tables.sum(axis=-2) / n[..., None]
        expected = (w * (rows[..., :, None] * cols[..., None, :])).sum(axis=(-2, -1))
        kappa = 1 - observed / expected
    return np.where((n > 0) & (expected > 1e-12), kappa, np.nan)


@dataclass(frozen=True)
class Kappa:
    """Cohen's κ of paired verdicts (see :func:`cohen_kappa`): ``units`` pairs from
    ``stories`` stories; the percentile interval from ``valid_resamples`` of ``resamples``
    replicates over stories; ``reason`` says why ``kappa`` or the interval is ``None``."""

    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    units: int
    stories: int
    weights: Weights
    resamples: int
    valid_resamples: int
    reason: str | None


Pair = tuple[str, float, float]  # (story_id, candidate's value, reference's value)


def confusion_tables(pairs: Sequence[Pair], categories: Sequence[float]) -> np.ndarray:
    """One confusion table per story (stories × k × k, in the order stories first appear)
    of ``pairs``, each value one of ``categories``: rows the candidate's, columns the
    reference's."""
    index = {float(value): n for n, value in enumerate(categories)}
    stories: dict[str, int] = {}
    cells = [
        (stories.setdefault(story, len(stories)), index[float(cand)], index[float(ref)])
        for story, cand, ref in pairs
    ]
    tables = np.zeros((len(stories), len(index), len(index)))
    if cells:
        np.add.at(tables, tuple(np.array(cells).T), 1)
    return tables


def cohen_kappa(
    pairs: Sequence[Pair],
    categories: Sequence[float],
    weights: Weights = "none",
    *,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
    confidence: float = 0.95,
) -> Kappa:
    """Cohen's κ (:func:`kappa_of_tables`) between the candidate's and the reference's
    values of ``pairs`` (one per unit, with its story), over ``categories``.

    Interval: ``bootstrap`` replicates (numpy ``default_rng(seed)``) each draw as many stories
    as there are, with replacement, keeping each story's units together, and compute κ; the
    interval is their (1 − confidence)/2 and (1 + confidence)/2 quantiles, replicates without
    a κ left out. Reference: Cohen (1960; 1968); Efron & Tibshirani (1993), ch. 13."""
    tables = confusion_tables(pairs, categories)

    def result(kappa, interval, valid, reason) -> Kappa:
        low, high = interval if interval is not None else (None, None)
        return Kappa(kappa, low, high, len(pairs), len(tables), weights, bootstrap, valid, reason)

    if not len(pairs):
        return result(None, None, 0, "no unit has both a verdict and a reference value")
    kappa = float(kappa_of_tables(tables.sum(axis=0), weights))
    if math.isnan(kappa):
        return result(None, None, 0, "one category throughout: κ is undefined")
    if not bootstrap:
        return result(kappa, None, 0, None)
    replicates = _bootstrap_kappas(tables, weights, bootstrap, seed)
    if not replicates.size:
        return result(kappa, None, 0, "no bootstrap replicate had a κ")
    tail = (1 - confidence) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    return result(kappa, (float(low), float(high)), int(replicates.size), None)


def _bootstrap_kappas(tables: np.ndarray, weights: Weights, resamples: int, seed: int):
    """κ of ``resamples`` replicates, each drawing as many stories (``tables``, one per
    story) as there are with replacement; replicates without a κ left out."""
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(tables), size=(resamples, len(tables)))
    counts = np.zeros((resamples, len(tables)))
    np.add.at(counts, (np.arange(resamples)[:, None], drawn), 1)
    replicates = kappa_of_tables(np.einsum("bs,sij->bij", counts, tables), weights)
    return replicates[~np.isnan(replicates)]


@dataclass(frozen=True)
class BinaryScores:
    """Yes/No verdicts of a candidate against the reference's, Yes the positive class
    (see :func:`binary_scores`); each a fraction (0–1), ``correlation`` a coefficient."""

    units: int
    balanced_accuracy: float | None
    precision: float | None
    recall: float | None
    f1: float | None
    correlation: float | None


def binary_scores(candidate: Sequence[float], reference: Sequence[float]) -> BinaryScores:
    """How well ``candidate`` verdicts (1 Yes, 0 No) recover ``reference`` ones, as the TTCW
    release's evaluation notebook reports them (scikit-learn's definitions):

    - balanced accuracy: the mean over the classes present in ``reference`` of the share of
      that class the candidate recovers ((recall + specificity) / 2 when both are present);
    - precision: TP / (TP + FP), 0 when the candidate never says Yes;
    - recall: TP / (TP + FN), 0 when the reference never says Yes;
    - F1: 2·precision·recall / (precision + recall), 0 when both are 0;
    - correlation: Pearson's r of the two 0/1 series (the φ coefficient), ``None`` when
      either never varies.

    All ``None`` when there is no pair. Reference: Brodersen et al. (2010); Chakrabarty et
    al. (2024), ``Evaluating_LLM.ipynb`` §3.1."""
    y = np.asarray(reference, dtype=float)
    p = np.asarray(candidate, dtype=float)
    if not y.size:
        return BinaryScores(0, None, None, None, None, None)
    tp = float(((y == 1) & (p == 1)).sum())
    fp = float(((y == 0) & (p == 1)).sum())
    fn = float(((y == 1) & (p == 0)).sum())
    recalls = [float((p[y == c] == c).mean()) for c in (0.0, 1.0) if (y == c).any()]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    varies = y.std() > 0 and p.std() > 0
    correlation = float(np.corrcoef(y, p)[0, 1]) if varies else None
    return BinaryScores(
        units=int(y.size),
        balanced_accuracy=float(np.mean(recalls)),
        precision=precision,
        recall=recall,
        f1=f1,
        correlation=correlation,
    )
