"""The rating kind's planners (:class:`~cyoa.planning_record.Planner`, named in the table of
kinds): a rating comparison (stories × raters per story, from the pilot's variance components
read from the database, :mod:`cyoa.rating.planning`) with the precision of α, an FEI study
(readers per question) and a judge's calibration (human-rated stories for κ), the last two
made of their precision sections alone (:mod:`cyoa.rating.plan_precision`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from cyoa.db.facade import Db
from cyoa.errors import AnalysisError, PlanInputError
from cyoa.planning_record import (
    NO_POWER,
    Options,
    Planner,
    PlanRecord,
    Source,
    cost,
    new_record,
    sourced_inputs,
)
from cyoa.rating import plan_precision
from cyoa.rating import planning as rating_planning
from cyoa.rating.analysis.data import load_ratings, review_raters
from cyoa.rating.analysis.scales import coded_values

KEYS = frozenset({
    "difference", "story_sd", "rater_sd", "rater_source_sd", "residual_sd", "minutes", "exclusion",
}) | plan_precision.RATING_KEYS  # fmt: skip
# What a plan assumes when neither the pilot nor the researcher gives a value.
DEFAULTS = {"difference": 0.5}
# What a plan cannot be made without, when there is no pilot to give it.
REQUIRED = {"story_sd", "rater_sd", "residual_sd"}
# A rating pilot whose stories come from one source has no comparison to plan.
ONE_SOURCE = (
    "The pilot's stories come from one source, so there is no comparison of sources to plan "
    "from it; the plan gives the precision of agreement (stories and raters per story). To "
    "plan a comparison with a second source at the pilot's variances, give the difference "
    "to detect (--effect, or difference=… in --assume; on the Plan page, the effect to detect)."
)
# Below these a pilot's variance components are rough (the plan says so).
SMALL_PILOT_STORIES = 20
SMALL_PILOT_RATERS = 5


def rating_plan(values: dict[str, float], inputs: dict, o: Options) -> PlanRecord:
    """The rating plan: assumptions, power table, chosen design and its cost."""
    missing = REQUIRED - set(values)
    if missing:
        raise PlanInputError(f"A rating plan needs {', '.join(sorted(missing))}.")
    difference = o.effect if o.effect is not None else values.get("difference", 0.5)
    a = rating_planning.RatingAssumptions(
        difference, values["story_sd"], values["rater_sd"], values["residual_sd"],
        values.get("rater_source_sd", 0.0),
    )  # fmt: skip
    plan = rating_planning.plan_rating(a, alpha=o.alpha, target=o.target, progress=o.progress)
    notes = _small_pilot(values)
    lines = [*(f"{note}\n" for note in notes),
        f"Rating plan: difference {a.difference:.3f}; SDs story {a.story_sd:.3f}, rater "
        f"{a.rater_sd:.3f}, rater × source {a.rater_source_sd:.3f}, residual "
        f"{a.residual_sd:.3f} (score units); mixed-model t-test, "
        f"two-sided at α = {plan.alpha}; target power {plan.target}; "
        f"{plan.stories_per_rater} stories per rater.",
        "",
        "| stories per source | raters per story | ratings | power | SE | df |",
        "|---:|---:|---:|---:|---:|---:|",
    ]  # fmt: skip
    lines += [
        f"| {c.stories} | {c.raters_per_story} | {c.ratings} | {c.power:.3f} | {c.se:.3f} | "
        f"{c.df:.1f} |"
        for c in plan.cells
    ]
    curve = [_rating_cell(c) for c in plan.cells]
    chosen = _rating_cell(plan.chosen) if plan.chosen else None
    record = new_record(
        "rating", inputs, o, alternative="two-sided", test="mixed-model t",
        curve=curve, chosen=chosen, notes=notes,
    )  # fmt: skip
    if plan.chosen is None:
        record.body = "\n".join([*lines, "\nNo design of the grid reaches the target power."])
        return record
    c = plan.chosen
    lines.append(
        f"\nChosen design: {c.stories} stories per source × {c.raters_per_story} raters "
        f"per story = {c.raters} raters (power {c.power:.3f})."
    )
    record.cost, cost_line = cost(c.raters, values.get("minutes"), values, o)
    record.body = "\n".join([*lines, cost_line])
    return record


def _rating_cell(cell: rating_planning.RatingCell) -> dict[str, Any]:
    return {**asdict(cell), "ratings": cell.ratings, "raters": cell.raters}


def _small_pilot(values: dict[str, float]) -> list[str]:
    """A caution when the pilot's variance components rest on few stories or raters: their
    estimates are rough (a component estimated as 0 is often one the pilot could not see)."""
    stories, raters = values.get("pilot_stories"), values.get("pilot_raters")
    if stories is None or (stories >= SMALL_PILOT_STORIES and raters >= SMALL_PILOT_RATERS):
        return []
    return [
        f"Caution: the pilot has {int(stories)} stories and {int(raters)} raters; variance "
        f"components from fewer than {SMALL_PILOT_STORIES} stories or {SMALL_PILOT_RATERS} "
        "raters are rough. Check the plan with --assume values you can defend."
    ]


def rating_pilot(db: Db, exp_id: str) -> dict[str, float]:
    """From a rating pilot: the crossed model's components of each rater's per-story mean
    answer (after reverse coding), its number of sources and the first pair's difference
    (none when its stories come from one source), the minutes a rater of the
    planned design spends (the pilot's median seconds per story × the plan's stories per
    rater, :data:`cyoa.rating.planning.STORIES_PER_RATER`) and the share of raters excluded."""
    data = load_ratings(db, exp_id)
    rows = data.judgements.dropna(subset=["value"])
    kinds_of = {item.id: item.kind for item in data.instrument.items}
    rows = rows[rows["item"].map(kinds_of).isin(["likert", "yes_no"])]
    if rows.empty:
        raise AnalysisError("The pilot has no Likert or Yes/No answers to plan from.")
    frame = rows.assign(score=coded_values(data.instrument, rows))
    frame = frame.groupby(["story_id", "source", "rater_id"], as_index=False)["score"].mean()
    a = rating_planning.estimate_pilot(frame)
    values = {"story_sd": a.story_sd, "rater_sd": a.rater_sd,
              "residual_sd": a.residual_sd, "rater_source_sd": a.rater_source_sd,
              "pilot_stories": frame["story_id"].nunique(),
              "pilot_raters": frame["rater_id"].nunique(),
              "pilot_sources": len(a.sources)}  # fmt: skip
    if a.difference is not None:
        values["difference"] = a.difference
    review = review_raters(db, exp_id, data)
    seconds = [q.seconds_per_story("median") for q in review.qualities]
    seconds = [s for s in seconds if s is not None]
    if seconds:
        per_rater = rating_planning.STORIES_PER_RATER
        values["minutes"] = statistics.median(seconds) * per_rater / 60
    if review.qualities:
        values["exclusion"] = min(0.95, len(review.excluded) / len(review.qualities))
    return values


def _one_source(values: dict[str, float], typed: dict[str, float], o: Options) -> bool:
    """Whether a rating pilot's stories come from one source and no difference to detect was
    typed: its plan has no comparison, only its precision sections."""
    return values.get("pilot_sources") == 1 and "difference" not in typed and o.effect is None


def plan(source: Source | None, typed: dict[str, float], o: Options) -> PlanRecord:
    """The rating plan from the pilot ``source`` (when there is one to read: with none, or
    one the model cannot be fitted to, the typed values alone when they hold
    :data:`REQUIRED`), ``typed`` values overriding it and :data:`DEFAULTS` for what neither
    gives; then the precision sections. A one-source pilot gets its precision sections
    alone, and so does a plan asking only for the precision of α."""
    values: dict[str, float] = {}
    if source is not None:
        try:
            values = rating_pilot(*source)
        except (AnalysisError, ValueError):
            if not set(typed) >= REQUIRED:
                raise
    inputs = sourced_inputs(values, typed)
    values = {**values, **typed}
    for key, value in DEFAULTS.items():
        if key not in values and not _one_source(values, typed, o):
            values[key] = value
            inputs[key] = {"value": value, "source": "default"}
    if o.effect is not None:
        inputs[RATING.effect] = {"value": o.effect, "source": "typed"}
    if _one_source(values, typed, o):
        notes = [*_small_pilot(values), ONE_SOURCE]
        record = new_record("rating", inputs, o, **NO_POWER, notes=notes)
        record.body = "\n\n".join(notes)
    elif set(values) >= REQUIRED or not plan_precision.RATING_KEYS & set(values):
        record = rating_plan(values, inputs, o)
    else:  # only the precision of α was asked for
        record = new_record("rating", inputs, o, **NO_POWER)
    record.sections += plan_precision.precision_sections("rating", values, o, source)
    return record


def _precision_planner(name: str, keys: frozenset[str]) -> Planner:
    """An FEI plan (readers per question) or a judge plan (stories for κ): its section alone,
    from the pilot or from the typed values."""

    def plan(source: Source | None, typed: dict[str, float], o: Options) -> PlanRecord:
        inputs = {k: {"value": v, "source": "typed"} for k, v in typed.items()}
        record = new_record(name, inputs, o, **NO_POWER)
        record.sections = plan_precision.precision_sections(name, typed, o, source)
        return record

    return Planner(name, keys, "difference", plan, design)


def design(record: Mapping[str, Any]) -> str:
    """A rating record's chosen design in words."""
    chosen = record["chosen"]
    return (
        f"{chosen['stories']} stories per source × {chosen['raters_per_story']} raters per "
        f"story ({chosen['raters']} raters, {chosen['ratings']} ratings)"
    )


RATING = Planner("rating", KEYS, "difference", plan, design)
FEI = _precision_planner("fei", frozenset(plan_precision.FEI_KEYS))
JUDGE = _precision_planner("judge", frozenset(plan_precision.JUDGE_KEYS))
# Every plan a rating study offers, the kind's own first.
PLANNERS = (RATING, FEI, JUDGE)


def planner_for(db: Db, exp_id: str) -> Planner:
    """The planner of the stored rating experiment ``exp_id``: readers per question for a
    pilot that asked FEI probes, else a rating comparison."""
    return FEI if plan_precision.is_fei(db, exp_id) else RATING
