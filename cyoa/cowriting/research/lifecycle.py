"""Co-writing experiments made by researchers: spec files read, experiments created, cloned and
edited, and whether the server can generate with their models before one opens (opening,
pausing and closing, and participant links, are every kind's: :mod:`cyoa.web.experiments`).

A new experiment (from a spec file, the web form or ``experiment create``) is stored
``paused``, so nobody writes in it before the researcher has checked it and opened it. An
experiment opens only once the server has loaded its models (:func:`models_not_ready`); the
researcher's pages load them in the background first (:mod:`cyoa.cowriting.research.opening`).

An experiment can be cloned whatever its status (:func:`clone_experiment`: a new id, the
stored spec copied, paused), and edited while no writer has started it
(:func:`edit_refusal`, :func:`edit_experiment`): once a session exists, its stories must keep
the design they began with.

A stored experiment whose systems name models no card here describes (an imported study:
``import-tsv`` of the original CYOA TSV names ``model`` and ``baseline``) is not served to
writers, but its research pages show its data: :func:`stored_experiment` gives it with a
stand-in card for each such model (:func:`stand_in_card`), and it is never opened
(:func:`open_refusal`).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from cyoa import store
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.spec import Experiment, SpecError, experiment_from_dict
from cyoa.db.facade import Db
from cyoa.generation.types import ModelCard, Sampling
from cyoa.web.experiments import LifecycleError

# The backend of a stand-in card: no backend has this name, so nothing can load it.
NO_CARD_BACKEND = "none"
NO_CARD = "no model card here"


def require_writer_texts(exp: Experiment, where: str) -> None:
    """Refuse (SpecError) an experiment whose consent text or instructions are blank: writers
    would see empty headings. The web form requires both; spec files may leave them out."""
    if not exp.consent.strip():
        raise SpecError(
            f"{where}: the consent text is empty. Please write what writers agree to; it is "
            "the first thing they read."
        )
    if not exp.instructions.strip():
        raise SpecError(
            f"{where}: the instructions are empty. Please write what writers are asked to do; "
            "they read them before starting and above their story."
        )


def create_experiment(
    db: Db,
    raw: dict[str, Any],
    cards: dict[str, ModelCard],
    where: str = "spec",
    texts_required: bool = False,
) -> Experiment:
    """Validate ``raw`` (through :func:`~cyoa.cowriting.spec.experiment_from_dict`, and with
    ``texts_required`` through :func:`require_writer_texts`) and store it as a new,
    ``paused`` experiment. Raises SpecError for an invalid spec or a taken id."""
    exp = experiment_from_dict(raw, cards, where=where)
    if texts_required:
        require_writer_texts(exp, where)
    try:
        store.create_experiment(db, exp.id, exp.title, exp.source, status="paused")
    except ValueError as exc:
        raise SpecError(
            f"{where}: {exc} Choose another id (spec files in experiments/ are stored at "
            "every start)."
        ) from exc
    return exp


def stored_spec(db: Db, exp_id: str) -> dict[str, Any]:
    """The spec stored for a co-writing experiment; LifecycleError if there is none."""
    row = store.get_experiment(db, exp_id)
    if row is None or row["kind"] != "cowriting":
        raise LifecycleError(f"There is no co-writing experiment '{exp_id}'.")
    return json.loads(row["spec"])


def clone_experiment(
    db: Db, source_id: str, new_id: str, cards: dict[str, ModelCard]
) -> Experiment:
    """A new, ``paused`` experiment ``new_id`` with every field of ``source_id``'s stored
    spec (whatever its status; not its sessions nor its evaluation-card details). Raises
    SpecError for an invalid or taken id, LifecycleError for an unknown source."""
    new_id = new_id.strip()
    if not new_id:
        raise SpecError("New id: please give the copy an id (lowercase letters, digits, - or _).")
    spec = {**stored_spec(db, source_id), "id": new_id}
    return create_experiment(db, spec, cards, where="New id")


def spec_file_of(folder: Path, exp_id: str) -> Path | None:
    """The spec file in ``folder`` (the app's ``EXPERIMENTS_DIR``) that defines ``exp_id``, if
    any: the app stores such a file again at every start."""
    for path in sorted(Path(folder).glob("*.toml")):
        try:
            if tomllib.loads(path.read_text(encoding="utf-8")).get("id") == exp_id:
                return path
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
    return None


def edit_refusal(db: Db, exp_id: str, spec_folder: Path) -> str:
    """Why the experiment cannot be edited now, as a sentence saying what to do instead; ""
    when it can. Editable: no writer session yet, not defined by a spec file in
    ``spec_folder`` (an edit would be undone at the next start), and not open."""
    row = store.get_experiment(db, exp_id)
    if row is None or row["kind"] != "cowriting":
        return f"There is no co-writing experiment '{exp_id}'."
    sessions = cowriting_store.session_count(db, exp_id)
    if sessions:
        writers = "1 writer has" if sessions == 1 else f"{sessions} writers have"
        return (
            f"{writers} started '{exp_id}', and their stories keep the design they began "
            "with: clone it and edit the copy."
        )
    path = spec_file_of(spec_folder, exp_id)
    if path is not None:
        return (
            f"'{exp_id}' comes from the spec file {path.name}, which the app stores again at "
            "every start: edit that file and restart the app, or clone this experiment and edit "
            "the copy."
        )
    if row["status"] == "open":
        return f"'{exp_id}' is open: pause it first, then edit it."
    return ""


def edit_experiment(
    db: Db,
    exp_id: str,
    raw: dict[str, Any],
    cards: dict[str, ModelCard],
    spec_folder: Path,
) -> Experiment:
    """Replace the stored spec and title of ``exp_id`` with ``raw`` (from the web form),
    validated as a new experiment from the form is; its id must stay ``exp_id``. Raises
    SpecError for an invalid spec and LifecycleError, with nothing changed, when
    :func:`edit_refusal` says it cannot be edited."""
    where = "The form"
    refusal = edit_refusal(db, exp_id, spec_folder)
    if refusal:
        raise LifecycleError(refusal)
    exp = experiment_from_dict(raw, cards, where=where)
    if exp.id != exp_id:
        raise SpecError(f"{where}: the id cannot change; clone '{exp_id}' to get a new id.")
    require_writer_texts(exp, where)
    if not cowriting_store.update_experiment_spec(db, exp_id, exp.title, raw):
        # A writer started, or it was opened, since the check above.
        raise LifecycleError(edit_refusal(db, exp_id, spec_folder))
    return exp


def models_not_ready(exp: Experiment, pool_status: dict[str, dict[str, Any]]) -> list[str]:
    """The models of ``exp`` this server cannot generate with yet: not loaded, waiting,
    loading or failed. ``pool_status`` is :meth:`ModelPool.status`."""
    missing = []
    for system in exp.systems:
        name = system.model.name
        if pool_status.get(name, {}).get("state") != "ready" and name not in missing:
            missing.append(name)
    return missing


def stand_in_card(model: str) -> ModelCard:
    """A card for the model ``model`` that a stored experiment names but no card here
    describes: enough to show the experiment's stored data. It loads nothing, and its
    sampling is not the study's (the data do not record it): pages and the evaluation card
    say so (:func:`models_without_card`)."""
    return ModelCard(name=model, display_name=NO_CARD, backend=NO_CARD_BACKEND, sampling=Sampling())


def models_without_card(exp: Experiment) -> list[str]:
    """The models of ``exp`` that are stand-ins (:func:`stand_in_card`), in spec order."""
    names = (s.model.name for s in exp.systems if s.model.backend == NO_CARD_BACKEND)
    return list(dict.fromkeys(names))


def open_refusal(exp: Experiment) -> str:
    """Why ``exp`` cannot be opened to writers, as a sentence, or "" if it can (as far as its
    cards go): a model of it has no card here, so no writer could get its suggestions."""
    missing = models_without_card(exp)
    if not missing:
        return ""
    return (
        f"'{exp.id}' cannot be opened: its systems' models ({', '.join(missing)}) have no "
        "model card here (its data were imported). Its pages show the stored data; to run "
        "such a study, create a new experiment with a model card for each system."
    )


def stored_experiment(db: Db, exp_id: str, cards: dict[str, ModelCard]) -> Experiment | None:
    """The stored co-writing experiment ``exp_id`` as its research pages show it: its systems
    resolved against ``cards``, with a stand-in card for each model no card describes. None
    when no co-writing experiment has that id or its stored spec is not a valid one."""
    row = store.get_experiment(db, exp_id)
    if row is None or row["kind"] != "cowriting":
        return None
    try:
        raw = json.loads(row["spec"])
    except json.JSONDecodeError:
        return None
    systems = raw.get("systems") if isinstance(raw, dict) else None
    named = (
        [s.get("model") for s in systems if isinstance(s, dict)]
        if isinstance(systems, list)
        else []
    )
    stand_ins = {m: stand_in_card(m) for m in named if isinstance(m, str) and m not in cards}
    try:
        return experiment_from_dict(raw, {**cards, **stand_ins}, where=exp_id)
    except SpecError:
        return None


def unserved_experiments(
    db: Db, served: dict[str, Experiment], cards: dict[str, ModelCard]
) -> list[Experiment]:
    """The stored co-writing experiments the app does not serve that its research pages can
    show (:func:`stored_experiment`), by id."""
    rows = db.query("SELECT id FROM experiments WHERE kind = 'cowriting' ORDER BY id")
    found = (stored_experiment(db, row["id"], cards) for row in rows if row["id"] not in served)
    return [exp for exp in found if exp is not None]


def sync_from_db(db: Db, experiments: dict[str, Experiment], cards) -> list[str]:
    """Serve co-writing experiments stored by another process (``experiment create``) since
    the app started: adds them to ``experiments``; returns their ids. Stored experiments that cannot
    be served (e.g. imported data whose models are not cards here) are left out quietly; the
    app logged them at start."""
    added = []
    for row in db.query("SELECT id, spec FROM experiments WHERE kind = 'cowriting' ORDER BY id"):
        if row["id"] in experiments:
            continue
        try:
            exp = experiment_from_dict(json.loads(row["spec"]), cards, where=row["id"])
        except (SpecError, json.JSONDecodeError):
            continue
        experiments[exp.id] = exp
        added.append(exp.id)
    return added


def create_from_file(db: Db, raw: dict[str, Any], path: Path, cards: dict[str, ModelCard]) -> str:
    """Store the spec read from ``path`` as a new, paused experiment (``experiment create``);
    the sentence that says what to do next. :class:`~cyoa.cowriting.spec.SpecError` if the
    spec is wrong."""
    exp = create_experiment(db, raw, cards, where=str(path))
    return (
        f"Experiment '{exp.id}' created, paused. Restart the app to serve it with its models, "
        f"then open it (python -m cyoa experiment open {exp.id}, or on its page)."
    )
