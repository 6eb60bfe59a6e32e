"""The precision sections of a rating plan (:mod:`cyoa.rating.planner`): the expected width of
α's interval (:mod:`cyoa.rating.agreement_planning`), readers per FEI question
(:mod:`cyoa.rating.fei_planning`) and the stories that pin a judge's κ
(:mod:`cyoa.rating.judges.planning`), from a stored pilot or from typed assumptions."""

from __future__ import annotations

import itertools
import math
import statistics
from typing import Any

from cyoa.db.facade import Db
from cyoa.errors import AnalysisError, PlanInputError
from cyoa.rating import agreement_planning, fei_planning
from cyoa.rating.analysis.data import load_ratings
from cyoa.rating.analysis.fei import question_entropies
from cyoa.rating.judges import planning as judge_planning
from cyoa.rating.judges.report import judge_calibrations

# Kinds planned from assumptions only by this module, and their assumptions.
KINDS = ("fei", "judge")
FEI_KEYS = {"share_a", "share_b", "stories", "questions", "tolerance"}
JUDGE_KEYS = {"kappa", "prevalence", "judge_prevalence", "width"}
# Assumptions a rating plan takes for the precision of α.
RATING_KEYS = {"alpha_agreement", "prevalence"}


def _number(values: dict[str, float], key: str, default: float | None = None) -> float:
    if key in values:
        return values[key]
    if default is None:
        raise PlanInputError(f"This plan needs {key}=… in --assume.")
    return default


def _refused(error: ValueError) -> PlanInputError:
    return PlanInputError(str(error))


def alpha_width_text(values: dict[str, float], o: Any, width: float) -> str:
    """The expected 95% width of α's interval per design and the smallest design reaching
    ``width``: binary when ``prevalence`` is given, else interval from the SDs (with
    ``alpha_agreement`` setting the story SD when given)."""
    try:
        if "prevalence" in values:
            a = agreement_planning.binary_assumptions(
                _number(values, "alpha_agreement"), values["prevalence"]
            )
        elif "alpha_agreement" in values:
            a = agreement_planning.interval_assumptions(
                values["alpha_agreement"], values.get("rater_sd", 0.0),
                values.get("residual_sd", 1.0),
            )  # fmt: skip
        else:
            a = agreement_planning.AgreementAssumptions(
                _number(values, "story_sd"), _number(values, "rater_sd"),
                _number(values, "residual_sd"),
            )  # fmt: skip
        plan = agreement_planning.plan_alpha_width(a, width=width, seed=o.seed, progress=o.progress)
    except ValueError as error:
        raise _refused(error) from None
    model = f"yes/no, {a.prevalence:.0%} yes" if a.binary else "interval scores"
    lines = [
        f"Precision of agreement: α ≈ {a.expected_alpha:.3f} ({model}); expected width of "
        f"CYOA's 95% bootstrap interval of α, {plan.studies} studies × {plan.bootstrap} "
        f"replicates per design, seed {plan.seed}; target width {plan.width}.",
        "",
        "| stories (all sources) | raters per story | ratings | expected width | MC error |",
        "|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {c.stories} | {c.raters_per_story} | {c.ratings} | {c.width:.3f} | {c.mc_error:.3f} |"
        for c in plan.cells
    ]
    c = plan.chosen
    lines.append(
        "\nNo design of the grid pins α to that width."
        if c is None
        else f"\nSmallest design for α ± {plan.width / 2:.2f}: {c.stories} stories in all × "
        f"{c.raters_per_story} raters per story (expected width {c.width:.3f})."
    )
    return "\n".join(lines)


def fei_text(shares: tuple[list[float], list[float]], stories: int, questions: int,
             o: Any, tolerance: float, names: tuple[str, str] = ("A", "B")) -> str:  # fmt: skip
    """Readers per question: expected entropy, bias, SD of E(Q) and power per readers."""
    try:
        plan = fei_planning.plan_readers(
            shares, stories, questions, tolerance=tolerance, target=o.target,
            alpha=o.alpha, seed=o.seed, progress=o.progress,
        )  # fmt: skip
    except ValueError as error:
        raise _refused(error) from None
    a, b = names
    lines = [
        f"FEI readers per question: {stories} stories per source, {questions} questions per "
        f"story; true E(Q) {a} {plan.true[0]:.3f}, {b} {plan.true[1]:.3f} bits; two-sided "
        f"Mann–Whitney at α = {plan.alpha}, target power {plan.target}; "
        f"{plan.simulations} simulations, seed {plan.seed}.",
        "",
        f"| readers | E[H] {a} | bias {a} | SD E(Q) {a} | E[H] {b} | bias {b} | SD E(Q) {b} "
        "| power | 95% MC interval |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {c.readers} | {c.expected[0]:.3f} | {c.bias[0]:+.3f} | {c.sd[0]:.3f} | "
        f"{c.expected[1]:.3f} | {c.bias[1]:+.3f} | {c.sd[1]:.3f} | {c.power:.3f} | "
        f"{c.low:.3f}–{c.high:.3f} |"
        for c in plan.cells
    ]
    lines += _too_few_stories(stories, o.alpha)
    c = plan.chosen
    lines.append(
        f"\nNo number of readers up to {plan.cells[-1].readers} has a bias within "
        f"{tolerance} bits and the target power."
        if c is None
        else f"\nReaders per question: {c.readers} (bias within {tolerance} bits, power "
        f"{c.power:.3f})."
    )
    return "\n".join(lines)


def _too_few_stories(stories: int, alpha: float) -> list[str]:
    """A note when no number of readers can help: with n stories per source the exact
    two-sided Mann–Whitney p is at least 2 / C(2n, n) (the two sources fully separated)."""
    if 2 / math.comb(2 * stories, stories) <= alpha:
        return []
    enough = next(n for n in itertools.count(stories) if 2 / math.comb(2 * n, n) <= alpha)
    return [
        f"\nWith {stories} stories per source the two-sided Mann–Whitney test cannot reach "
        f"p < {alpha} whatever the readers (its smallest p is "
        f"{2 / math.comb(2 * stories, stories):.3f}): plan at least {enough} stories per source."
    ]


def kappa_text(rows: list[tuple[str, float, float]], width: float) -> str:
    """Stories needed per judge: ``rows`` are (judge, κ, humans' share of yes)."""
    lines = [
        f"Judges: human-rated stories needed to pin κ to a 95% interval {width} wide "
        "(Fleiss, Cohen & Everitt 1969 variance).",
        "",
        "| judge | κ | humans' yes | stories |",
        "|---|---:|---:|---:|",
    ]
    for judge, kappa, prevalence in rows:
        try:
            found = str(judge_planning.plan_kappa(kappa, prevalence, width).stories)
        except ValueError as error:
            found = str(error)
        lines.append(f"| {judge} | {kappa:.3f} | {prevalence:.0%} | {found} |")
    return "\n".join(lines)


def assumed_text(kind: str, values: dict[str, float], o: Any, width: float) -> str:
    """An FEI or judge plan from typed assumptions (``--kind fei|judge --assume …``)."""
    if kind == "judge":
        try:
            plan = judge_planning.plan_kappa(
                _number(values, "kappa"), _number(values, "prevalence"),
                values.get("width", width), values.get("judge_prevalence"),
            )  # fmt: skip
        except ValueError as error:
            raise _refused(error) from None
        return (
            f"Judge plan: κ {plan.kappa}, humans' yes {plan.prevalence:.0%}, judge's yes "
            f"{plan.judge_prevalence:.0%}; n·Var(κ̂) = {plan.unit_variance:.4f} (Fleiss, Cohen "
            f"& Everitt 1969). Human-rated stories for a 95% interval {plan.width} wide: "
            f"{plan.stories}."
        )
    shares = ([_number(values, "share_a")], [_number(values, "share_b")])
    count = int(_number(values, "stories", 20)), int(_number(values, "questions", 5))
    return fei_text(shares, *count, o, _number(values, "tolerance", fei_planning.TOLERANCE))


def is_fei(db: Db, experiment: str) -> bool:
    """Whether a rating pilot asked FEI probes."""
    return any(item.fei_kind for item in load_ratings(db, experiment).instrument.items)


def fei_pilot_text(db: Db, experiment: str, o: Any) -> str:
    """Readers per question from an FEI pilot: each of its first two sources' questions'
    shares of true answers, its stories per source and median questions per story."""
    data = load_ratings(db, experiment)
    questions, _ = question_entropies(data.instrument, data.judgements)
    sources = sorted({q.source for q in questions})
    if len(sources) < 2:
        raise AnalysisError("The FEI pilot needs two sources with answered questions.")
    pair = sources[:2]
    shares = tuple([q.p_true for q in questions if q.source == s] for s in pair)
    per_story: dict[str, int] = {}
    for q in questions:
        per_story[q.story_id] = per_story.get(q.story_id, 0) + 1
    stories = max(len({q.story_id for q in questions if q.source == s}) for s in pair)
    count = max(1, int(statistics.median(per_story.values())))
    return fei_text(shares, max(stories, 2), count, o, fei_planning.TOLERANCE, tuple(pair))


def judge_rows(db: Db, experiment: str) -> list[tuple[str, float, float]]:
    """Each judge's κ on the pilot's yes/no items with the humans' share of yes."""
    humans = load_ratings(db, experiment)
    binary = {i.id for i in humans.instrument.items if i.kind in ("yes_no", "true_false")}
    answers = humans.judgements[humans.judgements["item"].isin(binary)]["value"].dropna()
    if answers.empty:
        return []
    rows = []
    for calibration in judge_calibrations(db, experiment, humans, bootstrap=0):
        kappas = [
            i.kappa.kappa
            for i in calibration.items
            if i.item in binary and i.kappa.kappa is not None and math.isfinite(i.kappa.kappa)
        ]
        if kappas:
            rows.append((calibration.judge, statistics.mean(kappas), float(answers.mean())))
    return rows


COMPONENTS = {"story_sd", "rater_sd", "residual_sd"}


def _summary(text: str) -> str:
    """A section's conclusion: its last line that is not a table row."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in reversed(lines) if not line.startswith("|")), "")


def precision_sections(
    kind: str, values: dict[str, float], o: Any, pilot: tuple[Db, str] | None
) -> list[dict[str, str]]:
    """The precision sections of a plan of ``kind`` (``{"title", "text", "summary"}``):
    from typed values alone, an FEI or judge plan; α's width for a rating plan; readers per
    question for an FEI pilot; and the stories per judge for a pilot with judges."""
    width = o.alpha_width
    if pilot is None and kind in KINDS:
        text = assumed_text(kind, values, o, width)
        title = "Readers per FEI question" if kind == "fei" else "Judge calibration"
        return [{"title": title, "text": text, "summary": _summary(text)}]
    sections = []
    if kind == "fei":
        text = fei_pilot_text(*pilot, o)  # type: ignore[misc]
        sections.append({"title": "Readers per FEI question", "text": text})
    elif kind == "rating":
        text = alpha_width_text(values, o, width)
        sections.append({"title": "Precision of agreement", "text": text})
    for section in sections:
        section["summary"] = _summary(section["text"])
    rows = judge_rows(*pilot) if pilot is not None else []
    if rows:
        summary = "; ".join(
            f"{judge} {_stories_for(kappa, prevalence, width)}" for judge, kappa, prevalence in rows
        )
        sections.append({"title": "Judge calibration", "text": kappa_text(rows, width),
                         "summary": f"human-rated stories per judge: {summary}"})  # fmt: skip
    return sections


def _stories_for(kappa: float, prevalence: float, width: float) -> str:
    try:
        return str(judge_planning.plan_kappa(kappa, prevalence, width).stories)
    except ValueError:
        return "none"
