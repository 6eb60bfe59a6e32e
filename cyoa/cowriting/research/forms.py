"""The web form for an experiment, as a spec dict that
:func:`~cyoa.cowriting.spec.experiment_from_dict` validates, so the form and spec files obey
the same rules. Pure: a mapping of form fields in, a spec dict (or a SpecError) out, and
back (:func:`form_from_spec`) to show a stored spec in the form for editing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cyoa.cowriting.spec import (
    DEFAULT_LIKERT,
    DEFAULT_OPEN,
    MAX_SYSTEMS,
    PAIRINGS,
    SLOT_ORDERS,
    SpecError,
)
from cyoa.languages import form_fields, spec_fields

FORM_SYSTEM_ROWS = 4
MAX_SYSTEM_ROWS = MAX_SYSTEMS
MORE_ROWS = 2
SAMPLING_FIELDS = (("top_k", int), ("top_p", float), ("temperature", float))
SAMPLING_FIELDS += (("max_new_tokens", int),)
DEFAULT_TITLE = "Write a short story with an AI helper"


def survey_lines(items: tuple[tuple[str, str], ...]) -> str:
    """Survey items as the form shows them: ``id: statement``, one per line."""
    return "\n".join(f"{item_id}: {text}" for item_id, text in items)


def form_defaults() -> dict[str, str]:
    """The form's initial values: the paper's protocol (5 rounds, 20–260 characters, the
    paper's survey)."""
    return form_from_spec({"title": DEFAULT_TITLE})


def form_from_spec(spec: Mapping[str, Any]) -> dict[str, str]:
    """The form's values showing a (valid) spec: the inverse of :func:`spec_from_form`, so
    ``spec_from_form(form_from_spec(s)) == s`` for every spec the form made. A field the
    spec leaves out shows its default (5 rounds, turns of 20–260 characters, the paper's
    survey); a system's sampling field it leaves out stays empty (the card's default)."""
    prompt = spec.get("prompt") or {}
    survey = spec.get("survey") or {}
    systems = spec.get("systems") or []
    values = {
        "id": spec.get("id", ""),
        "title": spec.get("title", ""),
        "instructions": spec.get("instructions", ""),
        "consent": spec.get("consent", ""),
        "prompt_text": prompt.get("text", ""),
        "rounds": str(spec.get("rounds", 5)),
        "min_chars": str(spec.get("min_chars", 20)),
        "max_chars": str(spec.get("max_chars", 260)),
        "completion_url": spec.get("completion_url", ""),
        "completion_code": spec.get("completion_code", ""),
        "target_writers": str(spec.get("target_writers", 0)),
        "slot_order": spec.get("slot_order", "coin"),
        "pairing": spec.get("pairing", "balanced"),
        **form_fields(spec),
        "likert": _survey_text(survey, "likert", DEFAULT_LIKERT),
        "open": _survey_text(survey, "open", DEFAULT_OPEN),
        "system_rows": str(max(FORM_SYSTEM_ROWS, len(systems))),
    }
    for row, system in enumerate(systems, start=1):
        values[f"system{row}_name"] = system["name"]
        values[f"system{row}_model"] = system["model"]
        for key, value in (system.get("sampling") or {}).items():
            values[f"system{row}_{key}"] = str(value)
    return values


def _survey_text(survey: Mapping[str, Any], kind: str, default: tuple[tuple[str, str], ...]) -> str:
    if kind not in survey:
        return survey_lines(default)
    return survey_lines(tuple((item["id"], item["text"]) for item in survey[kind]))


def with_more_rows(form: Mapping[str, str]) -> dict[str, str]:
    """The form as typed, with :data:`MORE_ROWS` more system rows (at most
    :data:`MAX_SYSTEM_ROWS`): what "More system rows" shows, losing nothing."""
    return {**form, "system_rows": str(min(MAX_SYSTEM_ROWS, system_rows(form) + MORE_ROWS))}


def _number(form: Mapping[str, str], key: str, kind: type, label: str) -> int | float:
    value = (form.get(key) or "").strip()
    try:
        return kind(value)
    except ValueError:
        raise SpecError(f"{label}: please enter a number (got '{value}').") from None


def _survey(text: str, label: str) -> list[dict[str, str]]:
    items = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        if not line.strip():
            continue
        item_id, sep, statement = line.partition(":")
        if not sep or not item_id.strip() or not statement.strip():
            raise SpecError(
                f"{label}, line {number}: write each item as 'id: text' (e.g. "
                "'happy: I'm happy with my final story.')."
            )
        items.append({"id": item_id.strip(), "text": statement.strip()})
    return items


def system_rows(form: Mapping[str, str]) -> int:
    """How many system rows the form has (its hidden ``system_rows`` field, bounded)."""
    try:
        rows = int(form.get("system_rows", FORM_SYSTEM_ROWS))
    except ValueError:
        rows = FORM_SYSTEM_ROWS
    return max(2, min(MAX_SYSTEM_ROWS, rows))


def spec_from_form(form: Mapping[str, str]) -> dict[str, Any]:
    """The spec dict the form describes. System rows without a name and a model are
    ignored; a row's empty sampling field keeps the model card's default."""
    spec: dict[str, Any] = {
        "id": (form.get("id") or "").strip(),
        "title": (form.get("title") or "").strip(),
        "instructions": (form.get("instructions") or "").strip(),
        "consent": (form.get("consent") or "").strip(),
        "rounds": _number(form, "rounds", int, "Rounds"),
        "min_chars": _number(form, "min_chars", int, "Shortest turn"),
        "max_chars": _number(form, "max_chars", int, "Longest turn"),
        "completion_url": (form.get("completion_url") or "").strip(),
        "target_writers": _number(form, "target_writers", int, "Target number of writers"),
    }
    if not spec["id"]:
        raise SpecError("Experiment id: please give an id (lowercase letters, digits, - or _).")
    if not spec["title"]:
        raise SpecError("Title: please give the title writers will see.")
    if spec["target_writers"] < 0:
        raise SpecError("Target number of writers: use 0 (no target) or more.")
    slot_order = form.get("slot_order") or "coin"
    if slot_order not in SLOT_ORDERS:
        raise SpecError(f"Slot order: choose one of {', '.join(SLOT_ORDERS)}.")
    spec["slot_order"] = slot_order
    pairing = form.get("pairing") or "balanced"
    if pairing not in PAIRINGS:
        raise SpecError(f"Pairing: choose one of {', '.join(PAIRINGS)}.")
    if pairing != "balanced":
        spec["pairing"] = pairing
    completion_code = (form.get("completion_code") or "").strip()
    if completion_code:
        spec["completion_code"] = completion_code
    spec |= spec_fields(form.get("language") or "", form.get("languages") or "")
    prompt = (form.get("prompt_text") or "").strip()
    if prompt:
        spec["prompt"] = {"text": prompt}
    systems = []
    for row in range(1, system_rows(form) + 1):
        name = (form.get(f"system{row}_name") or "").strip()
        model = (form.get(f"system{row}_model") or "").strip()
        if not name and not model:
            continue
        if not name or not model:
            raise SpecError(f"System {row}: give both a name and a model (or neither).")
        sampling: dict[str, Any] = {}
        for key, kind in SAMPLING_FIELDS:
            if (form.get(f"system{row}_{key}") or "").strip():
                sampling[key] = _number(form, f"system{row}_{key}", kind, f"System {row} {key}")
        system: dict[str, Any] = {"name": name, "model": model}
        if sampling:
            system["sampling"] = sampling
        systems.append(system)
    spec["systems"] = systems
    likert = _survey(form.get("likert", ""), "Likert statements")
    open_ = _survey(form.get("open", ""), "Open questions")
    if not likert and not open_:
        raise SpecError("Survey: give at least one Likert statement or open question.")
    spec["survey"] = {"likert": likert, "open": open_}
    return spec


def edited_spec(form: Mapping[str, str], stored: Mapping[str, Any]) -> dict[str, Any]:
    """The stored spec with what the form sets replaced by the form's values (the id stays
    the stored one). What the form does not cover is kept as stored: e.g.
    ``suggestion_timeout_seconds``, ``prompt.image``, and fields of newer spec files."""
    edited = spec_from_form({**form, "id": stored["id"]})
    spec = {**stored, **edited}
    if "completion_code" not in edited:  # emptied: a code per writer again
        spec.pop("completion_code", None)
    prompt = {k: v for k, v in (stored.get("prompt") or {}).items() if k != "text"}
    prompt.update(edited.get("prompt", {}))
    if prompt:
        spec["prompt"] = prompt
    else:
        spec.pop("prompt", None)
    spec["survey"] = {**(stored.get("survey") or {}), **edited["survey"]}
    return spec
