"""A co-writing experiment's finished stories, as plain stories to rate with who wrote what."""

from __future__ import annotations

import pytest

from cyoa import store
from cyoa.errors import AnalysisError
from cyoa.rating.stories.cowriting import cowriting_stories
from tests.study_builder import Turn, add_writer, make_experiment, story

SURVEY = {"happy": 4}


@pytest.fixture
def db(tmp_path):
    database = store.connect(tmp_path / "study.sqlite")
    make_experiment(database, systems=("a", "b", "c"))
    yield database
    database.close()


def test_a_finished_session_becomes_its_writers_lines_and_kept_turns_in_order(db):
    turns = [
        Turn(
            line=f"I walked to hill {n}.",
            suggestions={"a": f"A wind rose {n}.", "b": f"B rain fell {n}."},
            slot1="a",
            chosen="a" if n % 2 else "b",
            final=f"A wind rose {n}." if n % 2 else f"B rain fell hard {n}.",
        )
        for n in range(1, 6)
    ]
    session = add_writer(db, "prolific-123", turns, SURVEY, pair=("a", "b"))

    (record,) = cowriting_stories(db, "exp")

    assert record.story_id == f"exp-{session}"
    assert record.source == "a vs b"
    assert record.title == ""
    assert record.family is None
    assert record.text.startswith(
        "I walked to hill 1. A wind rose 1. I walked to hill 2. B rain fell hard 2. "
    )
    assert record.text.endswith("I walked to hill 5. A wind rose 5.")
    origin = record.origin
    assert origin["experiment"] == "exp"
    assert origin["session_id"] == session
    assert origin["pair"] == ["a", "b"]
    assert origin["turns"][:4] == [
        {"round": 1, "author": "writer", "text": "I walked to hill 1."},
        {"round": 1, "author": "a", "text": "A wind rose 1.", "edited": False},
        {"round": 2, "author": "writer", "text": "I walked to hill 2."},
        {"round": 2, "author": "b", "text": "B rain fell hard 2.", "edited": True},
    ]
    assert len(origin["turns"]) == 10
    assert " ".join(turn["text"] for turn in origin["turns"]) == record.text


def test_the_plain_story_names_no_system_and_no_participant(db):
    add_writer(db, "prolific-123", story(("a", "b"), "a", "w1"), SURVEY, pair=("a", "b"))
    (record,) = cowriting_stories(db, "exp")
    assert "prolific-123" not in str(record)
    assert "vs" not in record.text and record.title == ""


def test_stories_are_labelled_by_their_pair_in_spec_order_and_unfinished_ones_are_left_out(db):
    add_writer(db, "w1", story(("a", "b"), "a", "w1"), SURVEY, pair=("a", "b"))
    add_writer(db, "w2", story(("b", "a"), "b", "w2"), SURVEY, pair=("b", "a"))
    add_writer(db, "w3", story(("c", "a"), "c", "w3"), SURVEY, pair=("c", "a"))
    add_writer(db, "w4", story(("a", "b"), "a", "w4")[:3], pair=("a", "b"))  # no survey

    records = cowriting_stories(db, "exp")

    assert [record.source for record in records] == ["a vs b", "a vs b", "a vs c"]
    assert [record.text.split()[0] for record in records] == ["w1", "w2", "w3"]
    authors = {turn["author"] for turn in records[2].origin["turns"]}
    assert authors == {"writer", "c"}


def test_an_experiment_without_finished_sessions_has_no_stories(db):
    add_writer(db, "w1", story(("a", "b"), "a", "w1")[:2], pair=("a", "b"))
    assert cowriting_stories(db, "exp") == []


def test_an_unknown_experiment_is_refused_with_the_known_ones(db):
    with pytest.raises(AnalysisError, match="no experiment 'nope'.*experiments: exp"):
        cowriting_stories(db, "nope")
