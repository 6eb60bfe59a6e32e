"""How many stories and raters per story a rating comparison needs: the power of the rating
analysis's own test of the difference between two sources (the crossed story × rater mixed
model, :mod:`cyoa.rating.analysis.mixed`).

The model of a study is the analysis's: a rating is y = μ_source + a_story + b_rater +
c_rater×source + e with SDs ``story_sd``, ``rater_sd``, ``rater_source_sd`` (how much raters
differ in how they rate one source against the other; 0 by default) and ``residual_sd`` (score
units), and the two sources' means ``difference`` apart. With raters who rate both sources the
rater × source variance does not shrink with more stories, only with more raters: power levels
off (Westfall, Kenny and Judd 2014; Card et al. 2020's "worker slope"). A planned design
has ``stories`` stories per source, each rated by ``raters_per_story`` raters, each rater
rating ``stories_per_rater`` stories alternating between the sources (:func:`planned_layout`,
as CYOA's assignment balances a rater's list).

- **Planned power** (:func:`planned_power`): the analysis's Satterthwaite t-test at α of the
  difference, its standard error and df computed for the planned layout at the assumed
  variances (:func:`cyoa.rating.analysis.mixed.planned_contrast`); power from the noncentral
  t, P(|T| > t_crit) with T ~ t(df, difference / SE). This is Westfall, Kenny and Judd's
  (2014) analytic power for crossed random effects; it needs no simulation, so a grid is fast.
- **Realised power** (:func:`simulated_power`): seeded studies simulated under the model
  and each analysed by :func:`cyoa.rating.analysis.mixed.source_model` itself, with a 95%
  Clopper–Pearson interval for the Monte-Carlo error: the check that the planned power is
  what CYOA's analysis delivers.

References:
    Westfall, J., Kenny, D. A. and Judd, C. M. (2014). Statistical power and optimal design in
    experiments in which samples of participants respond to samples of stimuli. Journal of
    Experimental Psychology: General 143(5).
    Card, D. et al. (2020). With little power comes great responsibility. EMNLP 2020.
    Satterthwaite, F. E. (1946). Biometrics Bulletin 2(6).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from cyoa.rating.analysis.mixed import planned_contrast, source_model

STORIES = (10, 15, 20, 30, 40, 60, 80, 100, 150, 200)
RATERS_PER_STORY = (2, 3, 5)
STORIES_PER_RATER = 2
TARGET = 0.8
ALPHA = 0.05
SOURCES = ("A", "B")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class RatingAssumptions:
    """What a plan assumes: the sources' ``difference`` and the SDs of the story, rater and
    residual effects and of the rater × source cells, all in the score's units."""

    difference: float
    story_sd: float
    rater_sd: float
    residual_sd: float
    rater_source_sd: float = 0.0

    def variances(self) -> tuple[float, float, float]:
        return (self.story_sd**2, self.rater_sd**2, self.residual_sd**2)


@dataclass(frozen=True)
class RatingCell:
    """Power of one design; ``se`` and ``df`` of the planned difference; ``low``–``high``
    the Monte-Carlo interval of a simulated power (equal to ``power`` when planned)."""

    stories: int
    raters_per_story: int
    stories_per_rater: int
    power: float
    low: float
    high: float
    se: float
    df: float
    simulations: int = 0

    @property
    def ratings(self) -> int:
        return 2 * self.stories * self.raters_per_story

    @property
    def raters(self) -> int:
        return math.ceil(self.ratings / self.stories_per_rater)


@dataclass(frozen=True)
class RatingPlan:
    assumptions: RatingAssumptions
    alpha: float
    target: float
    stories_per_rater: int
    cells: tuple[RatingCell, ...]
    chosen: RatingCell | None


def planned_layout(stories: int, raters_per_story: int, stories_per_rater: int) -> pd.DataFrame:
    """The ratings of a planned design (``story_id``, ``source``, ``rater_id``): ``stories``
    per source, interleaved A, B, A, …; the stories are dealt ``raters_per_story`` times
    over, in order, ``stories_per_rater`` consecutive ones to each new rater."""
    if stories < 2 or raters_per_story < 2 or stories_per_rater < 1:
        raise ValueError(
            "A rating design needs at least 2 stories per source and at least 2 raters per "
            f"story (the model must see a story twice), got {stories} and {raters_per_story}."
        )
    if stories_per_rater > 2 * stories:
        raise ValueError(
            f"{stories_per_rater} stories per rater is more than the {2 * stories} stories."
        )
    slots = np.arange(2 * stories * raters_per_story)
    story = slots % (2 * stories)
    return pd.DataFrame(
        {
            "story_id": [f"s{i}" for i in story],
            "source": np.array(SOURCES)[story % 2],
            "rater_id": [f"r{i}" for i in slots // stories_per_rater],
        }
    )


def _two_sided_power(difference: float, se: float, df: float, alpha: float) -> float:
    """P(|T| > t_crit) for T ~ noncentral t(df, |difference| / se). scipy's noncentral t
    gives NaN far out in the tail (a shift of dozens of standard errors); there the normal
    approximation, whose power is 1 to many decimals, is used."""
    from scipy import stats

    critical = stats.t.ppf(1 - alpha / 2, df)
    shift = abs(difference) / se
    power = float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))
    if not math.isfinite(power):
        power = float(stats.norm.sf(critical - shift) + stats.norm.cdf(-critical - shift))
    return min(1.0, power)


def planned_power(
    assumptions: RatingAssumptions,
    stories: int,
    raters_per_story: int,
    stories_per_rater: int = STORIES_PER_RATER,
    alpha: float = ALPHA,
) -> RatingCell:
    """The planned (analytic) power of the two-sided test of A − B at ``alpha`` for a design
    (see the module docstring)."""
    a = assumptions
    if not a.residual_sd > 0 or min(a.story_sd, a.rater_sd, a.rater_source_sd) < 0:
        raise ValueError(
            "The residual SD must be positive and the story, rater and rater × source SDs 0 "
            "or more."
        )
    layout = planned_layout(stories, raters_per_story, stories_per_rater)
    with threadpool_limits(1):
        se, df = planned_contrast(
            layout, a.variances(), np.array([1.0, -1.0]), rater_source=a.rater_source_sd**2
        )
    power = _two_sided_power(assumptions.difference, se, df, alpha)
    return RatingCell(stories, raters_per_story, stories_per_rater, power, power, power, se, df)


def plan_rating(
    assumptions: RatingAssumptions,
    *,
    stories: Sequence[int] = STORIES,
    raters_per_story: Sequence[int] = RATERS_PER_STORY,
    stories_per_rater: int = STORIES_PER_RATER,
    alpha: float = ALPHA,
    target: float = TARGET,
    progress: Progress | None = None,
) -> RatingPlan:
    """Planned power over ``stories`` × ``raters_per_story``, and the chosen design: power ≥
    ``target`` with the fewest ratings, then the fewest raters per story."""
    if not 0 < target < 1 or not 0 < alpha < 1:
        raise ValueError("The target power and α must lie strictly between 0 and 1.")
    grid = [(n, k) for n in sorted(set(stories)) for k in sorted(set(raters_per_story))]
    cells = []
    for done, (n, k) in enumerate(grid, start=1):
        cells.append(planned_power(assumptions, n, k, stories_per_rater, alpha))
        if progress:
            progress(done, len(grid))
    reaching = [cell for cell in cells if cell.power >= target]
    chosen = min(reaching, key=lambda c: (c.ratings, c.raters_per_story), default=None)
    return RatingPlan(assumptions, alpha, target, stories_per_rater, tuple(cells), chosen)


def simulate_study(
    assumptions: RatingAssumptions,
    stories: int,
    raters_per_story: int,
    stories_per_rater: int = STORIES_PER_RATER,
    seed: int | np.random.Generator = 0,
) -> pd.DataFrame:
    """One study's ratings drawn under the model (``score`` added to :func:`planned_layout`);
    source A's mean is ``difference`` above B's."""
    rng = np.random.default_rng(seed)
    layout = planned_layout(stories, raters_per_story, stories_per_rater)
    story_codes, story_ids = pd.factorize(layout["story_id"])
    rater_codes, rater_ids = pd.factorize(layout["rater_id"])
    story_effect = rng.normal(0, assumptions.story_sd, len(story_ids))
    rater_effect = rng.normal(0, assumptions.rater_sd, len(rater_ids))
    cell_codes, cell_ids = pd.factorize(layout["rater_id"] + "|" + layout["source"])
    cell_effect = np.zeros(len(cell_ids))
    if assumptions.rater_source_sd > 0:  # drawn only then: without it, the draws are as before
        cell_effect = rng.normal(0, assumptions.rater_source_sd, len(cell_ids))
    score = (
        assumptions.difference * (layout["source"] == SOURCES[0]).to_numpy()
        + story_effect[story_codes]
        + rater_effect[rater_codes]
        + cell_effect[cell_codes]
        + rng.normal(0, assumptions.residual_sd, len(layout))
    )
    return layout.assign(score=score)


def simulated_power(
    assumptions: RatingAssumptions,
    stories: int,
    raters_per_story: int,
    stories_per_rater: int = STORIES_PER_RATER,
    simulations: int = 200,
    *,
    alpha: float = ALPHA,
    seed: int = 0,
    progress: Progress | None = None,
) -> RatingCell:
    """The realised power of a design: the share of ``simulations`` seeded studies whose
    difference :func:`~cyoa.rating.analysis.mixed.source_model` finds with p ≤ ``alpha``
    (a study the model cannot fit, analysed by the bootstrap, has no p and does not
    reject), with a 95% Clopper–Pearson interval."""
    from scipy import stats

    rng = np.random.default_rng(seed)
    rejections = 0
    with threadpool_limits(1):
        for done in range(1, simulations + 1):
            study = simulate_study(assumptions, stories, raters_per_story, stories_per_rater, rng)
            p = source_model(study, "score").differences[0].p_value
            rejections += p is not None and p <= alpha
            if progress:
                progress(done, simulations)
    interval = stats.binomtest(rejections, simulations).proportion_ci(0.95, method="exact")
    power = rejections / simulations
    planned = planned_power(assumptions, stories, raters_per_story, stories_per_rater, alpha)
    return RatingCell(
        stories, raters_per_story, stories_per_rater, power, float(interval.low),
        float(interval.high), planned.se, planned.df, simulations,
    )  # fmt: skip


@dataclass(frozen=True)
class PilotEstimate:
    """What a rating pilot gives: the SDs of the crossed model's variance components (score
    units), its ``sources``, and the absolute ``difference`` of the pair compared (None when
    the pilot's stories come from one source: there is no comparison to estimate)."""

    story_sd: float
    rater_sd: float
    residual_sd: float
    rater_source_sd: float
    sources: tuple[str, ...]
    difference: float | None


def estimate_pilot(ratings: pd.DataFrame, pair: tuple[str, str] | None = None) -> PilotEstimate:
    """The estimates a pilot gives: the SDs of the crossed model's variance components (the
    rater × source SD 0 where the pilot's model leaves that component out) and the absolute
    difference of ``pair`` (default: the first pair of sources in sorted order; none with one
    source), from :func:`~cyoa.rating.analysis.mixed.source_model` of ``ratings``
    (``story_id``, ``source``, ``rater_id``, ``score``). :class:`ValueError` with a sentence
    when the model cannot be fitted to the pilot."""
    model = source_model(ratings, "score")  # fitted on one BLAS thread (source_model)
    if model is None:
        raise ValueError("The pilot has no ratings to plan from.")
    if model.components is None or model.components.rater is None:
        raise ValueError(
            f"{model.note or 'The pilot has no rater effect.'} Plan from assumptions instead "
            "(--assume difference=…,story_sd=…,rater_sd=…,residual_sd=…)."
        )
    differences = {(d.first, d.second): d.difference for d in model.differences}
    if pair is not None and tuple(sorted(pair)) not in differences:
        raise ValueError(f"The pilot has no sources {pair[0]} and {pair[1]} to compare.")
    difference = None
    if model.differences:
        difference = differences[tuple(sorted(pair))] if pair else model.differences[0].difference
    parts = model.components
    return PilotEstimate(
        math.sqrt(parts.story), math.sqrt(parts.rater), math.sqrt(parts.residual),
        math.sqrt(parts.rater_source or 0.0), tuple(sorted(ratings["source"].astype(str).unique())),
        None if difference is None else abs(difference),
    )  # fmt: skip
