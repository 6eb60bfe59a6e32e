"""A judge calibrated against the human raters, criterion by criterion (pure).

:func:`calibrate` compares a *candidate* panel (a judge model's verdicts) with a *reference*
panel (the study's human raters, or an imported expert panel) on the same instrument, and
gives per item and over all items:

- Cohen's κ of the judge against the reference's majority (Yes/No items; a tie is left out
  and counted) or quadratically weighted κ against the reference's mean rounded to the
  nearest point (Likert items), with a bootstrap interval over stories
  (:mod:`cyoa.rating.judges.measures`);
- for Yes/No items the balanced accuracy, precision, recall, F1 and correlation of the TTCW
  release's notebook; for Likert items Krippendorff's interval α and Spearman's ρ between
  the judge and the reference mean;
- the *human ceiling*: each reference rater against the majority (or mean) of the others, by
  the same κ, pooled over raters, beside the judge against the same majorities on the same
  units: what one more human adds, and what the judge adds in that human's place;
- the alternative annotator test (:mod:`cyoa.rating.judges.alttest`);
- at the system level, the sources' pass rates (or mean scores) by the judge and by the
  humans, and Kendall's τ-b between the two with a bootstrap interval over stories;
- the disagreements: units where the reference raters are unanimous and the judge says
  otherwise, with both rationales.

A judge's answer that could not be parsed is stored without a value (*unparsed*): it is left
out and counted. ``as_no=True`` counts it, and every unit the judge did not answer, as No
instead, as the TTCW release's notebook does (``pred_map.get(id, 0)`` on ``startswith("yes")``),
to reproduce its table.

References:
    Chakrabarty, T. et al. (2024). Art or Artifice? Large Language Models and the False
    Promise of Creativity. CHI, §6 (LLM-administered TTCW against the expert majority).
    Kendall, M. G. (1945). The treatment of ties in ranking problems. Biometrika 33(3).
    Spearman, C. (1904). The proof and measurement of association between two things.
    American Journal of Psychology 15(1).
    Krippendorff, K. (2011). Computing Krippendorff's Alpha-Reliability. Departmental paper 43.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from cyoa.rating.instruments.types import Instrument, Item
from cyoa.rating.judges.alttest import (
    EPSILON,
    MIN_INSTANCES,
    AltTest,
    Family,
    Score,
    alt_tests,
)
from cyoa.rating.judges.measures import (
    BinaryScores,
    Kappa,
    Pair,
    Weights,
    binary_scores,
    cohen_kappa,
    consensus,
    nearest_point,
)

ALL_ITEMS = "all items"
# Below this many sources the system level gives Kendall's τ with its exact permutation p and
# no bootstrap interval: τ of n sources takes at most n(n − 1)/2 + 1 values, and resampling
# stories shows how stable the ranking of these few sources is, not how far τ could fall
# (with 4 sources τ = 0.67 came with [0.67, 1.0] while its exact p is 0.33).
MIN_SOURCES_FOR_INTERVAL = 10
# Up to this many sources the permutation p enumerates every ordering (8! = 40,320).
EXACT_PERMUTATION_SOURCES = 8
MONTE_CARLO_PERMUTATIONS = 10_000
BINARY_KINDS = ("yes_no", "true_false")
LIKERT_WEIGHTS: Weights = "quadratic"


@dataclass(frozen=True)
class Ceiling:
    """The human ceiling of one rater or of all pooled (``rater_id`` None): ``pairs`` units
    where the rater and at least one other answered and the judge has a verdict; ``human``
    κ of the rater against the others' majority (or mean), ``judge`` κ of the judge against
    the same values on the same units."""

    rater_id: str | None
    pairs: int
    human: float | None
    judge: float | None


@dataclass(frozen=True)
class ItemCalibration:
    """The judge against the reference on one item (or :data:`ALL_ITEMS`); ``kind`` is
    ``binary`` or ``likert``; ``unparsed`` the judge's answers without a value, ``missing``
    the reference's units the judge did not answer, ``ties`` units whose reference majority
    is tied (left out). ``alt_test``: the alternative annotator test with the family asked
    for; ``alt_test_other_family`` the same test corrected with the other family (None for
    the pooled row, a family of its own either way)."""

    item: str
    label: str
    kind: str
    unparsed: int
    missing: int
    ties: int
    kappa: Kappa
    scores: BinaryScores | None
    alpha: float | None
    spearman: float | None
    ceiling: Ceiling
    ceiling_per_rater: tuple[Ceiling, ...]
    alt_test: AltTest | None
    alt_test_other_family: AltTest | None = None


@dataclass(frozen=True)
class SystemRow:
    source: str
    stories: int
    human: float | None
    judge: float | None


@dataclass(frozen=True)
class SystemLevel:
    """The sources by the humans and by the judge: ``measure`` says what the values are
    (``pass rate``: share of Yes; ``mean score``: mean coded points), ``tau`` Kendall's τ-b
    between the two columns; ``p_value`` its two-sided permutation p over the sources
    (:func:`tau_permutation_p`, ``p_method`` says exact or Monte Carlo); from
    :data:`MIN_SOURCES_FOR_INTERVAL` sources on, a percentile bootstrap interval over stories
    (drawn within each source), below it none (``interval_reason`` says why)."""

    measure: str
    rows: tuple[SystemRow, ...]
    tau: float | None
    ci_low: float | None
    ci_high: float | None
    reason: str | None
    p_value: float | None = None
    p_method: str | None = None
    interval_reason: str | None = None


@dataclass(frozen=True)
class Disagreement:
    story_id: str
    source: str
    item: str
    human: float
    judge: float
    human_rationales: tuple[str, ...]
    judge_rationale: str | None


@dataclass(frozen=True)
class JudgeCalibration:
    """Everything :func:`calibrate` finds about one judge (see the module). ``notebook``:
    for Yes/No instruments, the TTCW release notebook's table over all items (balanced
    accuracy, precision, recall, F1 and correlation, every unparsed or missing verdict
    counted as No, whatever ``unparsed_rule`` the rest follows)."""

    judge: str
    reference: str
    unparsed_rule: str
    items: tuple[ItemCalibration, ...]
    overall: ItemCalibration | None
    system: SystemLevel
    disagreements: tuple[Disagreement, ...]
    notebook: BinaryScores | None = None


Unit = tuple[str, str]  # (story_id, item)


def _kind(item: Item) -> str | None:
    if item.kind in BINARY_KINDS:
        return "binary"
    return "likert" if item.kind == "likert" else None


def _unit_values(rows: pd.DataFrame) -> dict[Unit, list[tuple[str, float]]]:
    """Unit → the (rater, value) answers with a value."""
    out: dict[Unit, list[tuple[str, float]]] = {}
    for story, item, rater, value in rows[["story_id", "item", "rater_id", "value"]].itertuples(
        index=False
    ):
        if not pd.isna(value):
            out.setdefault((str(story), str(item)), []).append((str(rater), float(value)))
    return out


def _consensus(answers: dict[Unit, list[tuple[str, float]]], binary: bool) -> dict[Unit, float]:
    """Unit → the panel's one value (:func:`consensus`), tied units left out."""
    out = {}
    for unit, given in answers.items():
        value = consensus([value for _, value in given], binary)
        if value is not None:
            out[unit] = value
    return out


@dataclass(frozen=True)
class _Units:
    """One criterion's (or all items') units: the reference raters' answers, the reference
    value and the judge's value per unit, and the counts of what was left out."""

    binary: bool
    categories: list[float]
    answers: dict[Unit, list[tuple[str, float]]]
    reference: dict[Unit, float]
    judge: dict[Unit, float]
    unparsed: int
    missing: int
    ties: int


def _units(
    reference: pd.DataFrame,
    candidate: pd.DataFrame,
    binary: bool,
    categories: list[float],
    as_no: bool,
) -> _Units:
    """The units of ``reference`` and ``candidate`` rows (already limited to the items)."""
    answers = _unit_values(reference)
    truth = _consensus(answers, binary)
    judge = _consensus(_unit_values(candidate), binary)
    unparsed = {
        (str(s), str(i))
        for s, i in candidate.loc[candidate["value"].isna(), ["story_id", "item"]].itertuples(
            index=False
        )
    }
    answered = {
        (str(s), str(i)) for s, i in candidate[["story_id", "item"]].itertuples(index=False)
    }
    missing = set(answers) - answered
    if as_no:
        for unit in unparsed | missing:
            judge.setdefault(unit, 0.0)
    ties = len(answers) - len(truth)
    return _Units(binary, categories, answers, truth, judge, len(unparsed), len(missing), ties)


def _target(value: float, binary: bool) -> float:
    return value if binary else nearest_point(value)


def _kappa(rows: list[Pair], units: _Units, bootstrap: int, seed: int) -> Kappa:
    """κ of (story, candidate, reference) rows on the units' categories and weights."""
    weights: Weights = "none" if units.binary else LIKERT_WEIGHTS
    return cohen_kappa(rows, units.categories, weights, bootstrap=bootstrap, seed=seed)


def _ceilings(units: _Units) -> tuple[Ceiling, tuple[Ceiling, ...]]:
    """The human ceiling pooled and per rater (see :class:`Ceiling`)."""
    rows: dict[str, list[tuple[str, float, float, float]]] = {}
    for unit, given in units.answers.items():
        if unit not in units.judge:
            continue
        for rater, value in given:
            others = consensus([v for r, v in given if r != rater], units.binary)
            if others is not None:
                target = _target(others, units.binary)
                rows.setdefault(rater, []).append((unit[0], value, units.judge[unit], target))

    def ceiling(part: list[tuple[str, float, float, float]], rater: str | None) -> Ceiling:
        human = _kappa([(s, h, t) for s, h, _, t in part], units, 0, 0).kappa
        judge = _kappa([(s, j, t) for s, _, j, t in part], units, 0, 0).kappa
        return Ceiling(rater, len(part), human, judge)

    pooled = [row for rater in sorted(rows) for row in rows[rater]]
    return ceiling(pooled, None), tuple(ceiling(rows[r], r) for r in sorted(rows))


def _alt_inputs(units: _Units, by_story: bool):
    """The alternative annotator test's inputs: rater → instance → answer, and the judge's;
    an instance is a story (one item) or a story × item (all items)."""

    def key(unit: Unit) -> str:
        return unit[0] if by_story else f"{unit[0]} × {unit[1]}"

    humans: dict[str, dict[str, float]] = {}
    for unit, given in units.answers.items():
        for rater, value in given:
            humans.setdefault(rater, {})[key(unit)] = value
    return humans, {key(unit): value for unit, value in units.judge.items()}


def _item_calibration(
    item: str, label: str, units: _Units, alt: AltTest | None, bootstrap: int, seed: int
) -> ItemCalibration:
    """Every per-unit figure of one criterion (or all items) from its units."""
    from scipy import stats

    shared = [unit for unit in units.reference if unit in units.judge]
    judged = [units.judge[unit] for unit in shared]
    truth = [units.reference[unit] for unit in shared]
    rows = [
        (u[0], j, _target(t, units.binary)) for u, j, t in zip(shared, judged, truth, strict=True)
    ]
    kappa = _kappa(rows, units, bootstrap, seed)
    scores = binary_scores(judged, truth) if units.binary else None
    alpha = spearman = None
    if not units.binary and len(shared) >= 2:
        if len(set(judged) | set(truth)) > 1:
            import krippendorff  # at use: the app imports this module at start

            alpha = float(
                krippendorff.alpha(
                    reliability_data=np.array([judged, truth]), level_of_measurement="interval"
                )
            )
        if len(set(judged)) > 1 and len(set(truth)) > 1:
            spearman = float(stats.spearmanr(judged, truth).statistic)
    pooled, per_rater = _ceilings(units)
    return ItemCalibration(
        item=item,
        label=label,
        kind="binary" if units.binary else "likert",
        unparsed=units.unparsed,
        missing=units.missing,
        ties=units.ties,
        kappa=kappa,
        scores=scores,
        alpha=alpha,
        spearman=spearman,
        ceiling=pooled,
        ceiling_per_rater=per_rater,
        alt_test=alt,
    )


def _scored_items(instrument: Instrument) -> list[Item]:
    return [item for item in instrument.items if _kind(item) is not None]


def _pooled_categories(items: list[Item]) -> list[float] | None:
    """The categories all ``items`` share (so that κ can pool them), or None."""
    found = {tuple(_categories(item)) for item in items}
    return list(found.pop()) if len(found) == 1 else None


def _categories(item: Item) -> list[float]:
    if _kind(item) == "binary":
        return [0.0, 1.0]
    return [float(point) for point in range(1, item.points + 1)]


def _label(item: Item) -> str:
    text = item.category or item.text
    return text if len(text) <= 60 else text[:59] + "…"


def calibrate(
    instrument: Instrument,
    reference: pd.DataFrame,
    candidate: pd.DataFrame,
    *,
    judge: str,
    reference_name: str = "human",
    as_no: bool = False,
    epsilon: float = EPSILON,
    min_instances: int = MIN_INSTANCES,
    family: Family = "criterion",
    bootstrap: int = 1000,
    seed: int = 0,
) -> JudgeCalibration:
    """The judge ``judge`` (its verdicts ``candidate``) against the ``reference`` panel on
    ``instrument``'s scored items (see the module). Both frames have one row per rater ×
    story × item: ``story_id``, ``source``, ``rater_id``, ``item``, ``value`` (NaN for an
    unparsed answer) and ``rationale``. ``family``: the alternative annotator test's
    correction family (:func:`~cyoa.rating.judges.alttest.alt_tests`)."""
    items = _scored_items(instrument)
    per_item: dict[str, _Units] = {}
    for item in items:
        per_item[item.id] = _units(
            reference[reference["item"] == item.id],
            candidate[candidate["item"] == item.id],
            _kind(item) == "binary",
            _categories(item),
            as_no,
        )
    scores: dict[str, Score] = {
        item.id: "accuracy" if _kind(item) == "binary" else "neg_rmse" for item in items
    }
    options = {"epsilon": epsilon, "min_instances": min_instances, "family": family}
    alts, others = _both_families(per_item, scores, options)
    calibrations = tuple(
        replace(
            _item_calibration(
                item.id, _label(item), per_item[item.id], alts[item.id], bootstrap, seed
            ),
            alt_test_other_family=others[item.id],
        )
        for item in items
    )
    overall = notebook = None
    categories = _pooled_categories(items) if items else None
    if categories is not None:
        binary = _kind(items[0]) == "binary"
        ids = [item.id for item in items]
        units = _units(
            reference[reference["item"].isin(ids)],
            candidate[candidate["item"].isin(ids)],
            binary,
            categories,
            as_no,
        )
        score: Score = "accuracy" if binary else "neg_rmse"
        alt = alt_tests({ALL_ITEMS: _alt_inputs(units, False)}, {ALL_ITEMS: score}, **options)
        overall = _item_calibration(ALL_ITEMS, ALL_ITEMS, units, alt[ALL_ITEMS], bootstrap, seed)
        if binary:
            notebook = _notebook_scores(reference, candidate, ids, categories)
    return JudgeCalibration(
        judge=judge,
        reference=reference_name,
        unparsed_rule="counted as No (the TTCW release's rule)" if as_no else "left out",
        items=calibrations,
        overall=overall,
        system=system_level(instrument, reference, candidate, as_no, bootstrap, seed),
        disagreements=disagreements(instrument, reference, candidate),
        notebook=notebook,
    )


def _both_families(
    per_item: dict[str, _Units], scores: dict[str, Score], options: dict
) -> tuple[dict[str, AltTest], dict[str, AltTest]]:
    """The per-item alternative annotator tests with ``options["family"]``, and with the
    other family."""
    inputs = {name: _alt_inputs(units, True) for name, units in per_item.items()}
    other = "judge" if options["family"] == "criterion" else "criterion"
    return alt_tests(inputs, scores, **options), alt_tests(
        inputs, scores, **{**options, "family": other}
    )


def _notebook_scores(
    reference: pd.DataFrame, candidate: pd.DataFrame, ids: list[str], categories: list[float]
) -> BinaryScores:
    """:func:`binary_scores` over every unit of the items ``ids`` with a reference majority,
    a judge's unparsed or missing verdict counted as No: the release notebook's rule for all
    five of its figures."""
    units = _units(
        reference[reference["item"].isin(ids)],
        candidate[candidate["item"].isin(ids)],
        True,
        categories,
        True,
    )
    shared = [unit for unit in units.reference if unit in units.judge]
    return binary_scores([units.judge[u] for u in shared], [units.reference[u] for u in shared])


def _system_values(instrument: Instrument, rows: pd.DataFrame, binary: bool) -> pd.DataFrame:
    """Rows of the items the system level reads, with ``score``: the value (Yes/No items) or
    the coded value (Likert items, reverse keying applied)."""
    ids = {item.id for item in _scored_items(instrument) if (_kind(item) == "binary") == binary}
    kept = rows[rows["item"].isin(ids)].copy()
    kept["score"] = [
        value if pd.isna(value) or binary else instrument.coded(item, value)
        for item, value in zip(kept["item"], kept["value"], strict=True)
    ]
    return kept


def system_level(
    instrument: Instrument,
    reference: pd.DataFrame,
    candidate: pd.DataFrame,
    as_no: bool = False,
    bootstrap: int = 1000,
    seed: int = 0,
) -> SystemLevel:
    """Each source's pass rate (share of Yes over its Yes/No judgements; the instrument has
    Yes/No items) or mean score (coded Likert points) by the reference panel and by the judge,
    and Kendall's τ-b (scipy) between the two columns. Interval: ``bootstrap`` replicates
    draw each source's stories with replacement (numpy ``default_rng(seed)``), τ of each,
    the 2.5 and 97.5 % quantiles; replicates without a τ left out.
    Reference: Kendall (1945); Efron & Tibshirani (1993), ch. 13."""
    binary = any(_kind(item) == "binary" for item in _scored_items(instrument))
    human = _system_values(instrument, reference, binary).dropna(subset=["score"])
    judged = _system_values(instrument, candidate, binary)
    sources = dict(zip(reference["story_id"], reference["source"], strict=True))
    judged["source"] = judged["story_id"].map(sources).fillna(judged["source"])
    judged = judged.fillna({"score": 0.0}) if as_no else judged.dropna(subset=["score"])
    sums = pd.concat(
        [
            human.groupby(["source", "story_id"])["score"].agg(["sum", "count"]).add_prefix("h_"),
            judged.groupby(["source", "story_id"])["score"].agg(["sum", "count"]).add_prefix("j_"),
        ],
        axis=1,
    ).fillna(0.0)
    measure = "pass rate" if binary else "mean score"
    rows = []
    for source, part in sums.groupby(level="source"):
        rows.append(
            SystemRow(
                source=str(source),
                stories=len(part),
                human=_ratio(part["h_sum"].sum(), part["h_count"].sum()),
                judge=_ratio(part["j_sum"].sum(), part["j_count"].sum()),
            )
        )
    tau = _tau([row.human for row in rows], [row.judge for row in rows])
    if tau is None:
        reason = "fewer than two sources with values that differ: no ranking to compare"
        return SystemLevel(measure, tuple(rows), None, None, None, reason)
    paired = [(r.human, r.judge) for r in rows if r.human is not None and r.judge is not None]
    p_value, p_method = tau_permutation_p([h for h, _ in paired], [j for _, j in paired], seed)
    if len(paired) < MIN_SOURCES_FOR_INTERVAL:
        why = (
            f"{len(paired)} sources (fewer than {MIN_SOURCES_FOR_INTERVAL}): τ takes only a few "
            "values and resampling stories would show the stability of this ranking, not an "
            "interval for τ; read the permutation p"
        )
        return SystemLevel(
            measure, tuple(rows), tau, None, None, None, p_value, p_method, interval_reason=why
        )
    low, high = _tau_interval(sums, bootstrap, seed)
    return SystemLevel(measure, tuple(rows), tau, low, high, None, p_value, p_method)


def _ratio(total: float, count: float) -> float | None:
    return float(total / count) if count else None


def _tau(human: list[float | None], judge: list[float | None]) -> float | None:
    """Kendall's τ-b of the sources both columns have values for; None if undefined."""
    pairs = [(h, j) for h, j in zip(human, judge, strict=True) if h is not None and j is not None]
    if len(pairs) < 2 or len({h for h, _ in pairs}) < 2 or len({j for _, j in pairs}) < 2:
        return None
    return kendall_tau_b([h for h, _ in pairs], [j for _, j in pairs])


def kendall_tau_b(x: list[float], y: list[float]) -> float | None:
    """Kendall's τ-b of two equally long lists: (C − D) / √((n₀ − n₁)(n₀ − n₂)), with C and
    D the concordant and discordant pairs, n₀ all pairs and n₁, n₂ the pairs tied in x and
    in y; ``None`` when either list never varies. Written out (scipy's ``kendalltau`` gives
    the same) because the bootstrap calls it a thousand times on a handful of sources.
    Reference: Kendall (1945)."""
    concordant = discordant = tied_x = tied_y = pairs = 0
    for a in range(len(x)):
        for b in range(a + 1, len(x)):
            pairs += 1
            dx, dy = x[a] - x[b], y[a] - y[b]
            tied_x += dx == 0
            tied_y += dy == 0
            concordant += dx * dy > 0
            discordant += dx * dy < 0
    denominator = ((pairs - tied_x) * (pairs - tied_y)) ** 0.5
    return (concordant - discordant) / denominator if denominator else None


def tau_permutation_p(x: list[float], y: list[float], seed: int = 0) -> tuple[float, str]:
    """The two-sided permutation p of Kendall's τ-b between ``x`` and ``y``: the share of
    orderings of ``y`` against ``x`` whose |C − D| is at least the observed one (τ-b's
    denominator does not change when ``y`` is reordered, so C − D orders them as τ-b does).
    Every ordering is counted up to :data:`EXACT_PERMUTATION_SOURCES` values (exact; with
    n values and no ties the smallest p is 2/n!, 0.083 for 4); beyond, without ties, the
    same exact distribution by scipy's ``kendalltau(method="exact")``, and with ties a
    seeded Monte-Carlo sample of :data:`MONTE_CARLO_PERMUTATIONS` orderings,
    p = (1 + count) / (1 + B). Returns (p, how it was found). Reference: Kendall (1938),
    Biometrika 30(1–2), the exact null distribution of τ over the n! orderings; Phipson &
    Smyth (2010) for (1 + b)/(1 + m)."""
    from scipy import stats

    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    first, second = np.triu_indices(xs.size, k=1)
    sign_x = np.sign(xs[first] - xs[second])
    observed = abs(float(sign_x @ np.sign(ys[first] - ys[second])))
    if xs.size <= EXACT_PERMUTATION_SOURCES:
        orderings = np.array(list(itertools.permutations(range(xs.size))))
        method = f"exact permutation ({len(orderings):,} orderings)"
    elif np.unique(xs).size == xs.size and np.unique(ys).size == ys.size:
        exact = stats.kendalltau(xs, ys, method="exact").pvalue
        return float(exact), "exact permutation (Kendall's distribution, scipy)"
    else:
        rng = np.random.default_rng(seed)
        orderings = np.array([rng.permutation(xs.size) for _ in range(MONTE_CARLO_PERMUTATIONS)])
        method = f"Monte-Carlo permutation ({MONTE_CARLO_PERMUTATIONS:,} orderings, seed {seed})"
    drawn = ys[orderings]
    scores = np.abs(np.sign(drawn[:, first] - drawn[:, second]) @ sign_x)
    extreme = int(np.sum(scores >= observed - 1e-9))
    if xs.size <= EXACT_PERMUTATION_SOURCES:
        return extreme / len(orderings), method
    return (1 + extreme) / (1 + len(orderings)), method


def _tau_interval(sums: pd.DataFrame, bootstrap: int, seed: int) -> tuple[float | None, ...]:
    """The percentile interval of τ over stories drawn within each source."""
    rng = np.random.default_rng(seed)
    parts = [part.to_numpy() for _, part in sums.groupby(level="source")]
    replicates = []
    for _ in range(bootstrap):
        drawn = [part[rng.integers(0, len(part), size=len(part))].sum(axis=0) for part in parts]
        human = [_ratio(row[0], row[1]) for row in drawn]
        judge = [_ratio(row[2], row[3]) for row in drawn]
        tau = _tau(human, judge)
        if tau is not None:
            replicates.append(tau)
    if not replicates:
        return None, None
    low, high = np.quantile(replicates, [0.025, 0.975])
    return float(low), float(high)


def disagreements(
    instrument: Instrument, reference: pd.DataFrame, candidate: pd.DataFrame
) -> tuple[Disagreement, ...]:
    """The units where two or more reference raters all gave the same answer and the judge
    a different one, in the instrument's item order, with the raters' rationales
    (``rater: text``) and the judge's."""
    order = {item.id: n for n, item in enumerate(_scored_items(instrument))}
    scored = reference[reference["item"].isin(order) & reference["value"].notna()]
    judged = candidate[candidate["item"].isin(order) & candidate["value"].notna()]
    verdicts = {(str(row.story_id), str(row.item)): row for row in judged.itertuples(index=False)}
    found = []
    for (story, item), group in scored.groupby(["story_id", "item"], sort=False):
        values = set(group["value"])
        verdict = verdicts.get((str(story), str(item)))
        if len(group) < 2 or len(values) != 1 or verdict is None or verdict.value in values:
            continue
        found.append(
            Disagreement(
                story_id=str(story),
                source=str(group["source"].iloc[0]),
                item=str(item),
                human=float(values.pop()),
                judge=float(verdict.value),
                human_rationales=tuple(
                    f"{rater}: {text}"
                    for rater, text in zip(group["rater_id"], group["rationale"], strict=True)
                    if isinstance(text, str) and text
                ),
                judge_rationale=verdict.rationale if isinstance(verdict.rationale, str) else None,
            )
        )
    return tuple(sorted(found, key=lambda row: (order[row.item], row.story_id)))
