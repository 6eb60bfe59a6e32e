"""Words of a text in any script, for the metrics that count words (distinct-n, Jaccard, USER).

The co-writing metrics were defined on English, where a word is what whitespace separates
(See et al., 2019; Clark & Smith, 2021) and USER keeps only ASCII letters and digits (Akoury
et al., 2020). A study in English keeps exactly those definitions, so its numbers stay
comparable with the papers'. A study in another language counts :func:`words` instead: the
Unicode default word boundaries (UAX #29, as the ``regex`` package implements them), each
segment between two boundaries that holds a word character being a word. So:

- letters with their combining marks are one word (Arabic "كَتَبَ", where Python's own ``re``
  ``\\w+`` cuts three pieces at the vowel marks), as are "don't" and "3.5"; punctuation and
  spaces separate words and are not words;
- in the scripts written without spaces, each Han ideograph, Hiragana character and Thai
  letter is a word (rule WB999: nothing joins them), while a run of Katakana is one word
  (WB13). Only a dictionary segmenter would find longer Chinese or Thai words.

So "ذهب الولد." has the words ذهب and الولد, and "我们走了。" the words 我, 们, 走, 了. The
rules measured before this one was chosen are in ``bench/results/word-rules.md``.

References:
    Unicode Standard Annex #29, Unicode Text Segmentation, section 4 (Word Boundaries).
    See, A. et al. (2019); Clark, E. and Smith, N. A. (2021); Akoury, N. et al. (2020): see
    :mod:`cyoa.metrics.text` and :mod:`cyoa.metrics.edit`.
"""

from __future__ import annotations

import regex

from cyoa.languages import ENGLISH, is_english

__all__ = ["ENGLISH", "WORDS_RULE", "is_english", "words"]

# The rule in a few words, for the analyses' method notes.
WORDS_RULE = (
    "Unicode default word boundaries, UAX #29: one word per Han, Hiragana or Thai character"
)
_BOUNDARY = regex.compile(r"(?w)\b")
_WORD_CHARACTER = regex.compile(r"\w")


def words(text: str) -> list[str]:
    """The words of ``text`` in order, as the module docstring defines them (any script).

    Case is kept; lower-case the text first to compare words without it."""
    return [piece for piece in _BOUNDARY.split(text) if _WORD_CHARACTER.search(piece)]
