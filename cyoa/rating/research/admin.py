"""The researcher's actions on rating experiments, under ``/research/ratings/``: the form that
creates one, open / pause / close, clone, and edit while no rater has started.

The form becomes a raw spec (:mod:`cyoa.rating.form`) that
:func:`~cyoa.rating.spec.parse_rating_spec` checks as it checks spec files; the stories come
from an uploaded file, a co-writing experiment's finished stories, or the systems themselves:
those are generated on a background thread of this server process with the backends of its
model pool (:class:`GenerationJob`), while a page polls the job's progress, and the
experiment is stored when they are done. Every stored experiment starts paused.

Uploaded files are size-limited (:data:`UPLOAD_LIMITS`) and saved, with the generated
stories, in a new folder of the ``RATING_FILES`` folder (``instance/ratings``),
``<experiment>/<time>-<random>/``;
a failed or cancelled attempt's folder is removed. A job runs in one process; its status is
saved as it goes (:mod:`cyoa.rating.research.jobs`), so its page shows it from any process,
and shows it interrupted once that process is gone. Cancelling reaches the process that runs
it (one process, or sticky sessions, as Socket.IO needs).
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask import (
    Flask,
    abort,
    current_app,
    flash,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.utils import secure_filename

from cyoa import store
from cyoa.db.facade import Db
from cyoa.generation import System
from cyoa.generation.pool import ModelNotAvailable
from cyoa.rating import store as rating_store
from cyoa.rating.experiment import create_from_spec, replace_from_spec
from cyoa.rating.form import (
    INSTRUMENTS,
    Generation,
    RatingFormError,
    custom_instrument_table,
    experiment_id,
    form_defaults,
    form_from_spec,
    generation_from_form,
    kept_checks,
    spec_from_form,
)
from cyoa.rating.parts import parts as rating_parts
from cyoa.rating.research.jobs import (
    CANCELLED,
    CANCELLING,
    JOBS_KEPT,
    GenerationJob,
    forget_old,
    saved_job,
)
from cyoa.rating.research.views import rating_experiment_or_404
from cyoa.rating.service import RatingExperiment
from cyoa.rating.spec import RatingSpec, RatingSpecError, parse_rating_spec
from cyoa.rating.stories.corrupt import OPERATIONS
from cyoa.rating.stories.generate import GenerationCancelled, GenerationFailed, generate_stories
from cyoa.web import auth
from cyoa.web import research as web
from cyoa.web.experiments import SPEC_MAX_BYTES, LifecycleError
from cyoa.web.experiments import set_status as set_experiment_status
from cyoa.web.parts import shared as shared_parts
from cyoa.web.realtime import socketio
from cyoa.words import counted

log = logging.getLogger(__name__)

MB = 1024 * 1024
# The largest file accepted for each upload, in bytes.
UPLOAD_LIMITS = {"stories": 16 * MB, "questions": 4 * MB, "instrument": SPEC_MAX_BYTES}
# Longer names are refused: most file systems keep at most 255 bytes of a name.
UPLOAD_NAME_MAX_CHARS = 200
UPLOAD_FIELDS = {
    "stories": "stories_file",
    "questions": "questions_file",
    "instrument": "instrument_file",
}
# A request larger than this is refused before it is read (the form is then lost).
REQUEST_MAX_BYTES = 64 * MB
MODEL_WAIT_SECONDS = 600
WHERE = "The form"
GENERATED = "generated.jsonl"
PREVIEW = "preview.jsonl"
KEPT_STORIES = "kept/stories.jsonl"
KEPT_QUESTIONS = "kept/questions.jsonl"
# A job that ended in one of these stored nothing: its form is shown again, as it was sent
# (a job read back after a restart has lost it: the form starts afresh).
ENDED_UNSTORED = ("failed", "cancelled", "interrupted")
STATUS_MESSAGES = {
    "open": "Rating experiment '{id}' is open: raters can start at /r/{id}.",
    "paused": "Rating experiment '{id}' is paused: no new raters; raters who started can finish.",
    "closed": "Rating experiment '{id}' is closed: no new raters; raters who started can finish.",
}


def _limit_request() -> None:
    request.max_content_length = REQUEST_MAX_BYTES


# The limit is set before the CSRF check reads the form.
bp = web.blueprint(
    "research_rating_admin", __name__, "/research/ratings", before_csrf=_limit_request
)


@dataclass(frozen=True)
class Kept:
    """What an edit keeps of the stored experiment where the form gives nothing new: each
    kept story's stored ``origins`` (by story id), and the spec fields to store as they
    were (``source``)."""

    origins: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)


def _running_job(exp_id: str | None = None) -> GenerationJob | None:
    """The job generating stories now (for ``exp_id``, or any when None)."""
    with rating_parts().jobs_lock:
        for job in rating_parts().jobs.values():
            if job.state == "running" and exp_id in (None, job.experiment):
                return job
    return None


def _busy_refusal(exp_id: str) -> str:
    """Why ``exp_id`` cannot be created, edited, opened or cloned onto now: its stories are
    being generated (the job stores the experiment when it ends)."""
    if _running_job(exp_id) is None:
        return ""
    return (
        f"Stories for '{exp_id}' are being generated: wait until they are stored (the progress "
        "page shows when), then try again."
    )


def _dashboard(exp_id: str):
    return redirect(url_for("research_ratings.rating_experiment", exp_id=exp_id))


def _edit_refusal(exp_id: str) -> str:
    with web.db() as db:
        return rating_store.rating_edit_refusal(db, exp_id)


def _pool_models() -> dict[str, str]:
    """The model cards that did not fail to load, with their state (``not_loaded``,
    ``loading``, ``ready``…): the systems that can generate stories (one not loaded yet is
    loaded when the job asks for it)."""
    web.read_new_cards()
    return {
        name: model["state"]
        for name, model in sorted(shared_parts().pool.status().items())
        if model["state"] != "failed"
    }


# --- the form ---------------------------------------------------------------------------


def _form(
    values: Mapping[str, Any], existing: RatingExperiment | None, error: str = "", status: int = 200
):
    cards = shared_parts().cards
    models = [
        {"name": name, "label": f"{cards[name].display_name} ({name}, {state.replace('_', ' ')})"}
        for name, state in _pool_models().items()
    ]
    with web.db() as db:
        cowriting = rating_store.cowriting_story_counts(db)
    page = render_template(
        "research/rating_new.html",
        values=values,
        experiment=existing,
        error=error,
        models=models,
        cowriting=cowriting,
        operations=OPERATIONS,
        limits={key: _size(limit) for key, limit in UPLOAD_LIMITS.items()},
    )
    return page, status


def _size(limit: int) -> str:
    """A size in bytes as the form states it ("16 MB", "256 KB")."""
    return f"{limit / MB:g} MB" if limit >= MB else f"{limit / 1024:g} KB"


def _values() -> dict[str, Any]:
    """The form as sent (every field but the token; the chosen models as a list)."""
    values = {key: value for key, value in request.form.items() if key != "csrf_token"}
    values["generate_models"] = request.form.getlist("generate_models")
    return values


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error):
    g.researcher = auth.current_researcher()
    if g.researcher is None:
        return redirect(url_for("research.login"))
    existing = rating_parts().ratings.experiment(request.view_args.get("exp_id", ""))
    values = form_from_spec(existing.spec, existing.title) if existing else form_defaults()
    message = (
        f"The files sent are larger than {REQUEST_MAX_BYTES // MB} MB together, so nothing "
        "was read: fill in the form again and choose smaller files."
    )
    return _form(values, existing, message, 413)


@bp.get("/new")
@auth.login_required
def new_rating():
    job = _job_or_none(request.args.get("job", ""))
    if job is not None and job.state in ENDED_UNSTORED and not job.editing:
        return _form(job.values or form_defaults(), None, job.error)
    return _form(form_defaults(), None)


@bp.post("/new")
@auth.login_required
def create_rating():
    return _submit(_values(), None)


def _submit(values: dict[str, Any], existing: RatingExperiment | None):
    """Check the form and store the experiment (new, or replacing ``existing``); with
    generated stories, start their job and show its progress. An error shows the form
    again with everything typed."""
    try:
        exp_id = existing.id if existing else experiment_id(values)
        if refusal := _busy_refusal(exp_id):
            raise RatingFormError(refusal)
    except RatingFormError as error:
        return _form(values, existing, str(error), 400)
    folder = _new_folder(exp_id)
    try:
        with web.db() as db:
            if existing is None and store.get_experiment(db, exp_id) is not None:
                raise RatingFormError(f"Experiment id: '{exp_id}' is taken; choose another.")
            files: dict[str, Any] = _save_uploads(values, folder)
            kept = _keep(db, existing, values, files, folder) if existing else Kept()
            if values.get("stories_from") == "generated":
                files["stories"] = GENERATED
                raw = spec_from_form(values, files)
                generation = generation_from_form(values, _pool_models())
                _check_before_generating(db, raw, generation, folder)
                job = _start_job(values, existing, raw, generation, folder)
                return redirect(url_for(".generation", job_id=job.id))
            spec = parse_rating_spec(spec_from_form(values, files), WHERE, folder, db)
            _store(db, _with_kept(spec, kept), existing)
    except (RatingFormError, RatingSpecError) as error:
        shutil.rmtree(folder, ignore_errors=True)
        # An uploaded file is named as the researcher knows it, not by its path here.
        message = str(error).replace(f"{folder}/", "")
        return _form(values, existing, message, 400)
    how = "saved" if existing else "created, paused,"
    flash(
        f"Rating experiment '{spec.id}' {how} with {counted(len(spec.stories), 'story')}. "
        f"Check it, then open it: raters start at /r/{spec.id}."
    )
    return _dashboard(spec.id)


def _new_folder(exp_id: str) -> Path:
    """A new folder for one attempt's files, in the instance folder under the experiment's
    id (which :func:`~cyoa.rating.form.experiment_id` allows only as a plain name)."""
    parent = Path(current_app.config["RATING_FILES"]) / exp_id
    parent.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return Path(tempfile.mkdtemp(prefix=f"{stamp}-", dir=parent))


def _save_uploads(values: Mapping[str, Any], folder: Path) -> dict[str, str]:
    """Save the uploaded files the form's choices use into ``folder``; their paths
    relative to it, by kind (``stories``, ``questions``, ``instrument``)."""
    used = {
        "stories": values.get("stories_from") == "file",
        "questions": values.get("instrument") == "fei",
        "instrument": values.get("instrument") == "custom",
    }
    files = {}
    for kind, needed in used.items():
        upload = request.files.get(UPLOAD_FIELDS[kind])
        if not needed or upload is None or not upload.filename:
            continue
        if len(upload.filename) > UPLOAD_NAME_MAX_CHARS:
            raise RatingFormError(
                f"The {kind} file's file name is longer than {UPLOAD_NAME_MAX_CHARS} "
                "characters: rename the file and choose it again."
            )
        limit = UPLOAD_LIMITS[kind]
        data = upload.read(limit + 1)
        if len(data) > limit:
            raise RatingFormError(
                f"{upload.filename} is larger than {_size(limit)}: choose a smaller file."
            )
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise RatingFormError(
                f"{upload.filename} is not UTF-8 text: save it as UTF-8 and choose it again."
            ) from None
        name = secure_filename(upload.filename) or kind
        if kind == "instrument" and not name.endswith(".toml"):
            raise RatingFormError("Custom instrument: choose its spec, a .toml file.")
        (folder / kind).mkdir()
        (folder / kind / name).write_bytes(data)
        files[kind] = f"{kind}/{name}"
    return files


def _write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    path.write_text(text, encoding="utf-8")


def _keep(
    db: Db,
    exp: RatingExperiment,
    values: Mapping[str, Any],
    files: dict[str, Any],
    folder: Path,
) -> Kept:
    """For an edit, what the form does not replace, from the stored experiment: the stories
    (the originals, as a file; their copies are made again from the corruption settings),
    an FEI study's questions, a custom instrument (as its table). Adds them to ``files``."""
    originals = [
        row for row in rating_store.rating_rows(db, exp.id, "stories") if not row["family"]
    ]
    origins: dict[str, dict[str, Any]] = {}
    source: dict[str, Any] = {}
    if values.get("stories_from") == "keep":
        _write_jsonl(
            folder / KEPT_STORIES,
            (
                {
                    "story_id": row["story_id"],
                    "source": row["source"],
                    "title": row["title"] or "",
                    "text": row["text"] or row["url"] or "",
                }
                for row in originals
            ),
        )
        files["stories"] = KEPT_STORIES
        origins = {row["story_id"]: json.loads(row["origin"] or "{}") for row in originals}
        stored_table = exp.spec.get("stories")  # an imported experiment's is a number
        table = stored_table if isinstance(stored_table, dict) else {"file": KEPT_STORIES}
        source["stories"] = {**table, "links": bool(values.get("links"))}
    stored = exp.questions.instrument
    if values.get("instrument") == "fei" and "questions" not in files and stored.id == "fei":
        ids = {row["story_id"] for row in originals}
        _write_jsonl(
            folder / KEPT_QUESTIONS,
            (
                {"story_id": i.story_id, "question_id": i.id, "kind": i.fei_kind, "text": i.text}
                for i in stored.items
                if i.story_id in ids
            ),
        )
        files["questions"] = KEPT_QUESTIONS
        source["questions"] = exp.spec.get("questions", {})
    custom = stored.id not in INSTRUMENTS
    if values.get("instrument") == "custom" and "instrument" not in files and custom:
        files["instrument"] = custom_instrument_table(stored)
    checks = kept_checks(values, exp.spec)
    if checks is not None:
        source["attention_checks"] = checks
    return Kept(origins, source)


def _with_kept(spec: RatingSpec, kept: Kept) -> RatingSpec:
    """``spec`` with the kept stories' stored origins (a file read back has lost them) and
    the kept spec fields."""
    spec = _with_origins(spec, kept.origins)
    return replace(spec, source={**spec.source, **kept.source})


def _with_origins(spec: RatingSpec, origins: Mapping[str, dict[str, Any]]) -> RatingSpec:
    """``spec`` whose stories named in ``origins`` get that origin, and their corrupted
    copies it as ``original_origin``."""
    stories = []
    for story in spec.stories:
        if story.story_id in origins:
            story = replace(story, origin=origins[story.story_id])
        elif story.family in origins:
            origin = {**story.origin, "original_origin": origins[story.family]}
            story = replace(story, origin=origin)
        stories.append(story)
    return replace(spec, stories=tuple(stories))


def _store(db: Db, spec: RatingSpec, existing: RatingExperiment | None) -> None:
    """Store ``spec`` as a new paused experiment, or in place of ``existing`` (refused once
    a rater has started)."""
    if existing is None:
        create_from_spec(db, spec)
    else:
        replace_from_spec(db, spec)


# --- generated stories ------------------------------------------------------------------


def _check_before_generating(
    db: Db, raw: dict[str, Any], generation: Generation, folder: Path
) -> None:
    """Check the spec with a stand-in for each story to be generated, so that its errors
    show before the wait (corrupted copies need the real stories: they are made after)."""
    _write_jsonl(folder / PREVIEW, generation.placeholders())
    try:
        parse_rating_spec({**raw, "corrupt": [], "stories": {"file": PREVIEW}}, WHERE, folder, db)
    finally:
        (folder / PREVIEW).unlink()


def _start_job(
    values: dict[str, Any],
    existing: RatingExperiment | None,
    raw: dict[str, Any],
    generation: Generation,
    folder: Path,
) -> GenerationJob:
    jobs = rating_parts().jobs
    with rating_parts().jobs_lock:
        running = [job for job in jobs.values() if job.state == "running"]
        if running:
            raise RatingFormError(
                f"Stories for '{running[0].experiment}' are being generated (one job at a "
                "time, so that the models keep serving the live studies): wait until they are "
                "stored, then send this form again."
            )
        finished = [job_id for job_id, job in jobs.items() if job.state != "running"]
        for job_id in finished[: max(0, len(finished) - JOBS_KEPT)]:
            del jobs[job_id]
        root = Path(current_app.config["RATING_FILES"])
        job = GenerationJob(
            id=secrets.token_urlsafe(12),
            experiment=raw["id"],
            total=generation.total,
            values=values,
            editing=existing is not None,
            root=root,
            folder=folder,
            worker=shared_parts().worker_id,
        )
        job.save()
        forget_old(root)
        jobs[job.id] = job
    socketio.start_background_task(
        _generate, current_app._get_current_object(), job, raw, generation, folder
    )
    return job


def _generate(
    app: Flask, job: GenerationJob, raw: dict[str, Any], generation: Generation, folder: Path
) -> None:
    """The job: generate the stories with the pool's backends, write them to the folder,
    then check and store the spec that reads them. A cancelled job stops before its next
    story (or before storing) and leaves nothing: no experiment, no folder."""
    parts = shared_parts(app)
    error = ""
    try:
        backends = {
            name: parts.pool.get(name, timeout=MODEL_WAIT_SECONDS) for name in generation.models
        }
        cards = parts.cards
        systems = [System(name, cards[name], cards[name].sampling) for name in generation.models]
        stories = generate_stories(
            systems,
            backends,
            generation.prompts,
            stories_per_prompt=generation.stories_per_prompt,
            sentences=generation.sentences,
            seed=generation.seed,
            log=job.advance,
            stop=job.cancel.is_set,
        )
        _write_jsonl(
            folder / GENERATED,
            (
                {"story_id": s.story_id, "source": s.source, "title": s.title, "text": s.text,
                 "origin": s.origin}
                for s in stories
            ),
        )  # fmt: skip
        if job.cancel.is_set():
            raise GenerationCancelled("Stopped before storing.")
        db = store.connect(app.config["DATABASE"])
        try:
            spec = parse_rating_spec(raw, WHERE, folder, db)
            origins = {story.story_id: story.origin for story in stories}
            existing = rating_parts(app).ratings.experiment(job.experiment) if job.editing else None
            _store(db, _with_origins(spec, origins), existing)
        finally:
            db.close()
    except GenerationCancelled:
        shutil.rmtree(folder, ignore_errors=True)
        job.end("cancelled", CANCELLED)
        return
    except (ModelNotAvailable, GenerationFailed, RatingSpecError, RatingFormError) as failure:
        error = str(failure)
    except Exception as failure:  # noqa: BLE001 - any failure is shown on the progress page
        log.exception("Generating stories for %s failed", job.experiment)
        error = f"Generation stopped ({type(failure).__name__}: {failure}); see the server log."
    if error and (folder / GENERATED).is_file():
        job.end(
            "failed",
            f"{error} The generated stories are kept in {folder / GENERATED}: a spec file can "
            "read them ([stories] file = …).",
        )
    elif error:
        shutil.rmtree(folder, ignore_errors=True)
        job.end("failed", error)
    else:
        job.end("created")


def _job_or_none(job_id: str) -> GenerationJob | None:
    """The job ``job_id``: this process's, or as its saved status tells it (a job of another
    process, or of a process that is gone: then interrupted)."""
    job = rating_parts().jobs.get(job_id)
    return job or saved_job(Path(current_app.config["RATING_FILES"]), job_id)


def _job(job_id: str) -> GenerationJob:
    job = _job_or_none(job_id)
    if job is None:
        abort(404)
    return job


@bp.get("/new/<job_id>")
@auth.login_required
def generation(job_id: str):
    job = _job(job_id)
    back = (
        url_for(".edit_rating", exp_id=job.experiment, job=job.id)
        if job.editing
        else url_for(".new_rating", job=job.id)
    )
    return render_template(
        "research/rating_generation.html",
        job=_progress(job),
        back=back,
        json_url=url_for(".generation_json", job_id=job.id),
        cancel_url=url_for(".cancel_generation", job_id=job.id),
    )


@bp.post("/new/<job_id>/cancel")
@auth.login_required
def cancel_generation(job_id: str):
    """Ask the job to stop: it ends before its next story (after a model it waits for has
    loaded), and stores nothing."""
    job = _job(job_id)
    if job.state == "running":
        if job_id not in rating_parts().jobs:
            flash(
                "This job runs in another server process: cancel it from a page that reaches "
                "that process, or wait for it to end."
            )
        else:
            job.cancel.set()
            flash(CANCELLING)
    return redirect(url_for(".generation", job_id=job.id))


@bp.get("/new/<job_id>.json")
@auth.login_required
def generation_json(job_id: str):
    return jsonify(_progress(_job(job_id)))


def _progress(job: GenerationJob) -> dict[str, Any]:
    created = job.state == "created"
    url = url_for("research_ratings.rating_experiment", exp_id=job.experiment) if created else ""
    return {**job.to_dict(), "url": url}


# --- status, clone, edit ----------------------------------------------------------------


@bp.post("/<exp_id>/status")
@auth.login_required
def set_rating_status(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    status = request.form.get("status", "")
    if status == "open" and (refusal := _busy_refusal(exp.id)):
        flash(refusal, "error")
        return _dashboard(exp.id)
    if status == "open" and "import" in exp.spec:
        flash(
            f"'{exp.id}' holds imported judgements and has no raters' pages to open; clone "
            "it, then give the copy its consent and instructions with Edit.",
            "error",
        )
        return _dashboard(exp.id)
    with web.db() as db:
        unreadable = rating_store.unreadable_stories(db, exp.id) if status == "open" else []
    if unreadable:
        shown = ", ".join(unreadable[:20]) + (", …" if len(unreadable) > 20 else "")
        flash(
            f"'{exp.id}' has {len(unreadable)} stories with neither text nor a link, which "
            f"its raters could not read: {shown}. Edit it and choose stories that have their "
            "texts, then open it.",
            "error",
        )
        return _dashboard(exp.id)
    blank = [f for f in ("consent", "instructions") if not str(exp.spec.get(f, "")).strip()]
    if status == "open" and blank:
        flash(
            f"'{exp.id}' has no {' and no '.join(blank)} for its raters: fill "
            f"{'them' if len(blank) > 1 else 'it'} in with Edit, then open it.",
            "error",
        )
        return _dashboard(exp.id)
    try:
        with web.db() as db:
            set_experiment_status(db, exp.id, status)
    except LifecycleError as error:
        flash(str(error), "error")
    else:
        flash(STATUS_MESSAGES[status].format(id=exp.id))
    return _dashboard(exp.id)


@bp.post("/<exp_id>/clone")
@auth.login_required
def clone_rating(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    try:
        new_id = experiment_id({"id": request.form.get("new_id", "")})
        if refusal := _busy_refusal(new_id):
            raise RatingFormError(refusal)
        with web.db() as db:
            rating_store.clone_rating_experiment(db, exp.id, new_id)
    except ValueError as error:  # RatingFormError, or the store's: the id is taken
        flash(f"Could not clone '{exp.id}': {error}", "error")
        return _dashboard(exp.id)
    flash(
        f"Rating experiment '{new_id}' is a copy of '{exp.id}' (its stories and instrument), "
        "paused: edit it, then open it."
    )
    return _dashboard(new_id)


@bp.get("/<exp_id>/edit")
@auth.login_required
def edit_rating(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    refusal = _edit_refusal(exp.id)
    if refusal:
        flash(refusal, "error")
        return _dashboard(exp.id)
    job = _job_or_none(request.args.get("job", ""))
    if job is not None and job.state in ENDED_UNSTORED and job.experiment == exp.id:
        return _form(job.values or form_from_spec(exp.spec, exp.title), exp, job.error)
    return _form(form_from_spec(exp.spec, exp.title), exp)


@bp.post("/<exp_id>/edit")
@auth.login_required
def save_rating(exp_id: str):
    exp = rating_experiment_or_404(exp_id)
    refusal = _edit_refusal(exp.id)
    if refusal:
        flash(refusal, "error")
        return _dashboard(exp.id)
    return _submit({**_values(), "id": exp.id}, exp)
