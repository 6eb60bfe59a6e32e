"""Instruments as data: the AISS and the TTCW read from their vendored files, FEI probes,
custom specs, and how an answer is read and scored."""

import dataclasses
import json
import math
from importlib import resources

import pytest

from cyoa.rating.instruments import (
    AISS_V1,
    TTCW,
    FeiQuestion,
    InstrumentError,
    fei_instrument,
    instrument_from_spec,
    load_instrument,
)
from cyoa.rating.instruments.aiss import parse_aiss
from cyoa.rating.instruments.definition import instrument_from_dict, instrument_to_dict
from cyoa.rating.instruments.ttcw import parse_ttcw

DATA = resources.files("cyoa.rating.instruments").joinpath("data")


# --- AISS v1 -------------------------------------------------------------------------------


def test_aiss_has_22_items_in_five_factors_of_7_5_4_4_2():
    assert [item.id for item in AISS_V1.items] == [str(n) for n in range(1, 23)]
    assert {factor: len(ids) for factor, ids in AISS_V1.factors().items()} == {
        "Coherence": 7,
        "Avoiding Repetition": 5,
        "Creativity/Quality": 4,
        "Pace": 4,
        "Consistent Characterization": 2,
    }
    # The file restarts its numbering at Pace: its "1." is item 17 here.
    assert AISS_V1.item("17").text == "The story moved at a fast pace."
    assert AISS_V1.item("22").text == (
        "Characters in the story were described in a contradicting manner."
    )


def test_aiss_reverses_the_marked_items_and_item_9():
    reversed_ids = [item.id for item in AISS_V1.items if item.reverse]
    # Marked "(reverse)" in aiss_v1.md: 2, 10, 11, 12, 18–22; item 9 added (data README).
    assert reversed_ids == ["2", "9", "10", "11", "12", "18", "19", "20", "21", "22"]
    assert AISS_V1.item("9").text == (
        "Many sentences in the story had frequently repeated words and phrases."
    )
    assert AISS_V1.item("9").factor == "Avoiding Repetition"
    assert not AISS_V1.item("8").reverse
    # The marker itself is not part of the statement.
    assert "reverse" not in AISS_V1.item("2").text


def test_aiss_points_instructions_and_attribution():
    item = AISS_V1.item("1")
    assert (item.kind, item.points) == ("likert", 5)
    assert item.labels == (
        "Strongly disagree",
        "Somewhat disagree",
        "Neither agree nor disagree",
        "Somewhat agree",
        "Strongly agree",
    )
    assert AISS_V1.instructions.startswith("For the following questions, please think of")
    assert "CC BY-SA 4.0" in AISS_V1.attribution
    assert "MWiechmann/ai_story_scale" in AISS_V1.attribution
    licence = DATA.joinpath("aiss_v1.LICENSE").read_text("utf-8")
    assert "Attribution-ShareAlike 4.0 International" in licence


def test_aiss_parser_refuses_a_file_whose_item_9_changed():
    text = DATA.joinpath("aiss_v1.md").read_text("utf-8")
    changed = text.replace("frequently repeated words", "many repeated words")
    with pytest.raises(InstrumentError, match="AISS item 9 reads"):
        parse_aiss(changed)


def test_aiss_parser_refuses_a_file_with_an_item_missing():
    text = DATA.joinpath("aiss_v1.md").read_text("utf-8")
    with pytest.raises(InstrumentError, match="21 items, not 5 and 22"):
        parse_aiss(text.replace("13. The story was innovative.\n", ""))


# --- TTCW ----------------------------------------------------------------------------------


def test_ttcw_has_the_14_tests_in_four_dimensions():
    assert [item.id for item in TTCW.items] == [str(n) for n in range(1, 15)]
    assert TTCW.factors() == {
        "Fluency": ("1", "2", "3", "4", "5"),
        "Flexibility": ("6", "7", "8"),
        "Originality": ("9", "10", "11"),
        "Elaboration": ("12", "13", "14"),
    }
    first = TTCW.item("1")
    assert (first.kind, first.rationale, first.category) == ("yes_no", True, "Narrative Ending")
    assert first.text == (
        "Does the end of the story feel natural and earned, as opposed to arbitrary or abrupt?"
    )
    assert "BSD-3-Clause" in TTCW.attribution
    assert "Salesforce" in DATA.joinpath("ttcw.LICENSE").read_text("utf-8")


def test_ttcw_context_is_the_expanded_measure_without_the_llm_instruction():
    tests = json.loads(DATA.joinpath("ttcw_all_tests.json").read_text("utf-8"))
    for test in tests:
        item = TTCW.item(str(test["ttcw_idx"]))
        assert test["full_prompt"].startswith(item.context)
        assert "Given the story" not in item.context
        assert "Q)" not in item.context
        assert len(item.context) > 200
    assert TTCW.item("1").context.endswith("narrative journey was worthwhile and complete.")


def test_ttcw_parser_needs_all_14_tests():
    tests = json.loads(DATA.joinpath("ttcw_all_tests.json").read_text("utf-8"))
    with pytest.raises(InstrumentError, match="13 tests, not 14"):
        parse_ttcw(tests[:13])


# --- Reading and scoring answers -----------------------------------------------------------


@pytest.mark.parametrize(("raw", "value"), [(1, 1.0), ("5", 5.0), (" 3 ", 3.0), (4.0, 4.0)])
def test_likert_answers_are_read_as_points(raw, value):
    assert AISS_V1.parse_value("1", raw) == value


@pytest.mark.parametrize("raw", [0, 6, "6", 2.5, "three", None, True])
def test_likert_answers_off_the_scale_name_the_item_and_the_scale(raw):
    with pytest.raises(
        InstrumentError, match=r"Item 1 of aiss-v1 takes a whole number from 1 to 5"
    ):
        AISS_V1.parse_value("1", raw)


@pytest.mark.parametrize(
    ("raw", "value"),
    [("Yes", 1.0), ("no", 0.0), ("TRUE", 1.0), ("false", 0.0), ("1", 1.0), (0, 0.0), (True, 1.0)],
)
def test_yes_no_answers(raw, value):
    assert TTCW.parse_value("3", raw) == value


@pytest.mark.parametrize("raw", ["maybe", 2, "", None])
def test_yes_no_answers_that_are_neither(raw):
    with pytest.raises(InstrumentError, match="Item 3 of ttcw takes Yes or No"):
        TTCW.parse_value("3", raw)


def test_true_false_and_text_answers():
    fei = fei_instrument([FeiQuestion("s1", "q1", "world", "Is the knight tall?")])
    assert fei.parse_value("q1", "true") == 1.0
    assert fei.parse_value("q1", "No") == 0.0
    with pytest.raises(InstrumentError, match="takes true or false"):
        fei.parse_value("q1", "perhaps")
    custom = instrument_from_spec(
        {"id": "notes", "name": "Notes", "items": [{"id": "why", "text": "Why?", "kind": "text"}]},
        "spec",
    )
    assert custom.parse_value("why", "Because.") == "Because."
    with pytest.raises(InstrumentError, match="expects a written answer"):
        custom.parse_value("why", None)


def test_reverse_coding_turns_the_scale_round():
    # Item 9 is reverse-keyed on 5 points: 5 + 1 − 5 = 1, 5 + 1 − 2 = 4; item 8 is not.
    assert AISS_V1.coded("9", 5.0) == 1.0
    assert AISS_V1.coded("9", 2.0) == 4.0
    assert AISS_V1.coded("8", 2.0) == 2.0
    assert math.isnan(AISS_V1.coded("9", float("nan")))
    assert TTCW.coded("1", 1.0) == 1.0
    with pytest.raises(InstrumentError, match="whole number from 1 to 5"):
        AISS_V1.coded("9", 7.0)


def test_an_unknown_item_is_named():
    with pytest.raises(InstrumentError, match="Instrument 'ttcw' has no item '15'"):
        TTCW.item("15")


def test_items_check_their_own_shape():
    with pytest.raises(InstrumentError, match="only Likert items can be reverse-keyed"):
        dataclasses.replace(TTCW.item("1"), reverse=True)
    with pytest.raises(InstrumentError, match="5 points but 2 labels"):
        dataclasses.replace(AISS_V1.item("1"), labels=("low", "high"))


# --- FEI -----------------------------------------------------------------------------------


def test_fei_instrument_has_one_true_false_item_per_question():
    fei = fei_instrument(
        [
            FeiQuestion("s1", "q1", "transitional", "Given that A, then B?"),
            FeiQuestion("s1", "q2", "EWC", "Is the house red?"),
            FeiQuestion("s2", "q3", "ETC", "Given that C, then D?"),
        ]
    )
    assert fei.id == "fei"
    assert [(i.id, i.kind, i.fei_kind, i.story_id) for i in fei.items] == [
        ("q1", "true_false", "transitional", "s1"),
        ("q2", "true_false", "world", "s1"),
        ("q3", "true_false", "transitional", "s2"),
    ]


@pytest.mark.parametrize("kind", ["", None, "global", "coherence"])
def test_fei_question_without_a_valid_kind(kind):
    with pytest.raises(InstrumentError, match="FEI question 'q7' has kind .*'transitional'"):
        fei_instrument([FeiQuestion("s1", "q7", kind, "Is it?")])


def test_fei_needs_distinct_questions():
    with pytest.raises(InstrumentError, match="needs questions"):
        fei_instrument([])
    with pytest.raises(InstrumentError, match="two items with id 'q1'"):
        fei_instrument(
            [FeiQuestion("s1", "q1", "world", "A?"), FeiQuestion("s2", "q1", "world", "B?")]
        )


# --- Custom specs --------------------------------------------------------------------------

SPEC = """
id = "my-scale"
name = "My scale"
instructions = "Think of the story."

[[items]]
id = "fun"
text = "The story was fun."
kind = "likert"
points = 5
labels = ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
factor = "Enjoyment"

[[items]]
id = "dull"
text = "The story was dull."
kind = "likert"
points = 5
reverse = true
factor = "Enjoyment"

[[items]]
id = "again"
text = "Would you read it again?"
kind = "yes_no"
rationale = true

[[items]]
id = "comment"
text = "Anything else?"
kind = "text"
"""


def test_custom_spec_from_toml(tmp_path):
    path = tmp_path / "my-scale.toml"
    path.write_text(SPEC, encoding="utf-8")
    instrument = load_instrument(str(path))
    assert (instrument.id, instrument.name, instrument.version) == ("my-scale", "My scale", "1")
    assert instrument.instructions == "Think of the story."
    assert [item.kind for item in instrument.items] == ["likert", "likert", "yes_no", "text"]
    assert instrument.item("dull").labels == ("1", "2", "3", "4", "5")
    assert instrument.item("dull").reverse
    assert instrument.item("again").rationale
    assert instrument.factors() == {"Enjoyment": ("fun", "dull")}
    assert instrument.coded("dull", 4.0) == 2.0


def _spec(**item):
    return {"id": "x", "name": "X", "items": [{"id": "a", "text": "A.", **item}]}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"name": "X", "items": []}, "spec.toml: id must be letters"),
        ({"id": "ttcw", "name": "X", "items": []}, "built-in instrument"),
        ({"id": "x", "name": "X", "items": []}, "give at least one item"),
        ({"id": "x", "name": "X", "colour": "red", "items": []}, "unknown field.*colour"),
        ({"id": "x", "items": [{"id": "a", "text": "A.", "kind": "text"}]}, "name must be"),
        (_spec(kind="slider"), r"item 1 \('a'\) has kind 'slider'"),
        (_spec(kind="likert", points=12), r"item 1 \('a'\) is a Likert item: give points"),
        (_spec(kind="likert"), "give points from 2 to 11"),
        (_spec(kind="likert", points=3, labels=["a", "b"]), "give labels as a list of 3"),
        (_spec(kind="yes_no", reverse=True), "only Likert items can be reverse-keyed"),
        (_spec(kind="yes_no", points=2), "points and labels belong to Likert items"),
        (_spec(kind="text", rationale="yes"), "rationale must be true or false"),
        (_spec(kind="text", size=3), "unknown field.*size"),
        ({"id": "x", "name": "X", "items": [{"text": "A.", "kind": "text"}]}, "needs an id"),
        (
            {"id": "x", "name": "X", "items": [{"id": "a", "kind": "text"}]},
            r"item 1 \('a'\): text must be",
        ),
        (
            {
                "id": "x",
                "name": "X",
                "items": [
                    {"id": "a", "text": "A.", "kind": "text"},
                    {"id": "a", "text": "B.", "kind": "text"},
                ],
            },
            r"item 2 \('a'\) repeats",
        ),
    ],
)
def test_custom_spec_errors_name_the_spec_and_the_item(spec, message):
    with pytest.raises(InstrumentError, match=message) as error:
        instrument_from_spec(spec, "spec.toml")
    assert str(error.value).startswith("spec.toml")


RUBRIC = {
    "id": "rubric",
    "name": "A 0–10 rubric",
    "items": [
        {"id": "plot", "text": "How good is the plot?", "kind": "likert", "low": 0, "points": 11},
        {
            "id": "flat",
            "text": "How flat are the characters?",
            "kind": "likert",
            "low": 0,
            "points": 11,
            "reverse": True,
        },
    ],
}


def test_a_likert_item_may_start_at_zero_and_answers_are_read_on_its_own_scale():
    rubric = instrument_from_spec(RUBRIC, "rubric.toml")
    plot = rubric.item("plot")
    assert (plot.low, plot.high, plot.points) == (0, 10, 11)
    assert plot.labels == tuple(str(point) for point in range(0, 11))
    assert rubric.parse_value("plot", "0") == 0.0
    assert rubric.parse_value("plot", 10) == 10.0
    with pytest.raises(
        InstrumentError, match="Item plot of rubric takes a whole number from 0 to 10"
    ):
        rubric.parse_value("plot", 11)
    # Reverse coding turns the scale round on its own ends: 0 + 10 − 3 = 7.
    assert rubric.coded("flat", 3.0) == 7.0
    assert rubric.coded("flat", 0.0) == 10.0
    with pytest.raises(InstrumentError, match="whole number from 0 to 10"):
        rubric.coded("flat", -1.0)


def test_a_scale_may_run_below_zero():
    spec = _spec(kind="likert", low=-3, points=7)
    item = instrument_from_spec(spec, "spec.toml").item("a")
    assert (item.low, item.high) == (-3, 3)
    assert instrument_from_spec(spec, "spec.toml").parse_value("a", "-3") == -3.0


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"kind": "yes_no", "low": 0}, "low belongs to Likert items only"),
        ({"kind": "likert", "points": 5, "low": 0.5}, "low must be a whole number"),
        ({"kind": "likert", "points": 5, "low": True}, "low must be a whole number"),
        ({"kind": "likert", "points": 5, "low": 1000}, "low must be a whole number from -100"),
    ],
)
def test_a_bad_lowest_point_is_refused_naming_the_item(item, message):
    with pytest.raises(InstrumentError, match=message) as error:
        instrument_from_spec(_spec(**item), "spec.toml")
    assert str(error.value).startswith("spec.toml: item 1 ('a')")


def test_an_instrument_stored_before_scales_had_a_lowest_point_still_loads_from_1():
    stored = instrument_to_dict(AISS_V1)
    for item in stored["items"]:
        del item["low"]
    old = instrument_from_dict(json.loads(json.dumps(stored)))
    assert old == AISS_V1
    assert (old.item("1").low, old.item("1").high) == (1, 5)
    rubric = instrument_from_spec(RUBRIC, "rubric.toml")
    assert instrument_from_dict(json.loads(json.dumps(instrument_to_dict(rubric)))) == rubric


def test_load_instrument_by_name():
    assert load_instrument("aiss-v1") is AISS_V1
    assert load_instrument("ttcw") is TTCW


def test_load_instrument_explains_fei_and_unknown_names(tmp_path):
    with pytest.raises(InstrumentError, match=r"fei_instrument\(questions\)"):
        load_instrument("fei")
    with pytest.raises(InstrumentError, match="Unknown instrument 'aiss-v2': use aiss-v1, ttcw"):
        load_instrument("aiss-v2")
    broken = tmp_path / "broken.toml"
    broken.write_text("id = ", encoding="utf-8")
    with pytest.raises(InstrumentError, match="not valid TOML"):
        load_instrument(str(broken))
