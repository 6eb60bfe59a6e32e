"""The turn rules as a pure state machine: no server, no database, no model."""

import pytest

from cyoa.cowriting.flow import (
    Event,
    Limits,
    Phase,
    RuleError,
    State,
    apply,
    check,
    normalize_text,
    replay,
    validate_turn,
)

LIMITS = Limits(rounds=2, min_chars=20, max_chars=60)
LINE = "The dragon woke up hungry."
SUGGESTION = "It flew over the sleeping village."


def step(state: State, event_type: str, payload: dict) -> State:
    return apply(state, check(state, event_type, payload))


def submit_line(state: State, text: str = LINE) -> State:
    payload = {"text": text, "slot_systems": ["a", "b"], "slot_models": ["m", "m"], "seeds": [1, 2]}
    return step(state, "line_submitted", payload)


def complete(state: State, slot: int, text: str = SUGGESTION) -> State:
    return step(
        state,
        "suggestion_completed",
        {"round": state.current.number, "slot": slot, "text": f"{text} ({slot})"},
    )


def ready_round(state: State) -> State:
    return complete(complete(submit_line(state), 1), 2)


def test_a_session_starts_with_the_writer_alone():
    state = State(limits=LIMITS)
    assert state.phase == Phase.WRITING
    assert state.current.number == 1
    assert state.story() == []


def test_a_whole_story_alternates_writer_and_model_turns_then_the_survey():
    state = State(limits=LIMITS)
    for n in (1, 2):
        state = ready_round(state)
        assert state.phase == Phase.CHOOSING
        state = step(state, "suggestion_chosen", {"slot": 2})
        state = step(state, "turn_submitted", {"text": f"My edited sentence number {n}."})
    assert state.phase == Phase.SURVEY
    assert state.story() == [
        LINE,
        "My edited sentence number 1.",
        LINE,
        "My edited sentence number 2.",
    ]
    state = step(state, "survey_submitted", {"happy": 5})
    assert state.phase == Phase.DONE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Too short.", "Too short — at least 20 characters."),
        ("x" * 61, "Too long — at most 60 characters."),
        ("   " + "a" * 10 + "   ", "Too short — at least 20 characters."),
    ],
)
def test_turn_length_is_enforced_with_a_message_that_says_what_to_do(text, message):
    with pytest.raises(RuleError, match=message):
        validate_turn(text, LIMITS)


def test_length_counts_characters_after_normalisation():
    # "é" typed as e + combining accent is one character after NFC.
    text = "Cafe\u0301 " + "a" * 15
    assert validate_turn(text, LIMITS) == "Café " + "a" * 15


def test_control_characters_are_removed_and_newlines_become_spaces():
    assert normalize_text("One\nline\x00 with\tstuff\u200b ") == "One line with stuff"


def test_choosing_waits_until_both_suggestions_are_finished():
    state = complete(submit_line(State(limits=LIMITS)), 1)
    assert state.phase == Phase.SUGGESTING
    with pytest.raises(RuleError, match="still being written"):
        check(state, "suggestion_chosen", {"slot": 1})


def test_switching_keeps_each_options_own_draft():
    state = ready_round(State(limits=LIMITS))
    state = step(state, "suggestion_chosen", {"slot": 1})
    assert state.current.drafts == {1: SUGGESTION + " (1)"}
    state = step(state, "draft_saved", {"slot": 1, "text": "My own edit of one."})
    event = check(state, "suggestion_chosen", {"slot": 2})
    assert event.payload["switch"] is True
    state = apply(state, event)
    state = step(state, "suggestion_chosen", {"slot": 1})
    assert state.current.chosen_slot == 1
    assert state.current.drafts == {1: "My own edit of one.", 2: SUGGESTION + " (2)"}


def test_a_submitted_turn_can_never_be_changed():
    state = ready_round(State(limits=LIMITS))
    state = step(state, "suggestion_chosen", {"slot": 1})
    state = step(state, "turn_submitted", {"text": "The final words of round one."})
    with pytest.raises(RuleError):
        check(state, "turn_submitted", {"text": "Changing my mind about round one."})
    with pytest.raises(RuleError):
        check(state, "suggestion_chosen", {"slot": 2})
    assert state.rounds[0].final_text == "The final words of round one."


def test_adding_a_turn_requires_a_choice_first():
    state = ready_round(State(limits=LIMITS))
    with pytest.raises(RuleError, match="choose one of the suggestions"):
        check(state, "turn_submitted", {"text": "I never chose anything at all."})


@pytest.mark.parametrize("slot", [0, 3, "1", None, True, 1.0])
def test_a_suggestion_that_was_not_offered_cannot_be_chosen(slot):
    state = ready_round(State(limits=LIMITS))
    with pytest.raises(RuleError):
        check(state, "suggestion_chosen", {"slot": slot})


def test_a_failed_suggestion_leaves_the_other_to_choose():
    state = submit_line(State(limits=LIMITS))
    state = step(state, "suggestion_failed", {"round": 1, "slot": 1, "error": "boom"})
    assert state.phase == Phase.SUGGESTING
    state = complete(state, 2)
    assert state.phase == Phase.CHOOSING
    with pytest.raises(RuleError, match="choose the other one"):
        check(state, "suggestion_chosen", {"slot": 1})
    state = step(state, "suggestion_chosen", {"slot": 2})
    assert state.current.chosen_slot == 2


def test_when_both_fail_the_writer_can_retry():
    state = submit_line(State(limits=LIMITS))
    for slot in (1, 2):
        state = step(state, "suggestion_failed", {"round": 1, "slot": slot, "error": "x"})
    assert state.phase == Phase.SUGGESTING
    state = step(state, "suggestions_retried", {})
    assert state.current.pending_slots() == [1, 2]
    assert complete(complete(state, 1), 2).phase == Phase.CHOOSING


def test_a_late_suggestion_for_a_settled_slot_is_refused():
    state = ready_round(State(limits=LIMITS))
    with pytest.raises(RuleError):
        check(state, "suggestion_completed", {"round": 1, "slot": 1, "text": "late"})


def test_out_of_order_actions_are_refused_with_a_reason():
    state = State(limits=LIMITS)
    with pytest.raises(RuleError, match="write your own line first"):
        check(state, "suggestion_chosen", {"slot": 1})
    with pytest.raises(RuleError, match="Unknown action"):
        check(state, "delete_story", {})
    with pytest.raises(RuleError, match="malformed"):
        check(state, "line_submitted", ["not", "a", "dict"])


def test_replay_rebuilds_the_same_state_as_applying_step_by_step():
    events = []
    state = State(limits=LIMITS)
    for event_type, payload in [
        ("line_submitted", {"text": LINE, "slot_systems": ["a", "b"], "slot_models": ["m", "n"]}),
        ("suggestion_completed", {"round": 1, "slot": 2, "text": SUGGESTION}),
        ("suggestion_completed", {"round": 1, "slot": 1, "text": "Another sentence here."}),
        ("suggestion_chosen", {"slot": 1}),
        ("draft_saved", {"slot": 1, "text": "Another sentence, edited."}),
    ]:
        event = check(state, event_type, payload)
        events.append(Event(event.type, event.payload))
        state = apply(state, event)
    assert replay(LIMITS, events) == state
