"""How many stories and raters per story pin Krippendorff's α to a chosen interval width:
the precision of agreement a rating study will report.

CYOA reports α with a 95% percentile bootstrap interval over stories
(:func:`cyoa.rating.analysis.agreement.krippendorff_alpha`). This module simulates seeded
studies at each design and computes that same interval for each, by the same resampling
(each replicate draws as many stories as there are, with replacement); the **expected
width** of a design is the mean width over the simulated studies, with its Monte-Carlo
standard error (the SD of the widths over √studies).

Two models of a rating, each with the agreement level ``alpha_agreement`` it implies:

- **Interval** (Likert items scored as numbers, the rating plan's model,
  :mod:`cyoa.rating.planning`): y = a_story + b_rater + e with SDs ``story_sd``, ``rater_sd``
  and ``residual_sd``. Interval α estimates the story variance share
  σ²_story / (σ²_story + σ²_rater + σ²_residual) (Krippendorff 2004, §11.3: α is an
  intraclass correlation for interval data). Ratings are continuous here, so the plan is for
  interval α; CYOA's default for Likert items, ordinal α, is close to it on a scale of five
  or more points.
- **Binary** (yes/no items): each story's chance of a "yes" is drawn from a Beta
  distribution with mean ``prevalence`` and intraclass correlation ρ = 1 / (a + b + 1), and
  its raters answer independently (the beta-binomial model). Nominal α and κ estimate ρ
  (Fleiss & Cuzick 1979), so ρ = ``alpha_agreement``. Raters have no bias of their own.

α is computed from each unit's sums, not by the ``krippendorff`` package, so that a
bootstrap replicate is a weighted sum and a whole design's replicates are one matrix product:
with n pairable ratings, a unit's m_u ratings x_ui, D_o = (1/n) Σ_u Σ_{i≠j} δ(x_ui, x_uj) /
(m_u − 1), D_e = Σ_{all i≠j} δ(x_i, x_j) / (n (n − 1)), α = 1 − D_o / D_e, δ the squared
difference (interval) or 0/1 (nominal); a test checks it against ``krippendorff.alpha``.

References:
    Krippendorff, K. (2004). Content Analysis: An Introduction to Its Methodology, 2nd ed.
    Sage, ch. 11.
    Hayes, A. F. and Krippendorff, K. (2007). Answering the call for a standard reliability
    measure for coding data. Communication Methods and Measures 1(1) (bootstrapped α).
    Fleiss, J. L. and Cuzick, J. (1979). The reliability of dichotomous judgments: unequal
    numbers of judges per subject. Applied Psychological Measurement 3(4).
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 13.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

STORIES = (10, 20, 30, 40, 60, 80, 100, 150, 200)
RATERS_PER_STORY = (2, 3, 5)
STORIES_PER_RATER = 2
WIDTH = 0.2
STUDIES = 60
BOOTSTRAP = 300
CONFIDENCE = 0.95

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class AgreementAssumptions:
    """The model of a rating: ``binary`` with ``prevalence`` (share of "yes") and
    ``alpha_agreement`` (the intraclass correlation), or interval with the SDs of the story,
    rater and residual effects (score units)."""

    story_sd: float = 0.0
    rater_sd: float = 0.0
    residual_sd: float = 1.0
    binary: bool = False
    prevalence: float = 0.5
    alpha_agreement: float = 0.0

    @property
    def expected_alpha(self) -> float:
        """The α the model implies: the story variance share, or ρ for binary ratings."""
        if self.binary:
            return self.alpha_agreement
        total = self.story_sd**2 + self.rater_sd**2 + self.residual_sd**2
        return self.story_sd**2 / total


def interval_assumptions(
    alpha_agreement: float, rater_sd: float = 0.0, residual_sd: float = 1.0
) -> AgreementAssumptions:
    """Interval assumptions with α = ``alpha_agreement``: the rater and residual SDs kept,
    the story SD set so that the story variance share is α. :class:`ValueError` unless
    0 ≤ α < 1 and the rater and residual variances add to more than 0."""
    noise = rater_sd**2 + residual_sd**2
    if not 0 <= alpha_agreement < 1 or noise <= 0:
        raise ValueError(
            f"An agreement level lies in [0, 1) and needs some rater or residual variance, "
            f"got α = {alpha_agreement}."
        )
    story_sd = math.sqrt(alpha_agreement * noise / (1 - alpha_agreement))
    return AgreementAssumptions(story_sd, rater_sd, residual_sd, alpha_agreement=alpha_agreement)


def binary_assumptions(alpha_agreement: float, prevalence: float) -> AgreementAssumptions:
    """Binary assumptions; :class:`ValueError` unless 0 < α < 1 and 0 < prevalence < 1."""
    if not (0 < alpha_agreement < 1 and 0 < prevalence < 1):
        raise ValueError(
            "Binary agreement needs 0 < alpha_agreement < 1 and 0 < prevalence < 1, got "
            f"{alpha_agreement} and {prevalence}."
        )
    return AgreementAssumptions(binary=True, prevalence=prevalence, alpha_agreement=alpha_agreement)


@dataclass(frozen=True)
class WidthCell:
    """One design's expected 95% interval width of α and its Monte-Carlo standard error,
    with the mean α of the simulated studies; ``stories`` counts all stories rated."""

    stories: int
    raters_per_story: int
    width: float
    mc_error: float
    mean_alpha: float
    studies: int

    @property
    def ratings(self) -> int:
        return self.stories * self.raters_per_story


@dataclass(frozen=True)
class WidthPlan:
    assumptions: AgreementAssumptions
    width: float
    studies: int
    bootstrap: int
    seed: int
    cells: tuple[WidthCell, ...]
    chosen: WidthCell | None


def simulate_ratings(
    a: AgreementAssumptions,
    stories: int,
    raters_per_story: int,
    rng: np.random.Generator,
    studies: int = 1,
) -> np.ndarray:
    """``studies`` × ``stories`` × ``raters_per_story`` ratings drawn under the model; the
    raters are dealt :data:`STORIES_PER_RATER` consecutive story slots each, as
    :func:`cyoa.rating.planning.planned_layout` deals them."""
    shape = (studies, stories, raters_per_story)
    if a.binary:
        total = 1 / a.alpha_agreement - 1
        chance = rng.beta(a.prevalence * total, (1 - a.prevalence) * total, shape[:2])
        return (rng.random(shape) < chance[..., None]).astype(float)
    slots = np.arange(stories * raters_per_story).reshape(raters_per_story, stories).T
    rater_of = slots // STORIES_PER_RATER
    raters = rng.normal(0, a.rater_sd, (studies, int(rater_of.max()) + 1))
    story = rng.normal(0, a.story_sd, shape[:2])[..., None]
    return story + raters[:, rater_of] + rng.normal(0, a.residual_sd, shape)


def unit_sums(ratings: np.ndarray, binary: bool) -> np.ndarray:
    """Per unit (the last axis holds its m ratings) the sums α is built from: m, the
    within-unit disagreement Σ_{i≠j} δ / (m − 1), Σ x and Σ x² (for 0/1 ratings Σ x² = Σ x)."""
    m = ratings.shape[-1]
    total, squares = ratings.sum(axis=-1), (ratings**2).sum(axis=-1)
    within = 2 * (m * squares - total**2) / (m - 1)
    if binary:
        within = within / 2
    return np.stack([np.full_like(total, m), within, total, squares], axis=-1)


def alpha_of_sums(sums: np.ndarray, binary: bool) -> np.ndarray:
    """α from summed unit sums (last axis: n, Σ within, Σ x, Σ x²); NaN where D_e = 0."""
    n, within, total, squares = np.moveaxis(sums, -1, 0)
    pairs_all = 2 * (n * squares - total**2)
    if binary:
        pairs_all = pairs_all / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = pairs_all / (n * (n - 1))
        return np.where(expected > 1e-12, 1 - (within / n) / expected, np.nan)


def interval_widths(
    ratings: np.ndarray, binary: bool, bootstrap: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Each study's α and the width of its percentile bootstrap interval over stories
    (``ratings``: studies × stories × raters); replicates without an α are left out."""
    sums = unit_sums(ratings, binary)
    studies, stories = ratings.shape[:2]
    drawn = rng.integers(0, stories, (studies, bootstrap, stories))
    rows = np.arange(studies * bootstrap).reshape(studies, bootstrap, 1) * stories
    weights = np.bincount((rows + drawn).ravel(), minlength=studies * bootstrap * stories)
    weights = weights.reshape(studies, bootstrap, stories).astype(float)
    replicates = alpha_of_sums(np.einsum("sbu,suk->sbk", weights, sums), binary)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.nanquantile(replicates, [tail, 1 - tail], axis=1)
    return alpha_of_sums(sums.sum(axis=1), binary), high - low


def expected_width(
    a: AgreementAssumptions,
    stories: int,
    raters_per_story: int,
    *,
    studies: int = STUDIES,
    bootstrap: int = BOOTSTRAP,
    seed: int | np.random.Generator = 0,
) -> WidthCell:
    """The expected 95% width of α's bootstrap interval over ``stories`` stories each rated
    by ``raters_per_story`` raters: the mean over ``studies`` seeded simulated studies, each
    with ``bootstrap`` replicates. Units: α's scale (a coefficient)."""
    if stories < 2 or raters_per_story < 2:
        raise ValueError(
            f"α needs at least 2 stories and 2 raters per story, got {stories} and "
            f"{raters_per_story}."
        )
    rng = np.random.default_rng(seed)
    ratings = simulate_ratings(a, stories, raters_per_story, rng, studies)
    alphas, widths = interval_widths(ratings, a.binary, bootstrap, rng)
    widths = widths[~np.isnan(widths)]
    error = float(widths.std(ddof=1) / math.sqrt(widths.size)) if widths.size > 1 else math.nan
    return WidthCell(
        stories, raters_per_story, float(widths.mean()), error, float(np.nanmean(alphas)),
        int(widths.size),
    )  # fmt: skip


def plan_alpha_width(
    a: AgreementAssumptions,
    *,
    width: float = WIDTH,
    stories: Sequence[int] = STORIES,
    raters_per_story: Sequence[int] = RATERS_PER_STORY,
    studies: int = STUDIES,
    bootstrap: int = BOOTSTRAP,
    seed: int = 0,
    progress: Progress | None = None,
) -> WidthPlan:
    """Expected widths over ``stories`` × ``raters_per_story`` (each cell seeded from
    ``seed`` and its design), and the chosen design: expected width ≤ ``width`` with the
    fewest ratings, then the fewest raters per story."""
    if not 0 < width < 2:
        raise ValueError(f"The interval width of α lies between 0 and 2, got {width}.")
    grid = [(n, k) for n in sorted(set(stories)) for k in sorted(set(raters_per_story))]
    cells = []
    for done, (n, k) in enumerate(grid, start=1):
        rng = np.random.default_rng([seed, n, k])
        cells.append(expected_width(a, n, k, studies=studies, bootstrap=bootstrap, seed=rng))
        if progress:
            progress(done, len(grid))
    reaching = [cell for cell in cells if cell.width <= width]
    chosen = min(reaching, key=lambda c: (c.ratings, c.raters_per_story), default=None)
    return WidthPlan(a, width, studies, bootstrap, seed, tuple(cells), chosen)
