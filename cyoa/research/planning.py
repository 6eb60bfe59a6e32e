"""Planning a study, for the ``plan`` verb and the dashboards' Plan page alike: read a pilot's
assumptions (or take typed ones), run its kind's planner (:mod:`cyoa.cowriting.planning`,
:mod:`cyoa.rating.planning`) and cost it (:mod:`cyoa.planning_cost`), and return one
:class:`PlanRecord`: what was assumed and where each value came from, the power curve, the
chosen design, the detectable effect, the cost and the text the verb prints.

A record travels as JSON (:meth:`PlanRecord.to_dict`) into the ``plans`` table
(:func:`cyoa.store.insert_plan`) and from there into the evaluation card
(:func:`cyoa.web.card.planned_sample_size`). Further sections (e.g. the precision of α) are
appended to :attr:`PlanRecord.sections`; the text ends with them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from cyoa import kinds
from cyoa.cowriting import planning as cowriting_planning
from cyoa.cowriting.analysis.data import experiment_pairs, load_study
from cyoa.cowriting.research.progress import seconds_between
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError, PlanInputError
from cyoa.planning_cost import money, study_cost
from cyoa.rating import planning as rating_planning
from cyoa.rating.analysis.data import load_ratings, review_raters
from cyoa.rating.analysis.scales import coded_values
from cyoa.research import plan_bounds, plan_precision

COWRITING_KEYS = {"p", "writer_sd", "minutes", "minutes_per_round", "exclusion"}
RATING_KEYS = {
    "difference", "story_sd", "rater_sd", "rater_source_sd", "residual_sd", "minutes", "exclusion",
}  # fmt: skip
KEYS = {
    "cowriting": COWRITING_KEYS,
    "rating": RATING_KEYS | plan_precision.RATING_KEYS,
    "fei": plan_precision.FEI_KEYS,
    "judge": plan_precision.JUDGE_KEYS,
}
# What a plan assumes when neither the pilot nor the researcher gives a value.
DEFAULTS = {"cowriting": {"p": 0.6, "writer_sd": 0.0}, "rating": {"difference": 0.5}}
# What a plan cannot be made without, when there is no pilot to give it.
REQUIRED = {"cowriting": {"p"}, "rating": {"story_sd", "rater_sd", "residual_sd"}}
# The power fields of a plan that has only precision sections.
NO_POWER: dict[str, Any] = {"alternative": "", "test": "", "curve": [], "chosen": None}
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

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class Options:
    """How to plan: ``target`` power and ``alpha`` (fractions), the pay per hour and the
    platform ``fee`` (a fraction of the pay), the simulation ``seed``, the ``effect`` to
    detect (None: the pilot's or assumed one), a ``progress(done, total)`` callback, and the
    co-writing ``simulations`` per cell (a rating plan's power is computed, not simulated), and
    the 95% interval width a precision plan aims at (α's, a judge's κ's); ``currency``: the
    ISO 4217 code the pay is in (``CYOA_CURRENCY``)."""

    target: float = 0.8
    alpha: float = 0.05
    hourly_rate: float = 12.0
    fee: float = 0.33
    seed: int = 0
    effect: float | None = None
    progress: Progress | None = None
    simulations: int = cowriting_planning.SIMULATIONS
    alpha_width: float = 0.2
    currency: str = "GBP"


@dataclass
class PlanRecord:
    """A plan, as stored: ``inputs`` maps each assumption to ``{"value", "source"}`` (source
    ``pilot``, ``typed`` or ``default``); ``curve`` has one dict per design of the grid
    (power and its Monte-Carlo interval, or SE and df); ``chosen`` the smallest design
    reaching the target (None when none does); ``detectable`` the effect the pilot's size
    detects (co-writing, from a pilot); ``cost`` the chosen design's
    (:class:`cyoa.planning_cost.Cost` as a dict, None without a time on task); ``sections``
    the precision parts (``{"title", "text", "summary"}``,
    :func:`cyoa.research.plan_precision.precision_sections`); ``text`` the whole plan as the
    verb prints it."""

    kind: str
    experiment: str | None
    inputs: dict[str, dict[str, Any]]
    target_power: float
    alpha: float
    alternative: str
    test: str
    seed: int
    hourly_rate: float
    fee: float
    effect: float | None
    curve: list[dict[str, Any]]
    chosen: dict[str, Any] | None
    detectable: float | None = None
    cost: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    sections: list[dict[str, str]] = field(default_factory=list)
    body: str = ""

    @property
    def text(self) -> str:
        """The plan's text: its body, then each appended section under its title."""
        return "\n\n".join(filter(None, [self.body, *(s["text"] for s in self.sections)]))

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data (what the ``plans`` table stores)."""
        return {**asdict(self), "text": self.text}


def parse_assumptions(text: str, allowed: set[str]) -> dict[str, float]:
    """``"p=0.6,writer_sd=0.5"`` as numbers; :class:`PlanInputError` naming what to fix."""
    values: dict[str, float] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        key, _, raw = part.partition("=")
        key = key.strip()
        if key not in allowed:
            raise PlanInputError(
                f"'{key}' is not an assumption of this kind; use {', '.join(sorted(allowed))}."
            )
        try:
            values[key] = float(raw)
        except ValueError:
            raise PlanInputError(f"'{part}' needs a number after '='.") from None
        if not math.isfinite(values[key]):
            raise PlanInputError(f"'{part}' needs a finite number after '='.")
        plan_bounds.check_assumption(key, values[key])
    return values


def check_inputs(kind: str, typed: dict[str, float], o: Options) -> None:
    """:class:`PlanInputError` naming the first typed value or option of a ``kind`` plan
    outside its bounds (:mod:`cyoa.research.plan_bounds`), before any work starts."""
    for key, value in typed.items():
        plan_bounds.check_assumption(key, value)
    plan_bounds.check_options(kind, {
        "target": o.target, "alpha": o.alpha, "hourly_rate": o.hourly_rate, "fee": o.fee,
        "seed": o.seed, "effect": o.effect, "simulations": o.simulations,
        "alpha_width": o.alpha_width,
    })  # fmt: skip


def _cost(
    participants: int, minutes: float | None, values: dict[str, float], o: Options
) -> tuple[dict | None, str]:
    exclusion = values.get("exclusion", 0.0)
    if minutes is None:
        return None, "Cost: no time on task known (give minutes=… in --assume)."
    cost = study_cost(participants, minutes, o.hourly_rate, o.fee, exclusion)
    return {**asdict(cost), "currency": o.currency}, (
        f"Cost: recruit {cost.recruit} (for {cost.kept} kept, {exclusion:.0%} excluded) × "
        f"{minutes:.1f} min × {money(o.hourly_rate, o.currency)}/h = "
        f"{money(cost.pay, o.currency)}, + {o.fee:.0%} fee {money(cost.fee, o.currency)} = "
        f"{money(cost.total, o.currency)}."
    )


def _record(kind: str, inputs: dict, o: Options, **fields: Any) -> PlanRecord:
    return PlanRecord(
        kind=kind, experiment=None, inputs=inputs, target_power=o.target, alpha=o.alpha,
        seed=o.seed, hourly_rate=o.hourly_rate, fee=o.fee, effect=o.effect, **fields,
    )  # fmt: skip


def writer_minutes(values: dict[str, float], rounds: int) -> float | None:
    """A writer's time on task in a design of ``rounds`` rounds: typed ``minutes`` as given,
    else the pilot's (or typed) ``minutes_per_round`` × rounds; None when neither is known."""
    if "minutes" in values:
        return values["minutes"]
    if "minutes_per_round" in values:
        return values["minutes_per_round"] * rounds
    return None


def cowriting_plan(
    values: dict[str, float], inputs: dict, o: Options, pilot: Any = None
) -> PlanRecord:
    """The co-writing plan: assumptions, power table, chosen design and its cost."""
    p = o.effect if o.effect is not None else values.get("p", 0.6)
    sd = values.get("writer_sd", 0.0)
    plan = cowriting_planning.plan_cowriting(
        p, sd, alpha=o.alpha, target=o.target, seed=o.seed, progress=o.progress,
        simulations=o.simulations,
    )  # fmt: skip
    lines = [
        f"Co-writing plan: preference {p:.3f}, writer SD {sd:.3f} (log-odds); "
        f"{plan.test} test, {plan.alternative} at α = {plan.alpha}; target power "
        f"{plan.target}; {plan.simulations} simulations per cell, seed {plan.seed}.",
        "",
        "| writers | rounds | power | 95% MC interval |",
        "|---:|---:|---:|---|",
    ]
    lines += [
        f"| {c.writers} | {c.rounds} | {c.power:.3f} | {c.low:.3f}–{c.high:.3f} |"
        for c in plan.cells
    ]
    record = _record(
        "cowriting", inputs, o, alternative=plan.alternative, test=plan.test,
        curve=[asdict(c) for c in plan.cells], chosen=asdict(plan.chosen) if plan.chosen else None,
    )  # fmt: skip
    if plan.chosen is None:
        record.body = "\n".join([*lines, "\nNo design of the grid reaches the target power."])
        return record
    c = plan.chosen
    lines.append(f"\nChosen design: {c.writers} writers × {c.rounds} rounds (power {c.power:.3f}).")
    if pilot is not None:
        found = cowriting_planning.detectable_preference(
            pilot.writers, max(1, pilot.median_rounds), sd, alpha=o.alpha, target=o.target,
            simulations=o.simulations,
        )  # fmt: skip
        record.detectable = found
        lines.append(
            f"The pilot's size ({pilot.writers} writers × {pilot.median_rounds} rounds) "
            f"detects a preference of {found if found else 'no value up to 0.99'}."
        )
    record.cost, cost_line = _cost(c.writers, writer_minutes(values, c.rounds), values, o)
    record.body = "\n".join([*lines, cost_line])
    return record


def rating_plan(values: dict[str, float], inputs: dict, o: Options) -> PlanRecord:
    """The rating plan: assumptions, power table, chosen design and its cost."""
    missing = REQUIRED["rating"] - set(values)
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
    record = _record(
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
    record.cost, cost_line = _cost(c.raters, values.get("minutes"), values, o)
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


def cowriting_pilot(db: Db, exp_id: str) -> tuple[dict[str, float], Any]:
    """From a co-writing pilot: preference and writer spread of its first pair, the median
    minutes per round of finished sessions (a session's minutes over its counted rounds, so
    a design with other rounds is costed for its own), and the share of started writers who
    have not finished."""
    pairs = experiment_pairs(db, exp_id)
    if not pairs:
        raise AnalysisError(f"No writer of experiment '{exp_id}' has started yet.")
    data = load_study(db, exp_id, pairs[0])
    per_writer: dict[str, list[int]] = {}
    for record in (r for r in data.rounds if r.counts_for_preference):
        pair = per_writer.setdefault(record.session_id, [0, 0])
        pair[0] += record.chosen_system == data.systems[0]
        pair[1] += 1
    pilot = cowriting_planning.estimate_pilot([tuple(p) for p in per_writer.values()])
    values = {"p": pilot.preference, "writer_sd": pilot.writer_sd}
    sessions = list(db.query(
        "SELECT id, started_at, finished_at FROM sessions WHERE experiment_id = ?", [exp_id]
    ))  # fmt: skip
    rounds = {sid: counts[1] for sid, counts in per_writer.items()}
    times = {s["id"]: seconds_between(s["started_at"], s["finished_at"]) for s in sessions}
    done = [t for t in times.values() if t is not None]
    per_round = [t / 60 / rounds[sid] for sid, t in times.items() if t and rounds.get(sid)]
    if per_round:
        values["minutes_per_round"] = statistics.median(per_round)
    if sessions:
        values["exclusion"] = min(0.95, 1 - len(done) / len(sessions))
    return values, pilot


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


def _pilot_values(db: Db, exp_id: str, kind: str, typed: dict[str, float]) -> tuple:
    """The pilot's values and estimate; with no pilot to read (or one the model cannot be
    fitted to), none, when the typed values alone suffice: otherwise the pilot's error."""
    try:
        if kind == "cowriting":
            return cowriting_pilot(db, exp_id)
        return rating_pilot(db, exp_id), None
    except (AnalysisError, ValueError):
        if REQUIRED[kind] <= set(typed):
            return {}, None
        raise


def make_plan(
    db: Db | None,
    experiment: str | None,
    kind: str | None,
    typed: dict[str, float],
    options: Options,
) -> PlanRecord:
    """The plan for ``experiment`` (its kind and pilot read from ``db``; ``typed`` values
    override the pilot's) or, with ``experiment`` None, for ``kind`` from ``typed`` alone.
    :class:`PlanInputError` for a typed value or option that cannot be used (outside its
    bounds: :func:`check_inputs`), :class:`AnalysisError` or
    :class:`ValueError` (a sentence) for a pilot that cannot be planned from."""
    if experiment is not None and db is not None:
        kind = kinds.kind_of(db, experiment).name
        if kind == "rating" and plan_precision.is_fei(db, experiment):
            kind = "fei"
    if kind not in KEYS:
        raise PlanInputError(f"Give a pilot experiment, or the kind: {', '.join(KEYS)}.")
    unknown = set(typed) - KEYS[kind]
    if unknown:
        raise PlanInputError(
            f"'{sorted(unknown)[0]}' is not an assumption of this kind; use "
            f"{', '.join(sorted(KEYS[kind]))}."
        )
    check_inputs(kind, typed, options)
    source = (db, experiment) if experiment is not None and db is not None else None
    if kind in plan_precision.KINDS:
        return _precision_plan(kind, typed, options, source)
    values, pilot = {}, None
    if source is not None:
        values, pilot = _pilot_values(db, experiment, kind, typed)
    inputs = {k: {"value": v, "source": "pilot"} for k, v in values.items()}
    inputs.update({k: {"value": v, "source": "typed"} for k, v in typed.items()})
    values = {**values, **typed}
    for key, value in DEFAULTS[kind].items():
        if key not in values and not _one_source(values, typed, options):
            values[key] = value
            inputs[key] = {"value": value, "source": "default"}
    if options.effect is not None:
        key = "p" if kind == "cowriting" else "difference"
        inputs[key] = {"value": options.effect, "source": "typed"}
    if kind == "cowriting":
        record = cowriting_plan(values, inputs, options, pilot)
    elif _one_source(values, typed, options):
        notes = [*_small_pilot(values), ONE_SOURCE]
        record = _record("rating", inputs, options, **NO_POWER, notes=notes)
        record.body = "\n\n".join(notes)
    elif REQUIRED["rating"] <= set(values) or not plan_precision.RATING_KEYS & set(values):
        record = rating_plan(values, inputs, options)
    else:  # only the precision of α was asked for
        record = _record("rating", inputs, options, **NO_POWER)
    record.sections += plan_precision.precision_sections(kind, values, options, source)
    record.experiment = experiment
    return record


def _one_source(values: dict[str, float], typed: dict[str, float], o: Options) -> bool:
    """Whether a rating pilot's stories come from one source and no difference to detect was
    typed: its plan has no comparison, only its precision sections."""
    return values.get("pilot_sources") == 1 and "difference" not in typed and o.effect is None


def _precision_plan(
    kind: str, typed: dict[str, float], o: Options, source: tuple[Db, str] | None
) -> PlanRecord:
    """An FEI plan (readers per question) or a judge plan (stories for κ): its section alone."""
    inputs = {k: {"value": v, "source": "typed"} for k, v in typed.items()}
    record = _record(kind, inputs, o, **NO_POWER)
    record.sections = plan_precision.precision_sections(kind, typed, o, source)
    record.experiment = source[1] if source else None
    return record
