"""Words of a text in any script, for the metrics that count words (distinct-n, Jaccard, USER).

The co-writing metrics were defined on English, where a word is what whitespace separates
(See et al., 2019; Clark & Smith, 2021) and USER keeps only ASCII letters and digits (Akoury
et al., 2020). A study in English keeps exactly those definitions, so its numbers stay
comparable with the papers'. A study in another language counts :func:`words` instead:

- a run of word characters is a word: letters, combining marks, digits and connector
  punctuation (``\\w`` of the ``regex`` package, which follows Unicode's definition in UTS #18
  Annex C and so keeps Arabic or Devanagari vowel marks inside their word, where Python's own
  ``re`` splits "كَتَبَ" into three pieces); punctuation and spaces separate words and are not
  words;
- in the scripts written without spaces between words (Han, Hiragana, Katakana, Thai, Lao,
  Khmer, Myanmar) each character, with the combining marks that follow it, is a word: the
  Unicode default word boundaries (UAX #29, rule WB999) break between two ideographs or two
  kana the same way, and nothing lighter than a dictionary segmenter does better.

Whether a study is in English is :func:`cyoa.languages.is_english` of its language tag.
So "ذهب الولد." has the words ذهب and الولد, and "我们走了。" the words 我, 们, 走, 了.

References:
    Unicode Standard Annex #29, Unicode Text Segmentation, section 4 (Word Boundaries).
    Unicode Technical Standard #18, Unicode Regular Expressions, Annex C (``\\w``).
    See, A. et al. (2019); Clark, E. and Smith, N. A. (2021); Akoury, N. et al. (2020): see
    :mod:`cyoa.metrics.text` and :mod:`cyoa.metrics.edit`.
"""

from __future__ import annotations

import regex

from cyoa.languages import ENGLISH, is_english

# Scripts written without spaces between words: one character (and its marks) is a word.
UNSPACED_SCRIPTS = ("Han", "Hiragana", "Katakana", "Thai", "Lao", "Khmer", "Myanmar")
# The rule in a few words, for the analyses' method notes.
WORDS_RULE = (
    "runs of Unicode word characters; one character a word in "
    + ", ".join(UNSPACED_SCRIPTS[:-1])
    + f" and {UNSPACED_SCRIPTS[-1]} (UAX #29)"
)
_UNSPACED = "".join(rf"\p{{{script}}}" for script in UNSPACED_SCRIPTS)
_WORD = regex.compile(rf"[{_UNSPACED}]\p{{M}}*|[\w--[{_UNSPACED}]]+", regex.V1)


__all__ = ["ENGLISH", "UNSPACED_SCRIPTS", "WORDS_RULE", "is_english", "words"]


def words(text: str) -> list[str]:
    """The words of ``text`` in order, as the module docstring defines them (any script).

    Case is kept; lower-case the text first to compare words without it."""
    return _WORD.findall(text)
