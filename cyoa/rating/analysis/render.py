"""Print a :class:`~cyoa.rating.analysis.ratings.RatingAnalysis` as Markdown, CSV or JSON.

- ``markdown``: tables for reading (pass rates in %, means and coefficients to 2–3 decimals,
  p-values to 3 significant digits), the instrument's attribution, and the notes saying what
  was computed.
- ``csv``: one value per line, ``table,row,column,value``, at full precision, for scripts.
- ``json``: every field of the analysis (:meth:`RatingAnalysis.to_dict`), at full precision;
  undefined values are ``null``.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from typing import Any, Literal

from cyoa.rating.analysis.agreement import ALPHA_MIN, MIN_STORIES, Icc, ItemAgreement
from cyoa.rating.analysis.fei import EntropyMean, FeiAnalysis, PairedComparison
from cyoa.rating.analysis.mixed import ModelEstimate, SourceMean
from cyoa.rating.analysis.ratings import RatingAnalysis
from cyoa.rating.analysis.scales import (
    NESTED_RATERS_NOTE,
    NESTED_RATERS_REASON,
    MeanInterval,
    PairComparison,
    ScaleAnalysis,
    SourceTest,
)
from cyoa.rating.analysis.ttcw import TtcwAnalysis

Format = Literal["markdown", "csv", "json"]
FORMATS: tuple[Format, ...] = ("markdown", "csv", "json")


def render_rating_analysis(analysis: RatingAnalysis, fmt: Format = "markdown") -> str:
    """``analysis`` in the format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "markdown":
        return to_markdown(analysis)
    if fmt == "csv":
        return to_csv(analysis)
    if fmt == "json":
        return json.dumps(analysis.to_dict(), indent=2, ensure_ascii=False) + "\n"
    raise ValueError(f"Unknown format {fmt!r}: use one of {', '.join(FORMATS)}.")


# --- CSV -----------------------------------------------------------------------------------


def _mean_rows(table: str, row: str, prefix: str, mean: MeanInterval) -> list[tuple]:
    return [
        (table, row, f"{prefix}{field}", getattr(mean, field))
        for field in ("mean", "ci_low", "ci_high", "sd", "n", "clipped")
    ]


def _test_rows(table: str, test: SourceTest) -> list[tuple]:
    rows = [(table, test.what, "method", test.method)]
    for field in ("statistic", "p_value", "p_holm", "effect", "effect_name", "reason", "p_method"):
        rows.append((table, test.what, field, getattr(test, field)))
    return rows


_PAIR_FIELDS = (
    "n_first", "n_second", "u", "p_value", "p_method", "p_holm",
    "delta", "delta_ci_low", "delta_ci_high",
)  # fmt: skip


def _pair_rows(table: str, tests: tuple[SourceTest, ...] | list[SourceTest]) -> list[tuple]:
    """Each pair of sources of each test, one row ``what: first vs second`` per pair."""
    return [
        (table, f"{test.what}: {pair.first} vs {pair.second}", field, getattr(pair, field))
        for test in tests
        for pair in test.pairs
        for field in _PAIR_FIELDS
    ]


def _model_rows(models: tuple[ModelEstimate, ...]) -> list[tuple]:
    """The mixed model's estimates: ``model_means`` first (the headline), then
    ``model_differences`` and ``model`` (method, counts, variance components)."""
    means: list[tuple] = []
    differences: list[tuple] = []
    details: list[tuple] = []
    for model in models:
        for mean in model.means:
            row = f"{model.what} {mean.source}"
            means += [
                ("model_means", row, field, getattr(mean, field))
                for field in ("mean", "ci_low", "ci_high", "se", "df", "clipped")
            ]
        for difference in model.differences:
            row = f"{model.what} {difference.first} − {difference.second}"
            differences += [
                ("model_differences", row, field, getattr(difference, field))
                for field in ("difference", "ci_low", "ci_high", "se", "df", "p_value", "p_holm")
            ]
        for field in ("method", "stories", "raters", "observations", "replicates", "dropped"):
            details.append(("model", model.what, field, getattr(model, field)))
        if model.components is not None:
            for field, value in dataclasses.asdict(model.components).items():
                details.append(("model", model.what, f"variance {field}", value))
        details.append(("model", model.what, "note", model.note))
    return means + differences + details


def _scale_rows(scales: ScaleAnalysis) -> list[tuple]:
    rows: list[tuple] = _model_rows(scales.models)
    for item in scales.items:
        row = f"{item.item_id} {item.source}"
        rows += _mean_rows("items", row, "", item.mean)
        rows += [("items", row, "answers", item.answers), ("items", row, "stories", item.stories)]
        rows += [("items", row, f"count {point}", count) for point, count in item.counts.items()]
    for factor in scales.factors:
        row = f"{factor.factor} {factor.source}"
        rows += _mean_rows("factors", row, "", factor.mean)
        rows += [
            ("factors", row, "scores", factor.scores),
            ("factors", row, "median", factor.median),
        ]
    for reliability in scales.reliability:
        row = f"{reliability.factor} {reliability.scope}"
        for field, value in dataclasses.asdict(reliability).items():
            if field == "warnings":
                rows.append(("reliability", row, field, " ".join(value) or None))
            elif field not in ("factor", "scope"):
                rows.append(("reliability", row, field, value))
    for test in scales.tests:
        rows += _test_rows("factor_tests", test)
    return rows + _pair_rows("factor_pairs", scales.tests)


def _ttcw_rows(tests: TtcwAnalysis) -> list[tuple]:
    rows: list[tuple] = _model_rows((tests.model,) if tests.model is not None else ())
    for rate in tests.pass_rates:
        row = f"{rate.test_id} {rate.source}"
        rows += [("pass_rates", row, field, getattr(rate, field)) for field in ("yes", "n", "rate")]
    rows += [("pass_rates", f"average {s}", "rate", rate) for s, rate in tests.average.items()]
    for dimension in tests.dimensions:
        row = f"{dimension.dimension} {dimension.source}"
        rows += [("dimensions", row, f, getattr(dimension, f)) for f in ("yes", "n", "rate")]
    for passed in tests.tests_passed:
        rows += _mean_rows("tests_passed", passed.source, "majority ", passed.majority)
        rows += _mean_rows("tests_passed", passed.source, "per rater ", passed.per_rater)
    for test in tests.kappa:
        rows += [("fleiss_kappa", test.test_id, "kappa", test.fleiss.kappa)]
        rows += [("fleiss_kappa", test.test_id, "reason", test.fleiss.reason)]
        rows += [("fleiss_kappa", test.test_id, "gwet ac1", test.ac1.ac1 if test.ac1 else None)]
    rows.append(("fleiss_kappa", "mean", "kappa", tests.mean_kappa))
    rows.append(("fleiss_kappa", "mean", "gwet ac1", tests.mean_ac1))
    for field, value in dataclasses.asdict(tests.correlation).items():
        rows.append(("rater_correlation", "tests passed", field, value))
    if tests.test is not None:
        rows += _test_rows("tests_passed_test", tests.test)
        rows += _pair_rows("tests_passed_pairs", [tests.test])
    rows.append(("rationales", "given", "count", tests.rationales))
    rows.append(("rationales", "asked", "count", tests.rationale_asked))
    return rows


def _entropy_rows(table: str, row: str, prefix: str, mean: EntropyMean) -> list[tuple]:
    return [
        (table, row, f"{prefix}{field}", getattr(mean, field))
        for field in ("mean", "ci_low", "ci_high", "n", "questions")
    ]


def _fei_rows(fei: FeiAnalysis) -> list[tuple]:
    rows: list[tuple] = []
    for summary in fei.summaries:
        row = f"{summary.index} {summary.source}"
        rows += _entropy_rows("fei", row, "", summary.mean)
        rows += _entropy_rows("fei", row, "equal readers ", summary.equal)
        for field in ("readers", "readers_min", "readers_median", "readers_max"):
            rows.append(("fei", row, field, getattr(summary, field)))
    for story in fei.stories:
        for field in ("etc", "ewc", "etc_questions", "ewc_questions", "etc_equal", "ewc_equal"):
            rows.append(
                ("fei_stories", f"{story.story_id} {story.source}", field, getattr(story, field))
            )
    for test in fei.tests:
        rows += _test_rows("fei_tests", test)
    for paired in fei.paired:
        row = f"{paired.index} {paired.copies} vs {paired.originals}"
        for field in (
            "pairs", "mean_difference", "ci_low", "ci_high", "statistic", "p_value", "p_holm",
            "effect", "method", "reason",
        ):  # fmt: skip
            rows.append(("fei_paired", row, field, getattr(paired, field)))
    rows += _pair_rows("fei_pairs", fei.tests)
    rows.append(("fei", "questions with fewer than 2 answers", "count", fei.skipped_questions))
    rows += [("fei_warnings", str(n), "warning", text) for n, text in enumerate(fei.warnings, 1)]
    return rows


_ALPHA_FIELDS = (
    "alpha",
    "ci_low",
    "ci_high",
    "level",
    "units",
    "stories",
    "interval",
    "valid_resamples",
    "reason",
)


def _agreement_rows(agreement: tuple[ItemAgreement, ...]) -> list[tuple]:
    rows: list[tuple] = []
    for entry in agreement:
        row = f"{entry.item_id} {entry.scope}"
        for field in _ALPHA_FIELDS:
            column = "alpha" if field == "alpha" else f"alpha {field}"
            rows.append(("agreement", row, column, getattr(entry.alpha, field)))
        rows.append(("agreement", row, f"alpha q_below_{ALPHA_MIN}", entry.alpha.q_below_min))
        rows.append(("agreement", row, "alpha warnings", " ".join(entry.alpha.warnings) or None))
        if entry.fleiss is not None:
            rows.append(("agreement", row, "fleiss kappa", entry.fleiss.kappa))
            rows.append(("agreement", row, "fleiss reason", entry.fleiss.reason))
        if entry.ac1 is not None:
            for field in ("ac1", "ci_low", "ci_high", "pa", "pe", "reason"):
                column = "gwet ac1" if field == "ac1" else f"ac1 {field}"
                rows.append(("agreement", row, column, getattr(entry.ac1, field)))
        if entry.icc is not None:
            fields = ("icc", "ci_low", "ci_high", "stories", "rated", "raters", "note", "reason")
            for field in fields:
                column = "icc_2k" if field == "icc" else f"icc {field}"
                rows.append(("agreement", row, column, getattr(entry.icc, field)))
        rows.append(("agreement", row, "exact agreement", entry.exact.share))
    return rows


def to_csv(analysis: RatingAnalysis) -> str:
    """One value per line: ``table,row,column,value`` (empty value: undefined)."""
    rows: list[tuple] = [
        ("study", "instrument", "id", analysis.instrument_id),
        ("study", "instrument", "version", analysis.instrument_version),
        ("study", "judgements", "count", analysis.judgements),
        ("study", "judgements", "missing", analysis.missing),
        ("study", "raters", "count", analysis.raters),
    ]
    rows += [("study", "stories", source, count) for source, count in analysis.stories.items()]
    if analysis.scales is not None:
        rows += _scale_rows(analysis.scales)
    if analysis.tests is not None:
        rows += _ttcw_rows(analysis.tests)
    if analysis.fei is not None:
        rows += _fei_rows(analysis.fei)
    rows += _agreement_rows(analysis.agreement)
    rows += [
        ("text_answers", item, "count", count) for item, count in analysis.text_answers.items()
    ]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("table", "row", "column", "value"))
    for table, row, column, value in rows:
        writer.writerow((table, row, column, "" if _undefined(value) else value))
    return out.getvalue()


# --- Markdown ------------------------------------------------------------------------------


def _undefined(value: Any) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def _num(value: float | None, digits: int = 2) -> str:
    if _undefined(value):
        return "–"
    text = f"{value:.{digits}f}"
    # A small negative number rounds to "-0.00": shown as the zero it reads as.
    return text[1:] if text.startswith("-") and not text.strip("-0.") else text


def _pct(value: float | None) -> str:
    return "–" if _undefined(value) else f"{100 * value:.1f}"


def _p(value: float | None) -> str:
    return "–" if _undefined(value) else f"{value:.3g}"


# Marks an interval cut at the bound of its scale (MeanInterval.clipped).
CLIPPED = "†"
CLIPPED_NOTE = (
    f"{CLIPPED} The t interval reached past the scale and is cut at its bound (0 and the "
    "number of tests, the lowest and highest points of a Likert scale, 0 and 1 bit); "
    "docs/analysis.md."
)
# Marks a coefficient whose figure or interval comes with a warning, listed under its table.
WARNED = "‡"
# Columns of the CSV holding shares (0–1), shown to 3 decimals; other numbers get 2.
_SHARE_COLUMNS = ("rate", "exact agreement")


def display_value(column: str, value: str) -> str:
    """A value of the CSV (:func:`to_csv`) in column ``column`` as a person reads it:
    p-values (``p_value``, ``p_holm``) to 3 significant digits, shares (``rate``,
    ``exact agreement``) to 3 decimals, other numbers with a fraction to 2 decimals; whole
    numbers and text as they are. The CSV itself keeps full precision for scripts."""
    try:
        number = float(value)
    except ValueError:
        return value
    if "." not in value and "e" not in value.lower():
        return value
    if column.startswith("p_"):
        return _p(number)
    return _num(number, 3 if column in _SHARE_COLUMNS else 2)


def _interval(low: float | None, high: float | None, digits: int = 2) -> str:
    if low == -math.inf and not _undefined(high):
        # An interval without a lower bound (ICC(2,k) from few stories).
        return f" [−∞, {_num(high, digits)}]"
    if _undefined(low) or _undefined(high):
        return ""
    return f" [{_num(low, digits)}, {_num(high, digits)}]"


def _mean(mean: MeanInterval | None, digits: int = 2) -> str:
    if mean is None or mean.mean is None:
        return "–"
    interval = _interval(mean.ci_low, mean.ci_high, digits) + (CLIPPED if mean.clipped else "")
    return f"{_num(mean.mean, digits)}{interval} ({mean.n})"


def _means(analysis: RatingAnalysis) -> list[MeanInterval | SourceMean]:
    means: list[MeanInterval | SourceMean] = []
    if analysis.scales is not None:
        means += [summary.mean for summary in (*analysis.scales.items, *analysis.scales.factors)]
        means += [mean for model in analysis.scales.models for mean in model.means]
    if analysis.tests is not None:
        for passed in analysis.tests.tests_passed:
            means += [passed.majority, passed.per_rater]
        if analysis.tests.model is not None:
            means += list(analysis.tests.model.means)
    return means


def _table(head: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return lines + [""]


def _effect_cell(test: SourceTest) -> str:
    """The effect, with Cliff's δ's interval when two sources were compared."""
    cell = _num(test.effect, 2)
    if len(test.sources) == 2 and len(test.pairs) == 1:
        cell += _interval(test.pairs[0].delta_ci_low, test.pairs[0].delta_ci_high)
    return cell


def _test_cells(test: SourceTest | None) -> list[str]:
    if test is None:
        return ["–", "–", "–", "–"]
    if test.p_value is None and test.statistic is not None:
        return [_num(test.statistic, 1), f"– ({test.reason})", "–", _effect_cell(test)]
    if test.p_value is None:
        return [test.reason or "–", "–", "–", "–"]
    return [_num(test.statistic, 1), _p(test.p_value), _p(test.p_holm), _effect_cell(test)]


def _p_methods(tests: list[SourceTest]) -> str:
    """How the p-values were found: one method, or each with what it was used for."""
    by_method: dict[str, list[str]] = {}
    for test in tests:
        if test.p_method:
            by_method.setdefault(test.p_method, []).append(test.what)
    if len(by_method) == 1:
        return next(iter(by_method))
    return "; ".join(f"{method} ({', '.join(whats)})" for method, whats in by_method.items())


def _test_method(tests: list[SourceTest]) -> list[str]:
    if not tests:
        return []
    test = tests[0]
    interval = " [95% CI]" if len(test.sources) == 2 else ""
    p = f"; p: {_p_methods(tests)}" if _p_methods(tests) else ""
    return [f"Test between sources: {test.method}{p}; effect: {test.effect_name}{interval}.", ""]


def _pair_cells(pair: PairComparison) -> list[str]:
    delta = _num(pair.delta) + _interval(pair.delta_ci_low, pair.delta_ci_high)
    return [
        f"{pair.first} vs {pair.second}",
        f"{pair.n_first}, {pair.n_second}",
        _num(pair.u, 1),
        _p(pair.p_value),
        _p(pair.p_holm),
        delta,
        pair.p_method,
    ]


def _pair_lines(tests: list[SourceTest], unit: str) -> list[str]:
    """The post-hoc table: every pair of sources of each test, when a test has more than one
    pair (three or more sources); with two sources the test itself is the pair."""
    tests = [test for test in tests if len(test.pairs) > 1]
    if not tests:
        return []
    lines = ["## Pairwise comparisons between sources", ""]
    head = [unit.capitalize(), "Pair", "n", "U", "p", "p (Holm)", "Cliff's δ [95% CI]", "p from"]
    body = [[test.what, *_pair_cells(pair)] for test in tests for pair in test.pairs]
    count = len(tests[0].pairs)
    return (
        lines
        + _table(head, body)
        + [
            f"Two-sided Mann–Whitney U of the first source against the second (U of the first); "
            f"p (Holm): Holm-adjusted within each {unit}'s {count} pairs. Cliff's δ = P(first > "
            "second) − P(first < second), with the 95% interval of Feng & Cliff (2004).",
            "",
        ]
    )


def _reliability_lines(scales: ScaleAnalysis) -> list[str]:
    """Cronbach's α and McDonald's ω per factor, pooled and within each source, with the
    warnings under the table."""
    lines = ["## Reliability (pooled over all sources, and within each source)", ""]
    body = [
        [
            entry.factor,
            entry.scope,
            str(entry.items),
            str(entry.n),
            _num(entry.cronbach_alpha)
            + _interval(entry.alpha_ci_low, entry.alpha_ci_high)
            + (WARNED if entry.warnings else ""),
            _num(entry.omega) if entry.omega is not None else f"– ({entry.omega_reason})",
        ]
        for entry in scales.reliability
    ]
    head = ["Factor", "Rows of", "items", "n", "Cronbach's α [95% CI]", "McDonald's ω"]
    lines += _table(head, body)
    warned = [
        f"- {WARNED} {entry.factor} ({entry.scope}): {warning}"
        for entry in scales.reliability
        for warning in entry.warnings
    ]
    lines += warned + ([""] if warned else [])
    if len({entry.scope for entry in scales.reliability}) > 1:
        lines += [
            "Differences between sources make a factor's items covary in the pooled rows: read "
            "the within-source rows for how consistently the items measure one thing.",
            "",
        ]
    return lines


def _model_mean(mean: SourceMean | None) -> str:
    if mean is None:
        return "–"
    interval = _interval(mean.ci_low, mean.ci_high) + (CLIPPED if mean.clipped else "")
    return f"{_num(mean.mean)}{interval}"


def _model_lines(analysis: RatingAnalysis, models: tuple[ModelEstimate, ...]) -> list[str]:
    """The headline: each factor's and item's source means and differences from the mixed
    model (or its bootstrap fallback), the variance components, and what each rests on."""
    if not models:
        return []
    sources = list(analysis.sources)
    lines = ["## Source means from the mixed model (mean [95% CI])", ""]
    body = []
    for model in models:
        by_source = {mean.source: mean for mean in model.means}
        kind = "model" if model.components is not None else "bootstrap"
        body.append([model.what, *(_model_mean(by_source.get(s)) for s in sources), kind])
    lines += _table(["Measure", *sources, "interval from"], body)
    methods = dict.fromkeys(model.method for model in models)
    lines += [f"Intervals from: {'; '.join(methods)}.", ""]
    pairs = [(model, pair) for model in models for pair in model.differences]
    if pairs:
        lines += ["## Differences between sources (mixed model)", ""]
        body = [
            [
                model.what,
                f"{pair.first} − {pair.second}",
                _num(pair.difference) + _interval(pair.ci_low, pair.ci_high),
                _num(pair.df, 1),
                _p(pair.p_value),
                _p(pair.p_holm),
            ]
            for model, pair in pairs
        ]
        lines += _table(["Measure", "pair", "difference [95% CI]", "df", "p", "p (Holm)"], body)
    lines += ["## Variance components (mixed model)", ""]
    body = []
    for model in models:
        parts = model.components
        cells = ["–"] * 7 if parts is None else [
            _num(parts.story, 3), _num(parts.rater, 3), _num(parts.rater_source, 3),
            _num(parts.residual, 3), _num(parts.icc_story), _num(parts.icc_rater),
            _num(parts.icc_rater_source),
        ]  # fmt: skip
        counts = [str(model.stories), "–" if model.raters is None else str(model.raters)]
        body.append([model.what, *cells, *counts, str(model.observations)])
    head = ["Measure", "σ² story", "σ² rater", "σ² rater × source", "σ² residual", "ICC story"]
    head += ["ICC rater", "ICC rater × source"]
    lines += _table(head + ["stories", "raters", "ratings"], body)
    for model in models:
        if model.note:
            dropped = f" {model.dropped} replicates dropped (a source lost every story)."
            lines.append(f"- {model.what}: {model.note}{dropped if model.dropped else ''}")
    return lines + ([""] if any(model.note for model in models) else [])


def _scale_lines(analysis: RatingAnalysis, scales: ScaleAnalysis) -> list[str]:
    sources = list(analysis.sources)
    lines = _model_lines(analysis, scales.models)
    lines += [
        "## Factors over story means (mean score after reverse coding [95% t CI over story "
        "means] (stories); leaves out the raters' share of the uncertainty)",
        "",
    ]
    tests = {test.what: test for test in scales.tests}
    factors = list(dict.fromkeys(factor.factor for factor in scales.factors))
    by_key = {(factor.factor, factor.source): factor for factor in scales.factors}
    head = ["Factor", *sources, "statistic", "p", "p (Holm)", "effect"]
    body = [
        [
            factor,
            *(_mean(by_key[(factor, s)].mean) if (factor, s) in by_key else "–" for s in sources),
            *_test_cells(tests.get(factor)),
        ]
        for factor in factors
    ]
    lines += _table(head, body) + _test_method(list(scales.tests))
    if any(test.reason == NESTED_RATERS_REASON for test in scales.tests):
        lines += [NESTED_RATERS_NOTE, ""]
    lines += _pair_lines(list(scales.tests), "factor")
    lines += _reliability_lines(scales)
    lines += [
        "## Items (mean answer as given [95% t CI over story means] (stories); answers per point)",
        "",
    ]
    items = list(dict.fromkeys(item.item_id for item in scales.items))
    by_item = {(item.item_id, item.source): item for item in scales.items}
    head = ["Item", "Statement", *sources, *(f"{s} per point" for s in sources)]
    body = []
    for item_id in items:
        summaries = [by_item.get((item_id, source)) for source in sources]
        body.append(
            [
                item_id,
                analysis.item_texts.get(item_id, ""),
                *(_mean(summary.mean) if summary else "–" for summary in summaries),
                *(
                    "/".join(str(count) for count in summary.counts.values()) if summary else "–"
                    for summary in summaries
                ),
            ]
        )
    return lines + _table(head, body)


def _ttcw_lines(analysis: RatingAnalysis, tests: TtcwAnalysis) -> list[str]:
    sources = list(analysis.sources)
    lines = [
        "## Pass rates (% of judgements that are Yes), Fleiss' κ and Gwet's AC1 per test",
        "",
    ]
    rates = {(rate.test_id, rate.source): rate for rate in tests.pass_rates}
    kappa = {test.test_id: test.fleiss for test in tests.kappa}
    ac1 = {test.test_id: test.ac1.ac1 for test in tests.kappa if test.ac1 is not None}
    test_ids = list(dict.fromkeys(rate.test_id for rate in tests.pass_rates))
    body = []
    for test_id in test_ids:
        first = rates[(test_id, sources[0])]
        fleiss = kappa.get(test_id)
        body.append(
            [
                first.dimension or "",
                first.category,
                *(_pct(rates[(test_id, source)].rate) for source in sources),
                _num(fleiss.kappa) if fleiss and fleiss.kappa is not None else "–",
                _num(ac1[test_id]) if ac1.get(test_id) is not None else "–",
            ]
        )
    body.append(
        [
            "",
            "Average",
            *(_pct(tests.average[s]) for s in sources),
            _num(tests.mean_kappa),
            _num(tests.mean_ac1),
        ]
    )
    lines += _table(["Dimension", "Test", *sources, "Fleiss' κ", "Gwet's AC1"], body)
    reasons = sorted({f.reason for f in kappa.values() if f.kappa is None and f.reason})
    if reasons:
        lines += [f"Fleiss' κ undefined: {'; '.join(reasons)}.", ""]
    dimensions = list(dict.fromkeys(entry.dimension for entry in tests.dimensions))
    by_dimension = {(entry.dimension, entry.source): entry for entry in tests.dimensions}
    if dimensions:
        lines += ["## Pass rates per dimension (%)", ""]
        body = [[d, *(_pct(by_dimension[(d, s)].rate) for s in sources)] for d in dimensions]
        lines += _table(["Dimension", *sources], body)
    lines += _model_lines(analysis, (tests.model,) if tests.model is not None else ())
    lines += ["## Tests passed per story (mean [95% t CI over story means] (stories))", ""]
    body = [
        [passed.source, _mean(passed.majority), _mean(passed.per_rater)]
        for passed in tests.tests_passed
    ]
    tests_count = tests.tests_passed[0].tests if tests.tests_passed else 0
    lines += _table(
        ["Source", f"by majority of raters (of {tests_count})", "per rater, averaged"], body
    )
    if tests.test is not None:
        statistic, p, _, effect = _test_cells(tests.test)
        lines += [
            f"Tests passed per rater between sources: {tests.test.method}, statistic "
            f"{statistic}, p = {p} ({tests.test.p_method}), {tests.test.effect_name} = {effect}.",
            "",
        ]
        lines += _pair_lines([tests.test], "measure")
    correlation = tests.correlation
    lines += [
        f"Agreement on tests passed: pairwise Pearson r = {_num(correlation.pairwise_r)} over "
        f"{correlation.story_pairs} pairs of raters of the same story ({correlation.stories} "
        f"stories); mean r of rater pairs with at least {correlation.min_shared} stories in "
        f"common = {_num(correlation.mean_rater_pair_r)} ({correlation.rater_pairs} pairs).",
        "",
        f"Rationales: {tests.rationales} of {tests.rationale_asked} judgements came with one.",
        "",
    ]
    return lines


def _entropy(mean: EntropyMean) -> str:
    if mean.mean is None:
        return "–"
    counts = f"({mean.n} stories, {mean.questions} questions)"
    return f"{_num(mean.mean, 3)}{_interval(mean.ci_low, mean.ci_high, 3)} {counts}"


def _paired_cells(paired: PairedComparison) -> list[str]:
    difference = _num(paired.mean_difference, 3) + _interval(paired.ci_low, paired.ci_high, 3)
    cells = [paired.index, paired.copies, paired.originals, str(paired.pairs), difference]
    if paired.p_value is None:
        return [*cells, paired.reason or "–", "–", "–", "–"]
    return [
        *cells,
        _num(paired.statistic, 1),
        _p(paired.p_value),
        _p(paired.p_holm),
        _num(paired.effect, 2),
    ]


def _fei_lines(analysis: RatingAnalysis, fei: FeiAnalysis) -> list[str]:
    sources = list(analysis.sources)
    by_key = {(summary.index, summary.source): summary for summary in fei.summaries}
    indices = [index for index in ("ETC", "EWC") if any(s.index == index for s in fei.summaries)]
    lines = [
        "## Fabula Entropy Indexing (bits; lower is more coherent)",
        "",
        f"E(Q) over each source's questions [95% percentile bootstrap interval over stories, "
        f"{fei.bootstrap:,} replicates, seed {fei.seed}] (stories, questions).",
        "",
    ]
    body = [
        [
            index,
            *(_entropy(by_key[(index, s)].mean) if (index, s) in by_key else "–" for s in sources),
        ]
        for index in indices
    ]
    lines += _table(["Index", *sources], body)
    lines += [
        "At an equal number of readers per question (each question's entropy averaged over "
        "every subset of that many of its readers): the figures the tests compare. Readers "
        "per question as answered in brackets (fewest–most).",
        "",
    ]
    tests = {test.what: test for test in fei.tests}
    body = []
    for index in indices:
        own = [by_key.get((index, s)) for s in sources]
        readers = next(summary.readers for summary in own if summary is not None)
        cells = [
            f"{_entropy(summary.equal)} [{summary.readers_min}–{summary.readers_max}]"
            if summary
            else "–"
            for summary in own
        ]
        body.append([index, str(readers), *cells, *_test_cells(tests.get(index))])
    head = ["Index", "readers", *sources, "statistic", "p", "p (Holm)", "effect"]
    lines += _table(head, body) + _test_method(list(fei.tests))
    if fei.paired:
        lines += [
            "### Corrupted copies against their originals (copy − original, bits, at equal "
            "readers; 95% bootstrap interval over pairs)",
            "",
        ]
        head = ["Index", "copies", "originals", "pairs", "mean difference [95% CI]", "W+"]
        lines += _table([*head, "p", "p (Holm)", "r"], [_paired_cells(p) for p in fei.paired])
        lines += [
            f"Paired test: {fei.paired[0].method}, zero differences dropped; effect: "
            "matched-pairs rank-biserial r (positive: the copies have the higher entropy).",
            "",
        ]
    lines += _pair_lines(list(fei.tests), "index")
    if fei.skipped_questions:
        lines += [f"{fei.skipped_questions} questions had fewer than 2 answers: left out.", ""]
    lines += [f"Warning: {warning}" for warning in fei.warnings]
    return lines + ([""] if fei.warnings else [])


def alpha_cell(entry: ItemAgreement) -> str:
    """Krippendorff's α of ``entry`` to 2 decimals with its 95% bootstrap interval in
    brackets when there is one, e.g. ``0.41 [0.12, 0.63]``, and :data:`WARNED` when it comes
    with a warning (:func:`agreement_warnings`); ``– (why)`` when α is undefined. An interval
    from fewer replicates than were drawn says so beside it, ``(635 of 1,000 replicates)``:
    the dropped ones (a single value, no α) are the draws of the most unanimous stories, so
    the interval leans away from them, and a reader must see that where the number is."""
    alpha = entry.alpha
    if alpha.alpha is None:
        return f"– ({alpha.reason})"
    mark = WARNED if alpha.warnings else ""
    cell = _num(alpha.alpha) + _interval(alpha.ci_low, alpha.ci_high) + mark
    if alpha.ci_low is not None and alpha.valid_resamples < alpha.resamples:
        cell += f" ({alpha.valid_resamples:,} of {alpha.resamples:,} replicates)"
    return cell


def agreement_warnings(agreement: tuple[ItemAgreement, ...]) -> list[str]:
    """Each distinct warning of the agreement rows, followed by the rows it concerns
    ("item (stories of)"), in the order the rows come."""
    rows: dict[str, list[str]] = {}
    for entry in agreement:
        for warning in entry.alpha.warnings:
            rows.setdefault(warning, []).append(f"{entry.item_id} ({entry.scope})")
    return [f"{warning} Rows: {', '.join(names)}." for warning, names in rows.items()]


def _coefficient(value: float | None, low: float | None, high: float | None, why: str) -> str:
    if value is None:
        return f"– ({why})" if why else "–"
    return _num(value) + _interval(low, high)


def icc_cell(value: Icc | None) -> str:
    """ICC(2,k) with its interval and what it rests on, n stories × k raters, with "of N"
    when only the stories rated by every rater could be used:
    ``0.62 [0.41, 0.77] (113 of 1,073 stories × 10 raters)``; ``– (why)`` without one. The
    row's own story count is α's, over every story, so the ICC's must be beside it."""
    if value is None:
        return "–"
    if value.icc is None:
        return f"– ({value.reason})" if value.reason else "–"
    share = (
        f"{value.stories:,}"
        if value.stories == value.rated
        else f"{value.stories:,} of {value.rated:,}"
    )
    basis = f" ({share} stories × {value.raters} raters)"
    return _num(value.icc) + _interval(value.ci_low, value.ci_high) + basis


def _agreement_cells(entry: ItemAgreement, kappa: bool, icc: bool) -> list[str]:
    alpha = entry.alpha
    cells = [entry.item_id, entry.scope, alpha.level, alpha_cell(entry), _num(alpha.q_below_min)]
    if kappa:
        fleiss, ac1 = entry.fleiss, entry.ac1
        cells.append(
            "–" if fleiss is None else _coefficient(fleiss.kappa, None, None, fleiss.reason or "")
        )
        cells.append(
            "–" if ac1 is None else _coefficient(ac1.ac1, ac1.ci_low, ac1.ci_high, ac1.reason or "")
        )
    if icc:
        cells.append(icc_cell(entry.icc))
    return cells + [_pct(entry.exact.share), str(alpha.units), str(alpha.stories)]


def _agreement_lines(analysis: RatingAnalysis) -> list[str]:
    if not analysis.agreement:
        return []
    lines = [
        "## Agreement",
        "",
        f"Intervals of α and AC1: percentile bootstrap over stories (each with all its items), "
        f"{analysis.bootstrap:,} replicates, seed {analysis.seed}; the last column says how many "
        f"stories each resampled. q: the share of replicates with α below {ALPHA_MIN} "
        "(Hayes & Krippendorff 2007). ICC(2,k): F-based interval (McGraw & Wong 1996).",
        "",
    ]
    kappa = any(entry.fleiss is not None for entry in analysis.agreement)
    icc = any(entry.icc is not None for entry in analysis.agreement)
    body = [_agreement_cells(entry, kappa, icc) for entry in analysis.agreement]
    head = ["Item", "Stories of", "Level", "α [95% CI]", f"q(α < {ALPHA_MIN})"]
    head += ["Fleiss' κ", "Gwet's AC1 [95% CI]"] if kappa else []
    head += ["ICC(2,k) [95% CI]"] if icc else []
    lines += _table(head + ["% all agree", "units", "stories"], body)
    warned = agreement_warnings(analysis.agreement)
    if warned:
        lines += [f"- {WARNED} {warning}" for warning in warned]
        lines += [
            "",
            f"Intervals over fewer than {MIN_STORIES} stories are flagged; see docs/analysis.md.",
            "",
        ]
    return lines


def to_markdown(analysis: RatingAnalysis) -> str:
    """The analysis as Markdown tables, with the attribution and the notes."""
    stories = ", ".join(f"{source} ({count} stories)" for source, count in analysis.stories.items())
    lines = [
        f"# Rating analysis: {analysis.instrument_name}",
        "",
        f"Instrument {analysis.instrument_id} (version {analysis.instrument_version}). "
        f"Sources: {stories}. Raters: {analysis.raters}; judgements: {analysis.judgements} "
        f"({analysis.missing} without an answer).",
        "",
    ]
    if analysis.reference:
        lines += [f"Reference: {analysis.reference}", ""]
    if analysis.attribution:
        lines += [f"Attribution: {analysis.attribution}", ""]
    if analysis.scales is not None:
        lines += _scale_lines(analysis, analysis.scales)
    if analysis.tests is not None:
        lines += _ttcw_lines(analysis, analysis.tests)
    if analysis.fei is not None:
        lines += _fei_lines(analysis, analysis.fei)
    lines += _agreement_lines(analysis)
    if analysis.text_answers:
        answers = ", ".join(f"{item}: {count}" for item, count in analysis.text_answers.items())
        lines += [f"Written answers per text item: {answers}.", ""]
    notes = list(analysis.notes)
    if any(mean.clipped for mean in _means(analysis)):
        notes.append(CLIPPED_NOTE)
    lines += ["## Notes", ""] + [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"
