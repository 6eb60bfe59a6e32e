"""The researcher's pages of a rating experiment: progress, quality control (who was
excluded and why), the analysis with every rater and without the excluded ones, each
rater's answers with their rationales, and the downloads. Thin: the numbers come from
:mod:`cyoa.analysis.rating_report` and :mod:`cyoa.research.rating_exports`."""

from __future__ import annotations

import csv
import io
import statistics
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from flask import Blueprint, abort, current_app, render_template, send_file

from cyoa import store
from cyoa.analysis.rating_report import quality_rows, rating_report, render_report
from cyoa.research import auth, exports
from cyoa.research.rating_exports import RATING_TABLES
from cyoa.research.views import MIMETYPES

bp = Blueprint("research_ratings", __name__, url_prefix="/research/ratings")


def _db():
    return store.connect(current_app.config["DATABASE"])


def _rating_experiment(exp_id: str):
    experiment = current_app.extensions["cyoa"]["ratings"].experiment(exp_id)
    if experiment is None:
        abort(404)
    return experiment


def analysis_tables(report_csv: str) -> list[dict[str, Any]]:
    """The report's CSV (``raters, table, row, column, value``) as one display table per
    ``raters`` × ``table``: its rows, columns and cells, in the order they come."""
    tables: dict[tuple[str, str], dict[str, Any]] = {}
    for line in csv.DictReader(io.StringIO(report_csv)):
        key = (line["raters"], line["table"])
        table = tables.setdefault(
            key, {"raters": key[0], "name": key[1], "rows": [], "columns": [], "cells": {}}
        )
        if line["row"] not in table["rows"]:
            table["rows"].append(line["row"])
        if line["column"] not in table["columns"]:
            table["columns"].append(line["column"])
        table["cells"][line["row"], line["column"]] = line["value"]
    return list(tables.values())


@bp.get("/<exp_id>")
@auth.login_required
def rating_experiment(exp_id: str):
    exp = _rating_experiment(exp_id)
    db = _db()
    try:
        report = rating_report(db, exp_id)
        raters = store.rating_rows(db, exp_id, "raters")
        per_story = [
            row["n"]
            for row in db.query(
                "SELECT count(DISTINCT j.rater_id) AS n FROM stories s LEFT JOIN judgements j"
                " ON j.experiment_id = s.experiment_id AND j.story_id = s.story_id"
                " WHERE s.experiment_id = ? GROUP BY s.story_id",
                [exp_id],
            )
        ]
    finally:
        db.close()
    quality = quality_rows(report.review)
    times = [r["median_seconds_per_story"] for r in quality if r["median_seconds_per_story"]]
    progress = {
        "stories": len(exp.stories),
        "raters_per_story": exp.spec.get("raters_per_story"),
        "started": len(raters),
        "finished": sum(1 for r in raters if r["phase"] == "done" or r["id_source"] == "import"),
        "excluded": report.review.summary.excluded,
        "least_rated": min(per_story, default=0),
        "most_rated": max(per_story, default=0),
        "median_seconds": statistics.median(times) if times else None,
    }
    return render_template(
        "research/rating.html",
        experiment=exp,
        progress=progress,
        quality=quality,
        rules=report.review.summary.by_rule,
        tables=analysis_tables(render_report(report, "csv")),
        downloads=[(name, fmt) for name in RATING_TABLES for fmt in exports.TABLE_FORMATS],
    )


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
