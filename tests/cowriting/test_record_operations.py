"""The keystroke record's operations: applied to texts, reconstructed per box, and checked
against what the writer submitted; over random editing sessions built from the fuzzer's
texts, the record gives back exactly the submitted turns."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cyoa.cowriting.flow import normalize_text
from cyoa.cowriting.process.check import record_outcome
from cyoa.cowriting.process.operations import (
    RecordMismatch,
    apply_operations,
    operation_between,
    reconstruct,
)
from cyoa.cowriting.process.timeline import keystroke_timeline
from tests.cowriting.test_fuzz import texts


def text_op(seq, round_number, box, slot, before, after, source="typed"):
    position, deleted, inserted = operation_between(before, after)
    return {
        "seq": seq,
        "round": round_number,
        "at_ms": 1_700_000_000_000 + 100 * seq,
        "kind": "text",
        "box": box,
        "slot": slot,
        "position": position,
        "deleted": deleted,
        "inserted": inserted,
        "source": source,
    }


def test_an_operation_replaces_what_it_says_at_its_position():
    op = {"seq": 1, "position": 4, "deleted": "cat", "inserted": "dog"}
    assert apply_operations("The cat sat.", [op]) == "The dog sat."


def test_positions_count_code_points_not_utf16_units():
    op = text_op(1, 1, "line", None, "🐱 sat.", "🐱 sat down.")
    assert op["position"] == 5 and op["inserted"] == " down"
    assert apply_operations("🐱 sat.", [op]) == "🐱 sat down."


def test_an_operation_that_does_not_fit_its_text_is_said_in_a_sentence():
    op = {"seq": 7, "position": 4, "deleted": "dog", "inserted": ""}
    with pytest.raises(RecordMismatch, match=r"Operation 7 removes 'dog' at character 4"):
        apply_operations("The cat sat.", [op])
    with pytest.raises(RecordMismatch, match="outside the text, which is 12 characters long"):
        apply_operations("The cat sat.", [{**op, "position": 40}])


def test_an_autocorrected_word_is_one_replacement():
    assert operation_between("I hvae a cat", "I have a cat") == (3, "va", "av")


def test_each_box_is_its_own_text_and_an_edit_box_starts_as_its_suggestion():
    ops = [
        text_op(1, 1, "line", None, "", "Once"),
        {"seq": 2, "round": 1, "kind": "view", "box": None, "slot": 1, "source": "visible"},
        text_op(3, 1, "edit", 2, "B said.", "B said it."),
        text_op(4, 1, "edit", 1, "A said.", "A said so."),
        text_op(5, 1, "edit", 2, "B said it.", "B said it twice."),
        text_op(6, 2, "line", None, "", "Then"),
    ]
    texts_now = reconstruct(ops, {1: "A said.", 2: "B said."})
    assert texts_now == {
        (1, "line", None): "Once",
        (1, "edit", 2): "B said it twice.",
        (1, "edit", 1): "A said so.",
        (2, "line", None): "Then",
    }
    by_round = reconstruct(ops[:5], {(1, 1): "A said.", (1, 2): "B said."})
    assert by_round[(1, "edit", 1)] == "A said so."
    with pytest.raises(RecordMismatch, match="suggestion 2 of round 1"):
        reconstruct(ops, {1: "A said."})


@st.composite
def edits(draw, start: str) -> list[str]:
    """The successive values of one box as a writer edits it: texts typed, pasted over a
    selection or deleted, anywhere in the box (from the fuzzer's texts)."""
    values, text = [], start
    for _ in range(draw(st.integers(1, 8))):
        a = draw(st.integers(0, len(text)))
        b = draw(st.integers(a, len(text)))
        text = text[:a] + draw(st.one_of(st.just(""), texts)) + text[b:]
        values.append(text)
    return values


@st.composite
def editing_sessions(draw):
    """Rounds of a random editing session: the line's values, then the suggestions, the
    slots the writer opened in order (switches), each opening's values of its edit box."""
    rounds = []
    for _ in range(draw(st.integers(1, 3))):
        line = draw(edits(""))
        suggestions = {1: draw(texts), 2: draw(texts)}
        openings, drafts = [], dict(suggestions)
        for slot in draw(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=4)):
            values = draw(edits(drafts[slot]))
            openings.append((slot, values))
            drafts[slot] = values[-1]
        rounds.append((line, suggestions, openings))
    return rounds


def recorded(session):
    """The record a page makes of the session: one operation per change of a box, numbered
    from 1; and per round, the submitted line, the suggestions, the chosen slot and turn."""
    ops, seq, submitted = [], 0, []
    for number, (line, suggestions, openings) in enumerate(session, start=1):
        before = ""
        for value in line:
            seq += 1
            ops.append(text_op(seq, number, "line", None, before, value, "pasted"))
            before = value
        drafts = dict(suggestions)
        for slot, values in openings:
            for value in values:
                seq += 1
                ops.append(text_op(seq, number, "edit", slot, drafts[slot], value))
                drafts[slot] = value
        chosen = openings[-1][0]
        submitted.append((number, line[-1], suggestions, chosen, drafts[chosen], seq))
    return ops, submitted


@settings(max_examples=150, deadline=None)
@given(editing_sessions())
def test_random_editing_sessions_replay_to_exactly_the_submitted_turns(session):
    ops, submitted = recorded(session)
    suggestions = {(n, s): text for n, _, sugg, *_ in submitted for s, text in sugg.items()}
    rebuilt = reconstruct(ops, suggestions)
    for number, line, sugg, chosen, turn, through in submitted:
        assert rebuilt[(number, "line", None)] == line
        assert rebuilt[(number, "edit", chosen)] == turn
        mine = [op for op in ops if op["round"] == number]
        for event, slot, start, text in (
            ("line_submitted", None, "", line),
            ("turn_submitted", chosen, sugg[chosen], turn),
        ):
            outcome = record_outcome(
                event,
                mine,
                through=through,
                stored=through,
                slot=slot,
                start=start,
                submitted=normalize_text(text),
            )
            assert outcome["matches"], outcome


def test_a_record_missing_a_keystroke_says_which_box_differs():
    ops = [
        text_op(1, 1, "line", None, "", "The ship"),
        text_op(2, 1, "line", None, "The ship", "The ship came in."),
    ]
    outcome = record_outcome(
        "line_submitted",
        ops[1:],
        through=2,
        stored=2,
        slot=None,
        start="",
        submitted="The ship came in.",
    )
    assert not outcome["matches"] and outcome["box"] == "line"
    assert outcome["problem"] == (
        "Operation 2 starts at character 8, outside the text, which is 0 characters long."
    )
    late = record_outcome(
        "turn_submitted",
        [],
        through=2,
        stored=1,
        slot=2,
        start="It sailed.",
        submitted="It sailed.",
    )
    assert late == {
        "through": 2,
        "box": "edit",
        "slot": 2,
        "matches": False,
        "problem": "1 of the record's first 2 rows had not arrived.",
    }
    other = record_outcome(
        "draft_saved", [], through=0, stored=0, slot=1, start="It sailed.", submitted="It sank."
    )
    assert other["problem"] == (
        "The record of the edit box of suggestion 1 gives “It sailed.” but “It sank.” "
        "was submitted."
    )


def test_the_timeline_marks_pauses_over_two_seconds_pastes_and_switches():
    ops = [
        text_op(1, 1, "line", None, "", "A"),
        {**text_op(2, 1, "line", None, "A", "A cat"), "at_ms": 1_700_000_003_000},
        text_op(3, 1, "line", None, "A cat", "A cat sat on the mat.", "pasted"),
        text_op(4, 1, "edit", 1, "One.", "One!"),
        text_op(5, 1, "edit", 2, "Two.", "Two!"),
        text_op(6, 1, "edit", 2, "Two!", "Two!!"),
    ]
    timeline = keystroke_timeline(ops, {(1, 1): "One.", (1, 2): "Two."})
    assert [(m.index, m.kind, m.label) for m in timeline.marks] == [
        (1, "pause", "a pause of 2.9 s"),
        (2, "paste", "pasted 16 characters into the line"),
        (4, "switch", "switched to suggestion 2"),
    ]
    assert timeline.rows[0][2] == 0 and timeline.duration_ms == ops[-1]["at_ms"] - ops[0]["at_ms"]
    assert timeline.suggestions == {"1:1": "One.", "1:2": "Two."}
    broken = keystroke_timeline(ops[1:], {(1, 1): "One.", (1, 2): "Two."})
    assert broken.rows == []
    assert broken.broken.startswith("Round 1 is left out: Operation 2 starts at character 1")


def test_a_broken_round_is_left_out_of_the_replay_and_the_other_rounds_still_play():
    ops = [
        text_op(1, 1, "line", None, "", "Hi."),
        text_op(2, 2, "line", None, "Draft.", "Draft!"),  # began from a text not recorded
        text_op(3, 3, "line", None, "", "Bye."),
    ]
    timeline = keystroke_timeline(ops, {})
    assert [row[0] for row in timeline.rows] == [1, 3]
    assert timeline.broken == (
        "Round 2 is left out: Operation 2 starts at character 5, outside the text, which is "
        "0 characters long."
    )
