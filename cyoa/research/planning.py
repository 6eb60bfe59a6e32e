"""Planning a study, for the ``plan`` verb and the dashboards' Plan page alike: find the
planner (:class:`~cyoa.planning_record.Planner`) of the experiment's kind in the table of
kinds, or the one named, check the typed assumptions and options against their bounds
(:mod:`cyoa.research.plan_bounds`) before any work, and let the planner make one
:class:`PlanRecord`: what was assumed and where each value came from, the power curve, the
chosen design, the detectable effect, the cost and the text the verb prints. The planners
are the wings' (:mod:`cyoa.cowriting.planner`, :mod:`cyoa.rating.planner`).

A record travels as JSON (:meth:`PlanRecord.to_dict`) into the ``plans`` table
(:func:`cyoa.store.insert_plan`) and from there into the evaluation card
(:func:`cyoa.web.card.planned_sample_size`). Further sections (e.g. the precision of α) are
appended to :attr:`PlanRecord.sections`; the text ends with them.
"""

from __future__ import annotations

import math

from cyoa import kinds
from cyoa.db.facade import Db
from cyoa.errors import PlanInputError
from cyoa.planning_record import Options, Planner, PlanRecord
from cyoa.research import plan_bounds

__all__ = ["PLANNERS", "Options", "PlanInputError", "PlanRecord", "make_plan"]

# Every plan a study can be planned as, by name (``plan --kind``), each kind's own first.
PLANNERS: dict[str, Planner] = {
    planner.name: planner for kind in kinds.KINDS.values() for planner in kind.planners
}


def parse_assumptions(text: str, allowed: set[str] | frozenset[str]) -> dict[str, float]:
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


def check_inputs(planner: Planner, typed: dict[str, float], o: Options) -> None:
    """:class:`PlanInputError` naming the first typed value or option of a ``planner``'s
    plan outside its bounds (:mod:`cyoa.research.plan_bounds`), before any work starts."""
    for key, value in typed.items():
        plan_bounds.check_assumption(key, value)
    plan_bounds.check_options(planner.effect, {
        "target": o.target, "alpha": o.alpha, "hourly_rate": o.hourly_rate, "fee": o.fee,
        "seed": o.seed, "effect": o.effect, "simulations": o.simulations,
        "alpha_width": o.alpha_width,
    })  # fmt: skip


def planner_of(db: Db | None, experiment: str | None, name: str | None) -> Planner:
    """The planner of the stored ``experiment`` (its kind's, for its pilot), else the one
    named ``name``; :class:`PlanInputError` listing the names when there is neither."""
    if experiment is not None and db is not None:
        return kinds.kind_of(db, experiment).planner_for(db, experiment)
    if name not in PLANNERS:
        raise PlanInputError(f"Give a pilot experiment, or the kind: {', '.join(PLANNERS)}.")
    return PLANNERS[name]


def make_plan(
    db: Db | None,
    experiment: str | None,
    kind: str | None,
    typed: dict[str, float],
    options: Options,
) -> PlanRecord:
    """The plan for ``experiment`` (its kind and pilot read from ``db``; ``typed`` values
    override the pilot's) or, with ``experiment`` None, for the planner named ``kind`` from
    ``typed`` alone. :class:`PlanInputError` for a typed value or option that cannot be used
    (outside its bounds: :func:`check_inputs`), :class:`AnalysisError` or
    :class:`ValueError` (a sentence) for a pilot that cannot be planned from."""
    planner = planner_of(db, experiment, kind)
    unknown = set(typed) - planner.keys
    if unknown:
        raise PlanInputError(
            f"'{sorted(unknown)[0]}' is not an assumption of this kind; use "
            f"{', '.join(sorted(planner.keys))}."
        )
    check_inputs(planner, typed, options)
    source = (db, experiment) if experiment is not None and db is not None else None
    record = planner.plan(source, typed, options)
    record.experiment = experiment
    return record
