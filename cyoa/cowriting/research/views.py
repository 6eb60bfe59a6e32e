"""The researcher's pages and APIs under ``/research/``. Thin: read the request, call the
domain modules (:mod:`~cyoa.cowriting.research.lifecycle`,
:mod:`~cyoa.cowriting.research.dashboard`,
:mod:`~cyoa.cowriting.research.exports`, :mod:`~cyoa.cowriting.research.replay`), render.

Every view except the login page is :func:`~cyoa.web.auth.login_required`, and every
unsafe request (POST) must carry the session's CSRF token (checked before the view runs).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from pathlib import Path
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
from cyoa.analyses.jobs import Served, describe
from cyoa.analyses.store import stamp
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.pages import START_PATH, WORK
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.process.store import load_operations
from cyoa.cowriting.process.timeline import keystroke_timeline
from cyoa.cowriting.research import dashboard, exports, lifecycle
from cyoa.cowriting.research.forms import (
    FORM_SYSTEM_ROWS,
    MAX_SYSTEM_ROWS,
    SAMPLING_FIELDS,
    edited_spec,
    form_defaults,
    form_from_spec,
    spec_from_form,
    system_rows,
    with_more_rows,
)
from cyoa.cowriting.research.progress import progress_payload
from cyoa.cowriting.research.replay import build_replay, suggestions_shown
from cyoa.cowriting.research.sockets import push_update
from cyoa.cowriting.spec import SpecError
from cyoa.web import auth, tables
from cyoa.web import research as web
from cyoa.web.blinding import naming_warning
from cyoa.web.charts import CHART_LOCK, empty_chart
from cyoa.web.experiments import (
    SPEC_MAX_BYTES,
    STATUS_VERBS,
    LifecycleError,
    SpecFileError,
    parse_spec,
    participant_links,
)
from cyoa.web.experiments import set_status as set_experiment_status
from cyoa.web.parts import shared as shared_parts
from cyoa.web.research import format_seconds
from cyoa.web.tables import ExportError

bp = web.blueprint("research_cowriting", __name__, "/research")
# Every chart the dashboard may draw (dashboard.chart_names: the ranking with > 2 systems).
CHART_NAMES = ("ranking", "preference", "edits", "likert")


def _spec_folder() -> Path:
    return Path(current_app.config["EXPERIMENTS_DIR"])


def experiment_or_404(exp_id: str):
    """The co-writing experiment ``exp_id`` as the researcher's pages show it: the one the
    app serves, else the stored one with stand-ins for the model cards it lacks (an imported
    study, :func:`~cyoa.cowriting.research.lifecycle.stored_experiment`); 404 if none."""
    study = cowriting_parts().study
    exp = study.experiment(exp_id)
    if exp is None:
        with web.db() as db:
            lifecycle.sync_from_db(db, study.experiments, shared_parts().cards)
            exp = study.experiment(exp_id) or lifecycle.stored_experiment(
                db, exp_id, shared_parts().cards
            )
    if exp is None:
        abort(404)
    return exp


def _model_choices() -> list[dict[str, Any]]:
    """The model cards the form offers, each with its default sampling (the placeholders of
    a system row's empty sampling fields)."""
    web.read_new_cards()
    status = shared_parts().pool.status()
    choices = []
    for name, card in sorted(shared_parts().cards.items()):
        state = status.get(name, {}).get("state")
        if state == "failed":
            continue
        note = (
            "loaded"
            if state == "ready"
            else "loading"
            if state in ("pending", "loading")
            else "loaded when opened"
        )
        choices.append(
            {
                "name": name,
                "label": f"{card.display_name} ({name}, {note})",
                "sampling": card.sampling.to_dict(),
            }
        )
    return choices


def _form_page(values: dict[str, Any], error: str = "", status: int = 200, editing: str = ""):
    """The experiment form showing ``values``: a new experiment's, or with ``editing`` (an
    experiment id) that experiment's."""
    asked = request.args.get("rows") or values.get("system_rows", FORM_SYSTEM_ROWS)
    rows = system_rows({"system_rows": asked})
    models = _model_choices()
    page = render_template(
        "research/new.html",
        values=values,
        error=error,
        models=models,
        sampling_defaults={m["name"]: m["sampling"] for m in models},
        sampling_fields=[key for key, _ in SAMPLING_FIELDS],
        system_rows=rows,
        max_rows=MAX_SYSTEM_ROWS,
        editing=editing,
    )
    return page, status


def _more_rows_asked() -> bool:
    return request.form.get("action") == "more_rows"


@bp.get("/experiments/new")
@auth.login_required
def new_experiment():
    return _form_page(form_defaults())


def _not_loaded(exp) -> str:
    missing = lifecycle.models_not_ready(exp, shared_parts().pool.status())
    if not missing:
        return ""
    return f" Opening it first loads {', '.join(missing)} (not loaded yet)."


def _created(exp, how: str = "created") -> Any:
    cowriting_parts().study.experiments[exp.id] = exp
    flash(f"Experiment '{exp.id}' {how}. It is paused: check it, then open it.{_not_loaded(exp)}")
    return redirect(url_for("research_cowriting.experiment", exp_id=exp.id))


@bp.post("/experiments/new")
@auth.login_required
def create_experiment():
    values = request.form.to_dict()
    if _more_rows_asked():
        return _form_page(with_more_rows(values))
    web.read_new_cards()
    try:
        raw = spec_from_form(values)
        with web.db() as db:
            exp = lifecycle.create_experiment(
                db, raw, shared_parts().cards, where="The form", texts_required=True
            )
    except SpecError as exc:
        return _form_page(values, str(exc), 400)
    return _created(exp)


@bp.post("/experiments/upload")
@auth.login_required
def upload_experiment():
    upload = request.files.get("spec")
    if upload is None or not upload.filename:
        return _form_page(form_defaults(), "Please choose a spec file (.toml or .json).", 400)
    data = upload.read(SPEC_MAX_BYTES + 1)
    web.read_new_cards()
    try:
        text = data.decode("utf-8")
        raw = parse_spec(text, upload.filename)
        with web.db() as db:
            exp = lifecycle.create_experiment(db, raw, shared_parts().cards, where=upload.filename)
    except UnicodeDecodeError:
        return _form_page(form_defaults(), f"{upload.filename}: the file is not UTF-8 text.", 400)
    except (SpecFileError, SpecError) as exc:
        return _form_page(form_defaults(), str(exc), 400)
    return _created(exp)


@bp.post("/experiments/<exp_id>/clone")
@auth.login_required
def clone_experiment(exp_id: str):
    exp = experiment_or_404(exp_id)
    try:
        with web.db() as db:
            copy = lifecycle.clone_experiment(
                db, exp.id, request.form.get("new_id") or "", shared_parts().cards
            )
    except (SpecError, LifecycleError) as exc:
        flash(f"Not cloned. {exc}", "error")
        return redirect(
            url_for("research_cowriting.experiment", exp_id=exp.id, _anchor="lifecycle")
        )
    return _created(copy, f"created as a copy of '{exp.id}'")


def _edit_refused(exp_id: str, message: str):
    flash(f"Not editable now: {message}", "error")
    return redirect(url_for("research_cowriting.experiment", exp_id=exp_id, _anchor="lifecycle"))


@bp.route("/experiments/<exp_id>/edit", methods=["GET", "POST"])
@auth.login_required
def edit_experiment(exp_id: str):
    exp = experiment_or_404(exp_id)
    with web.db() as db:
        refusal = lifecycle.edit_refusal(db, exp.id, _spec_folder())
        if refusal:
            return _edit_refused(exp.id, refusal)
        stored = lifecycle.stored_spec(db, exp.id)
    if request.method == "GET":
        return _form_page(form_from_spec(stored), editing=exp.id)
    values = {**request.form.to_dict(), "id": exp.id}
    if _more_rows_asked():
        return _form_page(with_more_rows(values), editing=exp.id)
    try:
        raw = edited_spec(values, stored)
        with web.db() as db:
            edited = lifecycle.edit_experiment(
                db, exp.id, raw, shared_parts().cards, _spec_folder()
            )
    except SpecError as exc:
        return _form_page(values, str(exc), 400, editing=exp.id)
    except LifecycleError as exc:
        return _edit_refused(exp.id, str(exc))
    cowriting_parts().study.experiments[exp.id] = edited
    flash(f"Experiment '{exp.id}' saved.{_not_loaded(edited)}")
    return redirect(url_for("research_cowriting.experiment", exp_id=exp.id))


def _served(db, exp) -> Served | None:
    """The stored analysis of ``exp`` and its job, a newer one started in the background when
    the data changed (the open pages are told when it lands); None before the first submitted
    round, when there is nothing to analyse."""
    if not dashboard.any_round(db, exp.id):
        return None
    app = current_app._get_current_object()
    return shared_parts().analyses.serve(
        db,
        exp.id,
        dashboard.KIND,
        dashboard.data_version(db, exp.id),
        lambda handle, step: dashboard.analyse(handle, exp, step),
        dashboard.RECOMPUTE_SECONDS,
        landed=lambda: push_update(app, exp.id, "", "analysis_stored"),
    )


def _results(db, exp) -> dict[str, Any]:
    """The dashboard's results as stored (``svg``: the charts), with ``analysis``: what it
    counted, when, and what is being computed; before the first submitted round, the results
    of no round, computed here (there is nothing to analyse)."""
    found = _served(db, exp)
    if found is None:
        empty = dashboard.compute_results(db, exp, "none")
        analysis = {"state": "current", "as_of": "–", "text": "", "answers": 0}
        return {**empty.to_dict(), "ranking": False, "ranking_error": None, "analysis": analysis}
    analysis = describe(found, datetime.now(UTC), dashboard.RECOMPUTE_SECONDS, unit="rounds")
    if found.stored is None:
        return {
            "version": "none",
            "tables": [],
            "notes": [],
            "charts": [],
            "ranking": False,
            "ranking_error": None,
            "svg": {},
            "analysis": analysis,
        }
    version = f"{found.stored.version}@{stamp(found.stored.computed_at)}"
    return {**found.stored.result, "version": version, "analysis": analysis}


@bp.get("/experiments/<exp_id>")
@auth.login_required
def experiment(exp_id: str):
    exp = experiment_or_404(exp_id)
    with web.db() as db:
        progress = progress_payload(db, exp)
        results = _results(db, exp)
        writers = writer_rows(db, exp)
        details = store.get_evaluation_details(db, exp.id)
        plan = store.latest_plan(db, exp.id)
        edit_refusal = lifecycle.edit_refusal(db, exp.id, _spec_folder())
    return render_template(
        "research/experiment.html",
        experiment=exp,
        progress=progress,
        results=results,
        writers=writers,
        details=details,
        plan=plan,
        edit_refusal=edit_refusal,
        links=participant_links(web.public_url(), exp.id, START_PATH, WORK),
        naming_warning=naming_warning(exp.id, exp.title, shared_parts().cards.values()),
        models=_model_states(exp),
        open_refusal=lifecycle.open_refusal(exp),
        without_card=lifecycle.models_without_card(exp),
        opening=cowriting_parts().openings.waiting_for(exp.id),
        opening_failure=cowriting_parts().openings.failure(exp.id),
        tables=exports.TABLES,
        table_formats=tables.TABLE_FORMATS,
    )


@bp.post("/experiments/<exp_id>/status")
@auth.login_required
def set_status(exp_id: str):
    exp = experiment_or_404(exp_id)
    status = request.form.get("status", "")
    if status == "open" and (refusal := lifecycle.open_refusal(exp)):
        flash(refusal, "error")
        return redirect(url_for("research_cowriting.experiment", exp_id=exp.id))
    openings = cowriting_parts().openings
    openings.cancel(exp.id)
    missing = lifecycle.models_not_ready(exp, shared_parts().pool.status())
    if status == "open" and missing:
        app = current_app._get_current_object()
        models = list(dict.fromkeys(system.model.name for system in exp.systems))
        openings.request(exp.id, models, shared_parts().pool, lambda: _open_now(app, exp.id))
        flash(
            f"Loading {', '.join(missing)}: '{exp.id}' opens as soon as "
            f"{'it is' if len(missing) == 1 else 'they are'} ready (this page shows progress)."
        )
        return redirect(url_for("research_cowriting.experiment", exp_id=exp.id))
    try:
        with web.db() as db:
            set_experiment_status(db, exp.id, status)
    except LifecycleError as exc:
        flash(str(exc), "error")
    else:
        flash(f"Experiment '{exp.id}' is {STATUS_VERBS[status]}.")
        push_update(current_app._get_current_object(), exp.id, "", "status_changed")
    return redirect(url_for("research_cowriting.experiment", exp_id=exp.id))


def _open_now(app, exp_id: str) -> None:
    """Open ``exp_id`` once its models are ready (on the model-loading thread), unless it
    was closed meanwhile."""
    db = store.connect(app.config["DATABASE"])
    try:
        opened = store.open_if_paused(db, exp_id)
    finally:
        db.close()
    if opened:
        push_update(app, exp_id, "", "status_changed")


def _model_states(exp) -> list[dict[str, str]]:
    """The models of ``exp`` with their state in this server's pool."""
    status = shared_parts().pool.status()
    names = dict.fromkeys(system.model.name for system in exp.systems)
    return [{"name": name, **status.get(name, {"state": "unknown", "error": ""})} for name in names]


@bp.post("/experiments/<exp_id>/details")
@auth.login_required
def save_details(exp_id: str):
    exp = experiment_or_404(exp_id)
    try:
        details = web.evaluation_details(request.form)
    except ValueError as exc:
        flash(f"Not saved: {exc}", "error")
    else:
        with web.db() as db:
            store.set_evaluation_details(db, exp.id, **details, researcher=g.researcher["name"])
        flash("Saved for the evaluation card.")
    return redirect(url_for("research_cowriting.experiment", exp_id=exp.id, _anchor="card"))


@bp.get("/experiments/<exp_id>/progress.json")
@auth.login_required
def progress_json(exp_id: str):
    exp = experiment_or_404(exp_id)
    with web.db() as db:
        return jsonify(progress_payload(db, exp))


def writer_rows(db, exp) -> list[dict[str, Any]]:
    """The writers table of the dashboard: one row per session, display-ready."""
    rows = exports.session_rows(db, exp.id, dropout_minutes=cowriting_parts().dropout_minutes)
    return [
        {
            "participant": s["participant"],
            "replay_url": url_for(
                "research_cowriting.replay", exp_id=exp.id, participant_id=s["participant_id"]
            ),
            "pair": f"{s['system_a']} vs {s['system_b']}",
            "status": s["status"].replace("_", " "),
            "rounds": f"{s['rounds_submitted']} / {exp.limits.rounds}",
            "started_at": s["started_at"],
            "updated_at": s["updated_at"],
            "time": format_seconds(s["session_seconds"]),
        }
        for s in rows
    ]


@bp.get("/experiments/<exp_id>/writers.json")
@auth.login_required
def writers_json(exp_id: str):
    exp = experiment_or_404(exp_id)
    with web.db() as db:
        return jsonify(writer_rows(db, exp))


@bp.get("/experiments/<exp_id>/results.json")
@auth.login_required
def results_json(exp_id: str):
    exp = experiment_or_404(exp_id)
    with web.db() as db:
        results = _results(db, exp)
    return jsonify({key: value for key, value in results.items() if key != "svg"})


@bp.get("/experiments/<exp_id>/charts/<name>.svg")
@auth.login_required
def chart(exp_id: str, name: str):
    exp = experiment_or_404(exp_id)
    with web.db() as db:
        if dashboard.any_round(db, exp.id):
            results = _results(db, exp)
        else:  # nothing submitted: the charts of no round
            empty = dashboard.compute_results(db, exp, "none")
            if name not in dashboard.chart_names(empty):
                abort(404)
            results = {"svg": {name: dashboard.render_chart(empty, name).decode("utf-8")}}
    if name in results["svg"]:
        svg = results["svg"][name].encode("utf-8")
    elif results["version"] == "none" and name in CHART_NAMES:
        with CHART_LOCK:
            svg = empty_chart(results["analysis"]["text"])
    else:
        abort(404)
    response = current_app.response_class(svg, mimetype="image/svg+xml")
    # matplotlib styles its SVG with style attributes; the image can run no script.
    response.headers["Content-Security-Policy"] = web.CHART_CSP
    response.headers["Cache-Control"] = "private, no-cache"
    return response


@bp.get("/experiments/<exp_id>/writers/<int:participant_id>")
@auth.login_required
def replay(exp_id: str, participant_id: int):
    exp = experiment_or_404(exp_id)
    with web.db() as db:
        rows = list(
            db.query(
                "SELECT s.*, p.external_id, p.id_source FROM sessions s"
                " JOIN participants p ON p.id = s.participant_id"
                " WHERE s.experiment_id = ? AND s.participant_id = ?",
                [exp.id, participant_id],
            )
        )
        if not rows:
            abort(404)
        session_row = rows[0]
        events = cowriting_store.load_events(db, session_row["id"])
        ops = load_operations(db, session_row["id"])
    replay = build_replay(events)
    return render_template(
        "research/replay.html",
        experiment=exp,
        session=session_row,
        replay=replay,
        keystrokes=keystroke_timeline(ops, suggestions_shown(replay)),
    )


@bp.get("/experiments/<exp_id>/download/<name>")
@auth.login_required
def download(exp_id: str, name: str):
    exp = experiment_or_404(exp_id)
    now = datetime.now(UTC)
    stem, _, extension = name.rpartition(".")
    if name in ("bundle.zip", "cyoa.tsv"):
        fmt, table = ("bundle" if name == "bundle.zip" else "cyoa-tsv"), ""
    elif stem in exports.TABLES and extension in tables.TABLE_FORMATS:
        fmt, table = extension, stem
    else:
        abort(404)
    with web.db() as db:
        try:
            row = store.get_experiment(db, exp.id)
            data = exports.export(db, row, fmt, table=table, experiment=exp, now=now)
        except ExportError as exc:
            flash(str(exc), "error")
            return redirect(
                url_for("research_cowriting.experiment", exp_id=exp.id, _anchor="downloads")
            )
    return send_file(
        io.BytesIO(data),
        mimetype=web.MIMETYPES[fmt],
        as_attachment=True,
        download_name=tables.filename(exp.id, table, fmt, now),
    )


@bp.get("/experiments/<exp_id>/evaluation-card.md")
@auth.login_required
def evaluation_card(exp_id: str):
    exp = experiment_or_404(exp_id)
    now = datetime.now(UTC)
    with web.db() as db:
        text = exports.card_text(
            db,
            exp,
            store.get_evaluation_details(db, exp.id),
            now,
            exports.session_rows(db, exp.id, now, cowriting_parts().dropout_minutes),
            exports.preference_rows(db, exp.id),
        )
    return current_app.response_class(text, mimetype="text/markdown")
