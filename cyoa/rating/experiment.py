"""A rating experiment stored from imported judgements: its spec, instrument, stories,
raters and judgements, written in one transaction
(:func:`cyoa.rating.store.create_rating_experiment`).

A rating experiment is an experiment of kind ``rating``, listed with the co-writing ones. Its
spec names the instrument, the stories and the raters per story; the instrument itself is
stored whole (``instruments.definition``), so its answers are always read with the items,
keying and labels the raters saw.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cyoa import store
from cyoa.db.facade import Db
from cyoa.generation.types import ModelCard
from cyoa.rating import store as rating_store
from cyoa.rating.importing import Judgement, RatingImportError, Story
from cyoa.rating.instruments import Instrument
from cyoa.rating.instruments.definition import instrument_to_dict
from cyoa.rating.spec import ID, RESERVED_IDS, RatingSpec, RatingSpecError, parse_rating_spec
from cyoa.rating.stories import StoryRecord
from cyoa.words import counted


@dataclass(frozen=True)
class ImportSummary:
    """What an import stored. ``without_text``: the ids of the judged stories stored with
    neither text nor link (empty in the stories file, or not in it), in the judgements'
    order; ``links``: how many are stored as a link only."""

    experiment: str
    stories: int
    raters: int
    judgements: int
    sources: tuple[str, ...]
    without_text: tuple[str, ...]
    links: int


def import_rating_experiment(
    db: Db,
    name: str,
    instrument: Instrument,
    judgements: list[Judgement],
    stories: list[Story] | None = None,
    origin: dict[str, Any] | None = None,
) -> ImportSummary:
    """Store ``judgements`` of ``instrument`` as the new, closed rating experiment ``name``.

    ``stories`` give titles and texts (a story judged but not given, or given without text,
    keeps an empty text, named in the summary: its judgements are data all the same; given
    but not judged, it is left out). ``origin`` (e.g. the format and file names) is
    kept in the spec and in each story's ``origin``. Raises :class:`RatingImportError` for a
    bad name, a taken one, or a story whose file gives another source than its judgements.
    """
    if not ID.fullmatch(name) or name in RESERVED_IDS:
        raise RatingImportError(
            f"'{name}' cannot name an experiment: use lowercase letters, digits, - and _ "
            "(at most 64, starting with a letter or digit), and not 'new'."
        )
    origin = origin or {}
    judged = _judged_sources(judgements, stories or [])
    story_rows = _story_rows(judged, stories or [], origin)
    raters = sorted({judgement.rater_id for judgement in judgements})
    per_story = Counter((judgement.story_id, judgement.rater_id) for judgement in judgements)
    raters_per_story = Counter(story for story, _ in per_story)
    spec = {
        "id": name,
        "title": name,
        "kind": "rating",
        "instrument": instrument.id,
        "stories": len(story_rows),
        "raters_per_story": max(raters_per_story.values()),
        "import": origin,
    }
    try:
        rating_store.create_rating_experiment(
            db,
            name,
            name,
            spec,
            instrument=instrument_row(instrument),
            items=item_rows(instrument),
            stories=story_rows,
            raters=[{"rater_id": rater, "id_source": "import"} for rater in raters],
            judgements=_judgement_rows(judgements, store.now()),
        )
    except ValueError as error:
        raise RatingImportError(f"{error} Choose another --name.") from None
    return ImportSummary(
        experiment=name,
        stories=len(story_rows),
        raters=len(raters),
        judgements=len(judgements),
        sources=tuple(sorted(set(judged.values()))),
        without_text=tuple(r["story_id"] for r in story_rows if not r["text"] and not r["url"]),
        links=sum(1 for row in story_rows if not row["text"] and row["url"]),
    )


def _judged_sources(judgements: list[Judgement], stories: list[Story]) -> dict[str, str]:
    """Each judged story's source, in the order the judgements first name them; raises
    :class:`RatingImportError` when the stories file gives a story another source."""
    given = {story.story_id: story for story in stories}
    judged: dict[str, str] = {}
    for judgement in judgements:
        judged.setdefault(judgement.story_id, judgement.source)
    for story_id, source in judged.items():
        story = given.get(story_id)
        if story is not None and story.source != source:
            raise RatingImportError(
                f"Story {story_id!r} has source {source!r} in the judgements but "
                f"{story.source!r} in the stories file; make them agree."
            )
    return judged


def _story_rows(
    judged: dict[str, str], stories: list[Story], origin: dict[str, Any]
) -> list[dict[str, Any]]:
    """The ``stories`` rows of the judged stories, with the title, text and address the
    stories file gives (empty when it gives none)."""
    given = {story.story_id: story for story in stories}
    return [
        {
            "story_id": story_id,
            "source": source,
            "title": given[story_id].title if story_id in given else "",
            "text": given[story_id].text if story_id in given else "",
            "url": given[story_id].url if story_id in given else "",
            "origin": json.dumps(origin, sort_keys=True),
        }
        for story_id, source in judged.items()
    ]


def _judgement_rows(judgements: list[Judgement], recorded: str) -> list[dict[str, Any]]:
    """The ``judgements`` rows of the imported judgements, recorded at ``recorded``."""
    return [
        {
            "story_id": judgement.story_id,
            "rater_id": judgement.rater_id,
            "item_id": judgement.item_id,
            "value": judgement.value,
            "value_text": judgement.text,
            "rationale": judgement.rationale,
            "recorded_at": recorded,
        }
        for judgement in judgements
    ]


def instrument_row(instrument: Instrument) -> dict[str, Any]:
    """The ``instruments`` row of ``instrument`` (its whole definition as JSON)."""
    return {
        "instrument_id": instrument.id,
        "name": instrument.name,
        "version": instrument.version,
        "reference": instrument.reference,
        "attribution": instrument.attribution,
        "instructions": instrument.instructions,
        "definition": json.dumps(instrument_to_dict(instrument), ensure_ascii=False),
    }


def item_rows(instrument: Instrument) -> list[dict[str, Any]]:
    """The ``instrument_items`` rows of ``instrument``, in its order."""
    return [
        {
            "item_id": item.id,
            "position": position,
            "kind": item.kind,
            "text": item.text,
            "points": item.points,
            "low": item.low if item.kind == "likert" else None,
            "labels": json.dumps(list(item.labels), ensure_ascii=False) if item.labels else None,
            "reverse": int(item.reverse),
            "factor": item.factor,
            "category": item.category or None,
            "context": item.context or None,
            "rationale": int(item.rationale),
            "fei_kind": item.fei_kind,
            "story_id": item.story_id,
        }
        for position, item in enumerate(instrument.items, start=1)
    ]


def rating_summaries(db: Db) -> list[dict[str, Any]]:
    """Every rating experiment with its instrument and how much it holds: ``id``, ``title``,
    ``status``, ``instrument`` (name), ``stories``, ``raters``, ``judgements`` and
    ``sources`` (sorted)."""
    rows = db.query(
        "SELECT e.id, e.title, e.status, i.name AS instrument,"
        " (SELECT count(*) FROM stories s WHERE s.experiment_id = e.id) AS stories,"
        " (SELECT count(*) FROM raters r WHERE r.experiment_id = e.id) AS raters,"
        " (SELECT count(*) FROM judgements j WHERE j.experiment_id = e.id) AS judgements"
        " FROM experiments e LEFT JOIN instruments i ON i.experiment_id = e.id"
        " WHERE e.kind = 'rating' ORDER BY e.id"
    )
    sources: dict[str, list[str]] = {}
    for row in db.query("SELECT DISTINCT experiment_id, source FROM stories"):
        sources.setdefault(row["experiment_id"], []).append(row["source"])
    return [{**row, "sources": sorted(sources.get(row["id"], []))} for row in rows]


def _stored_spec(spec: RatingSpec) -> dict[str, Any]:
    """The spec as stored: the researcher's fields, the instrument by id, the defaults
    filled in."""
    return {
        **{key: value for key, value in spec.source.items() if key != "instrument"},
        "instrument": spec.instrument.id,
        "raters_per_story": spec.raters_per_story,
        "stories_per_rater": spec.stories_per_rater,
        "dropout_minutes": spec.dropout_minutes,
        "first_answer_minutes": spec.first_answer_minutes,
        "language": spec.language,
        "languages": list(spec.languages),
    }


def story_row(story: StoryRecord) -> dict[str, Any]:
    """A story as a row of the ``stories`` table."""
    return {
        "story_id": story.story_id,
        "source": story.source,
        "title": story.title,
        "text": story.text,
        "url": story.url,
        "origin": json.dumps(story.origin, ensure_ascii=False, sort_keys=True),
        "family": story.family,
    }


def create_from_spec(db: Db, spec: RatingSpec) -> None:
    """Store a checked rating spec as a new, paused rating experiment with its stories and
    instrument, ready for raters once opened. Raises :class:`RatingSpecError` if the id is
    taken."""
    try:
        rating_store.create_rating_experiment(
            db,
            spec.id,
            spec.title,
            _stored_spec(spec),
            instrument=instrument_row(spec.instrument),
            items=item_rows(spec.instrument),
            stories=[story_row(story) for story in spec.stories],
            raters=[],
            judgements=[],
            status="paused",
        )
    except ValueError as error:
        raise RatingSpecError(f"{error} Choose another id.") from None


def replace_from_spec(db: Db, spec: RatingSpec) -> None:
    """Store a checked rating spec in place of the experiment with its id (an edit), in one
    transaction. Raises :class:`RatingSpecError` when it cannot be edited (a rater has
    started, or it is open)."""
    try:
        rating_store.replace_rating_experiment(
            db,
            spec.id,
            spec.title,
            _stored_spec(spec),
            instrument=instrument_row(spec.instrument),
            items=item_rows(spec.instrument),
            stories=[story_row(story) for story in spec.stories],
        )
    except ValueError as error:
        raise RatingSpecError(str(error)) from None


def create_from_file(db: Db, raw: dict[str, Any], path: Path, cards: dict[str, ModelCard]) -> str:
    """Store the rating spec read from ``path`` as a new, paused experiment (``experiment
    create``; stories and files relative to the spec's folder); the sentence that says what
    to do next. :class:`~cyoa.rating.spec.RatingSpecError` if the spec is wrong. A rating
    study needs no model card (``cards`` is the co-writing kind's)."""
    spec = parse_rating_spec(raw, str(path), path.resolve().parent, db)
    create_from_spec(db, spec)
    stories = counted(len(spec.stories), "story")
    return (
        f"Rating experiment '{spec.id}' created, paused, with {stories}. "
        f"Open it (python -m cyoa experiment open {spec.id}); raters start at /r/{spec.id}."
    )
