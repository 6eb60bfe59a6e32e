"""A co-writing experiment's finished stories, as stories to rate.

Each session that finished (its survey submitted) gives one story: in every round the
writer's line, then the turn the writer kept (a system's suggestion as the writer edited it),
joined in order by spaces. The source is the session's pair of systems in the spec's order
(``"gemma vs smollm"``), so a rating study compares pairs as the co-writing analysis does.
Who wrote each turn is kept in ``origin["turns"]``; ``text`` is the plain story a rater
reads, without authorship or system names. The writer's participant id is not copied: it
is personal data and a rating study does not need it.

Rounds are read as the co-writing analysis reads them
(:func:`cyoa.cowriting.analysis.data.load_study`
with ``finished_only=True``).
"""

from __future__ import annotations

from cyoa.cowriting.analysis.data import RoundRecord, experiment_pairs, load_study
from cyoa.db.facade import Db
from cyoa.rating.stories import StoryRecord

WRITER = "writer"

# A rating spec's `[stories] from = "cowriting"`: the stories of a co-writing experiment.
FROM_COWRITING = "cowriting"


def cowriting_stories(db: Db, experiment: str) -> list[StoryRecord]:
    """The story of each finished session of ``experiment``, pair by pair (in the order of
    :func:`~cyoa.cowriting.analysis.data.experiment_pairs`), sessions in the order they started.

    Each record: ``story_id`` ``"<experiment>-<session id>"``; ``source`` ``"<A> vs <B>"``
    (the pair in spec order); ``title`` ``""`` (a title could name the systems); ``text`` the
    turns joined by single spaces; ``origin`` = ``{"experiment", "session_id", "pair",
    "turns"}`` where ``turns`` lists ``{"round", "author", "text"}`` in reading order,
    ``author`` being ``"writer"`` or the name of the system whose suggestion was kept, with
    ``"edited"`` (whether the writer changed it) on system turns. A turn is usually one
    sentence (the study asks for one), but is stored as written.

    Raises :class:`cyoa.errors.AnalysisError` when the experiment does not exist.
    """
    stories = []
    for pair in experiment_pairs(db, experiment):
        study = load_study(db, experiment, pair, finished_only=True)
        rounds: dict[str, list[RoundRecord]] = {session: [] for session in study.writers}
        for record in study.rounds:
            rounds[record.session_id].append(record)
        for session_id, session_rounds in rounds.items():
            turns = []
            for record in session_rounds:
                turns.append({"round": record.round, "author": WRITER, "text": record.writer_line})
                turns.append(
                    {
                        "round": record.round,
                        "author": record.chosen_system,
                        "text": record.final_text,
                        "edited": record.final_text != record.chosen_suggestion,
                    }
                )
            stories.append(
                StoryRecord(
                    story_id=f"{experiment}-{session_id}",
                    source=f"{study.systems[0]} vs {study.systems[1]}",
                    title="",
                    text=" ".join(turn["text"] for turn in turns if turn["text"]),
                    origin={
                        "experiment": experiment,
                        "session_id": session_id,
                        "pair": list(study.systems),
                        "turns": turns,
                    },
                )
            )
    return stories
