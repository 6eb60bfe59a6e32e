"""The co-writing kind's planner (:class:`~cyoa.planning_record.Planner`, named in the table
of kinds): a pilot's preference, writer spread, minutes per round and drop-outs read from the
database, the power of each design of writers × rounds by simulation
(:mod:`cyoa.cowriting.planning`), the chosen design and its cost, as one record."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from cyoa.cowriting import planning as cowriting_planning
from cyoa.cowriting.analysis.data import experiment_pairs, load_study
from cyoa.cowriting.research.progress import seconds_between
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.planning_record import (
    Options,
    Planner,
    PlanRecord,
    Source,
    cost,
    new_record,
    sourced_inputs,
)

KEYS = frozenset({"p", "writer_sd", "minutes", "minutes_per_round", "exclusion"})
# What a plan assumes when neither the pilot nor the researcher gives a value.
DEFAULTS = {"p": 0.6, "writer_sd": 0.0}
# What a plan cannot be made without, when there is no pilot to give it.
REQUIRED = {"p"}


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
    record = new_record(
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
    record.cost, cost_line = cost(c.writers, writer_minutes(values, c.rounds), values, o)
    record.body = "\n".join([*lines, cost_line])
    return record


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


def plan(source: Source | None, typed: dict[str, float], o: Options) -> PlanRecord:
    """The co-writing plan from the pilot ``source`` (when there is one to read: with none,
    or one that cannot be read, the typed values alone when they hold ``p``), ``typed``
    values overriding it and :data:`DEFAULTS` for what neither gives."""
    values, pilot = {}, None
    if source is not None:
        try:
            values, pilot = cowriting_pilot(*source)
        except (AnalysisError, ValueError):
            if not set(typed) >= REQUIRED:
                raise
    inputs = sourced_inputs(values, typed)
    values = {**values, **typed}
    for key, value in DEFAULTS.items():
        if key not in values:
            values[key] = value
            inputs[key] = {"value": value, "source": "default"}
    if o.effect is not None:
        inputs[PLANNER.effect] = {"value": o.effect, "source": "typed"}
    return cowriting_plan(values, inputs, o, pilot)


def design(record: Mapping[str, Any]) -> str:
    """A co-writing record's chosen design in words."""
    chosen = record["chosen"]
    return f"{chosen['writers']} writers × {chosen['rounds']} counted rounds each"


PLANNER = Planner("cowriting", KEYS, "p", plan, design)
