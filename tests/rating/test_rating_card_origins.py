"""The evaluation card lists how each generated story was made (its prompt, the system's
sampling and each sentence's seed), so another researcher can generate it again."""

from __future__ import annotations

from cyoa.rating.quality import quality_spec
from cyoa.rating.research.card import CardStory, RatingCardData, rating_card
from tests.rating.test_rating_card import INSTRUMENT, NOW, SPEC, section

ORIGIN = {
    "generated": True,
    "prompt_index": 1,
    "prompt": "A lighthouse keeper finds a letter | unsigned.",
    "model": "gemma-3-270m",
    "model_version": "v1",
    "sampling": {"top_k": 40, "top_p": 1.0},
    "seeds": [11, 12, 13],
}


def card(stories: tuple[CardStory, ...]) -> str:
    data = RatingCardData(
        experiment_id="mini-study",
        title="A mini study",
        spec=SPEC,
        instrument=INSTRUMENT,
        quality=quality_spec(SPEC, "test", INSTRUMENT, {s.story_id for s in stories}),
        stories=stories,
        raters=(),
        raters_per_story={},
        report=None,
    )
    return rating_card(data, {}, NOW)


def test_generated_stories_are_listed_with_prompt_sampling_and_seeds():
    stories = (
        CardStory("g1", "sys-a", 30, "gemma-3-270m (v1)", ORIGIN),
        CardStory("h1", "human", 25),
    )
    text = section(card(stories), "Stories")
    assert "| story | model | prompt | sampling | seeds |" in text
    assert (
        "| g1 | gemma-3-270m (v1) | A lighthouse keeper finds a letter \\| unsigned. "
        '| `{"top_k": 40, "top_p": 1.0}` | 11, 12, 13 |'
    ) in text
    assert "| h1 |" not in text


def test_a_card_without_generated_stories_has_no_such_table():
    assert "| story | model | prompt |" not in card((CardStory("h1", "human", 25),))


def test_stories_written_to_a_target_length_say_how_close_they_came():
    def lengthened(words: int, rounds: int, within: bool) -> dict:
        control = {"target_words": 1500, "tolerance": 200, "words": words, "rounds": rounds,
                   "within_tolerance": within}  # fmt: skip
        return {**ORIGIN, "length_control": control}

    stories = (
        CardStory("g1", "sys-a", 1420, "gemma-3-270m (v1)", lengthened(1420, 3, True)),
        CardStory("g2", "sys-b", 610, "gemma-3-270m (v1)", lengthened(610, 5, False)),
    )
    text = section(card(stories), "Stories")
    assert (
        "Written to a target length (Chakrabarty et al., CHI 2024, §5.1: the model writes, then "
        "is asked to lengthen its story): 1 of 2 within the tolerance. Kept outside it: g2 "
        "(610 words of 1500 after 5 rounds)."
    ) in text
