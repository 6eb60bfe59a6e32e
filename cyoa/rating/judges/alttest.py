"""Can a judge stand in for one more human rater? The alternative annotator test (pure).

Calderon, Reichart and Dror (2025) leave one human rater out at a time and ask who represents
the remaining raters better on each instance (here: a story's answer to an item): the judge,
or the rater left out. With the rater left out ``j`` and the others' answers ``H₋ⱼ(i)``, an
*alignment score* S is the share of the others who gave the same answer (``accuracy``, for
Yes/No items) or minus the root mean squared difference from them (``neg_rmse``, for Likert
items). Per instance, the judge's indicator is 1 when S(judge) ≥ S(rater j), the rater's when
S(rater j) ≥ S(judge) (a tie counts for both). For each rater j with at least
``min_instances`` instances, a one-sided one-sample t-test of the differences
``d = rater indicator − judge indicator`` against ε asks whether their mean is below ε
(H₀: mean(d) ≥ ε, the judge does not hold its own within the margin ε, which credits the judge
for being cheaper and faster; the authors suggest 0.2 for expert raters, 0.15 for skilled and
0.1 for crowd workers). The p-values are corrected by Benjamini and Yekutieli's procedure at
``q``; the *winning rate* is the share of tested raters whose H₀ is rejected, and the judge
passes when it is at least 0.5. The *advantage probability* is the mean over raters of the
judge's indicator: how often it is as good as or better than a rater, to compare judges.

Here the procedure is run per item (criterion) and over all items pooled. Which p-values are
corrected together (the *family*) is a choice: ``"criterion"`` (the default) corrects each
criterion's raters on their own, as the authors' code does (nitaytech/AltTest, one call of its
test per dataset), so that a verdict can be compared with theirs; ``"judge"`` corrects every
criterion's raters of one judge together, which asks more of each criterion (the threshold of
fourteen TTCW criteria × three experts is stricter than that of three) and keeps the share of
false passes across the criteria at q, not per criterion.

References:
    Calderon, N., Reichart, R. and Dror, R. (2025). The Alternative Annotator Test for
    LLM-as-a-Judge: How to Statistically Justify Replacing Human Annotators with LLMs. ACL.
    Benjamini, Y. and Yekutieli, D. (2001). The control of the false discovery rate in
    multiple testing under dependency. Annals of Statistics 29(4), 1165–1188.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

Score = Literal["accuracy", "neg_rmse"]
Family = Literal["criterion", "judge"]
FAMILIES: tuple[Family, ...] = ("criterion", "judge")
EPSILON = 0.2  # the authors' suggestion for expert raters
Q = 0.05
MIN_INSTANCES = 30  # the authors' least number of instances per rater
# Rater → instance → answer; instance → the judge's answer.
Humans = Mapping[str, Mapping[str, float]]
Judge = Mapping[str, float]


@dataclass(frozen=True)
class RaterTest:
    """One rater left out: ``instances`` compared, ``advantage`` the share where the judge
    aligns with the others at least as well as this rater, the t-test's ``p_value`` and the
    Benjamini–Yekutieli adjusted p-value, and whether H₀ is ``rejected`` (the judge wins)."""

    rater_id: str
    instances: int
    advantage: float
    p_value: float
    p_adjusted: float | None
    rejected: bool


@dataclass(frozen=True)
class AltTest:
    """The alternative annotator test of one judge on one criterion (see the module);
    ``family``: which p-values the Benjamini–Yekutieli correction took together."""

    epsilon: float
    q: float
    tests: tuple[RaterTest, ...]
    skipped: tuple[str, ...]  # raters with fewer than min_instances instances
    min_instances: int
    winning_rate: float | None
    advantage_probability: float | None
    passed: bool | None
    reason: str | None
    family: Family = "criterion"


def alignment(answer: float, others: list[float], score: Score) -> float:
    """S: the share of ``others`` equal to ``answer`` (``accuracy``) or minus the root mean
    squared difference from them (``neg_rmse``)."""
    if score == "accuracy":
        return sum(other == answer for other in others) / len(others)
    return -math.sqrt(sum((other - answer) ** 2 for other in others) / len(others))


def one_sided_p(differences: list[int], epsilon: float) -> float:
    """p of the one-sample t-test of H₀: mean(d) ≥ ε against mean(d) < ε: with n
    differences, t = (mean − ε) / (s / √n), s their standard deviation (n − 1 in the
    denominator), and p = P(T ≤ t) for Student's T with n − 1 degrees of freedom (as scipy's
    ``ttest_1samp(…, alternative="less")``). Differences that never vary leave no variance
    to test with: p is 0 when their mean is below ε, else 1."""
    from scipy import stats

    values = np.asarray(differences, dtype=float)
    if values.std() == 0:
        return 0.0 if values.mean() < epsilon else 1.0
    spread = values.std(ddof=1) / math.sqrt(values.size)
    return float(stats.t.cdf((values.mean() - epsilon) / spread, values.size - 1))


def _rater_test(
    rater: str, humans: Humans, judge: Judge, score: Score, epsilon: float
) -> tuple[int, float, float]:
    """(instances, advantage, p) for ``rater`` left out, over the instances they answered
    that the judge answered and at least one other rater answered."""
    judge_wins, differences = [], []
    for instance, answer in humans[rater].items():
        others = [
            answers[instance]
            for other, answers in humans.items()
            if other != rater and instance in answers
        ]
        if instance not in judge or not others:
            continue
        human_score = alignment(answer, others, score)
        judge_score = alignment(judge[instance], others, score)
        judge_wins.append(int(judge_score >= human_score))
        differences.append(int(human_score >= judge_score) - judge_wins[-1])
    if not differences:
        return 0, math.nan, math.nan
    return len(differences), float(np.mean(judge_wins)), one_sided_p(differences, epsilon)


def alt_tests(
    criteria: Mapping[str, tuple[Humans, Judge]],
    score: Mapping[str, Score],
    *,
    epsilon: float = EPSILON,
    q: float = Q,
    min_instances: int = MIN_INSTANCES,
    family: Family = "criterion",
) -> dict[str, AltTest]:
    """The alternative annotator test of one judge on each criterion (name → the human
    raters' answers and the judge's, and ``score[name]``), the raters' p-values corrected by
    Benjamini–Yekutieli (statsmodels ``fdr_by``) at ``q``: each criterion's on their own
    (``family="criterion"``, the authors' code) or every criterion's together
    (``family="judge"``)."""
    if family not in FAMILIES:
        raise ValueError(f"The family must be one of {', '.join(FAMILIES)}, got {family!r}.")
    found: dict[str, list[tuple[str, int, float, float]]] = {}
    skipped: dict[str, list[str]] = {}
    for name, (humans, judge) in criteria.items():
        found[name], skipped[name] = [], []
        for rater in humans:
            instances, advantage, p = _rater_test(rater, humans, judge, score[name], epsilon)
            if instances < min_instances:
                skipped[name].append(rater)
            else:
                found[name].append((rater, instances, advantage, p))
    families = [list(found)] if family == "judge" else [[name] for name in found]
    results = {}
    for names in families:
        p_values = [p for name in names for *_, p in found[name]]
        rejected, adjusted = by_correction(p_values, q)
        at = 0
        for name in names:
            rows = tuple(
                RaterTest(rater, n, advantage, p, adjusted[at + k], rejected[at + k])
                for k, (rater, n, advantage, p) in enumerate(found[name])
            )
            at += len(rows)
            summary = _summary(rows, tuple(skipped[name]), epsilon, q, min_instances)
            results[name] = replace(summary, family=family)
    return results


def by_correction(p_values: list[float], q: float) -> tuple[list[bool], list[float]]:
    """Benjamini–Yekutieli's step-up procedure at ``q`` over ``p_values``: with m p-values
    sorted p₍₁₎ ≤ … ≤ p₍ₘ₎ and c(m) = Σᵢ₌₁ᵐ 1/i, the adjusted p₍ᵢ₎ is
    min over j ≥ i of min(1, m·c(m)·p₍ⱼ₎ / j), and a hypothesis is rejected when its adjusted
    p ≤ q (statsmodels ``multipletests(method="fdr_by")``). Valid under any dependence
    between the tests. Reference: Benjamini & Yekutieli (2001), Theorem 1.1."""
    if not p_values:
        return [], []
    from statsmodels.stats.multitest import multipletests  # at use: 2 s of CPU to import

    rejected, adjusted = multipletests(p_values, alpha=q, method="fdr_by")[:2]
    return [bool(r) for r in rejected], [float(a) for a in adjusted]


def _summary(
    tests: tuple[RaterTest, ...], skipped: tuple[str, ...], epsilon: float, q: float, least: int
) -> AltTest:
    """The winning rate, advantage probability and verdict of one criterion's rater tests."""
    if not tests:
        reason = (
            f"no rater judged {least} or more of these units with others"
            if skipped
            else "fewer than two human raters: nobody to leave out"
        )
        return AltTest(epsilon, q, tests, skipped, least, None, None, None, reason)
    winning = sum(test.rejected for test in tests) / len(tests)
    advantage = float(np.mean([test.advantage for test in tests]))
    return AltTest(epsilon, q, tests, skipped, least, winning, advantage, winning >= 0.5, None)
