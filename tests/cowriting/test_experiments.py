"""Experiment specs: the shipped ones load, and a broken one says what to fix."""

import pytest

from cyoa.cowriting.flow import RuleError
from cyoa.cowriting.spec import (
    DEFAULT_LIKERT,
    SpecError,
    experiment_from_dict,
    load_experiments,
    validate_survey,
)
from cyoa.generation import load_model_cards
from tests.paths import ROOT

CARDS = load_model_cards(ROOT / "models")


def spec(**overrides):
    base = {
        "id": "demo",
        "title": "Demo",
        "systems": [
            {"name": "a", "model": "gemma-3-270m"},
            {"name": "b", "model": "gemma-3-270m", "sampling": {"top_k": 0, "top_p": 0.9}},
        ],
    }
    return {**base, **overrides}


def test_the_shipped_experiments_compare_the_papers_setups():
    experiments = load_experiments(ROOT / "experiments", CARDS)
    assert set(experiments) == {"short-story-1", "short-story-2"}
    a, b = experiments["short-story-1"].systems
    assert (a.model.name, b.model.name) == ("gemma-3-270m", "smollm2-135m-instruct")
    assert a.sampling.top_k == b.sampling.top_k == 40
    topk, nucleus = experiments["short-story-2"].systems
    assert topk.model is nucleus.model or topk.model == nucleus.model
    assert (topk.sampling.top_k, topk.sampling.top_p) == (40, 1.0)
    assert (nucleus.sampling.top_k, nucleus.sampling.top_p) == (0, 0.9)
    for exp in experiments.values():
        assert (exp.limits.rounds, exp.limits.min_chars, exp.limits.max_chars) == (5, 20, 260)


def test_the_default_survey_is_the_papers():
    exp = experiment_from_dict(spec(), CARDS)
    likert = [i.text for i in exp.survey if i.kind == "likert"]
    assert likert == [text for _, text in DEFAULT_LIKERT]
    assert [i.text for i in exp.survey if i.kind == "open"] == [
        "What made you choose one suggestion over another?",
        "What were you looking for in the suggestions?",
    ]


def test_the_survey_is_configurable():
    exp = experiment_from_dict(
        spec(survey={"likert": [{"id": "fun", "text": "It was fun."}], "open": []}), CARDS
    )
    assert [(i.id, i.kind) for i in exp.survey] == [("fun", "likert")]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"systems": []}, "at least two"),
        ({"id": "Bad Id"}, "'id' must be lowercase"),
        (
            {"systems": [{"name": "a", "model": "gpt-5"}, {"name": "b", "model": "gemma-3-270m"}]},
            "unknown model 'gpt-5'",
        ),
        (
            {
                "systems": [
                    {"name": "a", "model": "gemma-3-270m", "sampling": {"top_p": 2}},
                    {"name": "b", "model": "gemma-3-270m"},
                ]
            },
            "invalid sampling",
        ),
        ({"min_chars": 300}, "min_chars <= max_chars"),
        ({"pairing": "greedy"}, "'pairing' must be one of balanced, adaptive"),
        ({"pairing": "adaptive"}, "needs at least three"),
        ({"record_keystrokes": "yes"}, "'record_keystrokes' must be true or false"),
        (
            {"exclusions": [{"rule": "process_flags", "flags": ["pasted"]}]},
            "must name flags from pasted_line, fast_typing, hidden_tab",
        ),
        (
            {"exclusions": [{"rule": "words_per_minute", "above": 600}]},
            'must read rule = "process_flags"',
        ),
    ],
)
def test_a_broken_spec_names_the_problem(overrides, message):
    with pytest.raises(SpecError, match=message):
        experiment_from_dict(spec(**overrides), CARDS, where="demo.toml")


def test_survey_answers_are_checked():
    exp = experiment_from_dict(spec(), CARDS)
    answers = {i: 3 for i, _ in DEFAULT_LIKERT}
    assert validate_survey({**answers, "why_chosen": "  because  "}, exp.survey)["why_chosen"] == (
        "because"
    )
    with pytest.raises(RuleError):
        validate_survey({**answers, "happy": True}, exp.survey)
    with pytest.raises(RuleError):
        validate_survey({**answers, "happy": 4.0}, exp.survey)  # the tables store whole numbers
    with pytest.raises(RuleError):
        validate_survey({**answers, "extra": 1}, exp.survey)


def test_pairing_is_balanced_unless_the_spec_asks_for_adaptive():
    assert experiment_from_dict(spec(), CARDS).pairing == "balanced"
    three = spec(pairing="adaptive")
    three["systems"] = [*three["systems"], {"name": "c", "model": "gemma-3-270m"}]
    assert experiment_from_dict(three, CARDS).pairing == "adaptive"


def test_the_process_flag_rule_is_off_unless_the_spec_names_flags():
    assert experiment_from_dict(spec(), CARDS).exclude_flags == ()
    rule = [{"rule": "process_flags", "flags": ["hidden_tab", "pasted_line"]}]
    exp = experiment_from_dict(spec(exclusions=rule), CARDS)
    assert exp.exclude_flags == ("pasted_line", "hidden_tab")
