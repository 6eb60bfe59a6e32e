"""What every kind's planner takes and returns, below the wings: the :class:`Options` of a
plan, the :class:`PlanRecord` it makes (stored as JSON in the ``plans`` table and read into
the evaluation card) and the :class:`Planner`, one kind of plan as the research shell looks it
up in the table of kinds (:attr:`cyoa.kinds.Kind.planner`). Each wing makes its records
(:mod:`cyoa.cowriting.planner`, :mod:`cyoa.rating.planner`); the shell checks the input and
calls the planner (:mod:`cyoa.research.planning`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from cyoa.db.facade import Db
from cyoa.planning_cost import money, study_cost

Progress = Callable[[int, int], None]
# The power fields of a plan that has only precision sections.
NO_POWER: dict[str, Any] = {"alternative": "", "test": "", "curve": [], "chosen": None}


@dataclass(frozen=True)
class Options:
    """How to plan: ``target`` power and ``alpha`` (fractions), the pay per hour and the
    platform ``fee`` (a fraction of the pay), the simulation ``seed``, the ``effect`` to
    detect (None: the pilot's or assumed one), a ``progress(done, total)`` callback, and the
    co-writing ``simulations`` per cell (:data:`cyoa.cowriting.planning.SIMULATIONS` by
    default; a rating plan's power is computed, not simulated), and the 95% interval width a
    precision plan aims at (α's, a judge's κ's); ``currency``: the ISO 4217 code the pay is
    in (``CYOA_CURRENCY``)."""

    target: float = 0.8
    alpha: float = 0.05
    hourly_rate: float = 12.0
    fee: float = 0.33
    seed: int = 0
    effect: float | None = None
    progress: Progress | None = None
    simulations: int = 2000
    alpha_width: float = 0.2
    currency: str = "GBP"


@dataclass
class PlanRecord:
    """A plan, as stored: ``kind`` the planner's name (:attr:`Planner.name`); ``inputs`` maps
    each assumption to ``{"value", "source"}`` (source ``pilot``, ``typed`` or ``default``);
    ``curve`` has one dict per design of the grid (power and its Monte-Carlo interval, or SE
    and df); ``chosen`` the smallest design reaching the target (None when none does);
    ``detectable`` the effect the pilot's size detects (co-writing, from a pilot); ``cost``
    the chosen design's (:class:`cyoa.planning_cost.Cost` as a dict, None without a time on
    task); ``sections`` the precision parts (``{"title", "text", "summary"}``,
    :func:`cyoa.rating.plan_precision.precision_sections`); ``text`` the whole plan as the
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


Source = tuple[Db, str]


@dataclass(frozen=True)
class Planner:
    """One kind of plan, as the shell finds it:

    - ``name``: the record's ``kind``, and what ``plan --kind`` names;
    - ``keys``: the assumptions it takes (``--assume``, the Plan page's typed values);
    - ``effect``: the assumption the option ``effect`` stands for (its bounds are that
      assumption's, :mod:`cyoa.research.plan_bounds`);
    - ``plan(source, typed, options)``: the record, from the pilot ``source`` (a database
      and an experiment; None: the typed values alone) with ``typed`` values overriding it;
      the input is checked before (:func:`cyoa.research.planning.make_plan`);
    - ``design(record)``: a stored record's chosen design in words, for the evaluation card.
    """

    name: str
    keys: frozenset[str]
    effect: str
    plan: Callable[[Source | None, dict[str, float], Options], PlanRecord]
    design: Callable[[Mapping[str, Any]], str]


def new_record(kind: str, inputs: dict, o: Options, **fields: Any) -> PlanRecord:
    """A record of the planner ``kind`` with the options it was made with."""
    return PlanRecord(
        kind=kind, experiment=None, inputs=inputs, target_power=o.target, alpha=o.alpha,
        seed=o.seed, hourly_rate=o.hourly_rate, fee=o.fee, effect=o.effect, **fields,
    )  # fmt: skip


def sourced_inputs(pilot: dict[str, float], typed: dict[str, float]) -> dict[str, dict]:
    """Each assumption with where it came from: the pilot's, overridden by the typed ones."""
    inputs = {k: {"value": v, "source": "pilot"} for k, v in pilot.items()}
    inputs.update({k: {"value": v, "source": "typed"} for k, v in typed.items()})
    return inputs


def cost(
    participants: int, minutes: float | None, values: dict[str, float], o: Options
) -> tuple[dict | None, str]:
    """The cost of recruiting ``participants`` for ``minutes`` each (with the assumed
    ``exclusion`` share), as stored and as the plan's line; None and a line saying what to
    give when no time on task is known."""
    exclusion = values.get("exclusion", 0.0)
    if minutes is None:
        return None, "Cost: no time on task known (give minutes=… in --assume)."
    found = study_cost(participants, minutes, o.hourly_rate, o.fee, exclusion)
    return {**asdict(found), "currency": o.currency}, (
        f"Cost: recruit {found.recruit} (for {found.kept} kept, {exclusion:.0%} excluded) × "
        f"{minutes:.1f} min × {money(o.hourly_rate, o.currency)}/h = "
        f"{money(found.pay, o.currency)}, + {o.fee:.0%} fee {money(found.fee, o.currency)} = "
        f"{money(found.total, o.currency)}."
    )
