"""What a researcher does to an experiment of any kind: read its spec file (:func:`parse_spec`,
bounded in size and nesting), open, pause or close it, and hand out its participant links."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from cyoa import store
from cyoa.db.facade import Db

SPEC_MAX_BYTES = 256 * 1024
STATUS_VERBS = {"open": "opened", "paused": "paused", "closed": "closed"}


class LifecycleError(ValueError):
    """An experiment action that cannot be done; the message says what to do instead."""


class SpecFileError(ValueError):
    """A spec file that cannot be read as a spec; the message names the file and what to fix."""


# A co-writing spec needs four levels (the spec, systems, a system, its sampling), a rating
# spec as many; more is a mistake.
SPEC_MAX_DEPTH = 16


def parse_spec(text: str, filename: str) -> dict[str, Any]:
    """A spec file's contents as a dict: TOML (``.toml``) or JSON (``.json``). Anything that
    is not a readable spec of at most :data:`SPEC_MAX_BYTES` and :data:`SPEC_MAX_DEPTH`
    levels of nesting, in real Unicode text, is a :class:`SpecFileError` that says what to
    fix. A leading byte-order mark (some editors write one) is skipped."""
    text = text.removeprefix("\ufeff")
    if len(text.encode("utf-8", "surrogatepass")) > SPEC_MAX_BYTES:
        raise SpecFileError(f"{filename}: the spec is larger than {SPEC_MAX_BYTES // 1024} KB.")
    try:
        is_json = filename.lower().endswith(".json")
        raw = json.loads(text) if is_json else tomllib.loads(text)
    except RecursionError:
        raise SpecFileError(_too_deep(filename)) from None
    except ValueError as exc:  # also TOMLDecodeError, JSONDecodeError, a 5,000-digit number
        raise SpecFileError(f"{filename}: cannot read the spec ({exc}).") from exc
    if not isinstance(raw, dict):
        raise SpecFileError(f"{filename}: a spec is a table of fields (TOML) or an object (JSON).")
    _check_shape(raw, filename)
    try:
        json.dumps(raw)
    except TypeError as exc:
        raise SpecFileError(f"{filename}: use only text, numbers and lists (no dates).") from exc
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
                raise SpecFileError(_too_deep(filename))
            children = [*item, *item.values()] if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise SpecFileError(
                    f"{filename}: the text {ascii(item[:40])} holds a lone surrogate (half of "
                    "a character); write the character itself."
                ) from None


def set_status(db: Db, exp_id: str, status: str) -> None:
    """Open, pause or close an experiment (the caller makes sure its models are ready before
    opening it)."""
    if status not in STATUS_VERBS:
        raise LifecycleError("The status must be open, paused or closed.")
    try:
        store.set_experiment_status(db, exp_id, status)
    except ValueError as exc:
        raise LifecycleError(str(exc)) from exc


@dataclass(frozen=True)
class ParticipantLink:
    key: str
    label: str
    url: str
    note: str


PROLIFIC_QUERY = (
    "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
)


def participant_links(
    base_url: str, exp_id: str, start_path: str, work: str
) -> list[ParticipantLink]:
    """The links to paste into a crowd platform, whole (``base_url`` is the address
    participants reach the app at, ``start_path`` the kind's first path segment, ``work``
    what a participant resumes, e.g. "story"), with the URL parameters the study reads:
    Prolific's placeholders first, as its study form takes them."""
    base = f"{base_url.rstrip('/')}/{start_path}/{quote(exp_id)}"
    return [
        ParticipantLink(
            "prolific",
            "Prolific",
            base + PROLIFIC_QUERY,
            "Paste this as the study URL on Prolific, which fills in PROLIFIC_PID, STUDY_ID and "
            f"SESSION_ID; the participant's own link resumes their {work} from any browser.",
        ),
        ParticipantLink(
            "other",
            "Other platforms",
            f"{base}?pid=PARTICIPANT_ID",
            "Replace PARTICIPANT_ID with the platform's worker id (letters, digits, . _ : @ -, "
            f"up to 128 characters); the same id resumes the {work} in the same browser. Add "
            "&SESSION_ID= with a per-assignment id that only the worker sees (e.g. MTurk's "
            "assignmentId) to let them resume from another browser too.",
        ),
        ParticipantLink(
            "anonymous",
            "Anonymous",
            base,
            f"No id: each browser gets its own {work} (kept in its cookie).",
        ),
    ]
