"""Edit metrics (ED, Jaccard, USER) against hand-computed values and invariants."""

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nltk.tokenize import NLTKWordTokenizer, TreebankWordTokenizer

from cyoa.metrics.edit import (
    METRIC_COLUMNS,
    UserScore,
    edit_distance,
    edit_distance_norm,
    edit_metrics,
    jaccard,
    jaccard_normalized,
    rouge_tokens,
    storium_stopwords,
    user_headline,
    user_metric,
    user_score,
)

# The running example: a model suggestion and the writer's edit of it.
ORIGINAL = "The old knight drew a sword."
EDITED = "The knight drew his sword."


# --- edit distance -------------------------------------------------------------------------


def test_edit_distance_textbook_examples():
    # kitten -> sitting: k->s, e->i, insert g = 3 edits.
    assert edit_distance("kitten", "sitting") == 3
    # flaw -> lawn: delete f, insert n = 2 edits.
    assert edit_distance("flaw", "lawn") == 2


def test_edit_distance_counts_characters_not_bytes():
    # "café" -> "cafe": one substitution, although é is two bytes in UTF-8.
    assert edit_distance("café", "cafe") == 1


def test_edit_distance_has_no_transpositions():
    # "ab" -> "ba" is 2 substitutions under Levenshtein (Damerau would say 1).
    assert edit_distance("ab", "ba") == 2


def test_edit_distance_norm_divides_by_longer_text():
    # 3 edits, longer text "sitting" has 7 characters: 3 / 7.
    assert edit_distance_norm("kitten", "sitting") == pytest.approx(3 / 7)
    # Everything must change: "abc" -> "" is 3 deletions / 3 = 1.
    assert edit_distance_norm("abc", "") == 1.0


def test_edit_distance_of_two_empty_texts_is_zero():
    assert edit_distance("", "") == 0
    assert edit_distance_norm("", "") == 0.0


# --- Jaccard -------------------------------------------------------------------------------


def test_jaccard_keeps_case_and_punctuation():
    # A = {The, cat, sat, on, the, mat.}, B = {the, cat, sat, on, a, mat.}
    # A ∩ B = {cat, sat, on, the, mat.} = 5; |A ∪ B| = 6 + 6 - 5 = 7 -> 100 * 5/7.
    assert jaccard("The cat sat on the mat.", "the cat sat on a mat.") == pytest.approx(100 * 5 / 7)


def test_jaccard_uses_sets_not_counts():
    # {the, cat} vs {the, cat}: repetition does not matter -> 100.
    assert jaccard("the the cat", "the cat cat") == 100.0


def test_jaccard_normalized_lowercases_and_strips_punctuation():
    # A' = {the, cat, sat, on, mat}, B' = {the, cat, sat, on, a, mat}: 5 / 6.
    assert jaccard_normalized("The cat sat on the mat.", "the cat sat on a mat.") == (
        pytest.approx(100 * 5 / 6)
    )


def test_jaccard_normalized_strips_only_the_edges_of_tokens():
    # "'Don't!'" -> "don't"; "well-known," -> "well-known"; the lone "—" disappears.
    assert jaccard_normalized("'Don't!' — well-known,", "don't well-known") == 100.0
    # {don't} vs {dont}: nothing shared -> 0.
    assert jaccard_normalized("don't", "dont") == 0.0


def test_jaccard_of_empty_texts_is_defined():
    # Two texts without tokens are identical sets: 100 by definition.
    assert jaccard("", "") == 100.0
    assert jaccard("  \n", "") == 100.0
    assert jaccard_normalized("...", "!") == 100.0
    # One empty, one not: nothing shared -> 0.
    assert jaccard("", "word") == 0.0


# --- USER tokenisation (py-rouge 1.1) -----------------------------------------------------


def test_rouge_tokens_lowercases_and_replaces_non_alphanumerics():
    assert rouge_tokens("It's 9:30, Sir—run!") == ["it", "s", "9", "30", "sir", "run"]


def test_rouge_tokens_drops_non_ascii_letters():
    # é is outside [A-Za-z0-9] -> "caf"; the Kelvin sign K lowercases to ASCII "k" first.
    assert rouge_tokens("Café \u212a") == ["caf", "k"]


def test_rouge_tokens_splits_fused_words_but_keeps_cannot():
    tokens = rouge_tokens("I'm gonna go, wanna come? I cannot.")
    assert " ".join(tokens) == "i m gon na go wan na come i cannot"
    # "cannot" is kept whole even inside a word; "can not" stays two words.
    assert rouge_tokens("Cannotcannot can not") == ["cannotcannot", "can", "not"]


@given(st.text())
def test_rouge_tokens_are_lowercase_ascii_alphanumerics(text):
    for token in rouge_tokens(text):
        assert token.isascii() and token.isalnum() and token == token.lower()


FUSED = ["gonna", "wanna", "gotta", "gimme", "lemme", "cannot", "can", "not", "na", "Gon"]


@given(
    st.lists(
        st.one_of(st.sampled_from(FUSED), st.text(max_size=6)),
        max_size=12,
    ).map(" ".join)
)
def test_rouge_tokens_word_by_word_equal_the_whole_text(text):
    # rouge_tokens tokenises (and caches) word by word; py-rouge tokenises the whole text.
    cleaned = re.sub("[^A-Za-z0-9]", " ", text.lower()).strip().replace("cannot", "_cannot_")
    whole = " ".join(TreebankWordTokenizer().tokenize(cleaned)).replace("_cannot_", "cannot")
    assert rouge_tokens(text) == whole.split()


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_ ", max_size=80))
def test_treebank_equals_word_tokenize_tokenizer_on_rouge_alphabet(text):
    # py-rouge calls nltk.word_tokenize, whose word tokenizer is NLTKWordTokenizer: on the
    # only characters py-rouge leaves, it and the Treebank tokenizer agree.
    assert TreebankWordTokenizer().tokenize(text) == NLTKWordTokenizer().tokenize(text)


# --- USER ----------------------------------------------------------------------------------


def test_user_hand_computed_without_stopwords():
    # hyp = the knight drew his sword (5), ref = the old knight drew a sword (6).
    # SequenceMatcher: longest block "knight drew" (2); left of it "the" (1); right "sword" (1).
    # count = 4; P = 4/5; R = 4/6; F = 2PR/(P+R) = (16/15)/(22/15) = 8/11.
    score = user_score(EDITED, ORIGINAL)
    assert score.precision == pytest.approx(4 / 5)
    assert score.recall == pytest.approx(4 / 6)
    assert score.f == pytest.approx(8 / 11)


def test_user_block_of_stopwords_only_does_not_count():
    # Same alignment with the STORIUM list: the block "the" holds only a stopword -> 0;
    # "knight drew" (2) and "sword" (1) count -> count = 3.
    score = user_score(EDITED, ORIGINAL, storium_stopwords())
    assert score.precision == pytest.approx(3 / 5)
    assert score.recall == pytest.approx(3 / 6)


def test_user_of_stopwords_only_is_zero_even_for_identical_texts():
    # "he said" is one block of two stopwords: nothing counts.
    assert user_score("He said.", "He said.", storium_stopwords()).precision == 0.0


def test_user_stopword_inside_a_content_block_counts():
    # One block "the knight" (the + knight): it holds a non-stopword, so both tokens count.
    score = user_score("the knight", "the knight", storium_stopwords())
    assert score == UserScore(precision=1.0, recall=1.0, f=1.0)


def test_user_without_tokens_scores_zero_like_py_rouge():
    # py-rouge returns 0 when a side has no token, even for identical texts.
    assert user_score("...", "...") == UserScore(precision=0.0, recall=0.0, f=0.0)
    assert user_score("", "a word") == UserScore(precision=0.0, recall=0.0, f=0.0)


def test_user_keeps_difflib_autojunk_default():
    # A reference of 200+ tokens: a token making up more than 1% of it ("x", 199 of 200) is
    # "popular" and cannot start a match, so "a x" against "b x x … x" matches nothing.
    assert user_score("a x", " ".join(["b"] + ["x"] * 199)).precision == 0.0
    # With 199 tokens the heuristic is off: "x" matches, 1 of the 2 hypothesis tokens.
    assert user_score("a x", " ".join(["b"] + ["x"] * 198)).precision == 0.5


def test_cyoa_2021_variant_is_edited_against_original_f_measure():
    # hypothesis = edited, reference = original, no stopwords: F = 8/11 -> 72.72...
    score = user_metric(ORIGINAL, EDITED, "cyoa-2021")
    assert score == user_score(EDITED, ORIGINAL)
    assert user_headline(score, "cyoa-2021") == pytest.approx(100 * 8 / 11)


def test_storium_variant_is_generated_against_final_precision():
    # hypothesis = original (6 tokens), reference = edited (5 tokens), STORIUM stopwords:
    # blocks "the" (stopwords only, 0), "knight drew" (2), "sword" (1) -> P = 3/6 = 50%.
    score = user_metric(ORIGINAL, EDITED, "storium")
    assert score.precision == pytest.approx(3 / 6)
    assert score.recall == pytest.approx(3 / 5)
    assert user_headline(score, "storium") == pytest.approx(50.0)


def test_unknown_variant_is_refused_with_the_choices():
    with pytest.raises(ValueError, match="cyoa-2021, storium"):
        user_metric(ORIGINAL, EDITED, "rouge")


def test_storium_stopwords_are_the_shipped_list():
    words = storium_stopwords()
    assert len(words) == 124
    assert {"the", "a", "he", "said", "eyes"} <= words


# --- all metrics ---------------------------------------------------------------------------


def test_edit_metrics_columns_and_scales():
    # ED: "The old knight drew a sword." -> "The knight drew his sword."
    # delete "old " (4), "a" -> "his" (1 substitution + 2 insertions) = 7.
    metrics = edit_metrics(ORIGINAL, EDITED)
    assert tuple(metrics) == METRIC_COLUMNS
    assert metrics["edit_distance"] == 7
    assert metrics["edit_distance_norm"] == pytest.approx(7 / 28)
    # Sets {The, old, knight, drew, a, sword.} and {The, knight, drew, his, sword.}: 4 / 7.
    assert metrics["jaccard"] == pytest.approx(100 * 4 / 7)
    assert metrics["jaccard_normalized"] == pytest.approx(100 * 4 / 7)
    assert metrics["user"] == pytest.approx(100 * 8 / 11)
    assert metrics["user_f"] == metrics["user"]
    assert metrics["user_precision"] == pytest.approx(80.0)
    assert metrics["user_recall"] == pytest.approx(100 * 4 / 6)


def test_edit_metrics_storium_headline_is_precision():
    metrics = edit_metrics(ORIGINAL, EDITED, "storium")
    assert metrics["user"] == metrics["user_precision"] == pytest.approx(50.0)


# --- properties ----------------------------------------------------------------------------

VARIANT = st.sampled_from(["cyoa-2021", "storium"])


@given(st.text())
def test_identical_texts_score_as_unedited(text):
    assert edit_distance(text, text) == 0
    assert edit_distance_norm(text, text) == 0.0
    assert jaccard(text, text) == 100.0
    assert jaccard_normalized(text, text) == 100.0


@given(st.text())
def test_identical_texts_with_a_token_have_full_user(text):
    # USER is 100 for identical texts that keep at least one py-rouge token (see the test of
    # texts without tokens above); for "storium", one token that is not a stopword.
    tokens = rouge_tokens(text)
    if tokens:
        assert edit_metrics(text, text, "cyoa-2021")["user"] == 100.0
    if set(tokens) - storium_stopwords():
        assert edit_metrics(text, text, "storium")["user"] == 100.0


@given(st.text(), st.text())
def test_edit_distance_and_jaccard_are_symmetric(a, b):
    assert edit_distance(a, b) == edit_distance(b, a)
    assert jaccard(a, b) == jaccard(b, a)
    assert jaccard_normalized(a, b) == jaccard_normalized(b, a)


@given(st.text(), st.text(), VARIANT)
def test_bounds(a, b, variant):
    metrics = edit_metrics(a, b, variant)
    assert abs(len(a) - len(b)) <= metrics["edit_distance"] <= max(len(a), len(b))
    assert 0.0 <= metrics["edit_distance_norm"] <= 1.0
    for column in ("jaccard", "jaccard_normalized", "user", "user_precision", "user_recall"):
        assert 0.0 <= metrics[column] <= 100.0
    assert min(metrics["user_precision"], metrics["user_recall"]) - 1e-9 <= metrics["user_f"]
    assert metrics["user_f"] <= max(metrics["user_precision"], metrics["user_recall"]) + 1e-9


@given(st.text(alphabet=st.characters(codec="utf-8")), st.text(), VARIANT)
def test_arbitrary_unicode_never_crashes(a, b, variant):
    metrics = edit_metrics(a, b, variant)
    assert all(math.isfinite(value) for value in metrics.values())
