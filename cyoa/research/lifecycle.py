"""Creating, opening, pausing and closing experiments, and what a researcher needs to run
one: participant links and whether the server can generate with its models.

A new experiment (from a spec file, the web form or ``experiment create``) is stored
``paused``, so nobody writes in it before the researcher has checked it and opened it. The
model pool of a running server is built at start from the experiments stored then; it cannot
load another model while running, so an experiment whose models the pool lacks cannot be
opened until the app restarts (:func:`models_not_served`).
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from sqlite_utils import Database

from cyoa import store
from cyoa.experiments import Experiment, SpecError, experiment_from_dict
from cyoa.generation.types import ModelCard

SPEC_MAX_BYTES = 256 * 1024
# A spec needs four levels (the spec, systems, a system, its sampling); more is a mistake.
SPEC_MAX_DEPTH = 16
STATUS_VERBS = {"open": "opened", "paused": "paused", "closed": "closed"}


class LifecycleError(ValueError):
    """An experiment action that cannot be done; the message says what to do instead."""


def parse_spec(text: str, filename: str) -> dict[str, Any]:
    """A spec file's contents as a dict: TOML (``.toml``) or JSON (``.json``). Anything that
    is not a readable spec of at most :data:`SPEC_MAX_BYTES` and :data:`SPEC_MAX_DEPTH`
    levels of nesting, in real Unicode text, is a SpecError that says what to fix."""
    if len(text.encode("utf-8", "surrogatepass")) > SPEC_MAX_BYTES:
        raise SpecError(f"{filename}: the spec is larger than {SPEC_MAX_BYTES // 1024} KB.")
    try:
        is_json = filename.lower().endswith(".json")
        raw = json.loads(text) if is_json else tomllib.loads(text)
    except RecursionError:
        raise SpecError(_too_deep(filename)) from None
    except ValueError as exc:  # also TOMLDecodeError, JSONDecodeError, a 5,000-digit number
        raise SpecError(f"{filename}: cannot read the spec ({exc}).") from exc
    if not isinstance(raw, dict):
        raise SpecError(f"{filename}: a spec is a table of fields (TOML) or an object (JSON).")
    _check_shape(raw, filename)
    try:
        json.dumps(raw)
    except TypeError as exc:
        raise SpecError(f"{filename}: use only text, numbers and lists (no dates).") from exc
    return raw


def _too_deep(filename: str) -> str:
    return (
        f"{filename}: the spec is nested too deeply (at most {SPEC_MAX_DEPTH} levels of tables "
        "and lists)."
    )


def _check_shape(raw: dict[str, Any], filename: str) -> None:
    """Refuse nesting deeper than :data:`SPEC_MAX_DEPTH` and text that is not Unicode (a
    lone surrogate, which JSON's ``\ud800`` can write and nothing can store or show).
    Iterative: no recursion, whatever the depth."""
    pending: list[tuple[Any, int]] = [(raw, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            if depth + 1 > SPEC_MAX_DEPTH:
                raise SpecError(_too_deep(filename))
            children = [*item, *item.values()] if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise SpecError(
                    f"{filename}: the text {ascii(item[:40])} holds a lone surrogate (half of "
                    "a character); write the character itself."
                ) from None


def create_experiment(
    db: Database, raw: dict[str, Any], cards: dict[str, ModelCard], where: str = "spec"
) -> Experiment:
    """Validate ``raw`` (through :func:`~cyoa.experiments.experiment_from_dict`) and store it
    as a new, ``paused`` experiment. Raises SpecError for an invalid spec or a taken id."""
    exp = experiment_from_dict(raw, cards, where=where)
    try:
        store.create_experiment(db, exp.id, exp.title, exp.source, status="paused")
    except ValueError as exc:
        raise SpecError(
            f"{where}: {exc} Choose another id (spec files in experiments/ are stored at "
            "every start)."
        ) from exc
    return exp


def models_not_served(exp: Experiment, pool_status: dict[str, dict[str, Any]]) -> list[str]:
    """The models of ``exp`` this server cannot generate with: not in its pool (loaded only
    at start) or failed to load. ``pool_status`` is :meth:`ModelPool.status`."""
    missing = []
    for system in exp.systems:
        name = system.model.name
        state = pool_status.get(name, {}).get("state")
        if (state is None or state == "failed") and name not in missing:
            missing.append(name)
    return missing


def set_status(
    db: Database, exp_id: str, status: str, unavailable_models: list[str] | None = None
) -> None:
    """Open, pause or close an experiment. Opening is refused while some of its models are
    ``unavailable_models`` for the server (writers would get no suggestions)."""
    if status not in STATUS_VERBS:
        raise LifecycleError("The status must be open, paused or closed.")
    if status == "open" and unavailable_models:
        raise LifecycleError(
            f"Cannot open it yet: this server has not loaded {', '.join(unavailable_models)}. "
            "Restart the app (it loads every model that a stored experiment uses), then open it."
        )
    try:
        store.set_experiment_status(db, exp_id, status)
    except ValueError as exc:
        raise LifecycleError(str(exc)) from exc


def sync_from_db(db: Database, experiments: dict[str, Experiment], cards) -> list[str]:
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


@dataclass(frozen=True)
class ParticipantLink:
    label: str
    url: str
    note: str


def participant_links(base_url: str, exp_id: str) -> list[ParticipantLink]:
    """The links to paste into a crowd platform, with the URL parameters the study reads."""
    base = f"{base_url.rstrip('/')}/s/{quote(exp_id)}"
    return [
        ParticipantLink(
            "Prolific",
            f"{base}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
            f"&SESSION_ID={{{{%SESSION_ID%}}}}",
            "Prolific fills in PROLIFIC_PID, STUDY_ID and SESSION_ID; the participant's own "
            "link (the same PROLIFIC_PID and SESSION_ID) resumes their story from any browser.",
        ),
        ParticipantLink(
            "Other platforms",
            f"{base}?pid=PARTICIPANT_ID",
            "Replace PARTICIPANT_ID with the platform's worker id (letters, digits, . _ : @ -, "
            "up to 128 characters); the same id resumes the story in the same browser. Add "
            "&SESSION_ID= with a per-assignment id that only the worker sees (e.g. MTurk's "
            "assignmentId) to let them resume it from another browser too.",
        ),
        ParticipantLink(
            "Anonymous",
            base,
            "No id: each browser gets its own story (kept in its cookie).",
        ),
    ]
