"""The bounds of every number a plan takes, typed assumptions and options alike, checked
before a plan starts by the ``plan`` verb and the Plan page: a value that is not finite or
lies outside its bounds is refused with a sentence naming the bound.

The bounds hold any study a person would run, and they keep each planner's arithmetic finite
and its work small: variances are squared SDs (an SD of 1e200 overflows), a κ width of 1e-300
asks for infinitely many stories, an FEI plan simulates 400 studies × stories × questions
answers per number of readers (:data:`cyoa.rating.fei_planning.MAX_STORIES`), and an α far
below 0.0001 leaves no design that can reach it. docs/research.md ("The planner's bounds")
lists them; a test keeps that list equal to :data:`ASSUMPTIONS` and :data:`OPTIONS`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from cyoa.errors import PlanInputError
from cyoa.rating import fei_planning

# Score units: the largest SD or difference a plan takes (a 0–100 scale's SD is at most 50).
MAX_SCORE = 1000.0


@dataclass(frozen=True)
class Bound:
    """A number's bounds: ``what`` it is (with its unit), from ``low`` to ``high``, each end
    included unless ``low_open`` / ``high_open``; ``whole`` for a count."""

    what: str
    low: float
    high: float
    low_open: bool = False
    high_open: bool = False
    whole: bool = False

    def holds(self, value: float) -> bool:
        """Whether ``value`` is finite, within the bounds and, for a count, whole."""
        if not math.isfinite(value) or (self.whole and value != int(value)):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def describe(self) -> str:
        """The bounds as words: "a whole number from 2 to 200", "a number at least 0.01 and
        below 2"."""
        kind = "a whole number" if self.whole else "a number"
        low, high = (self._shown(end) for end in (self.low, self.high))
        if not (self.low_open or self.high_open):
            return f"{kind} from {low} to {high}"
        low = f"more than {low}" if self.low_open else f"at least {low}"
        high = f"below {high}" if self.high_open else f"at most {high}"
        return f"{kind} {low} and {high}"

    def _shown(self, end: float) -> str:
        return str(int(end)) if self.whole else f"{end:g}"


def _sd(what: str, low: float = 0.0) -> Bound:
    return Bound(f"{what} (score units)", low, MAX_SCORE)


# Typed assumptions (--assume, the Plan page's typed values), by name.
ASSUMPTIONS: dict[str, Bound] = {
    "p": Bound("the preference for the first system (a fraction)", 0.01, 0.99),
    "writer_sd": Bound("the writers' spread (log-odds SD)", 0.0, 10.0),
    "minutes": Bound("the minutes a participant spends", 0.0, 1440.0),
    "minutes_per_round": Bound("the minutes a writer spends per round", 0.0, 240.0),
    "exclusion": Bound("the share of participants excluded (a fraction)", 0.0, 0.95),
    "difference": Bound("the difference between two sources (score units)", -MAX_SCORE, MAX_SCORE),
    "story_sd": _sd("the story SD"),
    "rater_sd": _sd("the rater SD"),
    "rater_source_sd": _sd("the rater × source SD"),
    "residual_sd": _sd("the residual SD", 0.001),
    "alpha_agreement": Bound("the agreement α to plan for", 0.0, 0.99),
    "prevalence": Bound("the humans' share of 'yes' (a fraction)", 0.01, 0.99),
    "judge_prevalence": Bound("the judge's share of 'yes' (a fraction)", 0.01, 0.99),
    "kappa": Bound("the judge's κ", -1.0, 1.0),
    "width": Bound("the width of κ's 95% interval", 0.01, 2.0, high_open=True),
    "share_a": Bound("source A's share of true answers (a fraction)", 0.0, 1.0),
    "share_b": Bound("source B's share of true answers (a fraction)", 0.0, 1.0),
    "stories": Bound("FEI stories per source", 2, fei_planning.MAX_STORIES, whole=True),
    "questions": Bound("FEI questions per story", 1, fei_planning.MAX_QUESTIONS, whole=True),
    "tolerance": Bound("the entropy bias tolerated (bits)", 0.0, 1.0, True, True),
}

# A plan's options (the verb's flags, the Plan page's fields), by the name of the field of
# cyoa.planning_record.Options; ``effect`` is checked as the planner's effect (p or difference).
OPTIONS: dict[str, Bound] = {
    "target": Bound("the target power", 0.01, 0.99),
    "alpha": Bound("the significance level α", 0.0001, 0.5),
    "hourly_rate": Bound("the hourly rate", 0.0, 10_000.0),
    "fee": Bound("the platform fee (a fraction of the pay)", 0.0, 10.0),
    "seed": Bound("the seed", 0, 2**31 - 1, whole=True),
    "simulations": Bound("the simulations per design", 100, 20_000, whole=True),
    "alpha_width": Bound("the width of α's and κ's 95% interval", 0.01, 2.0, high_open=True),
}


def refusal(bound: Bound, value: float, name: str = "") -> str:
    """The sentence refusing ``value``: what it is (after the typed ``name``), its bounds."""
    what = f"{name}, {bound.what}," if name else bound.what[0].upper() + bound.what[1:]
    return f"{what} is {bound.describe()}, not {value:g}: change it and plan again."


def check_assumption(name: str, value: float) -> None:
    """:class:`PlanInputError` unless the typed assumption ``name`` (a key of
    :data:`ASSUMPTIONS`) has a value within its bounds."""
    bound = ASSUMPTIONS[name]
    if not bound.holds(value):
        raise PlanInputError(refusal(bound, value, name))


def check_options(effect: str, options: Mapping[str, float | None]) -> None:
    """:class:`PlanInputError` for the first of ``options`` (by :data:`OPTIONS` name; None:
    not given) outside its bounds; ``effect`` is bounded as the assumption it stands for,
    ``effect`` (:attr:`cyoa.planning_record.Planner.effect`: a co-writing preference ``p``,
    a rating ``difference``)."""
    for name, value in options.items():
        if value is None:
            continue
        bound = ASSUMPTIONS[effect] if name == "effect" else OPTIONS[name]
        if not bound.holds(value):
            raise PlanInputError(refusal(bound, value))
