"""The researcher's pages of a rating experiment: progress, quality control (who was
excluded and why), agreement, charts, the analysis with every rater and without the excluded
ones, each rater's answers with their rationales, the evaluation card and the downloads.

Thin: the numbers come from :mod:`cyoa.analysis.rating_report`, the charts from
:mod:`cyoa.research.rating_charts`, the card from :mod:`cyoa.research.rating_card`, the files
from :mod:`cyoa.research.exports`. The analysis and its charts are computed once per version
of the experiment's data (:func:`data_version`), so the page's polling of ``progress.json``
costs a few queries until a rater acts.
"""

from __future__ import annotations

import csv
import hashlib
import io
import statistics
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    send_file,
    url_for,
)
from sqlite_utils import Database

from cyoa import store
from cyoa.analysis.rating_report import (
    RatingReport,
    quality_rows,
    rating_report,
    render_report,
)
from cyoa.analysis.ratings import RatingAnalysis
from cyoa.rating.service import RatingExperiment
from cyoa.research import auth, exports
from cyoa.research.dashboard import CHART_LOCK
from cyoa.research.progress import format_seconds
from cyoa.research.rating_card import rating_card_markdown
from cyoa.research.rating_charts import CHARTS, chart_names, rating_chart
from cyoa.research.rating_exports import RATING_TABLES
from cyoa.research.web import CHART_CSP, DETAILS_MAX_CHARS, MIMETYPES, template_globals

bp = Blueprint("research_ratings", __name__, url_prefix="/research/ratings")
bp.before_request(auth.check_csrf)
bp.context_processor(template_globals)
# How often the dashboard asks for progress.json (static/js/research/rating_dashboard.js), in ms.
POLL_MS = 5000
_SNAPSHOT_LOCK = threading.Lock()


def _db() -> Database:
    return store.connect(current_app.config["DATABASE"])


def _rating_experiment(exp_id: str) -> RatingExperiment:
    experiment = current_app.extensions["cyoa"]["ratings"].experiment(exp_id)
    if experiment is None:
        abort(404)
    return experiment


def analysis_tables(report_csv: str) -> list[dict[str, Any]]:
    """The report's CSV (``raters, table, row, column, value``) as one display table per
    ``raters`` × ``table``: its ``columns`` and its ``rows``, each a row label followed by
    one cell per column ("" where the CSV has none), in the order they come."""
    tables: dict[tuple[str, str], dict[str, Any]] = {}
    for line in csv.DictReader(io.StringIO(report_csv)):
        key = (line["raters"], line["table"])
        table = tables.setdefault(
            key, {"raters": key[0], "name": key[1], "columns": [], "cells": {}}
        )
        if line["column"] not in table["columns"]:
            table["columns"].append(line["column"])
        table["cells"].setdefault(line["row"], {})[line["column"]] = line["value"]
    return [
        {
            "raters": table["raters"],
            "name": table["name"],
            "columns": table["columns"],
            "rows": [
                [row, *(cells.get(column, "") for column in table["columns"])]
                for row, cells in table["cells"].items()
            ],
        }
        for table in tables.values()
    ]


# --- the analysis, once per data version ------------------------------------------------


@dataclass
class Snapshot:
    """The analysis of one version of a rating experiment's data (``report`` is None before
    the first judgement) and the charts drawn from it so far."""

    version: str
    report: RatingReport | None
    charts: dict[str, bytes] = field(default_factory=dict)


def data_version(db: Database, exp_id: str) -> str:
    """Changes whenever a rater acts (every action is a ``rating_events`` row), judgements are
    imported, or the spec is edited."""
    events, last, judgements, spec = db.execute(
        "SELECT (SELECT count(*) FROM rating_events WHERE experiment_id = :id),"
        " (SELECT max(created_at) FROM rating_events WHERE experiment_id = :id),"
        " (SELECT count(*) FROM judgements WHERE experiment_id = :id),"
        " (SELECT spec FROM experiments WHERE id = :id)",
        {"id": exp_id},
    ).fetchone()
    digest = hashlib.sha256((spec or "").encode("utf-8")).hexdigest()[:12]
    return f"{events}-{last or ''}-{judgements}-{digest}"


def snapshot(db: Database, exp_id: str) -> Snapshot:
    """The analysis of the experiment's current data, computed when the data changed."""
    cache: dict[str, Snapshot] = current_app.extensions["research"].setdefault(
        "rating_snapshots", {}
    )
    version = data_version(db, exp_id)
    with _SNAPSHOT_LOCK:
        cached = cache.get(exp_id)
        if cached is None or cached.version != version:
            judged = db.execute(
                "SELECT count(*) FROM judgements WHERE experiment_id = ?", [exp_id]
            ).fetchone()[0]
            cached = Snapshot(version, rating_report(db, exp_id) if judged else None)
            cache[exp_id] = cached
        return cached


def _charted(report: RatingReport | None) -> tuple[RatingAnalysis | None, str]:
    """The analysis the charts show, and the caption that says whose judgements: without the
    excluded raters when the spec's rules exclude any, else every rater."""
    if report is None:
        return None, ""
    summary = report.review.summary
    if report.kept_raters is not None:
        kept = summary.raters - summary.excluded
        return report.kept_raters, (
            f"{kept} kept raters ({summary.excluded} excluded by the spec's rules)"
        )
    return report.all_raters, f"all {report.all_raters.raters} raters"


def _chart(exp: RatingExperiment, snap: Snapshot, name: str) -> bytes:
    with CHART_LOCK:
        if name not in snap.charts:
            analysis, caption = _charted(snap.report)
            snap.charts[name] = rating_chart(name, exp.questions.instrument, analysis, caption)
        return snap.charts[name]


# --- what the page shows ----------------------------------------------------------------


def _number(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _progress(db: Database, exp: RatingExperiment, report: RatingReport | None) -> dict[str, Any]:
    raters = store.rating_rows(db, exp.id, "raters")
    per_story = [
        row["n"]
        for row in db.query(
            "SELECT count(DISTINCT j.rater_id) AS n FROM stories s LEFT JOIN judgements j"
            " ON j.experiment_id = s.experiment_id AND j.story_id = s.story_id"
            " WHERE s.experiment_id = ? GROUP BY s.story_id",
            [exp.id],
        )
    ]
    quality = quality_rows(report.review) if report else []
    times = [
        r["median_seconds_per_story"] for r in quality if r["median_seconds_per_story"] is not None
    ]
    return {
        "stories": len(exp.stories),
        "raters_per_story": exp.spec.get("raters_per_story"),
        "started": len(raters),
        "finished": sum(1 for r in raters if r["phase"] == "done" or r["id_source"] == "import"),
        "excluded": report.review.summary.excluded if report else 0,
        "least_rated": min(per_story, default=0),
        "most_rated": max(per_story, default=0),
        "judgements": report.all_raters.judgements if report else 0,
        "median_seconds": format_seconds(statistics.median(times)) if times else "–",
    }


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


def _quality(exp_id: str, report: RatingReport | None) -> list[dict[str, Any]]:
    page = "research_ratings.rating_rater"
    return [
        {
            "rater": row["rater_id"][:12],
            "url": url_for(page, exp_id=exp_id, rater_id=row["rater_id"]),
            "failed_checks": f"{row['failed_checks']} of {row['checks']}",
            "seconds": _number(row["median_seconds_per_story"]),
            "words_per_minute": _number(row["median_words_per_minute"]),
            "straight_lined": str(row["straight_lined_pages"]),
            "excluded": row["excluded"],
            "rules": row["rules_broken"] if row["excluded"] else "no",
        }
        for row in (quality_rows(report.review) if report else [])
    ]


def _alpha(entry) -> str:
    alpha = entry.alpha
    if alpha.alpha is None:
        return f"– ({alpha.reason})"
    if alpha.ci_low is None or alpha.ci_high is None:
        return f"{alpha.alpha:.2f}"
    return f"{alpha.alpha:.2f} [{alpha.ci_low:.2f}, {alpha.ci_high:.2f}]"


def _agreement(report: RatingReport | None) -> dict[str, Any]:
    """Krippendorff's α with its interval per item over all sources, with every rater and,
    when any is excluded, without them: the pooled row ("all items") as the headline and
    first of the rows."""
    if report is None:
        return {"headline": "No judgements yet.", "rows": [], "note": ""}
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
            "all": _alpha(entry),
            "kept": _alpha(kept[entry.item_id]) if entry.item_id in kept else "–",
            "stories": str(entry.alpha.units),
            "agree": "–" if entry.exact.share is None else f"{100 * entry.exact.share:.0f}%",
        }
        for entry in entries
    ]
    analysis = report.all_raters
    note = (
        f"95% percentile bootstrap intervals over stories ({analysis.bootstrap:,} replicates, "
        f"seed {analysis.seed}); per-source agreement and Fleiss' κ are in the results below."
    )
    pooled = rows[0] if rows and rows[0]["item"] == "all items" else None
    if pooled is None:
        headline = "Krippendorff's α per item: open the table below."
    else:
        headline = (
            f"Krippendorff's α over every item ({pooled['level']}, {pooled['stories']} story × "
            f"item units): {pooled['all']}"
        )
        if report.kept_raters is not None:
            headline += f"; without the excluded raters: {pooled['kept']}"
    return {"headline": headline, "rows": rows, "note": note}


def dashboard_payload(db: Database, exp: RatingExperiment) -> dict[str, Any]:
    """Everything the dashboard shows that changes while raters work, display-ready: the
    page renders it and ``progress.json`` sends it to the page's script."""
    snap = snapshot(db, exp.id)
    report = snap.report
    return {
        "version": snap.version,
        "progress": _progress(db, exp, report),
        "rules": _rules(exp, report),
        "quality": _quality(exp.id, report),
        "agreement": _agreement(report),
        "tables": analysis_tables(render_report(report, "csv")) if report else [],
    }


# --- routes -------------------------------------------------------------------------------


@bp.get("/<exp_id>")
@auth.login_required
def rating_experiment(exp_id: str):
    exp = _rating_experiment(exp_id)
    db = _db()
    try:
        payload = dashboard_payload(db, exp)
        details = store.get_evaluation_details(db, exp.id)
    finally:
        db.close()
    return render_template(
        "research/rating.html",
        experiment=exp,
        dashboard=payload,
        charts=[(name, CHARTS[name]) for name in chart_names(exp.questions.instrument)],
        details=details,
        poll_ms=POLL_MS,
        downloads=[(name, fmt) for name in RATING_TABLES for fmt in exports.TABLE_FORMATS],
    )


@bp.get("/<exp_id>/progress.json")
@auth.login_required
def rating_progress(exp_id: str):
    exp = _rating_experiment(exp_id)
    db = _db()
    try:
        return jsonify(dashboard_payload(db, exp))
    finally:
        db.close()


@bp.get("/<exp_id>/charts/<name>.svg")
@auth.login_required
def rating_chart_svg(exp_id: str, name: str):
    exp = _rating_experiment(exp_id)
    if name not in chart_names(exp.questions.instrument):
        abort(404)
    db = _db()
    try:
        snap = snapshot(db, exp.id)
    finally:
        db.close()
    response = current_app.response_class(_chart(exp, snap, name), mimetype="image/svg+xml")
    # matplotlib styles its SVG with style attributes; the image can run no script.
    response.headers["Content-Security-Policy"] = CHART_CSP
    response.headers["Cache-Control"] = "private, no-cache"
    return response


@bp.get("/<exp_id>/evaluation-card.md")
@auth.login_required
def rating_evaluation_card(exp_id: str):
    exp = _rating_experiment(exp_id)
    db = _db()
    try:
        text = rating_card_markdown(db, exp.id, datetime.now(UTC), snapshot(db, exp.id).report)
    finally:
        db.close()
    return current_app.response_class(text, mimetype="text/markdown; charset=utf-8")


@bp.post("/<exp_id>/details")
@auth.login_required
def rating_save_details(exp_id: str):
    exp = _rating_experiment(exp_id)
    pay = (request.form.get("pay") or "").strip()[:DETAILS_MAX_CHARS]
    qualifications = (request.form.get("qualifications") or "").strip()[:DETAILS_MAX_CHARS]
    db = _db()
    try:
        store.set_evaluation_details(
            db, exp.id, pay=pay, qualifications=qualifications, researcher=g.researcher["name"]
        )
    finally:
        db.close()
    flash("Saved for the evaluation card.")
    return redirect(url_for("research_ratings.rating_experiment", exp_id=exp.id, _anchor="card"))


@bp.get("/<exp_id>/raters/<rater_id>")
@auth.login_required
def rating_rater(exp_id: str, rater_id: str):
    exp = _rating_experiment(exp_id)
    db = _db()
    try:
        rater = store.get_rater(db, exp_id, rater_id)
        if rater is None:
            abort(404)
        answers = list(
            db.query(
                "SELECT j.story_id, j.item_id, j.value, j.value_text, j.rationale, j.answered_at"
                " FROM judgements j JOIN instrument_items i"
                " ON i.experiment_id = j.experiment_id AND i.item_id = j.item_id"
                " WHERE j.experiment_id = ? AND j.rater_id = ? ORDER BY j.story_id, i.position",
                [exp_id, rater_id],
            )
        )
        checks = list(
            db.query(
                "SELECT * FROM check_answers WHERE experiment_id = ? AND rater_id = ?",
                [exp_id, rater_id],
            )
        )
    finally:
        db.close()
    by_story: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for answer in answers:
        item = exp.questions.item(answer["item_id"])
        by_story[answer["story_id"]].append({**answer, "text": item.text, "kind": item.kind})
    return render_template(
        "research/rating_rater.html",
        experiment=exp,
        rater=rater,
        stories=dict(by_story),
        checks=checks,
    )


@bp.get("/<exp_id>/download/<table>.<fmt>")
@auth.login_required
def rating_download(exp_id: str, table: str, fmt: str):
    _rating_experiment(exp_id)
    if fmt == "zip" and table == "bundle":
        fmt = "bundle"
    elif table not in RATING_TABLES or fmt not in exports.TABLE_FORMATS:
        abort(404)
    now = datetime.now(UTC)
    db = _db()
    try:
        data = exports.export(db, exp_id, fmt, table=table, now=now)
    finally:
        db.close()
    return send_file(
        io.BytesIO(data),
        mimetype=MIMETYPES[fmt],
        as_attachment=True,
        download_name=exports.filename(exp_id, table, fmt, now),
    )
