"""Running a rating study: raters start, are assigned stories, answer, finish; every action
checked by the rules (:mod:`cyoa.rating.flow`) and recorded in one transaction with the
tables written from it, before it is acknowledged.

A rating experiment is read from the database each time it is needed (its spec, stories and
instrument are stored when it is created), so every worker process serves the same study.
"""

from __future__ import annotations

import json
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from cyoa import store
from cyoa.db.facade import Db
from cyoa.db.transactions import write_transaction
from cyoa.languages import SOURCE_LANGUAGE
from cyoa.rating import assignment
from cyoa.rating import store as rating_store
from cyoa.rating.flow import Event, Questions, RaterState, RuleError, apply, check, replay
from cyoa.rating.instruments.definition import instrument_from_dict
from cyoa.rating.quality import QualitySpec, quality_spec
from cyoa.rating.stories import StoryRecord
from cyoa.web.language import sentence
from cyoa.web.participants import NUL_SENTENCE, holds_nul, new_completion_code, new_token

CLIENT_ACTION_ID_MAX = 64
# For experiments stored before first_answer_minutes existed (cyoa.rating.spec.DEFAULTS).
FIRST_ANSWER_MINUTES = 15


class AlreadyStarted(Exception):
    """The participant has a rater already (started by another request)."""


@dataclass(frozen=True)
class RatingExperiment:
    """A stored rating experiment as the rater pages need it."""

    id: str
    title: str
    status: str
    spec: dict[str, Any]
    questions: Questions
    quality: QualitySpec
    stories: dict[str, dict[str, Any]]

    @property
    def shuffle_items(self) -> bool:
        """AISS items come in a random order per rater, as the scale's authors advise."""
        return self.questions.instrument.id == "aiss-v1"


@dataclass(frozen=True)
class Outcome:
    state: RaterState
    event: Event
    duplicate: bool = False


class RatingStudy:
    """The rating studies of one database (``connect`` opens a connection)."""

    def __init__(self, connect: Callable[[], Db]) -> None:
        self.db = connect

    def experiment(self, exp_id: str) -> RatingExperiment | None:
        """The rating experiment ``exp_id``, or None if there is none of that kind."""
        db = self.db()
        try:
            return load_experiment(db, exp_id)
        finally:
            db.close()

    def find_rater_row(self, exp_id: str, external_id: str) -> dict[str, Any] | None:
        """The rater row of the participant with this platform id, if they started."""
        db = self.db()
        try:
            return rating_store.find_rater(db, exp_id, external_id)
        finally:
            db.close()

    def rater_row(self, exp_id: str, rater_id: str) -> dict[str, Any] | None:
        db = self.db()
        try:
            return rating_store.get_rater(db, exp_id, rater_id)
        finally:
            db.close()

    def open_rater(
        self,
        exp: RatingExperiment,
        participant: dict[str, str],
        user_agent: str = "",
        language: str = SOURCE_LANGUAGE,
    ) -> str | None:
        """A new rater with their stories, who started in ``language`` (the page's, BCP 47:
        the exports say in which language they read the instrument's items); None when
        every story has its raters. Raises :class:`AlreadyStarted` when this participant has
        started already (another request may have started them a moment before: the start
        form never hands over a rater)."""
        db = self.db()
        try:
            with write_transaction(db, lock=("experiment", exp.id)):
                if rating_store.find_rater(db, exp.id, participant["external_id"]) is not None:
                    raise AlreadyStarted
                rater_id = new_token()
                chosen = assign(
                    db, exp, rater_id, datetime.now(UTC), random.Random(secrets.randbits(64))
                )
                if not chosen:
                    return None
                rng = random.Random(secrets.randbits(64))
                first = {
                    "stories": [
                        {"story": story, "questions": question_order(exp, story, rng)}
                        for story in chosen
                    ],
                    "language": language,
                }
                rating_store.create_rater(
                    db, exp.id, rater_id, participant, new_completion_code(), user_agent, first
                )
                return rater_id
        finally:
            db.close()

    def state(self, exp_id: str, rater_id: str) -> RaterState:
        db = self.db()
        try:
            return _replay(db, exp_id, rater_id)
        finally:
            db.close()

    def seen(self, exp_id: str, rater_id: str) -> bool:
        """Record that the rater's page is open and they have not finished (their places are
        kept while they read: :func:`cyoa.rating.assignment.holds_place` counts silence from
        ``raters.updated_at``); False when they finished or are unknown."""
        db = self.db()
        try:
            with write_transaction(db, lock=("rater", exp_id, rater_id)):
                return rating_store.mark_rater_seen(db, exp_id, rater_id)
        finally:
            db.close()

    def act(
        self,
        exp: RatingExperiment,
        rater_id: str,
        event_type: str,
        payload: Any,
        client_action_id: str | None = None,
    ) -> Outcome:
        """Check and record one of a rater's actions; :class:`RuleError` when it is not
        allowed. A resent action (same ``client_action_id``) is recorded once."""
        if client_action_id is not None and (
            not isinstance(client_action_id, str) or len(client_action_id) > CLIENT_ACTION_ID_MAX
        ):
            raise RuleError(sentence("The request was malformed. Please reload the page."))
        if not isinstance(event_type, str) or event_type in ("rater_started",):
            raise RuleError(sentence("The request was malformed. Please reload the page."))
        if holds_nul([client_action_id, payload]):
            raise RuleError(NUL_SENTENCE)
        db = self.db()
        try:
            with write_transaction(db, lock=("rater", exp.id, rater_id)):
                if rating_store.get_rater(db, exp.id, rater_id) is None:
                    raise RuleError(sentence("Please use your study link again to start."))
                if client_action_id:
                    previous = rating_store.find_rating_action(
                        db, exp.id, rater_id, client_action_id
                    )
                    if previous is not None:
                        state = _replay(db, exp.id, rater_id)
                        event = Event(previous["type"], previous["payload"])
                        return Outcome(state, event, duplicate=True)
                events = rating_store.load_rating_events(db, exp.id, rater_id)
                state = replay([Event(e["type"], e["payload"]) for e in events])
                if event_type == "story_shown" and state.current and state.current.shown:
                    return Outcome(state, Event(event_type, payload), duplicate=True)
                event = check(state, exp.questions, event_type, payload)
                new_state = apply(state, event)
                check_result = None
                if event.type == "answer_given":
                    check_result = attention_check(exp, event.payload)
                rating_store.record_rating_event(
                    db,
                    exp.id,
                    rater_id,
                    len(events) + 1,
                    event.type,
                    event.payload,
                    phase=new_state.phase.value,
                    client_action_id=client_action_id or None,
                    check=check_result,
                )
            return Outcome(new_state, event)
        finally:
            db.close()


def _replay(db: Db, exp_id: str, rater_id: str) -> RaterState:
    events = rating_store.load_rating_events(db, exp_id, rater_id)
    return replay([Event(e["type"], e["payload"]) for e in events])


def load_experiment(db: Db, exp_id: str) -> RatingExperiment | None:
    """The rating experiment ``exp_id`` from the database (None if it is not one)."""
    row = store.get_experiment(db, exp_id)
    if row is None or row.get("kind") != "rating":
        return None
    definition = db.execute(
        "SELECT definition FROM instruments WHERE experiment_id = ?", [exp_id]
    ).fetchone()
    spec = json.loads(row["spec"])
    instrument = instrument_from_dict(json.loads(definition[0]))
    stories = {
        story["story_id"]: story for story in rating_store.rating_rows(db, exp_id, "stories")
    }
    quality = quality_spec(spec, exp_id, instrument, set(stories))
    return RatingExperiment(
        id=exp_id,
        title=row["title"],
        status=row["status"],
        spec=spec,
        questions=Questions(instrument, tuple(check.item for check in quality.checks)),
        quality=quality,
        stories=stories,
    )


def question_order(exp: RatingExperiment, story_id: str, rng: random.Random) -> list[str]:
    """The ids of the questions about ``story_id``, in the order this rater sees them: the
    instrument's items for every story and this story's own (FEI), shuffled for the AISS,
    with the story's attention checks placed among them."""
    instrument = exp.questions.instrument
    items = [item.id for item in instrument.items if item.story_id in (None, story_id)]
    if exp.shuffle_items:
        rng.shuffle(items)
    for check_ in exp.quality.checks_for(story_id):
        items.insert(rng.randint(1, max(1, len(items) - 1)), check_.id)
    return items


def attention_check(exp: RatingExperiment, payload: dict[str, Any]) -> dict[str, Any] | None:
    """For an answer to an attention check: whether it was the right one (None for an
    answer to the instrument)."""
    for check_ in exp.quality.checks:
        if check_.id == payload["item"]:
            return {"correct": check_.passes(payload["value"])}
    return None


def assign(
    db: Db, exp: RatingExperiment, rater_id: str, now: datetime, rng: random.Random
) -> list[str]:
    """The stories for a new rater (:func:`cyoa.rating.assignment.choose_stories`), given
    every assignment so far: a story a rater finished holds its place; one not finished
    holds it while its rater has acted within ``dropout_minutes``, or, until the rater's first
    answer, within ``first_answer_minutes`` (so starts that never answer do not fill the
    study for long)."""
    stories = [
        StoryRecord(
            story_id=row["story_id"],
            source=row["source"],
            title=row["title"] or "",
            text=row["text"] or "",
            family=row["family"],
        )
        for row in rating_store.rating_rows(db, exp.id, "stories")
    ]
    held = [
        assignment.Assignment(
            rater_id=row["rater_id"],
            story_id=row["story_id"],
            state=assignment.DONE if row["finished_at"] else assignment.ACTIVE,
            assigned_at=_time(row["assigned_at"]),
            last_seen_at=_time(row["updated_at"]),
            answered=bool(row["answered"]),
        )
        for row in db.query(
            "SELECT a.rater_id, a.story_id, a.finished_at, a.assigned_at, r.updated_at,"
            " EXISTS (SELECT 1 FROM rating_events e WHERE e.experiment_id = a.experiment_id"
            " AND e.rater_id = a.rater_id AND e.type = 'answer_given') AS answered"
            " FROM assignments a JOIN raters r"
            " ON r.experiment_id = a.experiment_id AND r.rater_id = a.rater_id"
            " WHERE a.experiment_id = ?",
            [exp.id],
        )
    ]
    choice = assignment.choose_stories(
        rater_id,
        stories,
        held,
        raters_per_story=int(exp.spec.get("raters_per_story", 3)),
        stories_per_rater=int(exp.spec.get("stories_per_rater", 1)),
        timeout=timedelta(minutes=float(exp.spec.get("dropout_minutes", 60))),
        first_answer_timeout=timedelta(
            minutes=float(exp.spec.get("first_answer_minutes", FIRST_ANSWER_MINUTES))
        ),
        now=now,
        rng=rng,
    )
    return list(choice.story_ids)


def _time(stamp: str) -> datetime:
    """A stored server time (ISO 8601 UTC, ``…Z``) as an aware datetime."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
