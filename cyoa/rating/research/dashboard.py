"""A rating experiment's dashboard analysis: computed off the request path
(:mod:`cyoa.analyses.jobs`) and stored as display-ready JSON, so the page and its polling of
``progress.json`` answer from the stored one at once.

The result holds what the analysis decides (excluded raters, time on task, the exclusion
rules' counts, each rater's quality control, agreement, the results tables, the Judges section
and the charts as SVG); the counts that a rater's every answer changes are read live by the
page (:mod:`cyoa.rating.research.views`). The numbers come from
:func:`cyoa.rating.analysis.report.rating_report`, with the app's ``RATING_BOOTSTRAP``
replicates, all read from one snapshot of the database.
"""

from __future__ import annotations

import csv
import hashlib
import io
import statistics
from dataclasses import replace
from typing import Any

from cyoa.analyses.jobs import Step
from cyoa.db.facade import Db
from cyoa.db.transactions import read_snapshot
from cyoa.rating import store as rating_store
from cyoa.rating.analysis.render import agreement_warnings, alpha_cell, display_value
from cyoa.rating.analysis.report import RatingReport, quality_rows, rating_report, render_report
from cyoa.rating.research.charts import chart_names, rating_chart
from cyoa.rating.research.judges import judges_section
from cyoa.rating.service import RatingExperiment
from cyoa.web.charts import CHART_LOCK, empty_chart
from cyoa.web.research import format_seconds

# The stored analysis' kind (``analyses.kind``).
KIND = "rating-dashboard"
# The analysis of an experiment is computed again at most this often, in seconds.
RECOMPUTE_SECONDS = 30


def data_version(db: Db, exp_id: str, replicates: int) -> str:
    """Changes whenever a rater acts (every action is a ``rating_events`` row), judgements are
    imported, the spec is edited, or the dashboard's bootstrap replicates are set otherwise."""
    events, last, judgements, spec = db.execute(
        "SELECT (SELECT count(*) FROM rating_events WHERE experiment_id = :id),"
        " (SELECT max(created_at) FROM rating_events WHERE experiment_id = :id),"
        " (SELECT count(*) FROM judgements WHERE experiment_id = :id),"
        " (SELECT spec FROM experiments WHERE id = :id)",
        {"id": exp_id},
    ).fetchone()
    digest = hashlib.sha256((spec or "").encode("utf-8")).hexdigest()[:12]
    return f"{events}-{last or ''}-{judgements}-{digest}-b{replicates}"


def human_judgements(db: Db, exp_id: str) -> int:
    """The human panel's judgements of ``exp_id`` (the answers an analysis counts; judges'
    verdicts are in their own section)."""
    return db.execute(
        "SELECT count(*) FROM judgements j JOIN raters r ON r.experiment_id = j.experiment_id"
        " AND r.rater_id = j.rater_id WHERE j.experiment_id = ? AND r.panel = ?",
        [exp_id, rating_store.HUMAN_PANEL],
    ).fetchone()[0]


def any_judgement(db: Db, exp_id: str) -> bool:
    """Whether ``exp_id`` has a judgement of any panel (before the first there is nothing to
    analyse)."""
    row = db.execute("SELECT 1 FROM judgements WHERE experiment_id = ? LIMIT 1", [exp_id])
    return row.fetchone() is not None


# What a table's numbers allow while the study runs, shown under it (docs/analysis.md, "Watching
# a study as it runs"): no sequential method fits the crossed mixed model, so its p-values
# between sources are fixed-sample ones.
TABLE_NOTES = {
    "model_differences": (
        "Fixed-sample p-values: valid for one look at a size planned in advance, not for "
        "stopping when they look decisive. No anytime-valid method fits the crossed mixed model "
        "(stories and raters both shared between sources), so none is offered; decide the "
        "number of stories and raters first (the Plan page)."
    ),
}


def analysis_tables(report_csv: str) -> list[dict[str, Any]]:
    """The report's CSV (``raters, table, row, column, value``) as one display table per
    ``raters`` × ``table``: its ``columns`` and its ``rows``, each a row label followed by
    one cell per column ("" where the CSV has none), in the order they come; numbers rounded
    for reading (:func:`~cyoa.rating.analysis.render.display_value`); ``note``: what the
    table's numbers allow while the study runs (:data:`TABLE_NOTES`, "" for most)."""
    tables: dict[tuple[str, str], dict[str, Any]] = {}
    for line in csv.DictReader(io.StringIO(report_csv)):
        key = (line["raters"], line["table"])
        table = tables.setdefault(
            key, {"raters": key[0], "name": key[1], "columns": [], "cells": {}}
        )
        if line["column"] not in table["columns"]:
            table["columns"].append(line["column"])
        shown = display_value(line["column"], line["value"])
        table["cells"].setdefault(line["row"], {})[line["column"]] = shown
    return [
        {
            "raters": table["raters"],
            "name": table["name"],
            "note": TABLE_NOTES.get(table["name"], ""),
            "columns": table["columns"],
            "rows": [
                [row, *(cells.get(column, "") for column in table["columns"])]
                for row, cells in table["cells"].items()
            ],
        }
        for table in tables.values()
    ]


def draw_chart(exp: RatingExperiment, report: RatingReport | None, name: str) -> bytes:
    """The chart ``name`` of the kept raters when the spec's rules exclude any, else of every
    rater, with a caption that says whose judgements it shows."""
    instrument = exp.questions.instrument
    if report is None:
        return rating_chart(name, instrument, None)
    excluded = report.review.summary.excluded
    kept = report.kept_raters
    if kept is not None:
        caption = f"{kept.raters} kept raters ({excluded} excluded by the spec's rules)"
        return rating_chart(name, instrument, kept, caption)
    if excluded:
        return empty_chart("No kept raters: the spec's rules exclude every rater who answered.")
    everyone = report.all_raters
    return rating_chart(name, instrument, everyone, f"all {everyone.raters} raters")


def _number(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _rules(exp: RatingExperiment, report: RatingReport | None) -> list[dict[str, Any]]:
    """Each exclusion rule of the spec, with how many raters broke it and how many it alone
    excluded (0 before the first judgement)."""
    if report is None:
        return [
            {"description": rule.describe(), "raters": 0, "only_this_rule": 0}
            for rule in exp.quality.exclusions
        ]
    return [
        {
            "description": count.description,
            "raters": count.raters,
            "only_this_rule": count.only_this_rule,
        }
        for count in report.review.summary.by_rule
    ]


def _platform_id(rater: dict[str, Any] | None) -> str:
    """The id the rater came with (Prolific's PROLIFIC_PID or ?pid=), to find them on the
    platform; "anonymous" for a rater who came without one, "–" for imported judgements."""
    if rater is not None and rater["id_source"] == "anonymous":
        return "anonymous"
    return (rater or {}).get("external_id") or "–"


def _quality(db: Db, exp_id: str, report: RatingReport | None) -> list[dict[str, Any]]:
    """Each rater's quality control, display-ready; ``rater_id`` names the rater's page."""
    raters = {row["rater_id"]: row for row in rating_store.rating_rows(db, exp_id, "raters")}
    return [
        {
            "rater": row["rater_id"][:12],
            "rater_id": row["rater_id"],
            "platform_id": _platform_id(raters.get(row["rater_id"])),
            "failed_checks": f"{row['failed_checks']} of {row['checks']}",
            "seconds": _number(row["median_seconds_per_story"]),
            "words_per_minute": _number(row["median_words_per_minute"]),
            "straight_lined": str(row["straight_lined_pages"]),
            "severity": _signed(row["severity"]),
            "excluded": row["excluded"],
            "rules": row["rules_broken"] if row["excluded"] else "no",
        }
        for row in (quality_rows(report.review, report.severity) if report else [])
    ]


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def _quality_note(report: RatingReport | None) -> str:
    """What the severity column measures, or why there is no per-rater quality control."""
    if report is None or report.severity is None:
        return ""
    severity = report.severity
    if severity.note:
        return severity.note if not report.raters_known else f"Severity: {severity.note}."
    return (
        f"Severity: the rater's offset in the mixed model (random story and rater) of the "
        f"{severity.measure}; + rates higher than the model predicts (lenient), − lower (harsh)."
    )


def _agreement(report: RatingReport | None) -> dict[str, Any]:
    """Krippendorff's α with its interval per item over all sources, with every rater and,
    when any is excluded, without them: the pooled row ("all items") as the headline and
    first of the rows. The headline says what the interval resampled, the note how; the
    warnings of thin intervals (marked ‡ in the cells) come as a list of their own."""
    if report is None:
        return {"headline": "No judgements yet.", "rows": [], "note": "", "warnings": []}
    kept = {
        entry.item_id: entry
        for entry in (report.kept_raters.agreement if report.kept_raters else ())
        if entry.scope == "all"
    }
    entries = [entry for entry in report.all_raters.agreement if entry.scope == "all"]
    entries.sort(key=lambda entry: entry.item_id != "all items")
    texts = report.all_raters.item_texts
    rows = [
        {
            "item": entry.item_id,
            "label": texts.get(entry.item_id, "every item pooled"),
            "level": entry.alpha.level,
            "all": alpha_cell(entry),
            "kept": alpha_cell(kept[entry.item_id]) if entry.item_id in kept else "–",
            "stories": str(entry.alpha.stories),
            "agree": "–" if entry.exact.share is None else f"{100 * entry.exact.share:.0f}%",
        }
        for entry in entries
    ]
    analysis = report.all_raters
    warned = agreement_warnings(tuple(entries))
    note = (
        f"95% percentile bootstrap intervals over stories, each story with all its items "
        f"({analysis.bootstrap:,} replicates, seed {analysis.seed}); per-source agreement, "
        "Fleiss' κ, Gwet's AC1, ICC(2,k) and q(α < .667) are in the results below."
    )
    pooled = entries[0] if entries and entries[0].item_id == "all items" else None
    if pooled is None:
        headline = "Krippendorff's α per item: open the table below."
    else:
        headline = (
            f"Krippendorff's α over every item ({pooled.alpha.level}; percentile bootstrap over "
            f"{pooled.alpha.stories:,} stories, each with all its items, {analysis.bootstrap:,} "
            f"replicates, seed {analysis.seed}): {rows[0]['all']}"
        )
        if report.kept_raters is not None:
            headline += f"; without the excluded raters: {rows[0]['kept']}"
    return {"headline": headline, "rows": rows, "note": note, "warnings": warned}


def human_only(report: RatingReport) -> RatingReport:
    """``report`` without its judges: the results tables are the human panel's (the judges
    have a section of their own)."""
    return replace(report, judges=(), bias=())


def result_of(
    db: Db, exp: RatingExperiment, report: RatingReport | None, charts: bool = True
) -> dict[str, Any]:
    """The dashboard's display-ready figures of ``report`` (None: no judgements yet), with
    its charts as SVG text by name unless ``charts`` is off."""
    quality = quality_rows(report.review, report.severity) if report else []
    times = [
        r["median_seconds_per_story"] for r in quality if r["median_seconds_per_story"] is not None
    ]
    drawn = {}
    for name in chart_names(exp.questions.instrument) if charts else ():
        with CHART_LOCK:
            drawn[name] = draw_chart(exp, report, name).decode("utf-8")
    return {
        "excluded": report.review.summary.excluded if report else 0,
        "median_seconds": format_seconds(statistics.median(times)) if times else "–",
        "rules": _rules(exp, report),
        "quality": _quality(db, exp.id, report),
        "quality_note": _quality_note(report),
        "agreement": _agreement(report),
        "tables": analysis_tables(render_report(human_only(report), "csv")) if report else [],
        "judges": judges_section(db, exp.id, exp.spec, report),
        "charts": drawn,
    }


def analyse(
    db: Db, exp: RatingExperiment, replicates: int, step: Step
) -> tuple[int, str, dict[str, Any], RatingReport | None]:
    """The analysis of ``exp`` as its data is now, from one snapshot of the database: the
    human judgements it counted, the data version it read, the display-ready result and the
    report it came from (None before the first judgement)."""
    with read_snapshot(db):
        answers = human_judgements(db, exp.id)
        version = data_version(db, exp.id, replicates)
        step(f"analysing {answers:,} answers")
        judged = any_judgement(db, exp.id)
        report = rating_report(db, exp.id, judges=True, bootstrap=replicates) if judged else None
        step("drawing the charts")
        return answers, version, result_of(db, exp, report), report
