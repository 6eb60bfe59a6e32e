"""The researcher's pages and APIs under ``/research/``. Thin: read the request, call the
domain modules (:mod:`~cyoa.research.lifecycle`, :mod:`~cyoa.research.dashboard`,
:mod:`~cyoa.research.exports`, :mod:`~cyoa.research.replay`), render.

Every view except the login page is :func:`~cyoa.research.auth.login_required`, and every
unsafe request (POST) must carry the session's CSRF token (checked before the view runs).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager
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

from cyoa import store
from cyoa.experiments import SpecError
from cyoa.rating.experiment import rating_summaries
from cyoa.research import auth, exports, lifecycle
from cyoa.research.forms import (
    FORM_SYSTEM_ROWS,
    MAX_SYSTEM_ROWS,
    form_defaults,
    spec_from_form,
    system_rows,
)
from cyoa.research.progress import format_seconds, progress_payload
from cyoa.research.replay import build_replay
from cyoa.research.sockets import push_update

bp = Blueprint("research", __name__, url_prefix="/research")
bp.before_request(auth.check_csrf)
DETAILS_MAX_CHARS = 4000
MIMETYPES = {
    "csv": "text/csv",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
    "cyoa-tsv": "text/tab-separated-values",
    "bundle": "application/zip",
}
CHART_CSP = "default-src 'none'; style-src 'unsafe-inline'"


@bp.context_processor
def _template_globals() -> dict[str, Any]:
    return {
        "csrf_token": auth.csrf_token,
        "researcher": g.get("researcher"),
        "format_seconds": format_seconds,
    }


def _parts() -> dict[str, Any]:
    return current_app.extensions["cyoa"]


def _research() -> dict[str, Any]:
    return current_app.extensions["research"]


@contextmanager
def _db() -> Iterator[Any]:
    db = _parts()["study"].db()
    try:
        yield db
    finally:
        db.close()


def _experiment(exp_id: str):
    study = _parts()["study"]
    if exp_id not in study.experiments:
        with _db() as db:
            lifecycle.sync_from_db(db, study.experiments, _parts()["cards"])
    exp = study.experiment(exp_id)
    if exp is None:
        abort(404)
    return exp


# --- login ----------------------------------------------------------------------------


def _too_many(wait: float) -> str:
    minutes = max(1, round(wait / 60))
    return (
        f"Too many failed attempts for this name from your address. Please wait about "
        f"{minutes} minute{'s' if minutes > 1 else ''} and try again."
    )


@bp.route("/login", methods=["GET", "POST"])
def login():
    next_url = request.values.get("next", "")
    if request.method == "GET":
        return render_template("research/login.html", next=next_url)
    name = (request.form.get("name") or "").strip()
    key = auth.limiter_key(name)
    limiter = _research()["limiter"]
    wait = limiter.begin(key)
    if wait:
        page = render_template(
            "research/login.html", next=next_url, error=_too_many(wait), name=name
        )
        return page, 429
    with _db() as db:
        researcher = auth.authenticate(db, name, request.form.get("password") or "")
    if researcher is None:
        error = "Wrong name or password. Please try again."
        return render_template("research/login.html", next=next_url, error=error, name=name), 401
    limiter.succeeded(key)
    auth.log_in(researcher)
    return redirect(auth.safe_next(next_url))


@bp.post("/logout")
@auth.login_required
def logout():
    with _db() as db:
        auth.end_sessions(db, g.researcher["id"])
    auth.log_out()
    flash("You are logged out, in every browser.")
    return redirect(url_for("research.login"))


@bp.route("/password", methods=["GET", "POST"])
@auth.login_required
def password():
    if request.method == "GET":
        return render_template("research/password.html")
    name = g.researcher["name"]
    new = request.form.get("new_password") or ""
    error = ""
    if new != (request.form.get("new_password_again") or ""):
        error = "The two new passwords differ. Please type the same one twice."
    else:
        try:
            auth.validate_account(name, new)
        except auth.AccountError as exc:
            error = str(exc)
    if error:
        return render_template("research/password.html", error=error), 400
    key = auth.limiter_key(name)
    limiter = _research()["limiter"]
    wait = limiter.begin(key)
    if wait:
        return render_template("research/password.html", error=_too_many(wait)), 429
    with _db() as db:
        if auth.authenticate(db, name, request.form.get("current_password") or "") is None:
            error = "The current password is not right. Please try again."
            return render_template("research/password.html", error=error), 401
        try:
            researcher = auth.change_password(db, g.researcher["id"], new)
        except auth.AccountError as exc:  # the account was deleted meanwhile
            return render_template("research/password.html", error=str(exc)), 400
    limiter.succeeded(key)
    auth.log_in(researcher)
    flash("Your password is changed, and you are logged out in every other browser.")
    return redirect(url_for("research.experiments"))


# --- experiments ----------------------------------------------------------------------


@bp.get("/")
@auth.login_required
def experiments():
    study = _parts()["study"]
    base_url = request.host_url
    rows = []
    with _db() as db:
        lifecycle.sync_from_db(db, study.experiments, _parts()["cards"])
        for exp in sorted(study.experiments.values(), key=lambda e: e.id):
            rows.append(
                {
                    "experiment": exp,
                    "progress": progress_payload(db, exp),
                    "links": lifecycle.participant_links(base_url, exp.id),
                }
            )
        ratings = rating_summaries(db)
    return render_template("research/experiments.html", rows=rows, ratings=ratings)


def _model_choices() -> list[dict[str, str]]:
    status = _parts()["pool"].status()
    choices = []
    for name, card in sorted(_parts()["cards"].items()):
        state = status.get(name, {}).get("state")
        if state == "failed":
            continue
        note = "loaded" if state == "ready" else "loading" if state else "loaded at next start"
        choices.append({"name": name, "label": f"{card.display_name} ({name}, {note})"})
    return choices


def _new_form(values: dict[str, Any], error: str = "", status: int = 200):
    asked = request.args.get("rows") or values.get("system_rows", FORM_SYSTEM_ROWS)
    rows = system_rows({"system_rows": asked})
    page = render_template(
        "research/new.html",
        values=values,
        error=error,
        models=_model_choices(),
        system_rows=rows,
        max_rows=MAX_SYSTEM_ROWS,
    )
    return page, status


@bp.get("/experiments/new")
@auth.login_required
def new_experiment():
    return _new_form(form_defaults())


def _created(exp) -> Any:
    missing = lifecycle.models_not_served(exp, _parts()["pool"].status())
    _parts()["study"].experiments[exp.id] = exp
    message = f"Experiment '{exp.id}' created. It is paused: check it, then open it."
    if missing:
        message += (
            f" This server has not loaded {', '.join(missing)}: restart the app before opening it."
        )
    flash(message)
    return redirect(url_for("research.experiment", exp_id=exp.id))


@bp.post("/experiments/new")
@auth.login_required
def create_experiment():
    values = request.form.to_dict()
    try:
        raw = spec_from_form(values)
        with _db() as db:
            exp = lifecycle.create_experiment(db, raw, _parts()["cards"], where="The form")
    except SpecError as exc:
        return _new_form(values, str(exc), 400)
    return _created(exp)


@bp.post("/experiments/upload")
@auth.login_required
def upload_experiment():
    upload = request.files.get("spec")
    if upload is None or not upload.filename:
        return _new_form(form_defaults(), "Please choose a spec file (.toml or .json).", 400)
    data = upload.read(lifecycle.SPEC_MAX_BYTES + 1)
    try:
        text = data.decode("utf-8")
        raw = lifecycle.parse_spec(text, upload.filename)
        with _db() as db:
            exp = lifecycle.create_experiment(db, raw, _parts()["cards"], where=upload.filename)
    except UnicodeDecodeError:
        return _new_form(form_defaults(), f"{upload.filename}: the file is not UTF-8 text.", 400)
    except SpecError as exc:
        return _new_form(form_defaults(), str(exc), 400)
    return _created(exp)


@bp.get("/experiments/<exp_id>")
@auth.login_required
def experiment(exp_id: str):
    exp = _experiment(exp_id)
    with _db() as db:
        progress = progress_payload(db, exp)
        results = _research()["results"].get(db, exp)
        writers = writer_rows(db, exp)
        details = store.get_evaluation_details(db, exp.id)
    return render_template(
        "research/experiment.html",
        experiment=exp,
        progress=progress,
        results=results,
        writers=writers,
        details=details,
        links=lifecycle.participant_links(request.host_url, exp.id),
        missing_models=lifecycle.models_not_served(exp, _parts()["pool"].status()),
        tables=exports.TABLES,
        table_formats=exports.TABLE_FORMATS,
    )


@bp.post("/experiments/<exp_id>/status")
@auth.login_required
def set_status(exp_id: str):
    exp = _experiment(exp_id)
    status = request.form.get("status", "")
    missing = lifecycle.models_not_served(exp, _parts()["pool"].status())
    try:
        with _db() as db:
            lifecycle.set_status(db, exp.id, status, missing)
    except lifecycle.LifecycleError as exc:
        flash(str(exc), "error")
    else:
        flash(f"Experiment '{exp.id}' is {lifecycle.STATUS_VERBS[status]}.")
        push_update(current_app._get_current_object(), exp.id, "", "status_changed")
    return redirect(url_for("research.experiment", exp_id=exp.id))


@bp.post("/experiments/<exp_id>/details")
@auth.login_required
def save_details(exp_id: str):
    exp = _experiment(exp_id)
    pay = (request.form.get("pay") or "").strip()[:DETAILS_MAX_CHARS]
    qualifications = (request.form.get("qualifications") or "").strip()[:DETAILS_MAX_CHARS]
    with _db() as db:
        store.set_evaluation_details(
            db, exp.id, pay=pay, qualifications=qualifications, researcher=g.researcher["name"]
        )
    flash("Saved for the evaluation card.")
    return redirect(url_for("research.experiment", exp_id=exp.id, _anchor="card"))


@bp.get("/experiments/<exp_id>/progress.json")
@auth.login_required
def progress_json(exp_id: str):
    exp = _experiment(exp_id)
    with _db() as db:
        return jsonify(progress_payload(db, exp))


def writer_rows(db, exp) -> list[dict[str, Any]]:
    """The writers table of the dashboard: one row per session, display-ready."""
    rows = exports.session_rows(db, exp.id, dropout_minutes=_research()["dropout_minutes"])
    return [
        {
            "participant": s["participant"],
            "replay_url": url_for(
                "research.replay", exp_id=exp.id, participant_id=s["participant_id"]
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
    exp = _experiment(exp_id)
    with _db() as db:
        return jsonify(writer_rows(db, exp))


@bp.get("/experiments/<exp_id>/results.json")
@auth.login_required
def results_json(exp_id: str):
    exp = _experiment(exp_id)
    with _db() as db:
        return jsonify(_research()["results"].get(db, exp).to_dict())


@bp.get("/experiments/<exp_id>/charts/<name>.svg")
@auth.login_required
def chart(exp_id: str, name: str):
    from cyoa.research.dashboard import chart_names, render_chart

    exp = _experiment(exp_id)
    with _db() as db:
        results = _research()["results"].get(db, exp)
    if name not in chart_names(results):
        abort(404)
    response = current_app.response_class(render_chart(results, name), mimetype="image/svg+xml")
    # matplotlib styles its SVG with style attributes; the image can run no script.
    response.headers["Content-Security-Policy"] = CHART_CSP
    response.headers["Cache-Control"] = "private, no-cache"
    return response


@bp.get("/experiments/<exp_id>/writers/<int:participant_id>")
@auth.login_required
def replay(exp_id: str, participant_id: int):
    exp = _experiment(exp_id)
    with _db() as db:
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
        events = store.load_events(db, session_row["id"])
    return render_template(
        "research/replay.html",
        experiment=exp,
        session=session_row,
        replay=build_replay(events),
    )


@bp.get("/experiments/<exp_id>/download/<name>")
@auth.login_required
def download(exp_id: str, name: str):
    exp = _experiment(exp_id)
    now = datetime.now(UTC)
    stem, _, extension = name.rpartition(".")
    if name in ("bundle.zip", "cyoa.tsv"):
        fmt, table = ("bundle" if name == "bundle.zip" else "cyoa-tsv"), ""
    elif stem in exports.TABLES and extension in exports.TABLE_FORMATS:
        fmt, table = extension, stem
    else:
        abort(404)
    with _db() as db:
        try:
            data = exports.export(db, exp.id, fmt, table=table, experiment=exp, now=now)
        except exports.ExportError as exc:
            flash(str(exc), "error")
            return redirect(url_for("research.experiment", exp_id=exp.id, _anchor="downloads"))
    return send_file(
        io.BytesIO(data),
        mimetype=MIMETYPES[fmt],
        as_attachment=True,
        download_name=exports.filename(exp.id, table, fmt, now),
    )


@bp.get("/experiments/<exp_id>/evaluation-card.md")
@auth.login_required
def evaluation_card(exp_id: str):
    from cyoa.research.card import evaluation_card as card

    exp = _experiment(exp_id)
    now = datetime.now(UTC)
    with _db() as db:
        text = card(
            exp,
            store.get_evaluation_details(db, exp.id),
            exports.session_rows(db, exp.id, now, _research()["dropout_minutes"]),
            exports.preference_rows(db, exp.id),
            now,
        )
    return current_app.response_class(text, mimetype="text/markdown; charset=utf-8")
