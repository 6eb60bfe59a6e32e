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

from sqlite_utils import Database

from cyoa.errors import AnalysisError
from cyoa.rating.analysis.data import RaterReview, load_ratings, review_raters
from cyoa.rating.analysis.ratings import RatingAnalysis, analyze_ratings
from cyoa.rating.analysis.render import render_rating_analysis
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


@dataclass(frozen=True)
class RatingReport:
    review: RaterReview
    all_raters: RatingAnalysis
    kept_raters: RatingAnalysis | None  # None when no rater is excluded
    judges: tuple[JudgeCalibration, ...] = ()  # each judge against every human rater
    bias: tuple[BiasCard, ...] = ()  # each judge's bias card, in the order of ``judges``


def rating_report(db: Database, experiment: str, *, judges: bool = False) -> RatingReport:
    """Quality control and the analysis of the stored rating experiment ``experiment``'s
    human panel, and with ``judges`` each judge panel calibrated against it, with its bias
    card."""
    data = load_ratings(db, experiment)
    review = review_raters(db, experiment, data)
    everyone = analyze_ratings(data.instrument, data.judgements)
    kept = None
    if review.excluded:
        rows, _ = split_judgements(data.judgements, review.excluded, review.check_ids)
        kept = analyze_ratings(data.instrument, rows) if len(rows) else None
    calibrations = judge_calibrations(db, experiment, data) if judges else ()
    bias = judge_bias_cards(db, experiment, data) if judges else ()
    return RatingReport(review, everyone, kept, calibrations, bias)


def quality_rows(review: RaterReview) -> list[dict[str, Any]]:
    """One row per rater: what quality control measured, and the rules they broke.
    ``straight_lined_pages`` counts the pages of at least the spec's ``straight_lining``
    rule's ``min_items`` Likert answers, all the same (without that rule, of
    :data:`~cyoa.rating.quality.STRAIGHT_LINING_MIN_ITEMS`), as the rule counts them."""
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
                "per_rater": quality_rows(report.review),
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
        flagged = [row for row in quality_rows(report.review) if row["excluded"]]
        if flagged:
            lines += ["", "Excluded raters: " + "; ".join(
                f"{row['rater_id']} ({row['rules_broken']})" for row in flagged
            ) + "."]  # fmt: skip
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


def report_text(
    db: Database,
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
