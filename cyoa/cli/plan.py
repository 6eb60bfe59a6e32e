"""The ``plan`` verb: how many writers, rounds, stories and raters a comparison needs, and
what it costs, from a stored pilot or from typed assumptions (:mod:`cyoa.cowriting.planning`,
:mod:`cyoa.rating.planning`, :mod:`cyoa.planning_cost`)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
from sqlite_utils import Database

from cyoa import kinds
from cyoa.cli import plan_precision
from cyoa.cli.context import open_existing
from cyoa.cowriting import planning as cowriting_planning
from cyoa.cowriting.analysis.data import experiment_pairs, load_study
from cyoa.cowriting.research.progress import seconds_between
from cyoa.errors import AnalysisError
from cyoa.planning_cost import study_cost
from cyoa.rating import planning as rating_planning
from cyoa.rating.analysis.data import load_ratings, review_raters
from cyoa.rating.analysis.scales import coded_values

COWRITING_KEYS = {"p", "writer_sd", "minutes", "exclusion"}
RATING_KEYS = {"difference", "story_sd", "rater_sd", "residual_sd", "minutes", "exclusion"}
RATING_KEYS |= plan_precision.RATING_KEYS


@dataclass(frozen=True)
class Options:
    target: float
    alpha: float
    hourly_rate: float
    fee: float
    seed: int
    effect: float | None
    progress: Callable[[int, int], None]


# Below these a pilot's variance components are rough (the plan says so).
SMALL_PILOT_STORIES = 20
SMALL_PILOT_RATERS = 5


def parse_assumptions(text: str, allowed: set[str]) -> dict[str, float]:
    """``"p=0.6,writer_sd=0.5"`` as numbers; :class:`click.BadParameter` naming what to fix."""
    values: dict[str, float] = {}
    for part in filter(None, (piece.strip() for piece in text.split(","))):
        key, _, raw = part.partition("=")
        key = key.strip()
        if key not in allowed:
            raise click.BadParameter(
                f"'{key}' is not an assumption of this kind; use {', '.join(sorted(allowed))}."
            )
        try:
            values[key] = float(raw)
        except ValueError:
            raise click.BadParameter(f"'{part}' needs a number after '='.") from None
    return values


def _cost_lines(participants: int, minutes: float | None, exclusion: float, o: Options) -> str:
    if minutes is None:
        return "Cost: no time on task known (give minutes=… in --assume)."
    cost = study_cost(participants, minutes, o.hourly_rate, o.fee, exclusion)
    return (
        f"Cost: recruit {cost.recruit} (for {cost.kept} kept, {exclusion:.0%} excluded) × "
        f"{minutes:.1f} min × {o.hourly_rate:g}/h = {cost.pay:.2f}, + {o.fee:.0%} fee "
        f"{cost.fee:.2f} = {cost.total:.2f}."
    )


def cowriting_text(values: dict[str, float], o: Options, pilot: Any = None) -> str:
    """The co-writing plan as text: assumptions, power table, chosen design and its cost."""
    p = o.effect if o.effect is not None else values.get("p", 0.6)
    sd = values.get("writer_sd", 0.0)
    plan = cowriting_planning.plan_cowriting(
        p, sd, alpha=o.alpha, target=o.target, seed=o.seed, progress=o.progress
    )
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
    if plan.chosen is None:
        lines.append("\nNo design of the grid reaches the target power.")
        return "\n".join(lines)
    c = plan.chosen
    lines.append(f"\nChosen design: {c.writers} writers × {c.rounds} rounds (power {c.power:.3f}).")
    if pilot is not None:
        found = cowriting_planning.detectable_preference(
            pilot.writers, max(1, pilot.median_rounds), sd, alpha=o.alpha, target=o.target
        )
        lines.append(
            f"The pilot's size ({pilot.writers} writers × {pilot.median_rounds} rounds) "
            f"detects a preference of {found if found else 'no value up to 0.99'}."
        )
    minutes = values.get("minutes")
    lines.append(_cost_lines(c.writers, minutes, values.get("exclusion", 0.0), o))
    return "\n".join(lines)


def rating_text(values: dict[str, float], o: Options) -> str:
    """The rating plan as text: assumptions, power table, chosen design and its cost."""
    missing = {"story_sd", "rater_sd", "residual_sd"} - set(values)
    if missing:
        raise click.BadParameter(f"A rating plan needs {', '.join(sorted(missing))}.")
    difference = o.effect if o.effect is not None else values.get("difference", 0.5)
    a = rating_planning.RatingAssumptions(
        difference, values["story_sd"], values["rater_sd"], values["residual_sd"]
    )
    plan = rating_planning.plan_rating(a, alpha=o.alpha, target=o.target, progress=o.progress)
    lines = _small_pilot(values) + [
        f"Rating plan: difference {a.difference:.3f}; SDs story {a.story_sd:.3f}, rater "
        f"{a.rater_sd:.3f}, residual {a.residual_sd:.3f} (score units); mixed-model t-test, "
        f"two-sided at α = {plan.alpha}; target power {plan.target}; "
        f"{plan.stories_per_rater} stories per rater.",
        "",
        "| stories per source | raters per story | ratings | power | SE | df |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {c.stories} | {c.raters_per_story} | {c.ratings} | {c.power:.3f} | {c.se:.3f} | "
        f"{c.df:.1f} |"
        for c in plan.cells
    ]
    if plan.chosen is None:
        lines.append("\nNo design of the grid reaches the target power.")
        return "\n".join(lines)
    c = plan.chosen
    lines.append(
        f"\nChosen design: {c.stories} stories per source × {c.raters_per_story} raters "
        f"per story = {c.raters} raters (power {c.power:.3f})."
    )
    lines.append(_cost_lines(c.raters, values.get("minutes"), values.get("exclusion", 0.0), o))
    return "\n".join(lines)


def _small_pilot(values: dict[str, float]) -> list[str]:
    """A caution when the pilot's variance components rest on few stories or raters: their
    estimates are rough (a component estimated as 0 is often one the pilot could not see)."""
    stories, raters = values.get("pilot_stories"), values.get("pilot_raters")
    if stories is None or (stories >= SMALL_PILOT_STORIES and raters >= SMALL_PILOT_RATERS):
        return []
    return [
        f"Caution: the pilot has {int(stories)} stories and {int(raters)} raters; variance "
        f"components from fewer than {SMALL_PILOT_STORIES} stories or {SMALL_PILOT_RATERS} "
        "raters are rough. Check the plan with --assume values you can defend.",
        "",
    ]


def cowriting_pilot(db: Database, exp_id: str) -> tuple[dict[str, float], Any]:
    """From a co-writing pilot: preference and writer spread of its first pair, the median
    minutes of finished sessions, and the share of started writers who did not finish."""
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
        "SELECT started_at, finished_at FROM sessions WHERE experiment_id = ?", [exp_id]
    ))  # fmt: skip
    times = [seconds_between(s["started_at"], s["finished_at"]) for s in sessions]
    done = [t / 60 for t in times if t is not None]
    if done:
        values["minutes"] = statistics.median(done)
    if sessions:
        values["exclusion"] = min(0.95, 1 - len(done) / len(sessions))
    return values, pilot


def rating_pilot(db: Database, exp_id: str) -> dict[str, float]:
    """From a rating pilot: the crossed model's components of each rater's per-story mean
    answer (after reverse coding), the first pair's difference, the minutes a rater spent
    (median seconds per story × stories per rater) and the share of raters excluded."""
    data = load_ratings(db, exp_id)
    rows = data.judgements.dropna(subset=["value"])
    kinds_of = {item.id: item.kind for item in data.instrument.items}
    rows = rows[rows["item"].map(kinds_of).isin(["likert", "yes_no"])]
    if rows.empty:
        raise AnalysisError("The pilot has no Likert or Yes/No answers to plan from.")
    frame = rows.assign(score=coded_values(data.instrument, rows))
    frame = frame.groupby(["story_id", "source", "rater_id"], as_index=False)["score"].mean()
    a = rating_planning.estimate_pilot(frame)
    values = {"difference": a.difference, "story_sd": a.story_sd, "rater_sd": a.rater_sd,
              "residual_sd": a.residual_sd, "pilot_stories": frame["story_id"].nunique(),
              "pilot_raters": frame["rater_id"].nunique()}  # fmt: skip
    review = review_raters(db, exp_id, data)
    seconds = [q.seconds_per_story("median") for q in review.qualities]
    seconds = [s for s in seconds if s is not None]
    if seconds:
        per_rater = int(data.spec.get("stories_per_rater") or 1)
        values["minutes"] = statistics.median(seconds) * per_rater / 60
    if review.qualities:
        values["exclusion"] = min(0.95, len(review.excluded) / len(review.qualities))
    return values


def _progress(done: int, total: int) -> None:
    click.echo(f"\rsimulating {done}/{total}", err=True, nl=done == total)


@click.command("plan")
@click.argument("experiment", required=False)
@click.option(
    "--kind",
    type=click.Choice(["cowriting", "rating", *plan_precision.KINDS]),
    default=None,
    help="Plan from assumptions, without a pilot: the study kind.",
)
@click.option("--assume", default="", help='Typed assumptions, e.g. "p=0.6,writer_sd=0.5".')
@click.option(
    "--target-power",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.8,
    show_default=True,
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
)
@click.option("--hourly-rate", type=click.FloatRange(0), default=12.0, show_default=True)
@click.option(
    "--fee",
    type=click.FloatRange(0),
    default=0.33,
    show_default=True,
    help="Platform fee, a fraction of the pay.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--alpha-width",
    type=click.FloatRange(0, 2, min_open=True),
    default=0.2,
    show_default=True,
    help="Target 95% width of α's (and a judge's κ's) interval.",
)
@click.option(
    "--effect",
    type=float,
    default=None,
    help="Effect to detect: a preference (co-writing) or a score difference (rating).",
)
@click.pass_context
def plan_command(ctx: click.Context, experiment: str | None, kind: str | None, assume: str,
                 target_power: float, alpha: float, hourly_rate: float, fee: float,
                 seed: int, alpha_width: float, effect: float | None) -> None:  # fmt: skip
    """How many writers × rounds (co-writing) or stories × raters per story (rating) a
    comparison needs to reach the target power, and its cost: from a stored pilot EXPERIMENT,
    or from --kind and --assume."""
    options = Options(target_power, alpha, hourly_rate, fee, seed, effect, _progress)
    if (experiment is None) == (kind is None):
        raise click.UsageError("Give either a pilot EXPERIMENT or --kind with --assume.")
    try:
        if experiment is not None:
            db = open_existing(ctx)
            kind = kinds.kind_of(db, experiment).name
            if kind == "cowriting":
                values, pilot = cowriting_pilot(db, experiment)
            elif plan_precision.is_fei(db, experiment):
                kind, values, pilot = "fei", {}, None
            else:
                values, pilot = rating_pilot(db, experiment), None
            keys = COWRITING_KEYS if kind == "cowriting" else RATING_KEYS
            values.update(parse_assumptions(assume, keys))
        else:
            keys = COWRITING_KEYS if kind == "cowriting" else RATING_KEYS
            keys = {"fei": plan_precision.FEI_KEYS, "judge": plan_precision.JUDGE_KEYS}.get(
                kind, keys
            )
            values, pilot = parse_assumptions(assume, keys), None
        text = plan_precision.plan_text(
            kind, values, options, alpha_width, (db, experiment) if experiment else None,
            lambda: cowriting_text(values, options, pilot) if kind == "cowriting"
            else rating_text(values, options),
        )  # fmt: skip
    except (AnalysisError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(text)
