"""How many human-rated stories pin a judge's κ against the humans to a chosen interval width.

A judge is calibrated by Cohen's κ between its yes/no verdicts and the humans' consensus
(:func:`cyoa.rating.judges.measures.cohen_kappa`). For an assumed κ, the humans' share of
"yes" π_h and the judge's π_j (default: the humans'), the 2 × 2 table of proportions is fixed:
p_e = π_j π_h + (1 − π_j)(1 − π_h), p_o = κ (1 − p_e) + p_e, and the disagreements
1 − p_o split so that the margins are π_j and π_h. Its large-sample variance of κ̂ over n
stories is Fleiss, Cohen and Everitt's (1969):

    n Var(κ̂) = [Σ_i p_ii ((1 − p_e) − (p_i. + p_.i)(1 − p_o))²
                + (1 − p_o)² Σ_{i≠j} p_ij (p_.i + p_j.)² − (p_o p_e − 2 p_e + p_o)²]
               / (1 − p_e)⁴,

so a 95% interval κ̂ ± z √Var has width 2 z √Var and the stories needed for a width w are
n = ⌈(2 z)² n Var(κ̂) / w²⌉. CYOA reports a percentile bootstrap interval over stories; a
seeded simulation (:func:`realised_width`) checks that it has the planned width at n.

References:
    Fleiss, J. L., Cohen, J. and Everitt, B. S. (1969). Large sample standard errors of kappa
    and weighted kappa. Psychological Bulletin 72(5).
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20(1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cyoa.rating.judges.measures import cohen_kappa

WIDTH = 0.2
CONFIDENCE = 0.95


@dataclass(frozen=True)
class KappaPlan:
    """Stories needed for a 95% interval of κ of ``width``, from the table the assumptions
    give (rows the judge's no/yes, columns the humans') and its per-story variance of κ̂."""

    kappa: float
    prevalence: float
    judge_prevalence: float
    width: float
    table: tuple[tuple[float, float], tuple[float, float]]
    unit_variance: float
    stories: int


def agreement_table(kappa: float, prevalence: float, judge_prevalence: float) -> np.ndarray:
    """The 2 × 2 table of proportions (rows the judge's no/yes, columns the humans') with
    Cohen's κ ``kappa`` and the margins given; :class:`ValueError` with a sentence when no
    such table exists."""
    if not (0 < prevalence < 1 and 0 < judge_prevalence < 1):
        raise ValueError(
            f"The shares of 'yes' lie strictly between 0 and 1, got {prevalence} and "
            f"{judge_prevalence}."
        )
    chance = judge_prevalence * prevalence + (1 - judge_prevalence) * (1 - prevalence)
    disagree = 1 - (kappa * (1 - chance) + chance)
    yes_yes = (judge_prevalence + prevalence - disagree) / 2
    table = np.array(
        [
            [1 - judge_prevalence - prevalence + yes_yes, prevalence - yes_yes],
            [judge_prevalence - yes_yes, yes_yes],
        ]
    )
    if not -1 <= kappa <= 1 or np.any(table < -1e-12):
        raise ValueError(
            f"No judge with a 'yes' share of {judge_prevalence} agrees with humans saying "
            f"'yes' {prevalence:.0%} of the time at κ = {kappa}: choose a κ nearer 0."
        )
    return np.clip(table, 0, 1)


def kappa_unit_variance(table: np.ndarray) -> float:
    """n Var(κ̂) of Fleiss, Cohen & Everitt (1969) for a k × k table of proportions."""
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    observed, chance = float(np.trace(table)), float(rows @ cols)
    diagonal = np.diag(table) * ((1 - chance) - (rows + cols) * (1 - observed)) ** 2
    off = table * (cols[:, None] + rows[None, :]) ** 2
    off_sum = float(off.sum() - np.trace(off))
    last = (observed * chance - 2 * chance + observed) ** 2
    return (float(diagonal.sum()) + (1 - observed) ** 2 * off_sum - last) / (1 - chance) ** 4


def plan_kappa(
    kappa: float,
    prevalence: float,
    width: float = WIDTH,
    judge_prevalence: float | None = None,
) -> KappaPlan:
    """The human-rated stories needed to pin κ to a 95% interval of ``width`` (see the module
    docstring). Units: ``width`` on κ's scale; ``prevalence`` a fraction."""
    from scipy import stats

    if not 0 < width < 2:
        raise ValueError(f"The interval width of κ lies between 0 and 2, got {width}.")
    judge = prevalence if judge_prevalence is None else judge_prevalence
    table = agreement_table(kappa, prevalence, judge)
    variance = kappa_unit_variance(table)
    z = stats.norm.ppf((1 + CONFIDENCE) / 2)
    stories = max(2, math.ceil((2 * z) ** 2 * variance / width**2))
    cells = tuple(tuple(float(v) for v in row) for row in table)
    return KappaPlan(kappa, prevalence, judge, width, cells, variance, stories)  # type: ignore[arg-type]


def realised_width(
    plan: KappaPlan, studies: int = 100, bootstrap: int = 500, seed: int = 0
) -> tuple[float, float]:
    """The mean width (and its Monte-Carlo standard error) of CYOA's bootstrap interval of κ
    over ``studies`` seeded studies of ``plan.stories`` stories drawn from the plan's table."""
    rng = np.random.default_rng(seed)
    cells = rng.choice(4, (studies, plan.stories), p=np.ravel(plan.table))
    widths = []
    for study, drawn in enumerate(cells):
        pairs = [(f"s{i}", float(c // 2), float(c % 2)) for i, c in enumerate(drawn)]
        kappa = cohen_kappa(pairs, [0.0, 1.0], bootstrap=bootstrap, seed=study)
        if kappa.ci_low is not None:
            widths.append(kappa.ci_high - kappa.ci_low)
    found = np.asarray(widths)
    return float(found.mean()), float(found.std(ddof=1) / math.sqrt(found.size))
