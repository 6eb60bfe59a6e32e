"""Quality control: attention checks, time on task, straight-lining, and exclusion rules
written before the study, worked by hand."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from cyoa.rating.instruments import AISS_V1, TTCW
from cyoa.rating.quality import (
    AISS_CHECK_ID,
    AISS_QUALITY_CHECK,
    Answer,
    AttentionCheck,
    ExclusionRule,
    QualitySpecError,
    StoryShown,
    evaluate_exclusions,
    exclusion_summary,
    quality_spec,
    rater_quality,
    split_judgements,
    story_words,
    time_on_task,
    words_per_minute,
)

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SPEC = {
    "id": "pilot",
    "attention_checks": [
        {"builtin": "aiss"},
        {
            "id": "qc-village",
            "story_id": "s1",
            "text": "The story takes place in a village.",
            "kind": "true_false",
            "answer": True,
        },
        {
            "id": "qc-dark",
            "story_id": "s2",
            "text": "How dark was the story's night?",
            "kind": "likert",
            "points": 3,
            "labels": ["Light", "Dim", "Pitch black"],
            "answer": 3,
        },
    ],
    "exclusions": [
        {"rule": "failed_attention_checks", "at_least": 1},
        {"rule": "words_per_minute", "above": 600},
        {"rule": "straight_lining", "at_least": 1},
    ],
}


def seconds(n: float) -> datetime:
    return T0 + timedelta(seconds=n)


def aiss_page(story_id: str, answers: dict[str, float], at: float) -> list[Answer]:
    return [Answer(story_id, item, value, seconds(at)) for item, value in answers.items()]


def test_the_aiss_quality_check_is_passed_by_somewhat_disagree_only():
    assert AISS_QUALITY_CHECK.id == AISS_CHECK_ID == "qc-aiss"
    assert AISS_QUALITY_CHECK.text == 'This is a quality check. Please select "Somewhat disagree".'
    assert AISS_QUALITY_CHECK.labels == AISS_V1.items[0].labels
    assert AISS_QUALITY_CHECK.labels[1] == "Somewhat disagree"
    (check, *_) = quality_spec(SPEC, "pilot.toml").checks
    assert check.item == AISS_QUALITY_CHECK
    assert check.parse("2") == 2.0
    assert check.passes(2.0)
    assert not check.passes(1.0) and not check.passes(3.0) and not check.passes(None)


def test_a_spec_gives_its_checks_for_each_story_and_its_rules_in_order():
    spec = quality_spec(SPEC, "pilot.toml", instrument=AISS_V1, story_ids={"s1", "s2"})
    assert [check.id for check in spec.checks_for("s1")] == ["qc-aiss", "qc-village"]
    assert [check.id for check in spec.checks_for("s2")] == ["qc-aiss", "qc-dark"]
    village, dark = spec.checks[1], spec.checks[2]
    assert village.answer == 1.0 and village.item.kind == "true_false"
    assert dark.answer == 3.0 and dark.item.labels == ("Light", "Dim", "Pitch black")
    assert [rule.describe() for rule in spec.exclusions] == [
        "failed at least 1 attention check",
        "read faster than 600 words per minute (median story)",
        "gave the same answer to every Likert item on at least 1 page (of 5 or more items)",
    ]


def test_a_spec_without_checks_or_rules_asks_for_none():
    spec = quality_spec({"id": "plain"}, "plain.toml")
    assert spec.checks == () and spec.exclusions == ()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"exclusions": [{"rule": "words_per_minute", "above": "600"}]},
            "pilot.toml: exclusion rule 1 (words_per_minute): above must be a number above 0, "
            "not '600'.",
        ),
        (
            {"exclusions": [{"rule": "words_per_minute"}]},
            "exclusion rule 1 (words_per_minute): above is missing",
        ),
        (
            {"exclusions": [{"rule": "speed", "above": 1}]},
            "exclusion rule 1: rule must be one of failed_attention_checks, words_per_minute",
        ),
        (
            {"exclusions": [{"rule": "failed_attention_checks", "at_least": 0}]},
            "(failed_attention_checks): at_least must be a whole number of at least 1, not 0.",
        ),
        (
            {"exclusions": [{"rule": "seconds_per_story", "below": 40, "statistic": "max"}]},
            "(seconds_per_story): statistic must be one of median, min, not 'max'.",
        ),
        (
            {"exclusions": [{"rule": "straight_lining", "at_least": 1, "items": 5}]},
            "(straight_lining): unknown field(s) items: this rule takes at_least, min_items.",
        ),
        (
            {"exclusions": [{"rule": "straight_lining", "at_least": 1}] * 2},
            "exclusion rule 2 (straight_lining): the same rule is given twice",
        ),
        (
            {
                "attention_checks": [],
                "exclusions": [{"rule": "failed_attention_checks", "at_least": 1}],
            },
            "the spec has no attention checks to fail",
        ),
        (
            {"attention_checks": [{"builtin": "ttcw"}]},
            'the built-in check: builtin must be "aiss"',
        ),
        (
            {
                "attention_checks": [
                    {"id": "q", "text": "Was it night?", "kind": "yes_no", "answer": "maybe"}
                ]
            },
            "attention check 1 ('q'): answer: Item q of attention checks takes Yes or No",
        ),
        (
            {
                "attention_checks": [
                    {"id": "q", "text": "Was it?", "kind": "likert", "points": 5, "answer": 6}
                ]
            },
            "attention check 1 ('q'): answer: Item q of attention checks takes a whole number "
            "from 1 to 5; got 6.",
        ),
        (
            {"attention_checks": [{"id": "q", "text": "Was it?", "kind": "text", "answer": "x"}]},
            "attention check 1 ('q'): kind must be one of yes_no, true_false, likert, not 'text'.",
        ),
        (
            {"attention_checks": [{"id": "q", "text": "Was it?", "kind": "yes_no"}]},
            "attention check 1 ('q'): answer is missing",
        ),
        (
            {
                "attention_checks": [
                    {"id": "1", "text": "Was it?", "kind": "yes_no", "answer": "yes"}
                ]
            },
            "attention check 1 ('1'): id is an item of the instrument aiss-v1",
        ),
        (
            {"attention_checks": [{"builtin": "aiss"}, {"builtin": "aiss"}]},
            "the built-in check: id repeats an earlier check's",
        ),
        (
            {"attention_checks": [{"builtin": "aiss", "story_id": "s9"}]},
            "story_id 's9' is not one of the study's stories",
        ),
        (
            {"attention_checks": {"builtin": "aiss"}},
            "attention_checks must be a list of tables",
        ),
    ],
)
def test_a_bad_quality_spec_is_refused_naming_the_rule_or_check_and_the_field(change, message):
    spec = {**SPEC, **change}
    with pytest.raises(QualitySpecError) as error:
        quality_spec(spec, "pilot.toml", instrument=AISS_V1, story_ids={"s1", "s2"})
    assert message in str(error.value)


def test_time_on_task_and_words_per_minute_by_hand():
    assert story_words("The  old man\nslept.") == 4
    assert time_on_task(T0, seconds(90)) == 90.0
    assert time_on_task(T0, None) is None
    assert words_per_minute(300, 90.0) == 200.0  # 300 words in 1.5 minutes
    assert words_per_minute(300, 0.0) == math.inf
    assert words_per_minute(0, 90.0) is None  # a story shown as a link has no words here
    assert words_per_minute(300, None) is None


def test_a_raters_quality_record_by_hand():
    checks = quality_spec(SPEC, "pilot.toml").checks
    answers = [
        *aiss_page("s1", {"1": 4, "2": 2, "3": 5}, at=50),
        Answer("s1", "qc-aiss", 2.0, seconds(55)),
        Answer("s1", "qc-village", 0.0, seconds(60)),  # wrong: the story is in a village
        *aiss_page("s2", {"1": 3, "2": 3, "3": 3}, at=200),
        Answer("s2", "qc-aiss", 4.0, seconds(210)),  # wrong: not "Somewhat disagree"
    ]
    shown = [
        StoryShown("s1", T0, 300),
        StoryShown("s2", seconds(150), 1000),
        StoryShown("s3", T0, 50),
    ]

    quality = rater_quality("r1", answers, shown, AISS_V1, checks)

    assert [(c.check_id, c.story_id, c.passed) for c in quality.checks] == [
        ("qc-aiss", "s1", True),
        ("qc-village", "s1", False),
        ("qc-aiss", "s2", False),
    ]
    assert quality.failed_checks == 2
    # s1: shown at 0, last answer at 60 s → 300 words/minute; s2: 150 → 210 s, 1000 words
    # in one minute; s3 never answered.
    assert [(s.story_id, s.seconds, s.words_per_minute) for s in quality.stories] == [
        ("s1", 60.0, 300.0),
        ("s2", 60.0, 1000.0),
        ("s3", None, None),
    ]
    assert quality.words_per_minute() == 650.0
    assert quality.words_per_minute("max") == 1000.0
    assert quality.seconds_per_story("min") == 60.0
    # Only the instrument's items make up a page: s1 has 4, 2, 5; s2 has 3, 3, 3 (the
    # checks' answers are left out).
    assert [(p.story_id, p.likert_answers, p.distinct_values) for p in quality.pages] == [
        ("s1", 3, 3),
        ("s2", 3, 1),
    ]


def test_the_same_answer_to_every_item_of_a_page_reversed_ones_included_is_straight_lining():
    every_item = {item.id: 4.0 for item in AISS_V1.items}  # items 2, 9–12, 18–22 are reversed
    answers = aiss_page("s1", every_item, at=100)
    quality = rater_quality("r", answers, [StoryShown("s1", T0, 100)], AISS_V1)
    assert quality.straight_lined_pages(min_items=22) == 1
    assert quality.straight_lined_pages(min_items=23) == 0
    one_differs = aiss_page("s1", {**every_item, "5": 3.0}, at=100)
    assert rater_quality("r", one_differs, [], AISS_V1).straight_lined_pages() == 0


def test_a_correctly_answered_attention_check_does_not_hide_straight_lining():
    checks = quality_spec({"attention_checks": [{"builtin": "aiss"}]}, "pilot.toml").checks
    every_item = aiss_page("s1", {item.id: 4.0 for item in AISS_V1.items}, at=100)
    passed_check = Answer("s1", AISS_CHECK_ID, 2.0, seconds(101))  # "Somewhat disagree"

    with_check = rater_quality("r", [*every_item, passed_check], [], AISS_V1, checks)
    without_check = rater_quality("r", every_item, [], AISS_V1)

    assert with_check.failed_checks == 0
    assert with_check.straight_lined_pages() == without_check.straight_lined_pages() == 1
    assert [(p.likert_answers, p.distinct_values) for p in with_check.pages] == [(22, 1)]


def test_pages_of_one_story_are_judged_apart_and_yes_no_items_never_straight_line():
    answers = [
        *[Answer("s1", str(n), 5.0, page="1") for n in range(1, 12)],
        *[Answer("s1", str(n), float(n % 5 + 1), page="2") for n in range(12, 23)],
    ]
    quality = rater_quality("r", answers, [], AISS_V1)
    assert quality.straight_lined_pages(min_items=5) == 1
    ttcw = [Answer("s1", item.id, 1.0) for item in TTCW.items]
    assert rater_quality("r", ttcw, [], TTCW).pages == ()


def test_an_answer_to_an_unknown_item_is_refused():
    with pytest.raises(ValueError, match="item 'qc-x' about story 's1', which is neither"):
        rater_quality("r", [Answer("s1", "qc-x", 1.0)], [], AISS_V1)


def qualities():
    checks = quality_spec(SPEC, "pilot.toml").checks
    careful = rater_quality(
        "careful",
        [
            *aiss_page("s1", {"1": 4, "2": 2, "3": 5, "4": 4, "5": 3}, at=300),
            Answer("s1", "qc-aiss", 2.0, seconds(300)),
        ],
        [StoryShown("s1", T0, 1000)],  # 1000 words in 5 minutes: 200 per minute
        AISS_V1,
        checks,
    )
    fast = rater_quality(
        "fast",
        [
            *aiss_page("s1", {"1": 4, "2": 2, "3": 5, "4": 4, "5": 3}, at=60),
            Answer("s1", "qc-aiss", 2.0, seconds(60)),
        ],
        [StoryShown("s1", T0, 1000)],  # 1000 words per minute
        AISS_V1,
        checks,
    )
    careless = rater_quality(
        "careless",
        [
            *aiss_page("s1", {"1": 3, "2": 3, "3": 3, "4": 3, "5": 3}, at=300),
            Answer("s1", "qc-aiss", 3.0, seconds(300)),
        ],
        [StoryShown("s1", T0, 1000)],
        AISS_V1,
        checks,
    )
    return careful, fast, careless


def test_each_rater_is_excluded_by_the_rules_they_broke_and_each_rule_is_counted():
    rules = quality_spec(SPEC, "pilot.toml").exclusions
    checks_rule, speed_rule, straight_rule = rules

    exclusions = evaluate_exclusions(rules, qualities())

    assert [(e.rater_id, e.broken, e.excluded) for e in exclusions] == [
        ("careful", (), False),
        ("fast", (speed_rule,), True),
        ("careless", (checks_rule, straight_rule), True),
    ]
    summary = exclusion_summary(rules, exclusions)
    assert (summary.raters, summary.excluded) == (3, 2)
    assert [(c.description, c.raters, c.only_this_rule) for c in summary.by_rule] == [
        ("failed at least 1 attention check", 1, 0),
        ("read faster than 600 words per minute (median story)", 1, 1),
        (straight_rule.describe(), 1, 0),
    ]


def test_a_rater_never_timed_breaks_no_time_rule():
    untimed = rater_quality("r", [Answer("s1", "1", 4.0)], [StoryShown("s1", T0, 500)], AISS_V1)
    rules = (
        ExclusionRule("words_per_minute", above=600, statistic="median"),
        ExclusionRule("seconds_per_story", below=40, statistic="median"),
    )
    assert evaluate_exclusions(rules, [untimed])[0].broken == ()


def test_quick_stories_break_the_seconds_rule():
    quality = rater_quality(
        "r",
        [Answer("s1", "1", 4.0, seconds(30)), Answer("s2", "1", 4.0, seconds(200))],
        [StoryShown("s1", T0, 100), StoryShown("s2", seconds(100), 100)],
        AISS_V1,
    )
    # 30 s and 100 s: the median is 65 s, the quickest 30 s.
    median = ExclusionRule("seconds_per_story", below=40, statistic="median")
    quickest = ExclusionRule("seconds_per_story", below=40, statistic="min")
    assert evaluate_exclusions([median, quickest], [quality])[0].broken == (quickest,)
    assert quickest.describe() == "spent under 40 seconds on a story (quickest story)"


def test_judgements_split_into_kept_and_excluded_raters_without_the_check_items():
    judgements = pd.DataFrame(
        {
            "story_id": ["s1", "s1", "s1", "s2", "s2"],
            "source": ["a", "a", "a", "b", "b"],
            "rater_id": ["careful", "careful", "fast", "fast", "careless"],
            "item": ["1", "qc-aiss", "1", "1", "1"],
            "value": [4.0, 2.0, 5.0, 3.0, 3.0],
            "rationale": [None] * 5,
        },
        index=[10, 11, 12, 13, 14],
    )
    kept, excluded = split_judgements(judgements, {"fast", "careless"}, check_ids={"qc-aiss"})
    assert kept.to_dict("list") == {
        "story_id": ["s1"],
        "source": ["a"],
        "rater_id": ["careful"],
        "item": ["1"],
        "value": [4.0],
        "rationale": [None],
    }
    assert list(excluded["rater_id"]) == ["fast", "fast", "careless"]
    assert list(excluded.index) == [0, 1, 2]
    with pytest.raises(ValueError, match="no rater_id column"):
        split_judgements(judgements.drop(columns="rater_id"), set())


def test_a_check_parses_answers_as_its_kind_reads_them():
    check = AttentionCheck(
        quality_spec(SPEC, "pilot.toml").checks[1].item, answer=1.0, story_id="s1"
    )
    assert check.parse("TRUE") == 1.0
    assert check.parse(False) == 0.0
    assert check.passes(check.parse("true"))
