"""The rating study's rows: rating experiments, raters, their events and the tables written
from them.

The append-only ``rating_events`` table is the source of truth for what raters did; the
``raters``, ``assignments``, ``judgements`` and ``check_answers`` rows are written from each
event in the same transaction (:func:`record_rating_event`). The connection, transactions,
schema and the ``experiments`` rows are :mod:`cyoa.store`'s; every table and column is
described in docs/data-dictionary.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cyoa.db.facade import Db
from cyoa.rating.instruments.definition import instrument_from_dict
from cyoa.rating.instruments.translation import translation_problem
from cyoa.rating.instruments.types import Instrument
from cyoa.store import get_experiment, insert_experiment, now, story_alias, write_transaction
from cyoa.words import counted

# The panel of the study's own raters (and of an imported panel of people); a judge model's
# verdicts are a panel named after the judge (``raters.panel``).
HUMAN_PANEL = "human"

# --- rating experiments ------------------------------------------------------------------


def create_rating_experiment(
    db: Db,
    exp_id: str,
    title: str,
    spec: dict[str, Any],
    *,
    instrument: dict[str, Any],
    items: list[dict[str, Any]],
    stories: list[dict[str, Any]],
    raters: list[dict[str, Any]],
    judgements: list[dict[str, Any]],
    status: str = "closed",
) -> None:
    """Store a rating experiment whole, in one transaction: its row (kind ``rating``), the
    instrument it uses and its items, its stories, raters and judgements (rows as in
    docs/data-dictionary.md). Raises ValueError if the id is taken; nothing is stored then,
    nor when any row is refused."""
    stamp = now()
    with write_transaction(db):
        insert_experiment(db, exp_id, title, spec, status, "rating")
        _insert_rating_design(db, exp_id, instrument, items, stories, stamp)
        db.insert_all(
            "raters",
            [{"experiment_id": exp_id, "created_at": stamp, **row} for row in raters],
        )
        db.insert_all("judgements", [{"experiment_id": exp_id, **row} for row in judgements])


def _insert_rating_design(
    db: Db,
    exp_id: str,
    instrument: dict[str, Any],
    items: list[dict[str, Any]],
    stories: list[dict[str, Any]],
    stamp: str,
) -> None:
    """The instrument, its items and the stories of a rating experiment (inside the
    caller's transaction); each story's ``position`` is its place in ``stories``."""
    db.insert("instruments", {**instrument, "experiment_id": exp_id})
    db.insert_all("instrument_items", [{"experiment_id": exp_id, **item} for item in items])
    db.insert_all(
        "stories",
        [
            {
                "experiment_id": exp_id,
                "created_at": stamp,
                **story,
                "alias": story_alias(),
                "position": position,
            }
            for position, story in enumerate(stories, start=1)
        ],
    )


# --- raters and their events -------------------------------------------------------------


def rating_rows(db: Db, exp_id: str, table: str) -> list[dict[str, Any]]:
    """Every row of one of a rating experiment's tables (``stories``, ``raters``,
    ``assignments``, ``instrument_items``), in key order."""
    if table not in ("stories", "raters", "assignments", "instrument_items"):
        raise ValueError(f"{table} is not a rating experiment's table.")
    keys = {
        "stories": "story_id",
        "raters": "rater_id",
        "assignments": "rater_id, position",
        "instrument_items": "position",
    }
    return list(
        db.query(f"SELECT * FROM {table} WHERE experiment_id = ? ORDER BY {keys[table]}", [exp_id])
    )


def create_rater(
    db: Db,
    exp_id: str,
    rater_id: str,
    participant: dict[str, str],
    completion_code: str,
    user_agent: str,
    first_event: dict[str, Any],
) -> None:
    """A new rater and their first event (``rater_started``, with their stories): call inside
    :func:`write_transaction`."""
    stamp = now()
    db.insert(
        "raters",
        {
            "experiment_id": exp_id,
            "rater_id": rater_id,
            "external_id": participant["external_id"],
            "id_source": participant["id_source"],
            "study_id": participant.get("study_id") or None,
            "platform_session_id": participant.get("platform_session_id") or None,
            "created_at": stamp,
            "completion_code": completion_code,
            "user_agent": user_agent[:300],
            "phase": "rating",
            "started_at": stamp,
            "updated_at": stamp,
        },
    )
    record_rating_event(db, exp_id, rater_id, 1, "rater_started", first_event, phase="rating")


def find_rater(db: Db, exp_id: str, external_id: str) -> dict[str, Any] | None:
    """The rater of ``exp_id`` with this platform id, if any."""
    rows = list(
        db.query(
            "SELECT * FROM raters WHERE experiment_id = ? AND external_id = ?",
            [exp_id, external_id],
        )
    )
    return rows[0] if rows else None


def get_rater(db: Db, exp_id: str, rater_id: str) -> dict[str, Any] | None:
    rows = list(
        db.query(
            "SELECT * FROM raters WHERE experiment_id = ? AND rater_id = ?", [exp_id, rater_id]
        )
    )
    return rows[0] if rows else None


def mark_rater_seen(db: Db, exp_id: str, rater_id: str) -> bool:
    """Set an unfinished rater's ``updated_at`` to now, as their page says they are still
    reading (no event is recorded); False when there is no such rater or they finished."""
    cursor = db.execute(
        "UPDATE raters SET updated_at = ? WHERE experiment_id = ? AND rater_id = ?"
        " AND phase != 'done'",
        [now(), exp_id, rater_id],
    )
    return cursor.rowcount > 0


def load_rating_events(db: Db, exp_id: str, rater_id: str) -> list[dict[str, Any]]:
    """A rater's events in order, payloads decoded."""
    rows = db.query(
        "SELECT * FROM rating_events WHERE experiment_id = ? AND rater_id = ? ORDER BY seq",
        [exp_id, rater_id],
    )
    return [{**row, "payload": json.loads(row["payload"])} for row in rows]


def find_rating_action(
    db: Db, exp_id: str, rater_id: str, client_action_id: str
) -> dict[str, Any] | None:
    """The event a rater's action (by its id) recorded, if it was recorded."""
    rows = list(
        db.query(
            "SELECT * FROM rating_events WHERE experiment_id = ? AND rater_id = ?"
            " AND client_action_id = ?",
            [exp_id, rater_id, client_action_id],
        )
    )
    return {**rows[0], "payload": json.loads(rows[0]["payload"])} if rows else None


@dataclass(frozen=True)
class RatingRecorded:
    """One of a rater's events as it is being recorded: what the tables written from it
    need. ``check`` (for an answer to an attention check) carries whether it was right."""

    exp_id: str
    rater_id: str
    payload: dict[str, Any]
    stamp: str
    check: dict[str, Any] | None

    @property
    def key(self) -> dict[str, str]:
        """The rater's key columns, as the tables written from their events have them."""
        return {"experiment_id": self.exp_id, "rater_id": self.rater_id}


def record_rating_event(
    db: Db,
    exp_id: str,
    rater_id: str,
    seq: int,
    event_type: str,
    payload: dict[str, Any],
    *,
    phase: str,
    client_action_id: str | None = None,
    check: dict[str, Any] | None = None,
) -> str:
    """Append one of a rater's events and update the tables written from it (``raters``, and
    by its type in :data:`TABLE_WRITES` ``assignments``, ``judgements``, ``check_answers``)
    in the same transaction: call inside :func:`write_transaction`. ``check`` (for an answer
    to an attention check) carries whether it was right. Returns the server time."""
    stamp = now()
    db.insert(
        "rating_events",
        {
            "experiment_id": exp_id,
            "rater_id": rater_id,
            "seq": seq,
            "type": event_type,
            "payload": json.dumps(payload, ensure_ascii=False, sort_keys=True),
            "created_at": stamp,
            "client_action_id": client_action_id,
        },
    )
    write = TABLE_WRITES.get(event_type)
    if write is not None:
        write(db, RatingRecorded(exp_id, rater_id, payload, stamp, check))
    updates = {"phase": phase, "updated_at": stamp}
    if phase == "done":
        updates["finished_at"] = stamp
    db.update("raters", (exp_id, rater_id), updates)
    return stamp


def _rater_started(db: Db, event: RatingRecorded) -> None:
    """An ``assignments`` row for each of the rater's stories, in the order given."""
    for position, story in enumerate(event.payload["stories"], start=1):
        db.insert(
            "assignments",
            {
                **event.key,
                "story_id": story["story"],
                "position": position,
                "assigned_at": event.stamp,
            },
        )


def _story_shown(db: Db, event: RatingRecorded) -> None:
    """The story's assignment records when it was first shown."""
    db.execute(
        "UPDATE assignments SET shown_at = ? WHERE experiment_id = ? AND rater_id = ?"
        " AND story_id = ? AND shown_at IS NULL",
        [event.stamp, event.exp_id, event.rater_id, event.payload["story"]],
    )


def _answer_given(db: Db, event: RatingRecorded) -> None:
    """An answer to an attention check goes to ``check_answers``, any other to
    ``judgements``."""
    if event.check is not None:
        _check_answer(db, event, event.check)
    else:
        _judgement(db, event)


def _check_answer(db: Db, event: RatingRecorded, check: dict[str, Any]) -> None:
    """The rater's (latest) answer to an attention check, and whether it was right."""
    value = event.payload["value"]
    db.upsert(
        "check_answers",
        {
            **event.key,
            "story_id": event.payload["story"],
            "check_id": event.payload["item"],
            "value": value if isinstance(value, float) else None,
            "correct": int(check["correct"]),
            "answered_at": event.stamp,
        },
        pk=("experiment_id", "rater_id", "story_id", "check_id"),
    )


def _judgement(db: Db, event: RatingRecorded) -> None:
    """The rater's (latest) answer to an item, with when its story was shown."""
    payload = event.payload
    shown = db.execute(
        "SELECT shown_at FROM assignments WHERE experiment_id = ? AND rater_id = ?"
        " AND story_id = ?",
        [event.exp_id, event.rater_id, payload["story"]],
    ).fetchone()
    value = payload["value"]
    db.upsert(
        "judgements",
        {
            **event.key,
            "story_id": payload["story"],
            "item_id": payload["item"],
            "value": None if isinstance(value, str) else value,
            "value_text": value if isinstance(value, str) else None,
            "rationale": payload.get("rationale"),
            "shown_at": shown[0] if shown else None,
            "answered_at": event.stamp,
            "recorded_at": event.stamp,
        },
        pk=("experiment_id", "rater_id", "story_id", "item_id"),
    )


def _story_finished(db: Db, event: RatingRecorded) -> None:
    """The story's assignment records when the rater finished it."""
    db.execute(
        "UPDATE assignments SET finished_at = ? WHERE experiment_id = ? AND rater_id = ?"
        " AND story_id = ?",
        [event.stamp, event.exp_id, event.rater_id, event.payload["story"]],
    )


# What each event type writes besides its ``rating_events`` row and the ``raters`` summary.
TABLE_WRITES: dict[str, Callable[[Db, RatingRecorded], None]] = {
    "rater_started": _rater_started,
    "story_shown": _story_shown,
    "answer_given": _answer_given,
    "story_finished": _story_finished,
}


# --- rating experiments copied and changed by researchers --------------------------------

# What a copy of a rating experiment takes along; raters, their events and answers stay, and
# so do the evaluation-card details (as for a copy of a co-writing experiment).
_RATING_COPIED = ("instruments", "instrument_items", "stories")


def cowriting_story_counts(db: Db) -> list[dict[str, Any]]:
    """Every co-writing experiment, by id, with how many of its sessions finished (each gives
    one story to rate): ``id``, ``title``, ``finished``."""
    return list(
        db.query(
            "SELECT e.id, e.title, (SELECT count(*) FROM sessions s WHERE s.experiment_id = e.id"
            " AND s.phase = 'done') AS finished FROM experiments e WHERE e.kind = 'cowriting'"
            " ORDER BY e.id"
        )
    )


def _rating_row(db: Db, exp_id: str) -> dict[str, Any]:
    row = get_experiment(db, exp_id)
    if row is None or row["kind"] != "rating":
        raise ValueError(f"There is no rating experiment '{exp_id}'.")
    return row


def clone_rating_experiment(db: Db, exp_id: str, new_id: str) -> None:
    """Store a copy of the rating experiment ``exp_id`` as ``new_id``, paused, in one
    transaction: its title and spec (with the new id), instrument and items, and stories
    (created now); not its raters, their events or answers, nor an imported experiment's
    ``import`` details (the copy is a study to run). Raises ValueError when ``exp_id`` is no
    rating experiment or ``new_id`` is taken."""
    stamp = now()
    with write_transaction(db):
        row = _rating_row(db, exp_id)
        stored = json.loads(row["spec"])
        spec = {**{k: v for k, v in stored.items() if k != "import"}, "id": new_id}
        insert_experiment(db, new_id, row["title"], spec, "paused", "rating")
        for table in _RATING_COPIED:
            rows = list(db.query(f"SELECT * FROM {table} WHERE experiment_id = ?", [exp_id]))
            db.insert_all(
                table,
                [{**copied, "experiment_id": new_id, **_fresh(table, stamp)} for copied in rows],
            )


def _fresh(table: str, stamp: str) -> dict[str, Any]:
    """What a copied row of ``table`` gets anew: a story is created now, with its own alias
    (a rater of both studies cannot link them)."""
    return {"created_at": stamp, "alias": story_alias()} if table == "stories" else {}


def unreadable_stories(db: Db, exp_id: str) -> list[str]:
    """The ids of the rating experiment's stories with neither text nor link, in their
    order: a rater could not read them (an imported story whose text was not released, kept
    by a clone of the import)."""
    rows = db.query(
        "SELECT story_id FROM stories WHERE experiment_id = ?"
        " AND coalesce(text, '') = '' AND coalesce(url, '') = ''"
        " ORDER BY position, story_id",
        [exp_id],
    )
    return [row["story_id"] for row in rows]


def rating_open_refusal(db: Db, exp_id: str) -> str:
    """Why the rating experiment ``exp_id`` cannot be opened to raters, as a sentence, or ""
    if it can: it holds imported judgements (no raters' pages), a story has neither text nor
    link (a rater could not read it), it has no consent or instructions for its raters, or
    its instrument lacks an item, label or instruction in one of its languages. The page's
    Open and ``experiment open`` both ask it. ValueError when it is no rating experiment."""
    spec = json.loads(_rating_row(db, exp_id)["spec"])
    if "import" in spec:
        return (
            f"'{exp_id}' holds imported judgements and has no raters' pages to open; clone "
            "it, then give the copy its consent and instructions with Edit."
        )
    unreadable = unreadable_stories(db, exp_id)
    if unreadable:
        shown = ", ".join(unreadable[:20]) + (", …" if len(unreadable) > 20 else "")
        return (
            f"'{exp_id}' has {counted(len(unreadable), 'story')} with neither text nor a link, "
            f"which its raters could not read: {shown}. Edit it and choose stories that have "
            "their texts, then open it."
        )
    blank = [f for f in ("consent", "instructions") if not str(spec.get(f, "")).strip()]
    if blank:
        return (
            f"'{exp_id}' has no {' and no '.join(blank)} for its raters: fill "
            f"{'them' if len(blank) > 1 else 'it'} in with Edit, then open it."
        )
    untranslated = translation_problem(stored_instrument(db, exp_id), study_languages(spec))
    if untranslated:
        return f"'{exp_id}' cannot be opened: {untranslated}"
    return ""


def study_languages(spec: dict[str, Any]) -> tuple[str, ...]:
    """The languages a stored rating spec's pages are shown in: its ``language`` ("en" when
    it names none) first, then the others of ``languages``."""
    language = spec.get("language", "en")
    others = [code for code in spec.get("languages", ()) if code != language]
    return (language, *others)


def rater_languages(db: Db, exp_id: str) -> dict[str, str]:
    """Rater id → the language (BCP 47) their pages started in, for the raters of
    ``exp_id`` whose first event records it (raters from before it did, judges and imported
    raters have none)."""
    languages = {}
    for rater_id, payload in db.execute(
        "SELECT rater_id, payload FROM rating_events WHERE experiment_id = ? AND seq = 1"
        " AND type = 'rater_started'",
        [exp_id],
    ).fetchall():
        language = json.loads(payload).get("language")
        if isinstance(language, str):
            languages[rater_id] = language
    return languages


def stored_instrument(db: Db, exp_id: str) -> Instrument:
    """The instrument stored with the rating experiment ``exp_id``, translations included."""
    definition = db.execute(
        "SELECT definition FROM instruments WHERE experiment_id = ?", [exp_id]
    ).fetchone()
    return instrument_from_dict(json.loads(definition[0]))


def rating_edit_refusal(db: Db, exp_id: str) -> str:
    """Why the rating experiment ``exp_id`` cannot be edited now, as a sentence, or "" if it
    can: a rater has started (what a rater was given stays as it was), or it is open (no
    rater may start while it changes). ValueError when it is no rating experiment."""
    row = _rating_row(db, exp_id)
    started = db.execute("SELECT count(*) FROM raters WHERE experiment_id = ?", [exp_id])
    if started.fetchone()[0]:
        return (
            f"Raters have started '{exp_id}', so it can no longer be edited; clone it and edit "
            "the copy."
        )
    if row["status"] == "open":
        return (
            f"'{exp_id}' is open: pause it before editing, so that no rater starts while it "
            "changes."
        )
    return ""


def replace_rating_experiment(
    db: Db,
    exp_id: str,
    title: str,
    spec: dict[str, Any],
    *,
    instrument: dict[str, Any],
    items: list[dict[str, Any]],
    stories: list[dict[str, Any]],
) -> None:
    """Replace the rating experiment ``exp_id``'s title, spec, instrument, items and stories
    (rows as :func:`create_rating_experiment` takes them) in one transaction. Raises
    ValueError when it is no rating experiment or cannot be edited
    (:func:`rating_edit_refusal`)."""
    stamp = now()
    with write_transaction(db):
        refusal = rating_edit_refusal(db, exp_id)
        if refusal:
            raise ValueError(refusal)
        db.execute(
            "UPDATE experiments SET title = ?, spec = ?, updated_at = ? WHERE id = ?",
            [title, json.dumps(spec, sort_keys=True), stamp, exp_id],
        )
        for table in ("instrument_items", "instruments", "stories"):
            db.execute(f"DELETE FROM {table} WHERE experiment_id = ?", [exp_id])
        _insert_rating_design(db, exp_id, instrument, items, stories, stamp)
