"""The writing-process measures of a round, on hand-worked keystroke records."""

from __future__ import annotations

import pytest

from cyoa.cowriting.process.measures import (
    origins,
    round_measures,
    rounds_of,
)
from cyoa.cowriting.process.operations import RecordMismatch


class Log:
    """A hand-written record of one round: each call adds one operation at a time in ms."""

    def __init__(self, round_number: int = 1) -> None:
        self.round = round_number
        self.ops: list[dict] = []

    def _add(self, **fields) -> Log:
        base = {"box": None, "slot": None, "position": None, "deleted": None, "inserted": None}
        self.ops.append(
            {**base, **fields, "seq": len(self.ops) + 1, "round": self.round, "received_at": ""}
        )
        return self

    def text(self, at, box, position, inserted="", deleted="", source="typed", slot=None):
        return self._add(
            kind="text",
            at_ms=at,
            box=box,
            slot=slot,
            position=position,
            deleted=deleted,
            inserted=inserted,
            source=source,
        )

    def view(self, at, slot, source):
        return self._add(kind="view", at_ms=at, slot=slot, source=source)

    def page(self, at, source):
        return self._add(kind="page", at_ms=at, source=source)


SUGGESTIONS = {1: "The door opened.", 2: "A bird sang."}


def typical_round() -> Log:
    """The writer types "Hi." (with one typo fixed), sees both suggestions, hovers slot 2
    then slot 1, chooses slot 1 and deletes "The " then types "A ", waits 3 s, pastes "!"."""
    log = Log()
    log.text(0, "line", 0, "H").text(200, "line", 1, "x").text(500, "line", 1, "", "x", "typed")
    log.text(700, "line", 1, "i.")
    log.view(10_000, 1, "visible").view(10_000, 2, "visible")
    log.view(11_000, 2, "focus").view(12_000, 2, "blur").view(12_000, 1, "focus")
    log.text(14_000, "edit", 0, "", "The ", slot=1)
    log.text(14_300, "edit", 0, "A ", slot=1)
    log.text(17_300, "edit", 13, "!", "", "pasted", slot=1)
    log.view(18_000, 1, "blur")
    return log


def test_the_first_keystroke_is_timed_from_when_the_suggestions_appeared():
    measured = round_measures(typical_round().ops, SUGGESTIONS, 1)
    assert measured.first_keystroke_ms == 4000


def test_each_suggestion_shows_how_long_it_was_visible_and_focused():
    measured = round_measures(typical_round().ops, SUGGESTIONS, 1)
    # Both stay visible to the round's last operation at 18 s; slot 2 was hovered 1 s,
    # slot 1 from 12 s to 18 s.
    assert measured.visible_ms == {1: 8000, 2: 8000}
    assert measured.focused_ms == {1: 6000, 2: 1000}
    assert measured.focus_switches == 1


def test_typed_pasted_and_kept_characters_are_counted_by_where_they_came_from():
    measured = round_measures(typical_round().ops, SUGGESTIONS, 1)
    # typed: H, x, i. in the line, "A " in the edit; pasted: "!" in the edit.
    assert measured.typed_chars == {"line": 4, "edit": 2}
    assert measured.pasted_chars == {"line": 0, "edit": 1}
    assert measured.other_chars == 0
    # "The door opened." loses "The " (4 of 16 characters): 12 kept.
    assert measured.kept_chars == 12
    assert measured.kept_share == pytest.approx(12 / 16)


def test_revisions_and_pauses_are_counted_within_each_box():
    measured = round_measures(typical_round().ops, SUGGESTIONS, 1)
    assert (measured.revisions, measured.deleted_chars) == (2, 5)
    # line gaps 200, 300, 200; edit gaps 300, 3000: one pause over 2 s.
    assert (measured.pauses, measured.pause_ms) == (1, 3000)
    assert measured.median_interkey_ms == 300


def test_a_character_deleted_and_typed_again_is_the_writers_not_the_models():
    log = Log().text(0, "edit", 0, "", "A", slot=2).text(100, "edit", 0, "A", slot=2)
    measured = round_measures(log.ops, SUGGESTIONS, 2)
    assert measured.kept_chars == len("A bird sang.") - 1


def test_a_suggestion_taken_as_it_is_keeps_every_character():
    log = Log().view(0, 1, "visible")
    measured = round_measures(log.ops, SUGGESTIONS, 1)
    assert (measured.kept_chars, measured.kept_share) == (16, 1.0)
    assert measured.first_keystroke_ms is None
    assert measured.median_interkey_ms is None


def test_switching_back_resumes_the_same_draft():
    log = Log()
    log.text(0, "edit", 0, "", "The ", slot=1)
    log.text(100, "edit", 0, "", "A ", slot=2)
    log.text(200, "edit", 0, "Oh, ", slot=1)
    measured = round_measures(log.ops, SUGGESTIONS, 1)
    assert measured.kept_chars == 12


def test_an_operation_that_does_not_match_the_text_says_the_record_is_broken():
    log = Log().text(0, "edit", 0, "", "Tha", slot=1)
    with pytest.raises(RecordMismatch, match="record of this round is broken"):
        round_measures(log.ops, SUGGESTIONS, 1)


def test_origins_mark_undone_text_as_neither_typed_nor_the_models():
    log = Log().text(0, "line", 0, "ab").text(1, "line", 2, "cd", source="undo")
    marked = origins("", "suggestion", log.ops)
    assert [o for _, o in marked] == ["typed", "typed", "other", "other"]


def test_a_sessions_operations_are_grouped_by_round_in_order():
    ops = Log(2).text(5, "line", 0, "b").ops + Log(1).text(1, "line", 0, "a").ops
    ops[0]["seq"], ops[1]["seq"] = 2, 1
    assert {r: [op["inserted"] for op in group] for r, group in rounds_of(ops).items()} == {
        1: ["a"],
        2: ["b"],
    }
