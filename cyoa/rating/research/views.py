"""The researcher's pages of a rating experiment: progress, quality control (who was
excluded and why), agreement, charts, the analysis with every rater and without the excluded
ones, each rater's answers with their rationales, the evaluation card and the downloads.

Thin: the numbers come from :mod:`cyoa.rating.analysis.report`, the charts from
:mod:`cyoa.rating.research.charts`, the card from :mod:`cyoa.rating.research.card`, the files
from :mod:`cyoa.cowriting.research.exports`. The analysis (a bootstrap: seconds of work in a
busy study)
and its charts are computed at most once per :data:`RECOMPUTE_SECONDS` per experiment and only
when its data changed (:func:`snapshot`); meanwhile the page's polling of ``progress.json``
gets the previous analysis, marked with the time of its data, and live progress counts.
"""

from __future__ import annotations

import csv
import hashlib
import io
import statistics
import threading
from collections import defaultdict
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from flask import (
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

from cyoa import store
from cyoa.db.facade import Db
from cyoa.rating import store as rating_store
from cyoa.rating.analysis.render import agreement_warnings, alpha_cell, display_value
from cyoa.rating.analysis.report import (
    RatingReport,
    quality_rows,
    rating_report,
    render_report,
)
from cyoa.rating.pages import START_PATH, WORK
from cyoa.rating.parts import Snapshot
from cyoa.rating.parts import parts as rating_parts
from cyoa.rating.research.card import rating_card_markdown
from cyoa.rating.research.charts import CHARTS, chart_names, rating_chart
from cyoa.rating.research.exports import RATING_TABLES, export
from cyoa.rating.research.judges import judges_section
from cyoa.rating.service import RatingExperiment
from cyoa.web import auth, tables
from cyoa.web import research as web
from cyoa.web.blinding import naming_warning
from cyoa.web.charts import CHART_LOCK, empty_chart
from cyoa.web.experiments import participant_links
from cyoa.web.parts import shared as shared_parts
from cyoa.web.research import format_seconds

bp = web.blueprint("research_ratings", __name__, "/research/ratings")
# How often the dashboard asks for progress.json (static/js/research/rating_dashboard.js), in ms.
POLL_MS = 5000
# The analysis of an experiment is computed again at most this often, in seconds.
RECOMPUTE_SECONDS = 30


def rating_experiment_or_404(exp_id: str) -> RatingExperiment:
    """The served rating experiment ``exp_id``; a 404 response when there is none."""
    experiment = rating_parts().ratings.experiment(exp_id)
    if experiment is None:
        abort(404)
    return experiment


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


# --- the analysis, at most once per RECOMPUTE_SECONDS ---------------------------------------


def data_version(db: Db, exp_id: str) -> str:
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


def _fresh(snap: Snapshot, now: datetime) -> bool:
    return (now - snap.as_of).total_seconds() < RECOMPUTE_SECONDS


def snapshot(db: Db, exp_id: str, now: datetime | None = None) -> Snapshot:
    """The analysis of the experiment's data as of at most :data:`RECOMPUTE_SECONDS` before
    ``now`` (default: the clock), or the previous one while that is being computed.

    Whether the data changed (:func:`data_version`) is looked at once per
    :data:`RECOMPUTE_SECONDS`, and the analysis is computed again only when it did. One
    computation per experiment at a time, experiments in parallel: only a request that
    finds no snapshot at all waits for one. Its bootstrap intervals draw the app's
    ``RATING_BOOTSTRAP`` replicates."""
    now = now or datetime.now(UTC)
    snapshots = rating_parts().snapshots
    latest = snapshots.latest.get(exp_id)
    if latest is not None and _fresh(latest, now):
        return latest
    lock = snapshots.locks.setdefault(exp_id, threading.Lock())
    if not lock.acquire(blocking=latest is None):
        return latest
    try:
        latest = snapshots.latest.get(exp_id)
        if latest is not None and _fresh(latest, now):
            return latest
        version = data_version(db, exp_id)
        if latest is not None and latest.version == version:
            latest = replace(latest, as_of=now)
        else:
            judged = db.execute(
                "SELECT count(*) FROM judgements WHERE experiment_id = ?", [exp_id]
            ).fetchone()[0]
            replicates = int(current_app.config["RATING_BOOTSTRAP"])
            report = (
                rating_report(db, exp_id, judges=True, bootstrap=replicates) if judged else None
            )
            latest = Snapshot(version, now, report)
        snapshots.latest[exp_id] = latest
        return latest
    finally:
        lock.release()


def _draw(exp: RatingExperiment, report: RatingReport | None, name: str) -> bytes:
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


def _chart(exp: RatingExperiment, snap: Snapshot, name: str) -> bytes:
    with CHART_LOCK:
        if name not in snap.charts:
            snap.charts[name] = _draw(exp, snap.report, name)
        return snap.charts[name]


# --- what the page shows ----------------------------------------------------------------


def _number(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _progress(db: Db, exp: RatingExperiment, snap: Snapshot) -> dict[str, Any]:
    """The progress figures of the human panel (judges' verdicts are in the Judges section):
    the counts live, ``excluded`` and ``median_seconds`` from the analysis, ``as_of`` its
    time."""
    report = snap.report
    human = rating_store.HUMAN_PANEL
    raters = [
        row for row in rating_store.rating_rows(db, exp.id, "raters") if row["panel"] == human
    ]
    per_story = [
        row["n"]
        for row in db.query(
            "SELECT count(DISTINCT r.rater_id) AS n FROM stories s LEFT JOIN (judgements j"
            " JOIN raters r ON r.experiment_id = j.experiment_id AND r.rater_id = j.rater_id"
            " AND r.panel = ?) ON j.experiment_id = s.experiment_id AND j.story_id = s.story_id"
            " WHERE s.experiment_id = ? GROUP BY s.story_id",
            [human, exp.id],
        )
    ]
    judgements = db.execute(
        "SELECT count(*) FROM judgements j JOIN raters r ON r.experiment_id = j.experiment_id"
        " AND r.rater_id = j.rater_id WHERE j.experiment_id = ? AND r.panel = ?",
        [exp.id, human],
    ).fetchone()[0]
    quality = quality_rows(report.review, report.severity) if report else []
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
        "judgements": judgements,
        "median_seconds": format_seconds(statistics.median(times)) if times else "–",
        "as_of": snap.as_of.strftime("%H:%M:%S UTC"),
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


def _platform_id(rater: dict[str, Any] | None) -> str:
    """The id the rater came with (Prolific's PROLIFIC_PID or ?pid=), to find them on the
    platform; "anonymous" for a rater who came without one, "–" for imported judgements."""
    if rater is not None and rater["id_source"] == "anonymous":
        return "anonymous"
    return (rater or {}).get("external_id") or "–"


def _quality(db: Db, exp_id: str, report: RatingReport | None) -> list[dict[str, Any]]:
    page = "research_ratings.rating_rater"
    raters = {row["rater_id"]: row for row in rating_store.rating_rows(db, exp_id, "raters")}
    return [
        {
            "rater": row["rater_id"][:12],
            "platform_id": _platform_id(raters.get(row["rater_id"])),
            "url": url_for(page, exp_id=exp_id, rater_id=row["rater_id"]),
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


def dashboard_payload(db: Db, exp: RatingExperiment) -> dict[str, Any]:
    """Everything the dashboard shows that changes while raters work, display-ready: the
    page renders it and ``progress.json`` sends it to the page's script."""
    snap = snapshot(db, exp.id)
    report = snap.report
    return {
        "version": snap.version,
        "progress": _progress(db, exp, snap),
        "rules": _rules(exp, report),
        "quality": _quality(db, exp.id, report),
        "quality_note": _quality_note(report),
        "agreement": _agreement(report),
        "tables": analysis_tables(render_report(human_only(report), "csv")) if report else [],
    }


# --- routes -------------------------------------------------------------------------------


@bp.get("/<exp_id>")
@auth.login_required
def rating_experiment(exp_id: str):
    return _dashboard(rating_experiment_or_404(exp_id))


def _dashboard(exp: RatingExperiment, typed: dict[str, str] | None = None, status: int = 200):
    """The dashboard page; ``typed``: card details the researcher typed and that were not
    saved, shown again in their boxes so nothing typed is lost."""
    with web.db() as db:
        payload = dashboard_payload(db, exp)
        judges = judges_section(db, exp.id, exp.spec, snapshot(db, exp.id).report)
        details = store.get_evaluation_details(db, exp.id) | (typed or {})
        plan = store.latest_plan(db, exp.id)
    page = render_template(
        "research/rating.html",
        experiment=exp,
        dashboard=payload,
        judges=judges,
        charts=[(name, CHARTS[name]) for name in chart_names(exp.questions.instrument)],
        details=details,
        plan=plan,
        links=participant_links(web.public_url(), exp.id, START_PATH, WORK),
        naming_warning=naming_warning(exp.id, exp.title, shared_parts().cards.values()),
        poll_ms=POLL_MS,
        recompute_seconds=RECOMPUTE_SECONDS,
        downloads=[(name, fmt) for name in RATING_TABLES for fmt in tables.TABLE_FORMATS],
        details_max=web.DETAILS_MAX_CHARS,
    )
    return page, status


@bp.get("/<exp_id>/progress.json")
@auth.login_required
def rating_progress(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    with web.db() as db:
        return jsonify(dashboard_payload(db, exp))


@bp.get("/<exp_id>/charts/<name>.svg")
@auth.login_required
def rating_chart_svg(exp_id: str, name: str):
    exp = rating_experiment_or_404(exp_id)
    if name not in chart_names(exp.questions.instrument):
        abort(404)
    with web.db() as db:
        snap = snapshot(db, exp.id)
    response = current_app.response_class(_chart(exp, snap, name), mimetype="image/svg+xml")
    # matplotlib styles its SVG with style attributes; the image can run no script.
    response.headers["Content-Security-Policy"] = web.CHART_CSP
    response.headers["Cache-Control"] = "private, no-cache"
    return response


@bp.get("/<exp_id>/evaluation-card.md")
@auth.login_required
def rating_evaluation_card(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    with web.db() as db:
        # The card goes into a paper: of the data as it is now, not as of the last snapshot.
        snap = snapshot(db, exp.id)
        report = snap.report if snap.version == data_version(db, exp.id) else None
        text = rating_card_markdown(db, exp.id, datetime.now(UTC), report)
    return current_app.response_class(text, mimetype="text/markdown")


@bp.post("/<exp_id>/details")
@auth.login_required
def rating_save_details(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    try:
        details = web.evaluation_details(request.form)
    except ValueError as exc:
        flash(f"Not saved: {exc}", "error")
        typed = {name: request.form.get(name, "") for name in ("pay", "qualifications")}
        return _dashboard(exp, typed, 400)
    with web.db() as db:
        store.set_evaluation_details(db, exp.id, **details, researcher=g.researcher["name"])
    flash("Saved for the evaluation card.")
    return redirect(url_for("research_ratings.rating_experiment", exp_id=exp.id, _anchor="card"))


@bp.get("/<exp_id>/raters/<rater_id>")
@auth.login_required
def rating_rater(exp_id: str, rater_id: str):
    exp = rating_experiment_or_404(exp_id)
    with web.db() as db:
        rater = rating_store.get_rater(db, exp_id, rater_id)
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
    rating_experiment_or_404(exp_id)
    if fmt == "zip" and table == "bundle":
        fmt = "bundle"
    elif table not in RATING_TABLES or fmt not in tables.TABLE_FORMATS:
        abort(404)
    now = datetime.now(UTC)
    with web.db() as db:
        data = export(db, store.get_experiment(db, exp_id), fmt, table=table, now=now)
    return send_file(
        io.BytesIO(data),
        mimetype=web.MIMETYPES[fmt],
        as_attachment=True,
        download_name=tables.filename(exp_id, table, fmt, now),
    )
