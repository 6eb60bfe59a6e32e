"""Trimming a model's output to the one sentence a writer is shown, and building its prompt."""

from __future__ import annotations

import pytest

from cyoa.generation.text import (
    build_prompt,
    display_text,
    sentence_complete,
    trim_suggestion,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        # The first sentence is long enough: everything after it goes.
        (
            " The letter was wet. Nobody had seen it arrive.",
            "The letter was wet. Nobody had seen it arrive.",
        ),
        (
            "He opened it and read the first line twice. Then he burned it.",
            "He opened it and read the first line twice.",
        ),
        # "Yes." is shorter than 20 characters, so the next sentence end is used.
        (
            "Yes. He walked down to the sea and wept. The end.",
            "Yes. He walked down to the sea and wept.",
        ),
        # Exclamation and question marks end sentences too, also doubled.
        ("Who could have written this?! The keeper did not know.", "Who could have written this?!"),
        (
            "What a storm it had been last night! Boats were lost.",
            "What a storm it had been last night!",
        ),
    ],
)
def test_trim_keeps_the_first_sentence_of_at_least_min_chars(raw, expected):
    assert trim_suggestion(raw) == expected


def test_titles_and_decimals_do_not_end_a_sentence():
    raw = "Mr. Smith and Dr. Jones walked 3.5 miles to St. Ives. They were late."
    assert trim_suggestion(raw) == "Mr. Smith and Dr. Jones walked 3.5 miles to St. Ives."
    assert trim_suggestion("Mrs. Hale paid 2.75 pounds for it. Fine.") == (
        "Mrs. Hale paid 2.75 pounds for it."
    )


def test_closing_quotes_and_brackets_stay_with_their_sentence():
    assert trim_suggestion('She whispered, "Nobody must know." Then she left.') == (
        'She whispered, "Nobody must know."'
    )
    assert trim_suggestion("He said it twice (he always did.) Nobody listened.") == (
        "He said it twice (he always did.)"
    )
    assert trim_suggestion("“It is mine,” she said, “all of it.” The gulls cried.") == (
        "“It is mine,” she said, “all of it.”"
    )


def test_quoted_speech_of_several_sentences_is_kept_whole():
    raw = 'He told Mara, "We leave at dawn. Pack light." She nodded. Then she slept.'
    assert trim_suggestion(raw) == 'He told Mara, "We leave at dawn. Pack light."'


def test_a_quote_that_never_closes_ends_at_its_first_sentence():
    raw = 'The letter read: "Dear keeper, the sea is rising. Leave now. Do not'
    assert trim_suggestion(raw) == 'The letter read: "Dear keeper, the sea is rising.'


def test_whitespace_and_newlines_collapse_to_single_spaces():
    raw = "\n\n  The fog\tlifted\n\nslowly over the   harbour.\nMore."
    assert trim_suggestion(raw) == "The fog lifted slowly over the harbour."


def test_a_text_without_sentence_end_is_kept_whole_within_the_limit():
    assert trim_suggestion(" The keeper climbed the stairs and") == (
        "The keeper climbed the stairs and"
    )


def test_a_long_text_is_cut_at_a_word_boundary_within_max_chars():
    raw = "The keeper climbed the long spiral stairs, counting every single step"
    trimmed = trim_suggestion(raw, max_chars=45)
    assert trimmed == "The keeper climbed the long spiral stairs"
    assert len(trimmed) <= 45
    # A boundary exactly at the limit keeps the whole word before it.
    assert trim_suggestion("aaaa bbbb cccc", min_chars=1, max_chars=9) == "aaaa bbbb"
    assert trim_suggestion("aaaa bbbb cccc", min_chars=1, max_chars=8) == "aaaa"


def test_a_sentence_end_beyond_max_chars_is_not_used():
    raw = "word " * 60 + "end."
    trimmed = trim_suggestion(raw, max_chars=260)
    assert len(trimmed) <= 260
    assert trimmed.endswith("word") and not trimmed.endswith(" ")


def test_a_single_word_longer_than_the_limit_is_cut_at_the_limit():
    assert trim_suggestion("x" * 300, max_chars=260) == "x" * 260


def test_unicode_text_is_counted_in_characters():
    raw = "Die Möwe schrie über dem Café… Und dann Stille. Später mehr."
    assert trim_suggestion(raw) == "Die Möwe schrie über dem Café…"
    assert trim_suggestion("Ünïcödé wörds ärë fïnë. Yés.", min_chars=5) == (
        "Ünïcödé wörds ärë fïnë."
    )


def test_too_little_text_comes_back_short_for_the_caller_to_reject():
    assert trim_suggestion("Yes.") == "Yes."
    assert trim_suggestion("   \n ") == ""


def test_sentence_complete_waits_for_the_space_after_the_sentence_end():
    assert not sentence_complete(" The keeper found a second letter", 20, 260)
    # Another piece could still turn this into "3.5" or add a closing quote.
    assert not sentence_complete(" The keeper found a second letter.", 20, 260)
    assert sentence_complete(" The keeper found a second letter. It", 20, 260)
    assert not sentence_complete(" Yes. He", 20, 260)
    assert not sentence_complete(' He said, "Go. Now', 5, 260)
    assert sentence_complete("word " * 53, 20, 260)


def test_display_text_never_exceeds_the_limit_or_splits_a_word():
    assert display_text("\n The keeper  found", 260) == "The keeper found"
    assert display_text("The keeper found a letter", 18) == "The keeper found a"
    assert display_text("The keeper, found", 11) == "The keeper"


def test_build_prompt_joins_turns_and_fills_the_template():
    turns = ["The lighthouse keeper found a letter on the rocks.", "  It was addressed to him. "]
    assert build_prompt(turns, "{story}") == (
        "The lighthouse keeper found a letter on the rocks. It was addressed to him."
    )
    assert build_prompt(turns[:1], "A short story\n\n{story}") == (
        "A short story\n\nThe lighthouse keeper found a letter on the rocks."
    )


def test_build_prompt_ends_an_unfinished_story_so_the_model_starts_a_new_sentence():
    assert build_prompt(["He opened the letter"], "{story}") == "He opened the letter."
    assert build_prompt(["He opened the letter,"], "{story}") == "He opened the letter."
    assert build_prompt(['She said "go"'], "{story}") == 'She said "go".'
    assert build_prompt(['She said "Go!"'], "{story}") == 'She said "Go!"'


def test_build_prompt_keeps_braces_written_by_the_writer():
    assert build_prompt(["A {strange} sign hung there."], "{story}") == (
        "A {strange} sign hung there."
    )


def test_build_prompt_refuses_an_empty_story_or_a_template_without_story():
    with pytest.raises(ValueError, match="story is empty"):
        build_prompt(["  ", ""], "{story}")
    with pytest.raises(ValueError, match=r"\{story\}"):
        build_prompt(["A line."], "No placeholder")
