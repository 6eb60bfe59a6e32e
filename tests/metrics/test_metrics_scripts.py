"""distinct-n and the edit metrics on Arabic and Chinese text, against hand-worked values; the
English-only text metrics are left out of a study in another language."""

import pytest

from cyoa.metrics.edit import edit_metrics, jaccard, user_metric
from cyoa.metrics.text import corpus_distinct_n, distinct_n, not_computed, text_profiles
from cyoa.metrics.tokens import words


def test_arabic_words_keep_their_vowel_marks_and_drop_punctuation():
    # Python's own \w+ would cut كَتَبَ into ك, ت, ب at the marks.
    assert words("كَتَبَ الوَلَدُ، ثم نام.") == ["كَتَبَ", "الوَلَدُ", "ثم", "نام"]


def test_chinese_and_hiragana_words_are_single_characters_and_katakana_runs_one_word():
    assert words("我们走了。") == ["我", "们", "走", "了"]
    assert words("カタカナとひらがな") == ["カタカナ", "と", "ひ", "ら", "が", "な"]


def test_mixed_text_splits_latin_words_from_han_characters():
    assert words("GPT写了3个故事") == ["GPT", "写", "了", "3", "个", "故", "事"]
    assert words("Don't stop at 3.5, wörld!") == ["Don't", "stop", "at", "3.5", "wörld"]


def test_distinct_n_of_arabic_counts_words_without_their_punctuation():
    text = "ذهب الولد. ذهب الولد"
    # words: ذهب الولد ذهب الولد -> 2 distinct of 4; bigrams: (ذهب الولد) (الولد ذهب)
    # (ذهب الولد) -> 2 distinct of 3.
    assert distinct_n(text, 1, "ar") == pytest.approx(2 / 4)
    assert distinct_n(text, 2, "ar") == pytest.approx(2 / 3)


def test_distinct_n_of_chinese_counts_characters():
    text = "我们走了。我们来了。"
    # characters: 我 们 走 了 我 们 来 了 -> {我 们 走 了 来} = 5 of 8; bigrams: 我们 们走 走了
    # 了我 我们 们来 来了 -> 我们 twice, 6 distinct of 7.
    assert distinct_n(text, 1, "zh") == pytest.approx(5 / 8)
    assert distinct_n(text, 2, "zh") == pytest.approx(6 / 7)
    # Li et al.'s corpus distinct-2 over the two sentences: 我们 们走 走了 | 我们 们来 来了
    # -> 5 distinct bigrams over 8 tokens.
    assert corpus_distinct_n(["我们走了。", "我们来了。"], 2, language="zh") == pytest.approx(5 / 8)


def test_an_english_study_keeps_the_papers_whitespace_words():
    # The papers' tokens are whitespace-separated: "cat." and "cat" differ there.
    assert distinct_n("the cat. the cat", 1, "en") == pytest.approx(3 / 4)
    assert distinct_n("the cat. the cat", 1, "es") == pytest.approx(2 / 4)
    # Unspaced Chinese is one English "word".
    assert distinct_n("我们走了。我们来了。", 2, "en") is None


def test_chinese_edit_metrics_compare_characters():
    original, edited = "我们走了。", "我们来了。"
    scores = edit_metrics(original, edited, language="zh")
    assert scores["edit_distance"] == 1
    assert scores["edit_distance_norm"] == pytest.approx(1 / 5)
    # {我 们 走 了} and {我 们 来 了}: 3 shared of 5.
    assert scores["jaccard"] == pytest.approx(60.0)
    assert scores["jaccard_normalized"] == pytest.approx(60.0)
    # Edited 我 们 来 了 against original 我 们 走 了: blocks 我们 and 了 keep 3 of 4 tokens
    # both ways, so P = R = F = 3/4.
    assert scores["user"] == pytest.approx(75.0)
    assert scores["user_precision"] == pytest.approx(75.0)


def test_arabic_edit_metrics_compare_words():
    original, edited = "ذهب الولد إلى البيت.", "ذهب الولد إلى المدرسة."
    # {ذهب الولد إلى البيت} and {ذهب الولد إلى المدرسة}: 3 shared of 5.
    assert jaccard(original, edited, "ar") == pytest.approx(60.0)
    # The first three words are kept in one block: P = R = 3/4.
    score = user_metric(original, edited, language="ar")
    assert (score.precision, score.recall, score.f) == pytest.approx((0.75, 0.75, 0.75))
    storium = user_metric(original, edited, "storium", language="ar")
    assert storium.precision == pytest.approx(0.75)


def test_in_english_user_sees_no_arabic_or_chinese_word():
    # The STORIUM definition keeps ASCII letters and digits only: that is why another
    # language has its own tokens.
    assert user_metric("我们走了。", "我们走了。").f == 0.0
    assert user_metric("我们走了。", "我们走了。", language="zh").f == pytest.approx(1.0)


def test_a_study_in_arabic_gets_distinct_n_and_no_english_only_metric():
    (profile,) = text_profiles(["ذهب الولد. ذهب الولد"], language="ar")
    assert profile.distinct_1 == pytest.approx(0.5)
    assert profile.mean_sentence_length is None
    assert profile.concreteness is None
    assert not_computed("ar") == (
        "Sentence length: not computed: English-only (spaCy's English tokenizer and "
        "sentencizer) and this study is in Arabic.",
        "Noun and verb concreteness: not computed: English-only (Brysbaert et al. norms / "
        "spaCy en_core_web_sm) and this study is in Arabic.",
    )
    assert not_computed("en-GB") == ()
