"""Edit metrics: how much of a model's suggestion survives the writer's edits (the paper's Q2).

Each metric compares the model's *original* suggestion with the writer's final *edited* text.
The defaults are the definitions of the released CYOA evaluation script (Clark & Smith, 2021,
https://github.com/eaclark07/cyoa, ``eval_script.py``), which the paper's tables were computed
with:

- edit distance: ``nltk.metrics.edit_distance(edited, original)``, i.e. character Levenshtein;
- Jaccard: ``|A & B| / |A | B|`` over ``str.split()`` token sets;
- USER: ``get_diff_score(edited, original)`` of the STORIUM frontend (Akoury et al., 2020) with
  its stopword list never loaded (empty), F-measure ×100.

Those definitions are English ones (USER keeps only ASCII letters and digits); the metrics of a
study in another language (``language``, a BCP 47 tag) count the words of
:func:`cyoa.metrics.tokens.words` instead, in every script, and USER then uses no stopwords
(STORIUM's list is English). The edit distance counts characters in any language.

Scales: ``edit_distance`` is a count of characters; ``edit_distance_norm`` is a fraction in
[0, 1]; ``jaccard``, ``jaccard_normalized`` and every number of ``edit_metrics`` except the two
edit distances are percentages in [0, 100]; :class:`UserScore` holds fractions in [0, 1].

References:
    Clark, E. and Smith, N. A. (2021). Choose Your Own Adventure: Paired Suggestions in
    Collaborative Writing for Evaluating Story Generation Models. NAACL.
    Akoury, N., Wang, S., Whiting, J., Hood, S., Peng, N. and Iyyer, M. (2020). STORIUM: A
    Dataset and Evaluation Platform for Machine-in-the-Loop Story Generation. EMNLP.
    Levenshtein, V. I. (1966). Binary codes capable of correcting deletions, insertions and
    reversals. Soviet Physics Doklady 10(8).
    Jaccard, P. (1912). The distribution of the flora in the alpine zone. New Phytologist 11(2).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence, Set
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cache, lru_cache, partial
from importlib import resources
from typing import Literal

import Levenshtein

from cyoa.metrics.pool import map_chunks
from cyoa.metrics.tokens import ENGLISH, is_english, words

Variant = Literal["cyoa-2021", "storium"]
VARIANTS: tuple[Variant, ...] = ("cyoa-2021", "storium")

METRIC_COLUMNS: tuple[str, ...] = (
    "edit_distance",
    "edit_distance_norm",
    "jaccard",
    "jaccard_normalized",
    "user",
    "user_precision",
    "user_recall",
    "user_f",
)

# py-rouge 1.1 (Rouge.REMOVE_CHAR_PATTERN and its "cannot" hack, ensure_compatibility=True).
_NON_ALNUM = re.compile("[^A-Za-z0-9]")


@dataclass(frozen=True)
class UserScore:
    """USER precision, recall and F-measure, each a fraction in [0, 1]."""

    precision: float
    recall: float
    f: float


def edit_distance(original: str, edited: str) -> int:
    """Character-level Levenshtein distance between ``original`` and ``edited``.

    The minimum number of single-character insertions, deletions and substitutions (each cost 1,
    no transpositions) that turn one text into the other, counted in Unicode code points. Equal to
    ``nltk.metrics.edit_distance(edited, original)`` as called by the CYOA evaluation script.
    Symmetric; 0 exactly when the texts are identical.

    Units: characters (a raw count). Reference: Levenshtein (1966).
    """
    return Levenshtein.distance(original, edited)


def edit_distance_norm(original: str, edited: str) -> float:
    """:func:`edit_distance` divided by the length of the longer text.

    A fraction in [0, 1]: 0 for identical texts, 1 when no character can be kept in place.
    Two empty texts are identical, so their normalised distance is defined as 0.

    Units: fraction (not a percentage). Reference: Levenshtein (1966).
    """
    longer = max(len(original), len(edited))
    if longer == 0:
        return 0.0
    return edit_distance(original, edited) / longer


def _jaccard_percent(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 100.0
    shared = len(a & b)
    return 100.0 * shared / (len(a) + len(b) - shared)


def jaccard(original: str, edited: str, language: str = ENGLISH) -> float:
    """Jaccard similarity of the two texts' sets of whitespace-separated tokens, ×100.

    ``100 · |A ∩ B| / |A ∪ B|`` where A and B are the *sets* of tokens of ``str.split()`` (any
    Unicode whitespace), case and punctuation kept as they are ("Door," and "door" differ), as in
    the CYOA evaluation script's ``get_jaccard_sim``. Symmetric.

    Two texts without any token (empty or whitespace only) are identical as token sets: defined as
    100 (the original script divides by zero there). One empty and one non-empty text give 0.

    In a ``language`` other than English the tokens are :func:`~cyoa.metrics.tokens.words`
    (case kept, punctuation not a token).

    Units: percent in [0, 100]. Reference: Jaccard (1912); Clark & Smith (2021).
    """
    split = str.split if is_english(language) else words
    return _jaccard_percent(set(split(original)), set(split(edited)))


def _strip_punctuation(token: str) -> str:
    start, end = 0, len(token)
    while start < end and unicodedata.category(token[start]).startswith("P"):
        start += 1
    while end > start and unicodedata.category(token[end - 1]).startswith("P"):
        end -= 1
    return token[start:end]


def _normalized_tokens(text: str, language: str) -> set[str]:
    if not is_english(language):
        return set(words(text.lower()))
    stripped = (_strip_punctuation(token) for token in text.lower().split())
    return {token for token in stripped if token}


def jaccard_normalized(original: str, edited: str, language: str = ENGLISH) -> float:
    """Jaccard similarity ×100 after lowercasing and stripping punctuation.

    Like :func:`jaccard`, but each text is lowercased (``str.lower``), split on whitespace, and
    each token loses its leading and trailing punctuation (Unicode categories P*: ``"Door,"`` →
    ``"door"``, ``"'Run!'"`` → ``"run"``; inner punctuation stays: ``"don't"``, ``"well-known"``).
    Tokens that were punctuation only are dropped. Two texts left without tokens are defined as
    identical (100). Symmetric. In a ``language`` other than English the tokens are the
    :func:`~cyoa.metrics.tokens.words` of the lowercased text.

    Units: percent in [0, 100]. Reference: Jaccard (1912).
    """
    return _jaccard_percent(
        _normalized_tokens(original, language), _normalized_tokens(edited, language)
    )


def rouge_tokens(text: str) -> list[str]:
    """Tokenise ``text`` exactly as py-rouge 1.1 does before scoring (``stemming=False``).

    py-rouge's ``Rouge._preprocess_summary_as_a_whole`` with ``ensure_compatibility=True``:

    1. lowercase (``str.lower``), then replace every character outside ``[A-Za-z0-9]`` (all
       punctuation, all non-ASCII) by a space;
    2. replace each ``cannot`` by ``_cannot_`` so that the tokenizer cannot split it (the
       official ROUGE perl script keeps "cannot" whole);
    3. NLTK's Treebank word tokenizer, which on this alphabet only splits whitespace and the
       fused words "gonna", "gotta", "gimme", "lemme", "wanna" ("gon na", …);
    4. join with spaces, turn ``_cannot_`` back into ``cannot``, split on whitespace.

    After step 1 the text holds only lowercase ASCII letters, digits and spaces, where every
    Treebank rule that can still apply stays inside one word. So each word is tokenised on its
    own (by the same NLTK tokenizer) and the result is cached per word: the same tokens, many
    times faster on real text, where most words repeat.

    py-rouge calls ``nltk.word_tokenize``, which first runs the Punkt sentence splitter; on text
    that holds no ``.``, ``?`` or ``!`` Punkt returns it whole, so the Treebank tokenizer alone
    gives the same tokens without Punkt's downloadable data.

    Reference: py-rouge 1.1 (Antognini, https://github.com/Diego999/py-rouge), ``rouge.py``.
    """
    cleaned = _NON_ALNUM.sub(" ", text.lower())
    return [token for word in cleaned.split() for token in _word_tokens(word)]


@lru_cache(maxsize=1 << 16)
def _word_tokens(word: str) -> tuple[str, ...]:
    tokens = _treebank().tokenize(word.replace("cannot", "_cannot_"))
    return tuple(" ".join(tokens).replace("_cannot_", "cannot").split())


@cache
def _treebank():
    """NLTK's Treebank tokenizer, imported at the first use: importing NLTK takes two
    seconds of CPU, which every start of the app (it imports this module) would pay."""
    from nltk.tokenize import TreebankWordTokenizer

    return TreebankWordTokenizer()


@cache
def storium_stopwords() -> frozenset[str]:
    """The STORIUM USER stopword list, shipped in ``cyoa/data``: 124 distinct lowercase words.

    Copied unchanged from the STORIUM frontend (``static/stopwords.txt``: 129 lines, with
    "he", "i", "she" and "we" repeated there), BSD-3-Clause, © 2020 Nader Akoury; the licence
    is ``cyoa/data/storium_stopwords.LICENSE``.

    Reference: Akoury et al. (2020).
    """
    text = resources.files("cyoa.data").joinpath("storium_stopwords.txt").read_text("utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def user_score(
    hypothesis: str,
    reference: str,
    stopwords: Set[str] = frozenset(),
    language: str = ENGLISH,
) -> UserScore:
    """USER (Unique Sequence of Edits Retained) of ``hypothesis`` against ``reference``.

    Both texts are tokenised with :func:`rouge_tokens` (in a ``language`` other than English:
    the :func:`~cyoa.metrics.tokens.words` of the lowercased text) and aligned with
    ``difflib.SequenceMatcher(None, hypothesis_tokens, reference_tokens)`` in its default
    behaviour (Ratcliff–Obershelp: recursively the longest matching block; note its "autojunk"
    heuristic, which for a reference of 200 tokens or more ignores tokens that make up more
    than 1% of it when looking for matches). ``count`` is the number of tokens in the matching
    blocks that hold at least one token not in ``stopwords``. Then, as py-rouge's
    ``_compute_p_r_f_score``:

    - precision = count / |hypothesis tokens|, and 0 when the hypothesis has no token;
    - recall = count / |reference tokens|, and 0 when the reference has no token;
    - F = P·R / (0.5·P + 0.5·R), and 0 when P or R is 0.

    So a text without any ASCII letter or digit scores 0 even against itself: that is what the
    reference implementation does, and what published USER numbers include.

    Units: fractions in [0, 1]. Reference: Akoury et al. (2020), STORIUM frontend
    ``woolgatherer/metrics/__init__.py::get_diff_score``.
    """
    tokens = rouge_tokens if is_english(language) else _lower_words
    hypothesis_tokens = tokens(hypothesis)
    reference_tokens = tokens(reference)
    matcher = SequenceMatcher(None, hypothesis_tokens, reference_tokens)
    count = 0.0
    for start, _, size in matcher.get_matching_blocks():
        block = hypothesis_tokens[start : start + size]
        if any(token not in stopwords for token in block):
            count += size
    precision = 0.0 if not hypothesis_tokens else count / len(hypothesis_tokens)
    recall = 0.0 if not reference_tokens else count / len(reference_tokens)
    if precision == 0.0 or recall == 0.0:
        f = 0.0
    else:
        f = precision * recall / ((1 - 0.5) * precision + 0.5 * recall)
    return UserScore(precision=precision, recall=recall, f=f)


def _lower_words(text: str) -> list[str]:
    return words(text.lower())


def _check_variant(variant: str) -> None:
    if variant not in VARIANTS:
        raise ValueError(
            f"Unknown USER variant {variant!r}: use one of {', '.join(VARIANTS)} "
            "('cyoa-2021' reproduces the CYOA paper, 'storium' the STORIUM platform)."
        )


def user_metric(
    original: str, edited: str, variant: Variant = "cyoa-2021", language: str = ENGLISH
) -> UserScore:
    """USER between a suggestion and its edit, with the direction and stopwords of ``variant``.

    - ``"cyoa-2021"`` (the CYOA paper): hypothesis = ``edited``, reference = ``original``, no
      stopwords (the evaluation script never loads STORIUM's list). Headline number: F.
    - ``"storium"`` (the STORIUM platform's dashboard): hypothesis = ``original`` (generated),
      reference = ``edited`` (final), STORIUM's stopword list. Headline number: precision.

    In a ``language`` other than English the texts' words are compared
    (:func:`user_score`) and no stopwords are used: STORIUM's list is English.

    See :func:`user_score` for the definition. Units: fractions in [0, 1].
    Reference: Clark & Smith (2021); Akoury et al. (2020).
    """
    _check_variant(variant)
    if variant == "storium":
        stopwords = storium_stopwords() if is_english(language) else frozenset()
        return user_score(original, edited, stopwords, language)
    return user_score(edited, original, language=language)


def user_headline(score: UserScore, variant: Variant = "cyoa-2021") -> float:
    """The number a variant reports for USER, ×100: F for ``cyoa-2021``, precision for
    ``storium``. Units: percent in [0, 100]."""
    _check_variant(variant)
    return 100.0 * (score.precision if variant == "storium" else score.f)


def edit_metrics(
    original: str, edited: str, variant: Variant = "cyoa-2021", language: str = ENGLISH
) -> dict[str, float]:
    """All edit metrics between a model's ``original`` suggestion and the writer's ``edited`` text,
    in a study written in ``language`` (a BCP 47 tag: see the module docstring).

    Keys (:data:`METRIC_COLUMNS`):

    - ``edit_distance``: :func:`edit_distance`, characters (an int);
    - ``edit_distance_norm``: :func:`edit_distance_norm`, fraction in [0, 1];
    - ``jaccard``, ``jaccard_normalized``: percent in [0, 100];
    - ``user``: the variant's headline USER (:func:`user_headline`), percent;
    - ``user_precision``, ``user_recall``, ``user_f``: USER P, R, F of the variant, percent.

    Reference: Clark & Smith (2021); Akoury et al. (2020).
    """
    score = user_metric(original, edited, variant, language)
    return {
        "edit_distance": edit_distance(original, edited),
        "edit_distance_norm": edit_distance_norm(original, edited),
        "jaccard": jaccard(original, edited, language),
        "jaccard_normalized": jaccard_normalized(original, edited, language),
        "user": user_headline(score, variant),
        "user_precision": 100.0 * score.precision,
        "user_recall": 100.0 * score.recall,
        "user_f": 100.0 * score.f,
    }


def _edit_metrics_chunk(
    pairs: list[tuple[str, str]], variant: Variant, language: str = ENGLISH
) -> list[dict[str, float]]:
    return [edit_metrics(original, edited, variant, language) for original, edited in pairs]


def edit_metrics_many(
    pairs: Sequence[tuple[str, str]],
    variant: Variant = "cyoa-2021",
    n_process: int = 1,
    language: str = ENGLISH,
) -> list[dict[str, float]]:
    """:func:`edit_metrics` of each ``(original, edited)`` pair, in order.

    With ``n_process`` > 1 the pairs are scored in that many worker processes (worth it from
    some tens of thousands of pairs); the results do not depend on it.
    """
    _check_variant(variant)
    return map_chunks(
        partial(_edit_metrics_chunk, variant=variant, language=language),
        pairs,
        n_process=n_process,
        chunk_size=5000,
    )
