"""Corrupted controls (FEI §5): seeded, labelled copies whose text really changes."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from cyoa.metrics.text import split_sentences
from cyoa.rating.stories import StoryRecord
from cyoa.rating.stories.corrupt import (
    ANTONYM_SWAPS,
    ANTONYMS,
    OPERATIONS,
    PAPER_OPERATIONS,
    CorruptionError,
    corrupt,
    negate,
    shuffle_sentences,
    shuffle_span,
    swap_adjectives,
    swap_antonyms,
    swap_sentences,
)

LIGHTHOUSE = (
    "The old keeper climbed the narrow stairs every night. He was tired, but the lamp had to "
    "burn. One stormy evening a small boat appeared near the rocks. The keeper could not see "
    "its crew.\n\nHe waved his bright lantern from the gallery. The boat turned away from the "
    "sharp rocks. In the morning a young sailor knocked on his door. She thanked him with a "
    "warm smile."
)
BAKERY = (
    "Mira opened her bakery before dawn. The ovens were cold and the street was quiet. She "
    "kneaded the dough with strong hands. A hungry cat watched from the window. By six the "
    "first loaves were golden. The neighbours came in one by one."
)
GARDEN = (
    "The garden behind the school was empty for years. Tom planted beans in the dark soil. "
    "His sister laughed at the crooked rows. Green shoots appeared after a week. Soon the "
    "whole class wanted a plot."
)
STORIES = [
    StoryRecord("1", "human", "The lighthouse", LIGHTHOUSE, origin={"file": "a.jsonl"}),
    StoryRecord("2", "human", "The bakery", BAKERY),
    StoryRecord("3", "model", "The garden", GARDEN),
]


def words(text: str) -> int:
    return len(text.split())


def test_shuffling_keeps_every_sentence_once_and_changes_their_order():
    result = shuffle_sentences(LIGHTHOUSE, random.Random(1))
    assert result is not None
    assert result.text != LIGHTHOUSE
    assert Counter(split_sentences(result.text)) == Counter(split_sentences(LIGHTHOUSE))
    (change,) = result.changes
    assert sorted(change["order"]) == list(range(8))
    assert change["order"] != list(range(8))


def test_shuffling_keeps_the_paragraphs_and_their_number_of_sentences():
    result = shuffle_sentences(LIGHTHOUSE, random.Random(2))
    paragraphs = result.text.split("\n\n")
    assert [len(split_sentences(p)) for p in paragraphs] == [4, 4]


def test_two_sentences_are_always_swapped_whatever_the_seed():
    for seed in range(40):
        result = shuffle_sentences("It rained. We stayed in.", random.Random(seed))
        assert result.text == "We stayed in. It rained."


def test_a_story_of_one_sentence_or_of_one_repeated_sentence_cannot_be_shuffled():
    assert shuffle_sentences("Only one sentence here.", random.Random(0)) is None
    assert shuffle_sentences("Run. Run. Run.", random.Random(0)) is None


def test_swapping_brings_in_sentences_of_other_stories_in_place_of_a_third():
    donors = {"2": split_sentences(BAKERY), "3": split_sentences(GARDEN)}
    result = swap_sentences(LIGHTHOUSE, donors, random.Random(5))
    # 8 sentences: round(8 / 3) = 3 replaced, at their own positions.
    assert len(result.changes) == 3
    original = split_sentences(LIGHTHOUSE)
    now = split_sentences(result.text)
    assert len(now) == len(original)
    for change in result.changes:
        assert change["old"] == original[change["position"]]
        assert now[change["position"]] == change["new"]
        assert donors[change["from_story"]][change["from_position"]] == change["new"]
    assert len({change["new"] for change in result.changes}) == 3


@pytest.mark.parametrize(
    ("sentence", "negated"),
    [
        ("He was tired.", "He was not tired."),
        ("The water is cold.", "The water is not cold."),
        ("She's happy.", "She's not happy."),
        ("The old man would have been angry.", "The old man would not have been angry."),
        ("She was walking to the forest.", "She was not walking to the forest."),
        ("He walked home.", "He did not walk home."),
        ("It walks home.", "It does not walk home."),
        ("There is a house.", "There is not a house."),
        ("He could not see the small boat.", "He could see the small boat."),
        ("They didn't know.", "They did know."),
        ("I can't go.", "I can go."),
        ("It won't stop.", "It will stop."),
        ("The king cannot sleep.", "The king can sleep."),
        ("He never came back.", "He came back."),
    ],
)
def test_negation_flips_the_main_clause_by_its_auxiliary_copula_or_verb(sentence, negated):
    result = negate(sentence, random.Random(0))
    assert result.text == negated
    (change,) = result.changes
    assert change["sentence"] == 0


def test_negation_changes_a_third_of_the_sentences():
    result = negate(LIGHTHOUSE, random.Random(3))
    # 8 sentences → 3 negated, each by one edit.
    assert len(result.changes) == 3
    assert len({change["sentence"] for change in result.changes}) == 3
    assert result.text != LIGHTHOUSE
    assert abs(words(result.text) - words(LIGHTHOUSE)) <= 3


def test_a_sentence_without_a_verb_cannot_be_negated():
    assert negate("Go home now!", random.Random(0)) is None


def test_two_adjectives_trade_places_and_the_article_follows():
    result = swap_adjectives("The old man saw a tall tree.", random.Random(0))
    assert result.text == "The tall man saw an old tree."
    assert [change["new"] for change in result.changes] == ["tall", "an", "old"]


def test_an_adjective_moved_to_the_start_of_a_sentence_is_capitalized():
    result = swap_adjectives("Cold rain fell on the quiet town.", random.Random(0))
    assert result.text == "Quiet rain fell on the cold town."


def test_swapping_adjectives_keeps_every_adjective_and_every_other_word():
    result = swap_adjectives(LIGHTHOUSE, random.Random(4))
    assert result.text != LIGHTHOUSE
    before, after = LIGHTHOUSE.split(), result.text.split()
    assert len(before) == len(after)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    old = Counter(a.strip(".,").lower() for a, _ in changed if a.lower() not in ("a", "an"))
    new = Counter(b.strip(".,").lower() for _, b in changed if b.lower() not in ("a", "an"))
    assert old == new


def test_a_story_with_fewer_than_two_different_adjectives_cannot_swap_them():
    assert swap_adjectives("The old man slept. The old dog slept.", random.Random(0)) is None


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_every_operation_gives_the_same_copies_for_the_same_seed(operation):
    first = corrupt(STORIES, operation, seed=7)
    assert corrupt(STORIES, operation, seed=7) == first
    assert [copy.text for copy in first] != [story.text for story in STORIES]


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_every_copy_is_changed_labelled_and_keeps_its_length_order_of_magnitude(operation):
    copies = corrupt(STORIES, operation, seed=11)
    label = OPERATIONS[operation].label
    assert len(copies) == 3
    for story, copy in zip(STORIES, copies, strict=True):
        assert copy.text != story.text
        assert copy.source == f"{story.source} ({label})"
        assert copy.story_id == f"{story.story_id}-{OPERATIONS[operation].suffix}"
        assert copy.family == story.story_id
        assert copy.title == story.title
        assert copy.origin["operation"] == operation
        assert copy.origin["seed"] == 11
        assert copy.origin["original_id"] == story.story_id
        assert copy.origin["original_origin"] == story.origin
        assert copy.origin["changes"]
        assert 0.5 < words(copy.text) / words(story.text) < 2


def test_different_seeds_give_different_shuffles():
    texts = {corrupt(STORIES, "shuffle_sentences", seed=seed)[0].text for seed in range(5)}
    assert len(texts) > 1


def test_a_fraction_copies_that_share_of_the_stories_drawn_by_the_seed():
    copies = corrupt(STORIES, "shuffle_sentences", seed=1, fraction=0.5)
    # round(3 × 0.5) = 2 (halves round up), in the order of the set.
    assert len(copies) == 2
    ids = [copy.origin["original_id"] for copy in copies]
    assert ids == sorted(ids)
    assert corrupt(STORIES, "shuffle_sentences", seed=1, fraction=0.5) == copies
    # A story's copy depends on its seed and text, not on which others were copied.
    whole = {copy.story_id: copy for copy in corrupt(STORIES, "shuffle_sentences", seed=1)}
    assert all(whole[copy.story_id] == copy for copy in copies)


def test_sentences_are_never_swapped_in_from_a_copy_of_the_same_story():
    shuffled = corrupt(STORIES[:1], "shuffle_sentences", seed=0)
    copies = corrupt([STORIES[0], *shuffled, STORIES[1]], "swap_sentences", seed=2, fraction=1.0)
    first = copies[0]
    assert {change["from_story"] for change in first.origin["changes"]} == {"2"}


def test_a_copy_of_a_copy_keeps_the_family_of_the_original():
    shuffled = corrupt(STORIES[:1], "shuffle_sentences", seed=0)
    (negated,) = corrupt(shuffled, "negate", seed=0)
    assert negated.family == "1"
    assert negated.family_id == "1"
    assert negated.source == "human (shuffled) (negated)"


def test_corrupt_refuses_what_it_cannot_do_and_says_what_to_do():
    with pytest.raises(CorruptionError, match="Unknown corruption 'reverse': use one of"):
        corrupt(STORIES, "reverse", seed=0)
    with pytest.raises(CorruptionError, match="fraction must be above 0"):
        corrupt(STORIES, "negate", seed=0, fraction=0)
    link = StoryRecord("9", "nyer", "A link", "", url="https://example.org/story")
    with pytest.raises(CorruptionError, match="Stories 9 have no text"):
        corrupt([*STORIES, link], "negate", seed=0)
    short = StoryRecord("4", "model", "", "Only one sentence here.")
    with pytest.raises(CorruptionError, match="cannot change stories 4: it has fewer than two"):
        corrupt([*STORIES, short], "shuffle_sentences", seed=0)
    taken = StoryRecord("1-negated", "model", "", GARDEN)
    with pytest.raises(CorruptionError, match="ids 1-negated are taken"):
        corrupt([STORIES[0], taken], "negate", seed=0, fraction=1.0)
    with pytest.raises(CorruptionError, match="appear more than once"):
        corrupt([STORIES[0], STORIES[0]], "negate", seed=0)


# --- FEI §5's own corruptions, the defaults -------------------------------------------------


def test_the_papers_corruptions_come_first_and_the_stronger_ones_stay_as_options():
    assert list(OPERATIONS)[:2] == ["shuffle_span", "swap_antonyms"]
    assert PAPER_OPERATIONS == {"transitional": "shuffle_span", "world": "swap_antonyms"}
    assert {"shuffle_sentences", "swap_sentences", "negate", "swap_adjectives"} <= set(OPERATIONS)
    assert "FEI §5.2" in OPERATIONS["shuffle_span"].summary
    assert "FEI §5.1" in OPERATIONS["swap_antonyms"].summary


def test_a_span_shuffle_reorders_three_consecutive_sentences_and_leaves_the_rest_in_place():
    original = split_sentences(LIGHTHOUSE)
    starts = set()
    for seed in range(30):
        result = shuffle_span(LIGHTHOUSE, random.Random(seed))
        (change,) = result.changes
        start, end = change["span"]
        starts.add(start)
        assert end - start == 3
        now = split_sentences(result.text)
        assert now[:start] == original[:start] and now[end:] == original[end:]
        assert now[start:end] != original[start:end]
        assert sorted(now[start:end]) == sorted(original[start:end])
        assert [original[i] for i in change["order"]] == now
    # Any of the 6 spans of an 8-sentence story can be drawn.
    assert starts == set(range(6))


def test_a_span_shuffle_of_a_short_story_uses_what_there_is():
    assert shuffle_span("It rained. We stayed in.", random.Random(0)).text == (
        "We stayed in. It rained."
    )
    assert shuffle_span("Only one sentence here.", random.Random(0)) is None


def test_a_span_shuffle_keeps_the_paragraphs_and_their_number_of_sentences():
    result = shuffle_span(LIGHTHOUSE, random.Random(2))
    assert [len(split_sentences(p)) for p in result.text.split("\n\n")] == [4, 4]


def test_antonyms_replace_a_few_adjectives_and_the_article_follows():
    result = swap_antonyms("The old man saw an old tree by a tall house.", random.Random(0))
    assert result.text == "The young man saw a young tree by a short house."
    assert [c["new"] for c in result.changes] == ["young", "a", "young", "short"]


def test_antonyms_reach_adverbs_and_keep_a_capital():
    result = swap_antonyms("Slowly the dark water rose.", random.Random(1))
    assert result.text == "Quickly the light water rose."


def test_at_most_a_few_words_of_a_story_are_turned_into_their_antonyms():
    result = swap_antonyms(LIGHTHOUSE, random.Random(4))
    words_changed = [c for c in result.changes if c["old"].lower() not in ("a", "an")]
    assert 1 <= len(words_changed) <= ANTONYM_SWAPS == 3
    for change in words_changed:
        assert ANTONYMS[change["old"].lower()] == change["new"].lower()
    before, after = LIGHTHOUSE.split(), result.text.split()
    assert len(before) == len(after)


def test_the_antonym_list_names_a_different_word_for_each():
    assert len(ANTONYMS) > 100
    assert all(word != opposite and opposite for word, opposite in ANTONYMS.items())


def test_a_story_without_a_listed_adjective_or_adverb_has_no_antonym_to_swap():
    assert swap_antonyms("Mara ran to the door.", random.Random(0)) is None
