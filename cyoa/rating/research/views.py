"""The researcher's pages of a rating experiment: progress, quality control (who was
excluded and why), agreement, charts, the analysis with every rater and without the excluded
ones, each rater's answers with their rationales, the evaluation card and the downloads.

Thin: the page and its polling of ``progress.json`` answer from the stored analysis
(:mod:`cyoa.rating.research.dashboard`, computed in the background by
:mod:`cyoa.analyses.jobs` at most once per ``RECOMPUTE_SECONDS`` after new answers) with the
live progress counts, saying what the analysis counted and when; the card comes from
:mod:`cyoa.rating.research.card`, the files from :mod:`cyoa.rating.research.exports`.
"""

from __future__ import annotations

import io
from collections import defaultdict
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
from cyoa.analyses.jobs import Compute, Served, Step, describe
from cyoa.analyses.store import stamp
from cyoa.db.facade import Db
from cyoa.rating import store as rating_store
from cyoa.rating.pages import START_PATH, WORK
from cyoa.rating.parts import parts as rating_parts
from cyoa.rating.research import dashboard
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

bp = web.blueprint("research_ratings", __name__, "/research/ratings")
# How often the dashboard asks for progress.json (static/js/research/rating_dashboard.js), in ms.
POLL_MS = 5000


def rating_experiment_or_404(exp_id: str) -> RatingExperiment:
    """The served rating experiment ``exp_id``; a 404 response when there is none."""
    experiment = rating_parts().ratings.experiment(exp_id)
    if experiment is None:
        abort(404)
    return experiment


# --- the analysis: the stored one, a newer one computed in the background ----------------


def _compute(exp: RatingExperiment, replicates: int) -> Compute:
    reports = rating_parts().reports

    def compute(db: Db, step: Step) -> tuple[int, str, dict[str, Any]]:
        answers, version, result, report = dashboard.analyse(db, exp, replicates, step)
        reports[exp.id] = (version, report)
        return answers, version, result

    return compute


def served(db: Db, exp: RatingExperiment) -> Served | None:
    """The stored analysis of ``exp`` and its job, a newer one started in the background when
    the data changed (:meth:`~cyoa.analyses.jobs.BackgroundAnalyses.serve`); None before the
    first judgement, when there is nothing to analyse."""
    if not dashboard.any_judgement(db, exp.id):
        return None
    replicates = int(current_app.config["RATING_BOOTSTRAP"])
    return shared_parts().analyses.serve(
        db,
        exp.id,
        dashboard.KIND,
        dashboard.data_version(db, exp.id, replicates),
        _compute(exp, replicates),
        dashboard.RECOMPUTE_SECONDS,
    )


def _analysis(found: Served | None) -> dict[str, Any]:
    if found is None:
        return {"state": "current", "as_of": "–", "text": "No judgements yet.", "answers": 0}
    return describe(found, datetime.now(UTC), dashboard.RECOMPUTE_SECONDS)


def _result(db: Db, exp: RatingExperiment, found: Served | None) -> dict[str, Any]:
    """The stored result, or before the first one the figures of no report (without charts)."""
    if found is not None and found.stored is not None:
        return found.stored.result
    return dashboard.result_of(db, exp, None, charts=False)


def _progress(
    db: Db, exp: RatingExperiment, result: dict[str, Any], analysis: dict[str, Any]
) -> dict[str, Any]:
    """The progress figures of the human panel (judges' verdicts are in the Judges section):
    the counts live, ``excluded`` and ``median_seconds`` from the stored analysis, ``as_of``
    what it counted and when."""
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
    return {
        "stories": len(exp.stories),
        "raters_per_story": exp.spec.get("raters_per_story"),
        "started": len(raters),
        "finished": sum(1 for r in raters if r["phase"] == "done" or r["id_source"] == "import"),
        "excluded": result["excluded"],
        "least_rated": min(per_story, default=0),
        "most_rated": max(per_story, default=0),
        "judgements": dashboard.human_judgements(db, exp.id),
        "median_seconds": result["median_seconds"],
        "as_of": analysis["as_of"],
    }


def dashboard_payload(db: Db, exp: RatingExperiment, found: Served | None) -> dict[str, Any]:
    """Everything the dashboard shows that changes while raters work, display-ready, from the
    stored analysis and the live counts: the page renders it and ``progress.json`` sends it to
    the page's script. ``found``: what :func:`served` found. ``version`` names the stored
    analysis (the page redraws its charts and tables when it changes); ``analysis`` says what
    it counted, when, and what is being computed."""
    analysis = _analysis(found)
    result = _result(db, exp, found)
    stored = found.stored if found is not None else None
    page = "research_ratings.rating_rater"
    agreement = result["agreement"]
    if stored is None and found is not None:
        agreement = {**agreement, "headline": analysis["text"]}
    return {
        "version": f"{stored.version}@{stamp(stored.computed_at)}" if stored else "none",
        "analysis": analysis,
        "empty": "No judgements yet." if stored or found is None else analysis["text"],
        "progress": _progress(db, exp, result, analysis),
        "rules": result["rules"],
        "quality": [
            {**row, "url": url_for(page, exp_id=exp.id, rater_id=row["rater_id"])}
            for row in result["quality"]
        ],
        "quality_note": result["quality_note"],
        "agreement": agreement,
        "tables": result["tables"],
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
        found = served(db, exp)
        payload = dashboard_payload(db, exp, found)
        stored = found.stored if found is not None else None
        judges = (
            stored.result["judges"]
            if stored is not None
            else judges_section(db, exp.id, exp.spec, None)
        )
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
        recompute_seconds=dashboard.RECOMPUTE_SECONDS,
        downloads=[(name, fmt) for name in RATING_TABLES for fmt in tables.TABLE_FORMATS],
        details_max=web.DETAILS_MAX_CHARS,
    )
    return page, status


@bp.get("/<exp_id>/progress.json")
@auth.login_required
def rating_progress(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    with web.db() as db:
        return jsonify(dashboard_payload(db, exp, served(db, exp)))


@bp.get("/<exp_id>/charts/<name>.svg")
@auth.login_required
def rating_chart_svg(exp_id: str, name: str):
    exp = rating_experiment_or_404(exp_id)
    if name not in chart_names(exp.questions.instrument):
        abort(404)
    with web.db() as db:
        found = served(db, exp)
    if found is None:
        with CHART_LOCK:
            svg = rating_chart(name, exp.questions.instrument, None)
    elif found.stored is None:
        with CHART_LOCK:
            svg = empty_chart(_analysis(found)["text"])
    else:
        svg = found.stored.result["charts"][name].encode("utf-8")
    response = current_app.response_class(svg, mimetype="image/svg+xml")
    # matplotlib styles its SVG with style attributes; the image can run no script.
    response.headers["Content-Security-Policy"] = web.CHART_CSP
    response.headers["Cache-Control"] = "private, no-cache"
    return response


@bp.get("/<exp_id>/evaluation-card.md")
@auth.login_required
def rating_evaluation_card(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    replicates = int(current_app.config["RATING_BOOTSTRAP"])
    with web.db() as db:
        # The card goes into a paper: of the data as it is now. The report this process
        # computed last serves when it is of that data; else the card computes its own.
        version, report = rating_parts().reports.get(exp.id, ("", None))
        if version != dashboard.data_version(db, exp.id, replicates):
            report = None
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
