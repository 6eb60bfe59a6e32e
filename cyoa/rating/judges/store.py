"""A judge's verdicts stored in a rating experiment as a panel of their own, and the panels
read back (the edge where judges meet the database).

A judge is stored as raters whose ``raters.panel`` is the judge's name (``id_source``
``judge``), its verdicts as their ``judgements`` (an unparsed verdict with a null ``value``
and the judge's response as ``rationale``); the human analysis reads the ``human`` panel only
(:func:`cyoa.rating.analysis.data.load_ratings`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from cyoa import store
from cyoa.db.facade import Db
from cyoa.rating.importing import Judgement, RatingImportError
from cyoa.rating.instruments import Instrument
from cyoa.rating.instruments.definition import instrument_from_dict
from cyoa.rating.store import HUMAN_PANEL

JUDGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class JudgeImport:
    """What adding a judge stored: its verdicts, how many stories they are about, and how
    many verdicts could not be read (stored without a value)."""

    experiment: str
    judge: str
    verdicts: int
    stories: int
    unparsed: int


def rating_design(db: Db, exp_id: str) -> tuple[Instrument, dict[str, str]]:
    """The instrument of the rating experiment ``exp_id`` and its stories (id → source);
    :class:`RatingImportError` when there is no such rating experiment."""
    row = store.get_experiment(db, exp_id)
    definition = db.execute(
        "SELECT definition FROM instruments WHERE experiment_id = ?", [exp_id]
    ).fetchone()
    if row is None or row["kind"] != "rating" or definition is None:
        raise RatingImportError(
            f"There is no rating experiment '{exp_id}'; import the human judgements first "
            "(import-ratings FILE --name NAME), then add judges to it with --into NAME."
        )
    stories = dict(
        db.execute(
            "SELECT story_id, source FROM stories WHERE experiment_id = ?", [exp_id]
        ).fetchall()
    )
    return instrument_from_dict(json.loads(definition[0])), stories


def judge_panels(db: Db, exp_id: str) -> list[str]:
    """The names of the judge panels of ``exp_id`` (every panel but the human one), sorted."""
    return [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT panel FROM raters WHERE experiment_id = ? AND panel != ?"
            " ORDER BY panel",
            [exp_id, HUMAN_PANEL],
        )
    ]


def _check_judge(db: Db, exp_id: str, judge: str, raters: set[str]) -> None:
    """Refuse a judge name that is not a name, names the humans, is taken, or whose raters
    are already raters of the experiment."""
    if not JUDGE_NAME.fullmatch(judge):
        raise RatingImportError(
            f"--judge {judge!r} cannot name a judge: use letters, digits, '.', '-' and '_' "
            "(at most 64, starting with a letter or digit)."
        )
    if judge == HUMAN_PANEL:
        raise RatingImportError(
            f"--judge '{HUMAN_PANEL}' names the study's raters; name the judge after its model."
        )
    if judge in judge_panels(db, exp_id):
        raise RatingImportError(
            f"'{exp_id}' already has a judge '{judge}'; choose another --judge name."
        )
    for rater in sorted(raters):
        if db.execute(
            "SELECT 1 FROM raters WHERE experiment_id = ? AND rater_id = ?", [exp_id, rater]
        ).fetchone():
            raise RatingImportError(
                f"'{exp_id}' already has a rater '{rater}'; give the judge another name "
                "(--judge) or its raters other ids."
            )


def add_judge(
    db: Db, exp_id: str, judge: str, judgements: list[Judgement], origin: dict[str, Any]
) -> JudgeImport:
    """Store ``judgements`` as the judge panel ``judge`` of the rating experiment ``exp_id``,
    in one transaction; ``origin`` (the format and file) is kept in the experiment's spec,
    under ``judges``. Every story must be one of the experiment's, with the same
    source. Raises :class:`RatingImportError`, storing nothing, when it cannot be added."""
    _, stories = rating_design(db, exp_id)
    for judgement in judgements:
        if stories.get(judgement.story_id, judgement.source) != judgement.source:
            raise RatingImportError(
                f"Story {judgement.story_id!r} has source {stories[judgement.story_id]!r} in "
                f"'{exp_id}', not {judgement.source!r}; make them agree."
            )
        if judgement.story_id not in stories:
            raise RatingImportError(
                f"Story {judgement.story_id!r} is not in '{exp_id}'; add verdicts only about "
                "its stories."
            )
    raters = {judgement.rater_id for judgement in judgements}
    stamp = store.now()
    with store.write_transaction(db):
        _check_judge(db, exp_id, judge, raters)
        spec = json.loads(store.get_experiment(db, exp_id)["spec"])
        spec["judges"] = {**spec.get("judges", {}), judge: origin}
        db.execute(
            "UPDATE experiments SET spec = ?, updated_at = ? WHERE id = ?",
            [json.dumps(spec, sort_keys=True), stamp, exp_id],
        )
        db.insert_all(
            "raters",
            [
                {
                    "experiment_id": exp_id,
                    "rater_id": rater,
                    "id_source": "judge",
                    "panel": judge,
                    "created_at": stamp,
                }
                for rater in sorted(raters)
            ],
        )
        db.insert_all(
            "judgements",
            [
                {
                    "experiment_id": exp_id,
                    "story_id": judgement.story_id,
                    "rater_id": judgement.rater_id,
                    "item_id": judgement.item_id,
                    "value": judgement.value,
                    "value_text": judgement.text,
                    "rationale": judgement.rationale,
                    "recorded_at": stamp,
                }
                for judgement in judgements
            ],
        )
    return JudgeImport(
        experiment=exp_id,
        judge=judge,
        verdicts=len(judgements),
        stories=len({judgement.story_id for judgement in judgements}),
        unparsed=sum(1 for j in judgements if j.value is None and j.text is None),
    )
