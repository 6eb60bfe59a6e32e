"""What a researcher does to an experiment of any kind: open, pause or close it, and hand out
its participant links; and the largest spec file any kind reads."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from sqlite_utils import Database

from cyoa import store

SPEC_MAX_BYTES = 256 * 1024
STATUS_VERBS = {"open": "opened", "paused": "paused", "closed": "closed"}


class LifecycleError(ValueError):
    """An experiment action that cannot be done; the message says what to do instead."""


def set_status(db: Database, exp_id: str, status: str) -> None:
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
