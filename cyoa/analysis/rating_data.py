"""A stored rating experiment read back for its analysis and exports: the instrument it used,
and its judgements as one long table (the edge where the rating analysis meets the database).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlite_utils import Database

from cyoa import store
from cyoa.analysis.data import AnalysisError
from cyoa.instruments import Instrument
from cyoa.instruments.definition import instrument_from_dict

JUDGEMENT_COLUMNS = ("story_id", "source", "rater_id", "item", "value", "rationale")


@dataclass(frozen=True)
class RatingData:
    """A rating experiment as its analysis reads it: ``judgements`` has one row per rater ×
    story × item with the columns of :data:`JUDGEMENT_COLUMNS` (``value`` as stored: Likert
    points before reverse coding, 1.0/0.0 for Yes/No and true/false, NaN for text items;
    ``rationale`` the written reason, or a text item's answer)."""

    experiment: str
    spec: dict[str, Any]
    instrument: Instrument
    judgements: pd.DataFrame


def experiment_kind(db: Database, experiment: str) -> str:
    """``cowriting`` or ``rating``; :class:`AnalysisError` naming the known experiments if
    there is no such experiment."""
    row = store.get_experiment(db, experiment)
    if row is None:
        known = ", ".join(r["id"] for r in db.query("SELECT id FROM experiments ORDER BY id"))
        raise AnalysisError(
            f"There is no experiment '{experiment}' in this database "
            f"(experiments: {known or 'none'}). Check the name, or pass --db."
        )
    return row.get("kind") or "cowriting"


def load_ratings(db: Database, experiment: str) -> RatingData:
    """The rating experiment ``experiment`` with every stored judgement."""
    if experiment_kind(db, experiment) != "rating":
        raise AnalysisError(f"'{experiment}' is a co-writing experiment, not a rating one.")
    row = store.get_experiment(db, experiment)
    definition = db.execute(
        "SELECT definition FROM instruments WHERE experiment_id = ?", [experiment]
    ).fetchone()
    if definition is None:
        raise AnalysisError(f"Rating experiment '{experiment}' has no instrument stored.")
    judgements = pd.DataFrame(
        db.execute(
            "SELECT j.story_id, s.source, j.rater_id, j.item_id AS item, j.value,"
            " COALESCE(j.value_text, j.rationale) AS rationale"
            " FROM judgements j JOIN stories s"
            " ON s.experiment_id = j.experiment_id AND s.story_id = j.story_id"
            " WHERE j.experiment_id = ? ORDER BY j.story_id, j.rater_id, j.item_id",
            [experiment],
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
