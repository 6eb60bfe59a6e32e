"""A stored rating experiment read back for its analysis and exports: the instrument it used,
and its judgements as one long table (the edge where the rating analysis meets the database).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from cyoa import store
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.rating import store as rating_store
from cyoa.rating.instruments import Instrument
from cyoa.rating.instruments.definition import instrument_from_dict
from cyoa.rating.quality import (
    Answer,
    ExclusionSummary,
    RaterExclusion,
    RaterQuality,
    StoryShown,
    evaluate_exclusions,
    exclusion_summary,
    quality_spec,
    rater_quality,
    story_words,
)
from cyoa.store import experiment_row

JUDGEMENT_COLUMNS = ("story_id", "source", "rater_id", "item", "value", "rationale", "family")


@dataclass(frozen=True)
class RatingData:
    """A rating experiment as its analysis reads it: ``judgements`` has one row per rater ×
    story × item with the columns of :data:`JUDGEMENT_COLUMNS` (``value`` as stored: Likert
    points before reverse coding, 1.0/0.0 for Yes/No and true/false, NaN for text items;
    ``rationale`` the written reason, or a text item's answer; ``family`` the original a
    corrupted copy was made from, or the story itself)."""

    experiment: str
    spec: dict[str, Any]
    instrument: Instrument
    judgements: pd.DataFrame


def experiment_kind(db: Db, experiment: str) -> str:
    """``cowriting`` or ``rating``; :class:`AnalysisError` naming the known experiments if
    there is no such experiment."""
    return experiment_row(db, experiment).get("kind") or "cowriting"


def load_ratings(db: Db, experiment: str, panel: str = rating_store.HUMAN_PANEL) -> RatingData:
    """The rating experiment ``experiment`` with every stored judgement of one panel's
    raters: the human raters' (default), or a judge's by its name."""
    if experiment_kind(db, experiment) != "rating":
        raise AnalysisError(f"'{experiment}' is not a rating experiment.")
    row = store.get_experiment(db, experiment)
    definition = db.execute(
        "SELECT definition FROM instruments WHERE experiment_id = ?", [experiment]
    ).fetchone()
    if definition is None:
        raise AnalysisError(f"Rating experiment '{experiment}' has no instrument stored.")
    judgements = pd.DataFrame(
        db.execute(
            "SELECT j.story_id, s.source, j.rater_id, j.item_id AS item, j.value,"
            " COALESCE(j.value_text, j.rationale) AS rationale,"
            " COALESCE(s.family, s.story_id) AS family"
            " FROM judgements j JOIN stories s"
            " ON s.experiment_id = j.experiment_id AND s.story_id = j.story_id"
            " JOIN raters r ON r.experiment_id = j.experiment_id AND r.rater_id = j.rater_id"
            " WHERE j.experiment_id = ? AND r.panel = ?"
            " ORDER BY j.story_id, j.rater_id, j.item_id",
            [experiment, panel],
        ).fetchall(),
        columns=list(JUDGEMENT_COLUMNS),
    )
    judgements["value"] = judgements["value"].astype(float)
    return RatingData(
        experiment=experiment,
        spec=json.loads(row["spec"]),
        instrument=instrument_from_dict(json.loads(definition[0])),
        judgements=judgements,
    )


@dataclass(frozen=True)
class RaterReview:
    """Quality control of a rating experiment's raters: what was measured of each
    (:class:`~cyoa.rating.quality.RaterQuality`), the exclusion rules each broke, and how
    many each rule excluded."""

    qualities: tuple[RaterQuality, ...]
    exclusions: tuple[RaterExclusion, ...]
    summary: ExclusionSummary
    check_ids: tuple[str, ...]

    @property
    def excluded(self) -> tuple[str, ...]:
        return tuple(e.rater_id for e in self.exclusions if e.excluded)


def review_raters(db: Db, experiment: str, data: RatingData) -> RaterReview:
    """Every rater's quality under the spec's attention checks and exclusion rules
    (:mod:`cyoa.rating.quality`), from the stored answers, check answers and the times the
    server showed each story. Imported raters (no times, no checks) break no rule."""
    stories = {
        row["story_id"]: row["text"] or ""
        for row in rating_store.rating_rows(db, experiment, "stories")
    }
    spec = quality_spec(data.spec, experiment, data.instrument, set(stories))
    answers: dict[str, list[Answer]] = {}
    for row in db.query(
        "SELECT rater_id, story_id, item_id, value, answered_at FROM judgements j"
        " WHERE experiment_id = ? AND rater_id IN (SELECT rater_id FROM raters r"
        f" WHERE r.experiment_id = j.experiment_id AND panel = '{rating_store.HUMAN_PANEL}')"
        " UNION ALL SELECT rater_id, story_id, check_id, value,"
        " answered_at FROM check_answers WHERE experiment_id = ? ORDER BY answered_at",
        [experiment, experiment],
    ):
        answers.setdefault(row["rater_id"], []).append(
            Answer(row["story_id"], row["item_id"], row["value"], _time(row["answered_at"]))
        )
    shown: dict[str, list[StoryShown]] = {}
    for row in db.query(
        "SELECT rater_id, story_id, shown_at FROM assignments WHERE experiment_id = ?"
        " AND shown_at IS NOT NULL ORDER BY rater_id, position",
        [experiment],
    ):
        words = story_words(stories.get(row["story_id"], ""))
        shown.setdefault(row["rater_id"], []).append(
            StoryShown(row["story_id"], _time(row["shown_at"]), words)
        )
    raters = [
        row["rater_id"]
        for row in rating_store.rating_rows(db, experiment, "raters")
        if row["panel"] == rating_store.HUMAN_PANEL
    ]
    qualities = tuple(
        rater_quality(
            rater, answers.get(rater, []), shown.get(rater, []), data.instrument, spec.checks
        )
        for rater in raters
    )
    exclusions = evaluate_exclusions(spec.exclusions, qualities)
    return RaterReview(
        qualities=qualities,
        exclusions=exclusions,
        summary=exclusion_summary(spec.exclusions, exclusions),
        check_ids=tuple(check.id for check in spec.checks),
    )


def _time(stamp: str | None) -> datetime | None:
    return None if stamp is None else datetime.fromisoformat(stamp.replace("Z", "+00:00"))
