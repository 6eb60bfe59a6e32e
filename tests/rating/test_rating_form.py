"""The rating form's fields become the spec that spec files are checked by, and a stored spec
becomes the form again: checks, exclusion rules, corrupted controls, generated stories."""

from __future__ import annotations

from pathlib import Path

import pytest

from cyoa.rating.form import (
    RatingFormError,
    custom_instrument_table,
    experiment_id,
    form_defaults,
    form_from_spec,
    generation_from_form,
    spec_from_form,
)
from cyoa.rating.instruments import instrument_from_spec
from cyoa.rating.spec import parse_rating_spec

FILES = {"stories": "stories/s.jsonl"}


def form(**overrides) -> dict:
    return {
        **form_defaults(),
        "id": "pilot",
        "title": "Short stories",
        "consent": "You agree.",
        "instructions": "Read, then answer.",
        **overrides,
    }


def test_the_form_becomes_the_spec_a_spec_file_would_hold():
    spec = spec_from_form(
        form(
            completion_url="https://example.org/done?cc={code}",
            raters_per_story="4",
            links="on",
            checks="qc-village | true_false | true | s1 | The story takes place in a village.\n\n"
            "qc-mood | likert-5 | 2 |  | Select 2 | with a bar",
            exclude_failed_checks="1",
            exclude_words_per_minute="600",
            exclude_words_per_minute_statistic="max",
            exclude_straight_lining="2",
            corrupt_swap_sentences="on",
            corrupt_swap_sentences_seed="9",
            corrupt_swap_sentences_fraction="0.5",
        ),
        FILES,
    )
    assert spec == {
        "id": "pilot",
        "kind": "rating",
        "title": "Short stories",
        "consent": "You agree.",
        "instructions": "Read, then answer.",
        "completion_url": "https://example.org/done?cc={code}",
        "raters_per_story": 4,
        "stories_per_rater": 1,
        "dropout_minutes": 60,
        "first_answer_minutes": 15,
        "instrument": "aiss-v1",
        "stories": {"file": "stories/s.jsonl", "links": True},
        "attention_checks": [
            {"builtin": "aiss"},
            {"id": "qc-village", "text": "The story takes place in a village.",
             "kind": "true_false", "answer": "true", "story_id": "s1"},
            {"id": "qc-mood", "text": "Select 2 | with a bar", "kind": "likert", "points": 5,
             "answer": 2},
        ],
        "exclusions": [
            {"rule": "failed_attention_checks", "at_least": 1},
            {"rule": "words_per_minute", "above": 600.0, "statistic": "max"},
            {"rule": "straight_lining", "at_least": 2, "min_items": 5},
        ],
        "corrupt": [{"operation": "swap_sentences", "seed": 9, "fraction": 0.5}],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("title", "Title: this is empty"),
        ("consent", "Consent: this is empty; please write what raters agree to"),
        ("instructions", "Instructions: this is empty"),
    ],
)
def test_blank_texts_for_raters_are_refused_by_name(field, message):
    with pytest.raises(RatingFormError, match=message):
        spec_from_form(form(**{field: "  "}), FILES)


@pytest.mark.parametrize(
    ("overrides", "files", "message"),
    [
        ({"raters_per_story": "three"}, FILES, "Raters per story: please enter a whole number"),
        ({}, {}, "Stories: choose a stories file .* files must be chosen again"),
        ({"instrument": "custom"}, FILES, "Custom instrument: choose its TOML file"),
        ({"instrument": "fei"}, FILES, "FEI questions: choose the questions file"),
        ({"stories_from": "cowriting"}, {}, "choose the co-writing experiment"),
        ({"checks": "qc | yes_no | yes"}, FILES, "Attention checks, line 1: write 'id | kind"),
        ({"exclude_seconds_per_story": "soon"}, FILES, "Seconds per story: please enter a number"),
        ({"corrupt_negate": "on", "corrupt_negate_seed": "x"}, FILES, "negate: seed"),
    ],
)
def test_a_form_that_cannot_be_a_spec_says_which_field_to_fix(overrides, files, message):
    with pytest.raises(RatingFormError, match=message):
        spec_from_form(form(**overrides), files)


@pytest.mark.parametrize("bad", ["", "New", "../up", "new", "a" * 65])
def test_an_experiment_id_must_be_a_plain_free_name(bad):
    with pytest.raises(RatingFormError, match="Experiment id"):
        experiment_id({"id": bad})


def test_a_stored_spec_comes_back_as_the_form_that_makes_it_again(tmp_path: Path):
    (tmp_path / "stories").mkdir()
    (tmp_path / "stories" / "s.jsonl").write_text(
        '{"story_id": "s1", "source": "human", "text": "One. Two. Three."}\n'
        '{"story_id": "s2", "source": "model", "text": "Four. Five. Six."}\n'
    )
    sent = form(
        checks="qc | yes_no | no | s2 | Was there a dog?",
        exclude_seconds_per_story="40",
        exclude_seconds_per_story_statistic="min",
        corrupt_shuffle_sentences="on",
        corrupt_shuffle_sentences_seed="4",
    )
    spec = spec_from_form(sent, FILES)
    parse_rating_spec(spec, "test", tmp_path)
    again = form_from_spec(spec, spec["title"])
    assert again["stories_from"] == "keep" and again["aiss_check"] == "on"
    assert again["checks"] == "qc | yes_no | no | s2 | Was there a dog?"
    assert spec_from_form(again, FILES) == spec


def test_a_spec_files_boolean_answers_are_shown_as_words():
    spec = {
        "instrument": "my-scale",
        "attention_checks": [{"id": "qc", "kind": "yes_no", "answer": True, "text": "Dog?"}],
    }
    values = form_from_spec(spec, "T")
    assert values["instrument"] == "custom" and values["checks"] == "qc | yes_no | yes |  | Dog?"


def test_a_stored_custom_instrument_is_kept_as_its_table():
    table = {
        "id": "my-scale",
        "name": "My scale",
        "items": [
            {"id": "fun", "text": "It was fun.", "kind": "likert", "points": 3,
             "labels": ["No", "Maybe", "Yes"], "reverse": True, "factor": "Joy"},
            {"id": "why", "text": "Why?", "kind": "text", "rationale": True},
        ],
    }  # fmt: skip
    instrument = instrument_from_spec(table, "test")
    assert instrument_from_spec(custom_instrument_table(instrument), "again") == instrument


def test_a_stored_custom_instrument_keeps_a_scale_that_starts_at_zero():
    table = {
        "id": "rubric",
        "name": "Rubric",
        "items": [{"id": "plot", "text": "Plot?", "kind": "likert", "low": 0, "points": 11}],
    }
    instrument = instrument_from_spec(table, "test")
    kept = instrument_from_spec(custom_instrument_table(instrument), "again")
    assert kept == instrument and (kept.item("plot").low, kept.item("plot").high) == (0, 10)


def test_generated_stories_need_two_loaded_models_and_a_prompt():
    chosen = form(generate_models=["fake-a", "fake-b"], prompts="Once.\n\nTwice.", seed="3")
    generation = generation_from_form(chosen, {"fake-a", "fake-b"})
    assert generation.total == 4 and generation.prompts == ("Once.", "Twice.")
    assert [p["story_id"] for p in generation.placeholders()] == [
        "fake-a-p1-1", "fake-b-p1-1", "fake-a-p2-1", "fake-b-p2-1"
    ]  # fmt: skip
    with pytest.raises(RatingFormError, match="choose two or more models"):
        generation_from_form(form(generate_models=["fake-a"], prompts="Once."), {"fake-a"})
    with pytest.raises(RatingFormError, match="has not loaded fake-c; choose among fake-a"):
        generation_from_form(form(generate_models=["fake-a", "fake-c"], prompts="x"), {"fake-a"})
    with pytest.raises(RatingFormError, match="write at least one prompt"):
        generation_from_form(form(generate_models=["fake-a", "fake-b"]), {"fake-a", "fake-b"})
    with pytest.raises(RatingFormError, match="sentences per story: use a whole number from 1"):
        generation_from_form({**chosen, "sentences": "0"}, {"fake-a", "fake-b"})


def test_a_digit_that_is_not_a_number_is_not_read_as_one():
    spec = spec_from_form(form(checks="q1 | likert-5 | ² | | Pick two."), FILES)
    assert spec["attention_checks"][-1]["answer"] == "²"  # the spec check then names it
    with pytest.raises(RatingFormError, match="likert-N"):
        spec_from_form(form(checks="q1 | likert-² | 2 | | Pick."), FILES)


def test_thresholds_come_back_as_the_same_numbers():
    spec = {
        "id": "pilot", "title": "T",
        "exclusions": [{"rule": "seconds_per_story", "below": 1234567.0},
                       {"rule": "words_per_minute", "above": 612.5}],
        "corrupt": [{"operation": "negate", "seed": 3, "fraction": 0.125}],
    }  # fmt: skip
    values = form_from_spec(spec, "T")
    assert values["exclude_seconds_per_story"] == "1234567"
    assert values["exclude_words_per_minute"] == "612.5"
    assert values["corrupt_negate_fraction"] == "0.125"
