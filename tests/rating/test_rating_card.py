"""The evaluation card of a rating study: every section Karpinska et al. (2021) ask for, with
the numbers of a small study worked out by hand."""

import dataclasses
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from cyoa.rating.analysis.data import RaterReview
from cyoa.rating.analysis.ratings import analyze_ratings
from cyoa.rating.analysis.report import RatingReport
from cyoa.rating.instruments import instrument_from_spec
from cyoa.rating.quality import (
    Answer,
    StoryShown,
    evaluate_exclusions,
    exclusion_summary,
    quality_spec,
    rater_quality,
)
from cyoa.rating.research.card import CardStory, RatingCardData, rating_card

COLUMNS = ["story_id", "source", "rater_id", "item", "value", "rationale"]
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
INSTRUMENT = instrument_from_spec(
    {
        "id": "mini",
        "name": "Mini scale",
        "version": "2",
        "instructions": "Think of the story you just read.",
        "items": [
            {"id": "clear", "text": "The story was clear.", "kind": "likert", "points": 3,
             "labels": ["No", "Somewhat", "Yes"], "factor": "Clarity"},
            {"id": "again", "text": "Would you read it again?", "kind": "yes_no",
             "rationale": True},
        ],
    },
    "test",
)  # fmt: skip
SPEC = {
    "id": "mini-study",
    "kind": "rating",
    "raters_per_story": 2,
    "stories_per_rater": 2,
    "consent": "You will read two very short stories.",
    "instructions": "Read each story, then answer.",
    "stories": {"file": "stories.jsonl"},
    "attention_checks": [{"id": "qc", "text": "Answer Yes.", "kind": "yes_no", "answer": "yes"}],
    "exclusions": [
        {"rule": "failed_attention_checks", "at_least": 1},
        {"rule": "words_per_minute", "above": 8},
    ],
}
STORIES = (CardStory("s1", "human", 6), CardStory("s2", "model", 10), CardStory("s3", "model", 4))
# rater → story → (seconds from shown to last answer, "clear", "again", attention check)
# Words per minute: r1 6 and 5 (median 5.5); r2 9 and 10 (9.5); r3 30 and 1 (15.5).
RATINGS = {
    "r1": {"s1": (60, 3, 1, 1), "s2": (120, 2, 1, 1)},
    "r2": {"s1": (40, 3, 1, 1), "s2": (60, 2, 0, 1)},
    "r3": {"s2": (20, 1, 0, 0), "s3": (240, 3, 1, 1)},
}


def report() -> RatingReport:
    words = {story.story_id: story.words for story in STORIES}
    sources = {story.story_id: story.source for story in STORIES}
    quality = quality_spec(SPEC, "test", INSTRUMENT, set(words))
    qualities = []
    rows = []
    for rater, stories in RATINGS.items():
        answers, shown = [], []
        for story, (seconds, clear, again, check) in stories.items():
            shown.append(StoryShown(story, START, words[story]))
            done = START + timedelta(seconds=seconds)
            answers += [
                Answer(story, "clear", float(clear), START),
                Answer(story, "qc", float(check), START),
                Answer(story, "again", float(again), done),
            ]
            rows += [
                (story, sources[story], rater, "clear", float(clear), None),
                (story, sources[story], rater, "again", float(again), "Because."),
            ]
        qualities.append(rater_quality(rater, answers, shown, INSTRUMENT, quality.checks))
    exclusions = evaluate_exclusions(quality.exclusions, qualities)
    review = RaterReview(
        tuple(qualities), exclusions, exclusion_summary(quality.exclusions, exclusions), ("qc",)
    )
    frame = pd.DataFrame(rows, columns=COLUMNS)
    kept = frame[frame["rater_id"] == "r1"]
    return RatingReport(
        review,
        analyze_ratings(INSTRUMENT, frame, bootstrap=50),
        analyze_ratings(INSTRUMENT, kept, bootstrap=50),
    )


def card_data() -> RatingCardData:
    return RatingCardData(
        experiment_id="mini-study",
        title="A mini study",
        spec=SPEC,
        instrument=INSTRUMENT,
        quality=quality_spec(SPEC, "test", INSTRUMENT, {s.story_id for s in STORIES}),
        stories=STORIES,
        raters=tuple(
            {
                "rater_id": r,
                "phase": "done",
                "id_source": "prolific",
                "started_at": "09:00",
                "updated_at": "09:05",
            }
            for r in RATINGS
        ),
        raters_per_story={"s1": 2, "s2": 3, "s3": 1},
        report=report(),
    )


DETAILS = {"pay": "£2 per story", "qualifications": "Prolific, UK, approval ≥ 98%"}


@pytest.fixture(scope="module")
def card() -> str:
    return rating_card(card_data(), DETAILS, NOW)


def section(card: str, title: str) -> str:
    """The text of the card's section ``## title``, up to the next section."""
    return card.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_card_has_every_section_the_perils_paper_asks_for(card):
    for title in (
        "Task", "Instrument", "Rated attributes", "Scale and labels", "Instructions", "Stories",
        "Raters per story", "Qualifications and quality control", "Agreement",
        "Human references shown", "Pay", "Time on task (measured)", "Files in the bundle",
    ):  # fmt: skip
        assert f"\n## {title}\n" in card, title
    assert card.startswith("# Evaluation card: A mini study (`mini-study`)")
    assert "Generated 2026-03-01 12:00 UTC" in card


def test_the_card_names_the_instrument_its_items_scale_and_texts(card):
    assert "Mini scale (`mini`, version 2), 2 items." in section(card, "Instrument")
    attributes = section(card, "Rated attributes")
    assert "- `clear` [Clarity] The story was clear." in attributes
    assert "- `again` Would you read it again?" in attributes
    scale = section(card, "Scale and labels")
    assert "1 item: 3-point Likert scale, 1 = No, 2 = Somewhat, 3 = Yes." in scale
    assert "1 item: Yes or No with a written rationale." in scale
    instructions = section(card, "Instructions")
    assert "> Read each story, then answer." in instructions
    assert "> Think of the story you just read." in instructions
    assert "> You will read two very short stories." in instructions


def test_the_card_numbers_a_0_to_10_scale_from_0():
    rubric = instrument_from_spec(
        {"id": "rubric", "name": "Rubric", "items": [
            {"id": "plot", "text": "Plot?", "kind": "likert", "low": 0, "points": 11},
            {"id": "tone", "text": "Tone?", "kind": "likert", "low": 0, "points": 3,
             "labels": ["Flat", "Even", "Vivid"]},
        ]},
        "test",
    )  # fmt: skip
    card = rating_card(dataclasses.replace(card_data(), instrument=rubric), DETAILS, NOW)
    scale = section(card, "Scale and labels")
    assert "1 item: 11-point Likert scale from 0 to 10, numbered points." in scale
    assert "1 item: 3-point Likert scale from 0 to 2, 0 = Flat, 1 = Even, 2 = Vivid." in scale


def test_the_card_gives_story_lengths_and_raters_per_story(card):
    stories = section(card, "Stories")
    # 4, 6 and 10 words: inclusive quartiles 5 and 8.
    assert "3 stories from 2 sources" in stories
    assert "median 6 (IQR 5–8, range 4–10; n = 3)" in stories
    assert "| human | 1 | 6 (one value) |" in stories
    assert "| model | 2 | median 7 (IQR 6–8, range 4–10; n = 2) |" in stories
    raters = section(card, "Raters per story")
    assert "min 1, median 2, max 3; 2 of 3 stories reached the target." in raters
    assert "Raters who started: 3; finished every story: 3; excluded: 2." in raters
    assert "Judgements: 12." in raters


def test_the_card_counts_checks_and_what_each_exclusion_rule_excluded(card):
    quality = section(card, "Qualifications and quality control")
    assert "> Prolific, UK, approval ≥ 98%" in quality
    assert "Right answer: Yes. Answered 6 times, failed 1." in quality
    # r3 failed the check; r2 (9.5) and r3 (15.5) read faster than 8 words per minute.
    rules = [line for line in quality.splitlines() if "by this rule alone" in line]
    assert rules == [
        "- failed at least 1 attention check: broken by 1 rater, 0 of them by this rule alone.",
        "- read faster than 8 words per minute (median story): broken by 2 raters, 1 of them by "
        "this rule alone.",
    ]
    assert "In all 2 of 3 raters excluded." in quality


def test_the_card_reports_agreement_with_its_interval(card):
    agreement = section(card, "Agreement")
    # "again": s1 answered 1, 1 and s2 1, 0, 0 (s3 has one rater): the coincidences are
    # o11 = 2, o10 = o01 = 1, o00 = 1, so α = 1 − (5 − 1) · 2 / (2 · 3 · 2) = 1/3.
    again = next(line for line in agreement.splitlines() if line.startswith("| again |"))
    assert again.startswith("| again | nominal | 0.33 [")
    assert again.endswith("| 2 | 50% |")
    assert "With every rater (Krippendorff's α with a 95% percentile bootstrap" in agreement
    # Only r1 is kept: no story has two raters left.
    kept = agreement.split("Without the excluded raters", 1)[1]
    assert "| again | nominal | – (fewer than 2 stories with two or more ratings) | 0 | – |" in kept


def test_the_card_gives_time_on_task_pay_and_references(card):
    time = section(card, "Time on task (measured)")
    # Seconds 20, 40, 60, 60, 120, 240; words per minute 1, 5, 6, 9, 10, 30.
    assert "Seconds per story: median 60 (IQR 45–105, range 20–240; n = 6)." in time
    assert "speed): median 8 (IQR 5–10, range 1–30; n = 6)." in time
    assert "> £2 per story" in section(card, "Pay")
    assert section(card, "Human references shown").startswith("\nNo.")
