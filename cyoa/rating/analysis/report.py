"""The report of a rating experiment: quality control first (which raters broke which of
the spec's exclusion rules), then the analysis with every rater and, when any rater is
excluded, without them, as *The Perils of Using Mechanical Turk* asks an evaluation to
report (Karpinska et al. 2021, §6): nobody is dropped silently."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.rating.analysis.data import RaterReview, load_ratings, review_raters
from cyoa.rating.analysis.mixed import source_model
from cyoa.rating.analysis.ratings import RatingAnalysis, analyze_ratings
from cyoa.rating.analysis.render import render_rating_analysis
from cyoa.rating.analysis.scales import coded_values
from cyoa.rating.instruments.types import Instrument
from cyoa.rating.judges.bias import BiasCard
from cyoa.rating.judges.bias_report import (
    bias_csv_rows,
    bias_markdown,
    bias_to_dict,
    judge_bias_cards,
)
from cyoa.rating.judges.calibration import JudgeCalibration
from cyoa.rating.judges.report import (
    calibration_csv_rows,
    calibration_markdown,
    calibration_to_dict,
    judge_calibrations,
)
from cyoa.rating.quality import STRAIGHT_LINING_MIN_ITEMS, split_judgements

POSITIONAL_NOTE = (
    "The rater ids of this imported file are positions within each story (rater 1 of one "
    "story need not be rater 1 of another), not people: no per-rater quality control or "
    "severity, and no rater effect in the model."
)


@dataclass(frozen=True)
class RaterSeverity:
    """Each rater's severity: their predicted offset (BLUP) in the crossed story × rater
    model of ``measure`` (:func:`rater_severity`), in its units; positive rates higher than
    the model predicts (lenient), negative lower (harsh). ``note``: why there are none."""

    offsets: dict[str, float]
    measure: str
    note: str | None = None


@dataclass(frozen=True)
class RatingReport:
    review: RaterReview
    all_raters: RatingAnalysis
    kept_raters: RatingAnalysis | None  # None when no rater is excluded
    severity: RaterSeverity | None = None
    raters_known: bool = True
    judges: tuple[JudgeCalibration, ...] = ()  # each judge against every human rater
    bias: tuple[BiasCard, ...] = ()  # each judge's bias card, in the order of ``judges``


def raters_known(spec: dict[str, Any]) -> bool:
    """False for an imported experiment whose file numbers each story's raters
    (``import-ratings --rater-ids positions``): its rater ids are not people."""
    return (spec.get("import") or {}).get("rater_ids") != "positions"


def rater_severity(
    instrument: Instrument, judgements: pd.DataFrame, known: bool = True
) -> RaterSeverity:
    """Each rater's offset in the crossed model (:func:`cyoa.rating.analysis.mixed.source_model`)
    of their per-story score: the mean of their Likert answers after reverse coding (scale
    points), or for an instrument without Likert items the share of their Yes answers
    (a fraction). Other items (true/false facts of FEI) say nothing of a rater's leniency.
    Reference: Henderson (1975) for the BLUP; severity as a rater effect, Myford & Wolfe
    (2003), Journal of Applied Measurement 4(4)."""
    kinds = {item.id: item.kind for item in instrument.items}
    kind_of = judgements["item"].map(kinds)
    kind = "likert" if (kind_of == "likert").any() else "yes_no"
    measure = (
        "mean Likert answer after reverse coding (points)"
        if kind == "likert"
        else "share of Yes answers"
    )
    if not known:
        return RaterSeverity({}, measure, POSITIONAL_NOTE)
    rows = judgements[kind_of == kind].dropna(subset=["value"])
    if rows.empty:
        return RaterSeverity({}, measure, "no Likert or Yes/No answers to measure severity on")
    rows = rows.assign(score=coded_values(instrument, rows))
    frame = rows.groupby(["story_id", "source", "rater_id"], as_index=False)["score"].mean()
    model = source_model(frame, "severity")
    if model is None or model.rater_offsets is None:
        note = model.note if model is not None else None
        return RaterSeverity({}, measure, note or "the model could not be fitted")
    return RaterSeverity(model.rater_offsets, measure)


def rating_report(
    db: Db, experiment: str, *, judges: bool = False, bootstrap: int = 1000
) -> RatingReport:
    """Quality control and the analysis of the stored rating experiment ``experiment``'s
    human panel, and with ``judges`` each judge panel calibrated against it, with its bias
    card. ``bootstrap``: the replicates of every bootstrap interval (agreement, FEI, the
    judges' κ and τ). :class:`AnalysisError` with a sentence while no rater has answered."""
    data = load_ratings(db, experiment)
    if data.judgements.empty:
        raise AnalysisError(
            f"Rating experiment '{experiment}' has no ratings yet: analyse it once raters "
            "have answered."
        )
    review = review_raters(db, experiment, data)
    known = raters_known(data.spec)
    everyone = analyze_ratings(
        data.instrument, data.judgements, raters_known=known, bootstrap=bootstrap
    )
    kept = None
    if review.excluded:
        rows, _ = split_judgements(data.judgements, review.excluded, review.check_ids)
        kept = (
            analyze_ratings(data.instrument, rows, raters_known=known, bootstrap=bootstrap)
            if len(rows)
            else None
        )
    severity = rater_severity(data.instrument, data.judgements, known)
    calibrations = judge_calibrations(db, experiment, data, bootstrap) if judges else ()
    bias = judge_bias_cards(db, experiment, data) if judges else ()
    return RatingReport(review, everyone, kept, severity, known, calibrations, bias)


def quality_rows(
    review: RaterReview, severity: RaterSeverity | None = None
) -> list[dict[str, Any]]:
    """One row per rater: what quality control measured, and the rules they broke.
    ``straight_lined_pages`` counts the pages of at least the spec's ``straight_lining``
    rule's ``min_items`` Likert answers, all the same (without that rule, of
    :data:`~cyoa.rating.quality.STRAIGHT_LINING_MIN_ITEMS`), as the rule counts them.
    ``severity``: the rater's offset in the model (:func:`rater_severity`), ``None`` where
    not measured. No rows when the raters' ids are positions, not people
    (``severity.note`` is :data:`POSITIONAL_NOTE`)."""
    if severity is not None and severity.note == POSITIONAL_NOTE:
        return []
    offsets = severity.offsets if severity is not None else {}
    broken = {e.rater_id: e.broken for e in review.exclusions}
    min_items = next(
        (c.rule.min_items for c in review.summary.by_rule if c.rule.rule == "straight_lining"),
        STRAIGHT_LINING_MIN_ITEMS,
    )
    return [
        {
            "rater_id": quality.rater_id,
            "failed_checks": quality.failed_checks,
            "checks": len(quality.checks),
            "median_words_per_minute": quality.words_per_minute("median"),
            "median_seconds_per_story": quality.seconds_per_story("median"),
            "straight_lined_pages": quality.straight_lined_pages(min_items),
            "severity": offsets.get(quality.rater_id),
            "excluded": bool(broken.get(quality.rater_id)),
            "rules_broken": "; ".join(rule.describe() for rule in broken.get(quality.rater_id, ())),
        }
        for quality in review.qualities
    ]


def render_report(report: RatingReport, fmt: str) -> str:
    """``report`` as markdown, csv (the analysis tables with a first column ``raters``:
    ``all`` or ``kept``) or json."""
    summary = report.review.summary
    if fmt == "json":
        body = {
            "quality": {
                "raters": summary.raters,
                "excluded": summary.excluded,
                "by_rule": [
                    {
                        "rule": count.description,
                        "raters": count.raters,
                        "only_this_rule": count.only_this_rule,
                    }
                    for count in summary.by_rule
                ],  # fmt: skip
                "per_rater": quality_rows(report.review, report.severity),
            },
            "severity": None
            if report.severity is None
            else {
                "measure": report.severity.measure,
                "note": report.severity.note,
            },
            "all_raters": report.all_raters.to_dict(),
            "without_excluded": report.kept_raters.to_dict() if report.kept_raters else None,
            "judges": [calibration_to_dict(judge) for judge in report.judges],
            "bias_cards": [bias_to_dict(card) for card in report.bias],
        }
        return json.dumps(body, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(("raters", "table", "row", "column", "value"))
        parts = [("all", report.all_raters)]
        if report.kept_raters is not None:
            parts.append(("kept", report.kept_raters))
        for label, analysis in parts:
            lines = render_rating_analysis(analysis, "csv").splitlines()[1:]
            for row in csv.reader(lines):
                writer.writerow((label, *row))
        for row in calibration_csv_rows(report.judges) + bias_csv_rows(report.bias):
            writer.writerow(("all", *row))
        return out.getvalue()
    lines = ["# Quality control", ""]
    if not summary.by_rule:
        lines.append("The spec sets no exclusion rule: every rater is analysed.")
    else:
        lines += [
            f"{summary.excluded} of {summary.raters} raters excluded by the spec's rules.",
            "",
            "| rule | raters who broke it | excluded by it alone |",
            "|---|---|---|",
        ]
        lines += [
            f"| {count.description} | {count.raters} | {count.only_this_rule} |"
            for count in summary.by_rule
        ]
        flagged = [row for row in quality_rows(report.review, report.severity) if row["excluded"]]
        if flagged:
            lines += ["", "Excluded raters: " + "; ".join(
                f"{row['rater_id']} ({row['rules_broken']})" for row in flagged
            ) + "."]  # fmt: skip
    lines += _severity_lines(report)
    lines += ["", "# With every rater", "", render_rating_analysis(report.all_raters)]
    if report.kept_raters is not None:
        lines += [
            f"# Without the {summary.excluded} excluded raters",
            "",
            render_rating_analysis(report.kept_raters),
        ]
    if report.judges:
        lines += [calibration_markdown(report.judges)]
    if report.bias:
        lines += [bias_markdown(report.bias)]
    return "\n".join(lines)


def _severity_lines(report: RatingReport) -> list[str]:
    """Each rater's severity, most lenient first, or why there is none."""
    severity = report.severity
    if severity is None:
        return []
    if severity.note:
        return ["", f"Rater severity: none. {severity.note}"]
    ranked = sorted(severity.offsets.items(), key=lambda pair: -pair[1])
    listed = ", ".join(f"{rater} {offset:+.2f}" for rater, offset in ranked)
    return [
        "",
        f"Rater severity (each rater's offset in the mixed model of the {severity.measure}; "
        f"+ lenient, − harsh): {listed}.",
    ]


def report_text(
    db: Db,
    experiment: str,
    fmt: str,
    *,
    compat: str | None = None,
    alternative: str = "two-sided",
    pair: tuple[str, str] | None = None,
) -> str:
    """The ``analyze`` verb's text for a rating experiment (:func:`rating_report`, with its
    judges, in ``fmt``). The co-writing options (``compat``, ``pair``, a one-sided
    ``alternative``) are refused with :class:`AnalysisError`."""
    if compat or pair or alternative != "two-sided":
        raise AnalysisError(
            "--compat, --pair and --alternative are for co-writing experiments; "
            f"'{experiment}' is a rating experiment."
        )
    return render_report(rating_report(db, experiment, judges=True), fmt)
