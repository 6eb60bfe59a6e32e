"""The table of study kinds: what the app needs of each wing, looked up by the kind stored with
an experiment (``experiments.kind``). A third kind is a third wing plus one entry here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flask import Flask

from cyoa import store
from cyoa.cowriting import pages as cowriting_pages
from cyoa.cowriting import parts as cowriting_parts
from cyoa.cowriting import planner as cowriting_planner
from cyoa.cowriting import wing as cowriting_wing
from cyoa.cowriting.analysis import report as cowriting_report
from cyoa.cowriting.research import exports as cowriting_exports
from cyoa.cowriting.research import lifecycle as cowriting_lifecycle
from cyoa.cowriting.research import models as cowriting_models
from cyoa.db.facade import Db
from cyoa.generation.types import ModelCard
from cyoa.planning_record import Planner
from cyoa.rating import experiment as rating_experiment
from cyoa.rating import pages as rating_pages
from cyoa.rating import planner as rating_planner
from cyoa.rating import wing as rating_wing
from cyoa.rating.analysis import report as rating_report
from cyoa.rating.research import exports as rating_exports
from cyoa.web.parts import SharedParts
from cyoa.web.tables import ExportError


@dataclass(frozen=True)
class Kind:
    """One study kind:

    - ``name`` as stored (``experiments.kind``, a spec's ``kind``);
    - ``start_path``, the first segment of its participants' links, and ``work``, what a
      participant resumes by one (for the links' notes);
    - ``participants``: the table with one row per participant (``sessions``, ``raters``);
    - ``tables``: the names of its export tables, and ``export(db, row, fmt, **options)``:
      the stored experiment's ``row`` in a format of
      :data:`cyoa.cowriting.research.exports.FORMATS` (a rating experiment takes all but
      ``cyoa-tsv``);
    - ``create(db, raw, path, cards)``: a spec file stored as a paused experiment, and the
      sentence that says what to do next;
    - ``report(db, exp_id, fmt, **options)``: the ``analyze`` verb's text;
    - ``serves(app, exp_id)``: whether the app serves the stored experiment;
    - ``experiments_using(model)``: its experiments that use the model card (``id``,
      ``status``), and ``experiments_needing(model)``: the ids of those that keep it loaded
      (the Models page);
    - ``dashboard``: the endpoint of an experiment's dashboard (``exp_id`` its argument);
    - ``planners``: every plan a study of the kind can be planned as (``plan --kind``), its
      own first (:attr:`planner`), and ``planner_for(db, exp_id)``: the one a stored pilot
      is planned with;
    - at start, ``read_at_start(app, cards)``: what the kind serves, read once (co-writing:
      its experiments); ``models_needed(read)``: the models the app loads for them; and
      ``init_app(app, shared, read)``: the wing's parts built and its pages registered.
    """

    name: str
    start_path: str
    work: str
    participants: str
    tables: tuple[str, ...]
    export: Callable[..., bytes]
    create: Callable[..., str]
    report: Callable[..., str]
    serves: Callable[[Flask, str], bool]
    experiments_using: Callable[[str], list[dict[str, str]]]
    experiments_needing: Callable[[str], list[str]]
    dashboard: str
    planners: tuple[Planner, ...]
    planner_for: Callable[[Db, str], Planner]
    read_at_start: Callable[[Flask, dict[str, ModelCard]], Any]
    models_needed: Callable[[Any], list[str]]
    init_app: Callable[[Flask, SharedParts, Any], None]

    @property
    def planner(self) -> Planner:
        """The kind's own plan: the assumptions a study of the kind takes, its effect."""
        return self.planners[0]


KINDS: dict[str, Kind] = {
    "cowriting": Kind(
        name="cowriting",
        start_path=cowriting_pages.START_PATH,
        work=cowriting_pages.WORK,
        participants="sessions",
        tables=tuple(cowriting_exports.TABLES),
        export=cowriting_exports.export,
        create=cowriting_lifecycle.create_from_file,
        report=cowriting_report.report,
        serves=cowriting_parts.serves,
        experiments_using=cowriting_models.experiments_using,
        experiments_needing=cowriting_models.experiments_needing,
        dashboard="research_cowriting.experiment",
        planners=(cowriting_planner.PLANNER,),
        planner_for=lambda _db, _exp_id: cowriting_planner.PLANNER,
        read_at_start=cowriting_wing.read_experiments,
        models_needed=cowriting_wing.models_needed,
        init_app=cowriting_wing.init_app,
    ),
    "rating": Kind(
        name="rating",
        start_path=rating_pages.START_PATH,
        work=rating_pages.WORK,
        participants="raters",
        tables=tuple(rating_exports.RATING_TABLES),
        export=rating_exports.export,
        create=rating_experiment.create_from_file,
        report=rating_report.report_text,
        serves=lambda _app, _exp_id: True,  # a rating study needs no model to be served
        experiments_using=lambda _model: [],  # a rating study's models are a judge run's own
        experiments_needing=lambda _model: [],
        dashboard="research_ratings.rating_experiment",
        planners=rating_planner.PLANNERS,
        planner_for=rating_planner.planner_for,
        read_at_start=rating_wing.read_at_start,
        models_needed=rating_wing.models_needed,
        init_app=rating_wing.init_app,
    ),
}


def export(db: Db, exp_id: str, fmt: str, **options: Any) -> bytes:
    """Every export of a stored experiment of any kind (the ``export`` verb's): its kind's
    :attr:`Kind.export`; :class:`~cyoa.web.tables.ExportError` when there is no such
    experiment or the kind cannot make it."""
    row = store.get_experiment(db, exp_id)
    if row is None:
        raise ExportError(f"There is no experiment '{exp_id}' in this database.")
    return KINDS[row["kind"]].export(db, row, fmt, **options)


def kind_of(db: Db, exp_id: str) -> Kind:
    """The kind of the stored experiment ``exp_id``; :class:`~cyoa.errors.AnalysisError`
    naming the known experiments if there is none."""
    return KINDS[store.experiment_row(db, exp_id)["kind"]]


def of_spec(raw: dict[str, Any]) -> Kind:
    """The kind a spec file declares (``kind``; co-writing when it names none)."""
    return KINDS.get(str(raw.get("kind") or "cowriting"), KINDS["cowriting"])
