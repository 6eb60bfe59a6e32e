"""Text metrics (sentence length, distinct-n, concreteness) against hand-computed values."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cyoa.metrics import text as text_metrics
from cyoa.metrics.text import (
    Concreteness,
    ConcretenessScore,
    brysbaert_ratings,
    concreteness,
    concreteness_many,
    corpus_distinct_n,
    distinct_n,
    mean_sentence_length,
    split_sentences,
)


@pytest.fixture(scope="session")
def tagger():
    """The spaCy pipeline, loaded once for the whole test session."""
    return text_metrics._tagger()


# --- sentences -----------------------------------------------------------------------------


def test_split_sentences_keeps_known_abbreviations():
    text = "Mr. Smith went to Washington. He arrived at noon! Did he rest?"
    assert split_sentences(text) == [
        "Mr. Smith went to Washington.",
        "He arrived at noon!",
        "Did he rest?",
    ]


def test_split_sentences_keeps_closing_quotes_and_drops_blank_pieces():
    assert split_sentences('  She said "Run!" and ran.  ') == ['She said "Run!"', "and ran."]
    assert split_sentences("   ") == []


def test_mean_sentence_length_in_whitespace_words():
    # "The cat sat." = 3 words, "The dog ran far away!" = 5 words: (3 + 5) / 2 = 4.
    assert mean_sentence_length("The cat sat. The dog ran far away!") == 4.0
    # No terminal punctuation: one sentence of 3 words.
    assert mean_sentence_length("one two three") == 3.0


def test_mean_sentence_length_of_empty_text_is_undefined():
    assert mean_sentence_length("") is None


# --- distinct-n ----------------------------------------------------------------------------


def test_distinct_n_hand_computed():
    text = "The cat saw the dog"
    # unigrams: the, cat, saw, the, dog -> 4 unique / 5 total.
    assert distinct_n(text, 1) == pytest.approx(4 / 5)
    # bigrams: the cat, cat saw, saw the, the dog -> 4 / 4.
    assert distinct_n(text, 2) == 1.0
    # "the the the": unigrams 1/3, bigrams (the the) x2 -> 1/2, trigrams 1/1.
    assert distinct_n("the the the", 1) == pytest.approx(1 / 3)
    assert distinct_n("the the the", 2) == pytest.approx(1 / 2)
    assert distinct_n("the the the", 3) == 1.0


def test_distinct_n_is_case_blind_and_keeps_punctuation():
    # "The" and "the" are one type; "the." is another: {the, the.} -> 2 / 3.
    assert distinct_n("The the the.", 1) == pytest.approx(2 / 3)


def test_distinct_n_without_ngrams_is_undefined():
    assert distinct_n("", 1) is None
    assert distinct_n("one", 2) is None
    with pytest.raises(ValueError, match="n >= 1"):
        distinct_n("one", 0)


def test_corpus_distinct_n_pools_ngrams_over_texts():
    texts = ["the cat", "the dog"]
    # unigrams {the, cat, dog} = 3 unique over 4 tokens.
    assert corpus_distinct_n(texts, 1) == pytest.approx(3 / 4)
    # bigrams {the cat, the dog} = 2; none spans the two texts. Li et al. divide by the
    # 4 generated tokens -> 1/2; dividing by the 2 bigrams gives 1.
    assert corpus_distinct_n(texts, 2) == pytest.approx(2 / 4)
    assert corpus_distinct_n(texts, 2, denominator="ngrams") == 1.0


def test_corpus_distinct_n_of_nothing_is_undefined():
    assert corpus_distinct_n([], 1) is None
    assert corpus_distinct_n(["a"], 2, denominator="ngrams") is None


@given(st.text(), st.integers(min_value=1, max_value=3))
def test_distinct_n_is_a_fraction(text, n):
    value = distinct_n(text, n)
    assert value is None or 0.0 < value <= 1.0


# --- concreteness --------------------------------------------------------------------------


def test_brysbaert_ratings_are_the_single_words_lowercased():
    ratings = brysbaert_ratings()
    assert len(ratings) == 37_058
    # Published Brysbaert et al. (2014) means.
    assert ratings["dog"] == 4.85
    assert ratings["chase"] == 3.48
    assert ratings["i"] == 3.93  # "I" in the published list
    assert "baseball bat" not in ratings  # two-word expressions left out


def test_concreteness_hand_computed(tagger):
    # spaCy tags dog/NOUN, chased/VERB (lemma chase), ball/NOUN.
    # nouns: (dog 4.85 + ball 5.00) / 2 = 4.925; verbs: chase 3.48.
    result = concreteness("The dog chased the ball.")
    assert result.noun.mean == pytest.approx(4.925)
    assert (result.noun.coverage, result.noun.tagged, result.noun.rated) == (1.0, 2, 2)
    assert result.verb == ConcretenessScore(mean=3.48, coverage=1.0, tagged=1, rated=1)


def test_concreteness_skips_unrated_words_and_reports_coverage(tagger):
    # nouns: zorblax (no rating) and tower 4.76 -> mean 4.76 over 1 rated of 2: coverage 0.5.
    # verbs: felt -> feel 2.28.
    result = concreteness("She felt a strange zorblax in the tower.")
    assert result.noun == ConcretenessScore(mean=4.76, coverage=0.5, tagged=2, rated=1)
    assert result.verb == ConcretenessScore(mean=2.28, coverage=1.0, tagged=1, rated=1)


def test_concreteness_lemmas_with_punctuation_are_left_out(tagger):
    from spacy.tokens import Doc

    # A hand-tagged sentence, to pin the rule independently of the tagger:
    # NOUN lemmas "x-ray" (has punctuation: out), "Sword" -> "sword" 4.93, "qwzx" (unrated);
    # VERB "draw" 3.97. Nouns: 4.93 over 1 rated of 2 kept lemmas.
    doc = Doc(
        tagger.vocab,
        words=["x-ray", "Sword", "qwzx", "draw"],
        pos=["NOUN", "NOUN", "NOUN", "VERB"],
        lemmas=["x-ray", "Sword", "qwzx", "draw"],
    )
    result = text_metrics._concreteness_of([doc], brysbaert_ratings())
    assert result.noun == ConcretenessScore(mean=4.93, coverage=0.5, tagged=2, rated=1)
    assert result.verb == ConcretenessScore(mean=3.97, coverage=1.0, tagged=1, rated=1)


def test_concreteness_of_text_without_nouns_or_verbs(tagger):
    empty = ConcretenessScore(mean=None, coverage=None, tagged=0, rated=0)
    assert concreteness("") == Concreteness(noun=empty, verb=empty)


def test_concreteness_many_matches_one_at_a_time(tagger):
    texts = ["The dog chased the ball.", "", "She felt a strange zorblax in the tower."]
    assert concreteness_many(texts, batch_size=2) == [concreteness(text) for text in texts]
