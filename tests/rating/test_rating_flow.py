"""The rater's journey as pure rules: stories in order, answers checked by the instrument,
a story finished only when every required question is answered."""

from __future__ import annotations

import pytest

from cyoa.rating.flow import (
    Event,
    Phase,
    Questions,
    RuleError,
    apply,
    check,
    replay,
)
from cyoa.rating.instruments import AISS_V1, TTCW, FeiQuestion, Item, fei_instrument

TTCW_QUESTIONS = Questions(TTCW)


def started(stories: list[tuple[str, list[str]]]) -> Event:
    return Event(
        "rater_started",
        {"stories": [{"story": story, "questions": questions} for story, questions in stories]},
    )


def step(state, questions, event_type, payload):
    return apply(state, check(state, questions, event_type, payload))


def test_a_rater_answers_each_story_in_turn_and_is_done_after_the_last():
    questions = Questions(AISS_V1)
    state = replay([started([("a", ["3", "1"]), ("b", ["1", "3"])])])
    assert state.current.story_id == "a" and state.position == 1
    state = step(state, questions, "story_shown", {"story": "a"})
    state = step(state, questions, "answer_given", {"story": "a", "item": "3", "value": "4"})
    with pytest.raises(RuleError, match="1 left: the first is question 2"):
        check(state, questions, "story_finished", {"story": "a"})
    state = step(state, questions, "answer_given", {"story": "a", "item": "1", "value": 5})
    state = step(state, questions, "story_finished", {"story": "a"})
    assert state.current.story_id == "b" and state.position == 2
    with pytest.raises(RuleError, match="not the one to rate now"):
        check(state, questions, "answer_given", {"story": "a", "item": "1", "value": "2"})
    state = step(state, questions, "story_shown", {"story": "b"})
    for item in ("1", "3"):
        state = step(state, questions, "answer_given", {"story": "b", "item": item, "value": 3})
    state = step(state, questions, "story_finished", {"story": "b"})
    assert state.phase == Phase.DONE and state.current is None
    with pytest.raises(RuleError, match="rated every story"):
        check(state, questions, "answer_given", {"story": "b", "item": "1", "value": "2"})


def shown(stories: list[tuple[str, list[str]]]):
    """A rater whose first story has been shown."""
    return replay([started(stories), Event("story_shown", {"story": stories[0][0]})])


def test_no_answer_counts_before_the_story_was_shown():
    state = replay([started([("a", ["1"])])])
    with pytest.raises(RuleError, match="see the story first"):
        check(state, Questions(AISS_V1), "answer_given", {"story": "a", "item": "1", "value": 2})


def test_the_last_answer_to_a_question_counts():
    questions = Questions(AISS_V1)
    state = shown([("a", ["1"])])
    state = step(state, questions, "answer_given", {"story": "a", "item": "1", "value": "2"})
    state = step(state, questions, "answer_given", {"story": "a", "item": "1", "value": "5"})
    assert state.current.answers["1"].value == 5.0


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"story": "a", "item": "1", "value": "6"}, "one of the answers offered"),
        ({"story": "a", "item": "1", "value": None}, "choose an answer"),
        ({"story": "a", "item": "1", "value": True}, "choose an answer"),
        ({"story": "a", "item": "1", "value": ["4"]}, "choose an answer"),
        ({"story": "a", "item": "9", "value": "4"}, "not one of this story's"),
        ({"story": "a", "item": 1, "value": "4"}, "not one of this story's"),
    ],
)
def test_an_answer_off_the_scale_or_to_another_question_is_refused(payload, message):
    state = shown([("a", ["1", "2"])])
    with pytest.raises(RuleError, match=message):
        check(state, Questions(AISS_V1), "answer_given", payload)


def test_a_ttcw_verdict_needs_a_rationale_of_at_least_a_sentence():
    state = shown([("a", ["1"])])
    short = {"story": "a", "item": "1", "value": "Yes", "rationale": "Good ending."}
    with pytest.raises(RuleError, match="at least a sentence"):
        check(state, TTCW_QUESTIONS, "answer_given", short)
    full = {**short, "rationale": "The ending follows from the rising tension."}
    event = check(state, TTCW_QUESTIONS, "answer_given", full)
    assert event.payload == {**full, "value": 1.0}


def test_a_free_text_question_may_stay_empty_but_a_scored_one_may_not():
    checks = (Item(id="comment", text="Anything to add?", kind="text"),)
    questions = Questions(AISS_V1, checks)
    state = shown([("a", ["1", "comment"])])
    state = step(state, questions, "answer_given", {"story": "a", "item": "1", "value": "3"})
    assert check(state, questions, "story_finished", {"story": "a"}).type == "story_finished"


def test_fei_questions_belong_to_their_story():
    instrument = fei_instrument(
        [FeiQuestion("a", "q1", "world", "Is it winter?"), FeiQuestion("b", "q2", "world", "Sun?")]
    )
    state = shown([("a", ["q1"]), ("b", ["q2"])])
    event = check(state, Questions(instrument), "answer_given", {"story": "a", "item": "q1",
                                                                 "value": "true"})  # fmt: skip
    assert event.payload["value"] == 1.0
    with pytest.raises(RuleError, match="not one of this story's"):
        check(state, Questions(instrument), "answer_given", {"story": "a", "item": "q2",
                                                             "value": "true"})  # fmt: skip


def test_malformed_actions_get_a_sentence():
    state = shown([("a", ["1"])])
    for event_type, payload in (("answer_given", "x"), ("dance", {"story": "a"})):
        with pytest.raises(RuleError, match="malformed"):
            check(state, Questions(AISS_V1), event_type, payload)
    with pytest.raises(RuleError, match="started already"):
        check(state, Questions(AISS_V1), "rater_started", {"stories": []})
