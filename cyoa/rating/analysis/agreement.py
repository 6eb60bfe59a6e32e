"""Agreement between raters who judged the same stories.

- :func:`krippendorff_alpha`: Krippendorff's α at the nominal, ordinal or interval level, with
  a bootstrap interval over units (stories).
- :func:`fleiss_kappa`: Fleiss' κ for categorical answers when every unit has the same number
  of raters.
- :func:`exact_agreement`: the share of units on which all raters gave the same answer.
- :func:`agreement_table`: all three for each scored item of an instrument, over all stories
  and per source.

A *unit* is what several raters judged: one story's answer to one item. Its *ratings* are the
raters' answers (raters need not be the same people from unit to unit).

References:
    Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Annenberg School for
    Communication, University of Pennsylvania (departmental paper 43).
    Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological
    Bulletin 76(5).
    Karpinska, M., Akoury, N. and Iyyer, M. (2021). The Perils of Using Mechanical Turk to
    Evaluate Open-Ended Text Generation. EMNLP (agreement reported as α and as the share of
    stories on which all raters agreed, per attribute and per kind of story).
    Efron, B. and Tibshirani, R. J. (1993). An Introduction to the Bootstrap, ch. 13
    (percentile intervals).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import krippendorff
import numpy as np
import pandas as pd
from statsmodels.stats import inter_rater

from cyoa.rating.analysis.scales import coded_values
from cyoa.rating.instruments.types import Instrument, Item

Level = Literal["nominal", "ordinal", "interval"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval")
ALL_SOURCES = "all"
ALL_ITEMS = "all items"
# The level of measurement of yes/no and true/false items; Likert items default to ordinal.
NOMINAL_KINDS = ("yes_no", "true_false")


@dataclass(frozen=True)
class Alpha:
    """Krippendorff's α of a set of units (see :func:`krippendorff_alpha`).

    ``units``/``ratings``: the units with at least two ratings, and their ratings (the
    pairable values). ``ci_low``/``ci_high``: percentile bootstrap interval from
    ``valid_resamples`` of ``resamples`` replicates (a replicate in which every rating has the
    same value has no α and is left out). ``reason``: why ``alpha`` or the interval is
    ``None``.
    """

    alpha: float | None
    ci_low: float | None
    ci_high: float | None
    level: str
    units: int
    ratings: int
    resamples: int
    valid_resamples: int
    seed: int
    confidence: float
    reason: str | None = None


@dataclass(frozen=True)
class Fleiss:
    """Fleiss' κ of a set of units (see :func:`fleiss_kappa`); ``reason`` when ``kappa`` is
    ``None``."""

    kappa: float | None
    units: int
    raters: int | None
    reason: str | None = None


@dataclass(frozen=True)
class ExactAgreement:
    """Share of ``units`` (with at least two ratings) on which every rating is the same."""

    share: float | None
    agreed: int
    units: int


@dataclass(frozen=True)
class ItemAgreement:
    """Agreement on one item (or :data:`ALL_ITEMS`), over the stories of ``scope`` (a source,
    or :data:`ALL_SOURCES`). ``fleiss`` is ``None`` for Likert items."""

    item_id: str
    scope: str
    kind: str
    alpha: Alpha
    fleiss: Fleiss | None
    exact: ExactAgreement


def _units(units: Sequence[Sequence[float]]) -> list[np.ndarray]:
    """The units as float arrays without missing ratings."""
    cleaned = []
    for unit in units:
        values = np.asarray(unit, dtype=float)
        cleaned.append(values[~np.isnan(values)])
    return cleaned


def value_counts(units: Sequence[Sequence[float]], domain: Sequence[float]) -> np.ndarray:
    """Units × values matrix: how many ratings of each unit have each value of ``domain``
    (NaN ratings are missing and not counted). Raises ``ValueError`` for a rating outside
    ``domain``."""
    domain_array = np.asarray(domain, dtype=float)
    counts = np.zeros((len(units), len(domain_array)), dtype=np.int64)
    for row, values in enumerate(_units(units)):
        positions = np.searchsorted(domain_array, values)
        inside = (positions < len(domain_array)) & (
            domain_array[np.minimum(positions, len(domain_array) - 1)] == values
        )
        if not inside.all():
            raise ValueError(
                f"Rating {values[~inside][0]} is not one of the values {list(domain)}: "
                f"check the item's scale."
            )
        np.add.at(counts[row], positions, 1)
    return counts


def _alpha_of_counts(counts: np.ndarray, domain: np.ndarray, level: Level) -> float | None:
    if np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    return float(
        krippendorff.alpha(value_counts=counts, value_domain=domain, level_of_measurement=level)
    )


def krippendorff_alpha(
    units: Sequence[Sequence[float]],
    level: Level,
    domain: Sequence[float] | None = None,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Alpha:
    """Krippendorff's α of ``units`` (each a sequence of ratings; NaN is missing).

    α = 1 − D_o / D_e: the observed disagreement between ratings of the same unit over the
    disagreement expected from all pairable ratings, both weighted by the distance of
    ``level`` (nominal: 0 for equal values, 1 otherwise; ordinal: squared count of ratings
    between the two values, Krippendorff 2011 §4; interval: squared difference). Units with
    fewer than two ratings are not pairable and left out. 1 is perfect agreement, 0 the
    agreement of chance, below 0 systematic disagreement. Computed by the ``krippendorff``
    package from the units × values counts; ``domain`` is the scale's values (default: the
    values seen; a value nobody used carries no ratings and does not change α).

    Interval: ``bootstrap`` replicates (numpy ``default_rng(seed)``) each draw as many units as
    there are, with replacement, and compute α; the interval is their (1 − confidence)/2 and
    (1 + confidence)/2 quantiles. Resampling units (stories), not single ratings, keeps each
    story's ratings together.

    ``alpha`` is ``None`` (with ``reason``) when fewer than two units are pairable or every
    rating has the same value (D_e = 0). Units: α is a coefficient, at most 1.
    Reference: Krippendorff (2011); Efron & Tibshirani (1993), ch. 13.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}.")
    if bootstrap < 0:
        raise ValueError(f"bootstrap must be 0 or more replicates, got {bootstrap}.")
    pairable = [values for values in _units(units) if values.size >= 2]
    seen = sorted({float(value) for values in pairable for value in values})
    domain_array = np.asarray(seen if domain is None else sorted(domain), dtype=float)

    def result(
        alpha: float | None, interval: tuple[float, float] | None, valid: int, reason: str | None
    ) -> Alpha:
        return Alpha(
            alpha=alpha,
            ci_low=None if interval is None else interval[0],
            ci_high=None if interval is None else interval[1],
            level=level,
            units=len(pairable),
            ratings=int(sum(values.size for values in pairable)),
            resamples=bootstrap,
            valid_resamples=valid,
            seed=seed,
            confidence=confidence,
            reason=reason,
        )

    if len(pairable) < 2:
        return result(None, None, 0, "fewer than 2 stories with two or more ratings")
    counts = value_counts(pairable, domain_array)
    alpha = _alpha_of_counts(counts, domain_array, level)
    if alpha is None:
        return result(None, None, 0, "every rating has the same value: no variation to compare")
    rng = np.random.default_rng(seed)
    replicates = []
    for _ in range(bootstrap):
        drawn = counts[rng.integers(0, len(counts), size=len(counts))]
        value = _alpha_of_counts(drawn, domain_array, level)
        if value is not None:
            replicates.append(value)
    if not replicates:
        return result(alpha, None, 0, "no bootstrap replicate had two different values")
    tail = (1 - confidence) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    return result(alpha, (float(low), float(high)), len(replicates), None)


def fleiss_kappa(units: Sequence[Sequence[float]], categories: Sequence[float]) -> Fleiss:
    """Fleiss' κ of categorical ``units`` (each a sequence of ratings from ``categories``).

    With N units, n ratings each, n_ij the ratings of unit i in category j:
    P_i = (Σ_j n_ij² − n) / (n(n − 1)), P̄ = mean P_i, p_j = Σ_i n_ij / (N n),
    P_e = Σ_j p_j², κ = (P̄ − P_e) / (1 − P_e). Computed by
    ``statsmodels.stats.inter_rater.fleiss_kappa(method="fleiss")`` on the units × categories
    counts. It needs at least two units and the same number of ratings (at least two) for
    every unit: otherwise, or when every rating falls in one category (P_e = 1), ``kappa`` is
    ``None`` with ``reason``.
    Units with no rating at all are left out.

    Units: κ is a coefficient, 1 for perfect agreement, 0 for chance. Reference: Fleiss (1971).
    """
    rated = [values for values in _units(units) if values.size > 0]
    sizes = sorted({values.size for values in rated})
    if not rated:
        return Fleiss(None, 0, None, reason="no ratings")
    if len(sizes) > 1:
        return Fleiss(
            None,
            len(rated),
            None,
            reason=f"stories have {sizes[0]} to {sizes[-1]} ratings; Fleiss' κ needs the same "
            f"number for every story",
        )
    if sizes[0] < 2:
        return Fleiss(None, len(rated), sizes[0], reason="each story has one rating only")
    if len(rated) < 2:
        return Fleiss(None, len(rated), sizes[0], reason="fewer than 2 stories")
    counts = value_counts(rated, sorted(categories))
    if np.count_nonzero(counts.sum(axis=0)) < 2:
        return Fleiss(None, len(rated), sizes[0], reason="every rating is in the same category")
    kappa = inter_rater.fleiss_kappa(counts, method="fleiss")
    return Fleiss(float(kappa), len(rated), sizes[0])


def exact_agreement(units: Sequence[Sequence[float]]) -> ExactAgreement:
    """The share of units with at least two ratings on which all ratings are equal (the
    subscript of Karpinska et al. 2021, Tables 1–2). Units: a fraction."""
    pairable = [values for values in _units(units) if values.size >= 2]
    agreed = sum(1 for values in pairable if np.all(values == values[0]))
    share = agreed / len(pairable) if pairable else None
    return ExactAgreement(share=share, agreed=agreed, units=len(pairable))


def _item_units(rows: pd.DataFrame) -> list[list[float]]:
    return [group.tolist() for _, group in rows.groupby("story_id", sort=True)["coded"]]


def _domain(item: Item) -> list[float]:
    """The values an item's answers take: its points, or 0/1."""
    if item.kind == "likert":
        return [float(point) for point in item.scale]
    return [0.0, 1.0]


def _agreement(
    item_id: str,
    scope: str,
    kind: str,
    units: list[list[float]],
    domain: list[float],
    likert_level: Level,
    bootstrap: int,
    seed: int,
) -> ItemAgreement:
    level: Level = "nominal" if kind in NOMINAL_KINDS else likert_level
    return ItemAgreement(
        item_id=item_id,
        scope=scope,
        kind=kind,
        alpha=krippendorff_alpha(units, level, domain, bootstrap=bootstrap, seed=seed),
        fleiss=None if kind == "likert" else fleiss_kappa(units, domain),
        exact=exact_agreement(units),
    )


def agreement_table(
    instrument: Instrument,
    judgements: pd.DataFrame,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    likert_level: Level = "ordinal",
) -> tuple[ItemAgreement, ...]:
    """Agreement on each scored item, over all stories and, with several sources, per source.

    ``judgements``: the rating contract of :func:`cyoa.rating.analysis.ratings.analyze_ratings`
    (``story_id``, ``source``, ``item``, ``value``; NaN is a missing answer). A unit is a
    story's answers to the item, reverse-coded (which changes no single item's α, but lets
    the pooled row compare items on one direction). α is nominal for yes/no and true/false
    items and ``likert_level`` (ordinal unless told; interval treats the points as equally
    spaced) for Likert items; Fleiss' κ is computed for yes/no and true/false items only.

    When all scored items share one kind and scale, a last row per scope (item
    :data:`ALL_ITEMS`) pools every story × item as a unit: the agreement over the whole
    instrument. FEI probes, each asked about one story, get this pooled row only. Each α's
    bootstrap uses ``seed``.
    """
    scored = [item for item in instrument.items if item.scored]
    judgements = judgements[judgements["item"].isin([item.id for item in scored])]
    judgements = judgements.assign(coded=coded_values(instrument, judgements))
    if likert_level not in LEVELS:
        raise ValueError(f"likert_level must be one of {', '.join(LEVELS)}, got {likert_level!r}.")
    sources = sorted(judgements["source"].unique())
    scopes = [ALL_SOURCES] + (sources if len(sources) > 1 else [])
    rows: list[ItemAgreement] = []
    shapes = {(item.kind, item.points, item.low) for item in scored}
    for scope in scopes:
        subset = judgements if scope == ALL_SOURCES else judgements[judgements["source"] == scope]
        by_item = dict(tuple(subset.groupby("item", sort=False)))
        for item in scored:
            # An FEI probe is asked about one story only: it has no agreement of its own.
            if item.id not in by_item or item.story_id is not None:
                continue
            units = _item_units(by_item[item.id])
            domain = _domain(item)
            rows.append(
                _agreement(item.id, scope, item.kind, units, domain, likert_level, bootstrap, seed)
            )
        if len(shapes) == 1 and len(scored) > 1 and not subset.empty:
            units = [
                group.tolist()
                for _, group in subset.groupby(["story_id", "item"], sort=True)["coded"]
            ]
            kind = scored[0].kind
            domain = _domain(scored[0])
            rows.append(
                _agreement(ALL_ITEMS, scope, kind, units, domain, likert_level, bootstrap, seed)
            )
    return tuple(rows)
