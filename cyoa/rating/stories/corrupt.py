"""Corrupted controls: copies of stories made less coherent by a named, seeded operation.

A study that shows raters both the originals and their corrupted copies can check that its
instrument tells coherent stories from incoherent ones: Fabula Entropy Indexing was validated
this way, corrupted stories getting the higher entropy (Castricato et al. 2021, §5). Each copy
is labelled as its own source (``"<source> (shuffled)"``) and names its original in ``family``,
so a rater never reads both.

Operations (:data:`OPERATIONS`), each a pure function of the text and a seeded
:class:`random.Random`. First the paper's own, the defaults (:data:`PAPER_OPERATIONS`): the
smallest change that should break coherence, "a single corruption per story" (§6):

- ``shuffle_span`` (transitional coherence, FEI §5.2): the order of the sentences (plot points)
  within one randomly chosen span of three consecutive ones is shuffled. The paper's stories
  had five plot points; a longer story still gets one span of three, so the corruption stays
  as small as the paper's whatever the length (a story of two sentences has them swapped);
- ``swap_antonyms`` (world coherence, FEI §5.1): a few (:data:`ANTONYM_SWAPS`) of the story's
  adjectives and adverbs, drawn at random, replaced by their antonyms
  (:data:`cyoa.rating.stories.antonyms.ANTONYMS`), as the paper's participants did.

Then stronger ones, kept as named options:

- ``shuffle_sentences``: all of the story's sentences in another order;
The sentence operations split with :func:`cyoa.metrics.text.split_sentences_many` and keep
the story's paragraphs (each keeps its number of sentences). ``swap_antonyms``, ``negate`` and
``swap_adjectives`` edit the text in place, by the tags, sentences and dependency parse of
the analysis's spaCy pipeline (``en_core_web_sm``, loaded once per process).

Reference: Castricato, L. et al. (2021). Fabula Entropy Indexing: Objective Measures of Story
Coherence. Third Workshop on Narrative Understanding, §5 and appendix A.1.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from cyoa.metrics.text import _tagger, split_sentences_many
from cyoa.rating.stories import StoryRecord
from cyoa.rating.stories.antonyms import ANTONYMS

if TYPE_CHECKING:
    from spacy.tokens import Span, Token

# The share of a story's sentences that swap_sentences replaces and negate negates.
SHARE = 1 / 3
# Consecutive sentences (plot points) whose order shuffle_span shuffles (FEI §5.2).
SPAN = 3
# Adjectives and adverbs swap_antonyms turns into their antonyms, at most (FEI §5.1: "a subset").
ANTONYM_SWAPS = 3
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_NEGATORS = frozenset({"not", "n't", "never"})
# Auxiliaries spelled otherwise once their "n't" is gone ("can't" is "ca" + "n't").
_FULL_AUX = {"ca": "can", "wo": "will", "sha": "shall"}
_DO = {"VBD": "did", "VBZ": "does", "VBP": "do"}


class CorruptionError(ValueError):
    """Stories that cannot be corrupted as asked; the message says which and what to do."""


@dataclass(frozen=True)
class Corruption:
    """A corrupted text and what changed (JSON-ready; kept in the copy's ``origin``)."""

    text: str
    changes: tuple[dict[str, Any], ...]


Layout = list[list[str]]  # paragraphs → sentences


def _layout(text: str) -> Layout:
    paragraphs = [p.strip() for p in _PARAGRAPH_BREAK.split(text.strip()) if p.strip()]
    return [sentences for sentences in split_sentences_many(paragraphs) if sentences]


def _join(layout: Layout) -> str:
    return "\n\n".join(" ".join(sentences) for sentences in layout)


def _refill(layout: Layout, sentences: list[str]) -> Layout:
    """``layout`` with its sentences, in reading order, replaced by ``sentences``."""
    filled = iter(sentences)
    return [[next(filled) for _ in paragraph] for paragraph in layout]


def _count(sentences: int) -> int:
    return max(1, round(sentences * SHARE))


def shuffle_sentences(text: str, rng: random.Random) -> Corruption | None:
    """``text`` with its sentences in a random order that differs from the original.

    Every sentence is kept once (the multiset of sentences is unchanged); paragraphs keep
    their number of sentences. ``changes`` holds one entry, ``{"order": [...]}``: for each
    position, the index of the original sentence now there (0-based, reading order). ``None``
    when no order can differ: fewer than two different sentences.
    """
    layout = _layout(text)
    sentences = [sentence for paragraph in layout for sentence in paragraph]
    if len(set(sentences)) < 2:
        return None
    order = _differing_order(sentences, rng)
    shuffled = [sentences[i] for i in order]
    return Corruption(_join(_refill(layout, shuffled)), ({"order": order},))


def _differing_order(items: list[str], rng: random.Random) -> list[int]:
    """A random order of ``items`` (indices) that reads differently from the original; at
    least two different items are needed."""
    order = list(range(len(items)))
    rng.shuffle(order)
    if [items[i] for i in order] == items:
        # The draw gave the original back: swap two different items.
        first = rng.randrange(len(order))
        others = [p for p in range(len(order)) if items[order[p]] != items[order[first]]]
        second = rng.choice(others)
        order[first], order[second] = order[second], order[first]
    return order


def shuffle_span(text: str, rng: random.Random) -> Corruption | None:
    """``text`` with the order of :data:`SPAN` consecutive sentences shuffled, the span drawn
    at random among those holding at least two different sentences (the whole story when it
    has fewer sentences), so that the order read differs; every other sentence stays in
    place, and paragraphs keep their number of sentences.

    ``changes`` holds one entry, ``{"span": [start, end], "order": [...]}``: the span's
    positions [start, end) and, for each position of the story, the index of the original
    sentence now there (0-based, reading order). ``None`` for a story of fewer than two
    different sentences. Castricato et al. (2021), §5.2: "randomly choose a span of 3
    vertices. Within that span, we shuffle their order."
    """
    layout = _layout(text)
    sentences = [sentence for paragraph in layout for sentence in paragraph]
    width = min(SPAN, len(sentences))
    starts = [
        start
        for start in range(len(sentences) - width + 1)
        if len(set(sentences[start : start + width])) >= 2
    ]
    if not starts:
        return None
    start = rng.choice(starts)
    span = sentences[start : start + width]
    order = list(range(len(sentences)))
    order[start : start + width] = [start + i for i in _differing_order(span, rng)]
    shuffled = [sentences[i] for i in order]
    change = {"span": [start, start + width], "order": order}
    return Corruption(_join(_refill(layout, shuffled)), (change,))


def swap_sentences(
    text: str, donors: Mapping[str, Sequence[str]], rng: random.Random
) -> Corruption | None:
    """``text`` with a third of its sentences (at least one; :data:`SHARE`) replaced, in place,
    by sentences drawn at random from ``donors`` (story id → its sentences: other stories,
    never copies of this one), each different from the sentence it replaces and from the
    other sentences brought in.

    ``changes``: one ``{"position", "old", "new", "from_story", "from_position"}`` per
    replaced sentence (positions 0-based in reading order). ``None`` for a story of fewer than
    two sentences (it would become another story) or when no donor sentence differs.
    """
    layout = _layout(text)
    sentences = [sentence for paragraph in layout for sentence in paragraph]
    if len(sentences) < 2:
        return None
    pool = [
        (story_id, position, sentence)
        for story_id, donor in donors.items()
        for position, sentence in enumerate(donor)
    ]
    changes = []
    used: set[str] = set()
    for position in sorted(rng.sample(range(len(sentences)), _count(len(sentences)))):
        old = sentences[position]
        candidates = [entry for entry in pool if entry[2] != old and entry[2] not in used]
        if not candidates:
            continue
        story_id, from_position, new = rng.choice(candidates)
        sentences[position] = new
        used.add(new)
        changes.append(
            {
                "position": position,
                "old": old,
                "new": new,
                "from_story": story_id,
                "from_position": from_position,
            }
        )
    if not changes:
        return None
    return Corruption(_join(_refill(layout, sentences)), tuple(changes))


Edit = tuple[int, int, str]  # characters [start, end) of the text → replacement


def _apply(text: str, edits: list[Edit]) -> str:
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _capitalized(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _negation_edit(sentence: Span) -> Edit | None:
    """The edit that changes the polarity of ``sentence``'s main clause, if there is one."""
    root = sentence.root
    negations = [c for c in root.children if c.dep_ == "neg" and c.lower_ in _NEGATORS]
    if negations:
        token = negations[0]
        if token.i == sentence.start:
            return None
        before = token.doc[token.i - 1]
        end = token.idx + len(token.text)
        if token.lower_ == "n't" and before.lower_ in _FULL_AUX:
            return before.idx, end, _capitalized(_FULL_AUX[before.lower_], before.text)
        if token.lower_ == "n't" and before.lower_ == "ai":
            return None  # "ain't" has no un-negated spelling to fall back on
        return before.idx + len(before.text), end, ""
    auxiliaries = [
        c
        for c in root.children
        if c.dep_ in ("aux", "auxpass") and c.pos_ == "AUX" and c.i < root.i
    ]
    if auxiliaries:
        first = min(auxiliaries, key=lambda token: token.i)
        at = first.idx + len(first.text)
        return at, at, " not"
    if root.lemma_ == "be":
        at = root.idx + len(root.text)
        return at, at, " not"
    if root.pos_ == "VERB" and root.tag_ in _DO:
        do = _capitalized(_DO[root.tag_], root.text)
        return root.idx, root.idx + len(root.text), f"{do} not {root.lemma_.lower()}"
    return None


def negate(text: str, rng: random.Random) -> Corruption | None:
    """``text`` with the main clause of some sentences turned to the opposite polarity: as
    many as a third of its sentences (:data:`SHARE`; at least one, at most as many as can be
    negated), drawn at random among those that can be.

    By spaCy's dependency parse of the sentence's root: a negation ("not", "n't", "never")
    attached to it is removed ("could not see" → "could see", "can't" → "can"); otherwise
    "not" goes after its first auxiliary ("was not walking", "would not have been"), or after
    the root itself when it is a form of "be" ("is not old", "'s not happy"); a main verb in
    the past or present tense alone takes "do" ("walked" → "did not walk", "walks" → "does
    not walk"). ``changes``: ``{"sentence", "at", "old", "new"}`` per edit (sentence index
    0-based, ``at`` a character offset in the original text). ``None`` when no sentence has
    such a clause. Castricato et al. (2021), §5 and appendix A.1.
    """
    doc = _tagger()(text)
    sentences = list(doc.sents)
    edits = {index: _negation_edit(sentence) for index, sentence in enumerate(sentences)}
    candidates = [index for index, edit in edits.items() if edit is not None]
    if not candidates:
        return None
    chosen = sorted(rng.sample(candidates, min(len(candidates), _count(len(sentences)))))
    changes = []
    for index in chosen:
        start, end, new = edits[index]
        changes.append({"sentence": index, "at": start, "old": text[start:end], "new": new})
    return Corruption(_apply(text, [edits[index] for index in chosen]), tuple(changes))


def _bare(token: Token) -> str:
    """An adjective as it would read mid-sentence (a capital only owed to the sentence start
    is dropped)."""
    if token.is_sent_start and token.text.istitle():
        return token.text[:1].lower() + token.text[1:]
    return token.text


def swap_adjectives(text: str, rng: random.Random) -> Corruption | None:
    """``text`` with its adjectives moved among their positions, in a random order that
    changes the text.

    Adjectives are the tokens spaCy tags ``JJ`` (positive degree: "old", not "older" or
    "oldest", whose positions need their own degree) made of letters only. A word moved to
    the start of a sentence (or to a capitalized position) is capitalized; an "a"/"an" just
    before a changed adjective follows the new word's first letter (a vowel takes "an").
    ``changes``: ``{"at", "old", "new"}`` per changed word (``at`` a character offset in the
    original text). ``None`` when the text has fewer than two different adjectives.
    FEI §5.1 swapped adjectives for antonyms (Castricato et al. 2021).
    """
    doc = _tagger()(text)
    adjectives = [token for token in doc if token.tag_ == "JJ" and token.is_alpha]
    words = [_bare(token) for token in adjectives]
    if len({word.lower() for word in words}) < 2:
        return None
    lowered = [word.lower() for word in words]
    order = list(range(len(words)))
    rng.shuffle(order)
    if [lowered[i] for i in order] == lowered:
        # The draw put every word back in place: swap two different ones.
        first = rng.randrange(len(order))
        others = [p for p in range(len(order)) if lowered[p] != lowered[first]]
        second = rng.choice(others)
        order[first], order[second] = order[second], order[first]
    edits: list[Edit] = []
    changes = []
    for token, source in zip(adjectives, order, strict=True):
        new = _capitalized(words[source], token.text)
        if new == token.text:
            continue
        edits.append((token.idx, token.idx + len(token.text), new))
        changes.append({"at": token.idx, "old": token.text, "new": new})
        if token.i > 0:
            article = doc[token.i - 1]
            if article.lower_ in ("a", "an") and article.whitespace_:
                wanted = "an" if new[:1].lower() in "aeiou" else "a"
                if article.lower_ != wanted:
                    spelled = _capitalized(wanted, article.text)
                    edits.append((article.idx, article.idx + len(article.text), spelled))
                    changes.append({"at": article.idx, "old": article.text, "new": spelled})
    changes.sort(key=lambda change: change["at"])
    return Corruption(_apply(text, edits), tuple(changes))


def _article_edit(token: Token, new: str) -> Edit | None:
    """The edit that makes an "a"/"an" just before ``token`` fit ``new``, if one is needed."""
    if token.i == 0:
        return None
    article = token.doc[token.i - 1]
    if article.lower_ not in ("a", "an") or not article.whitespace_:
        return None
    wanted = "an" if new[:1].lower() in "aeiou" else "a"
    if article.lower_ == wanted:
        return None
    return article.idx, article.idx + len(article.text), _capitalized(wanted, article.text)


def swap_antonyms(text: str, rng: random.Random) -> Corruption | None:
    """``text`` with at most :data:`ANTONYM_SWAPS` of its adjectives and adverbs (at least
    one), drawn at random, replaced by their antonyms.

    Candidates are the tokens spaCy tags ``JJ`` (adjective, positive degree) or ``RB``
    (adverb) whose lower-cased text is in :data:`~cyoa.rating.stories.antonyms.ANTONYMS`. A
    capital is kept; an "a"/"an" just before a changed word follows the new word's first
    letter. ``changes``: ``{"at", "old", "new"}`` per changed word (``at`` a character
    offset in the original text). ``None`` when no word has a listed antonym. Castricato et
    al. (2021), §5.1: participants "select a subset of the adjectives and adverbs from a
    story and swap them for their antonyms".
    """
    doc = _tagger()(text)
    candidates = [token for token in doc if token.tag_ in ("JJ", "RB") and token.lower_ in ANTONYMS]
    if not candidates:
        return None
    chosen = rng.sample(candidates, min(ANTONYM_SWAPS, len(candidates)))
    edits: list[Edit] = []
    for token in sorted(chosen, key=lambda token: token.i):
        new = _capitalized(ANTONYMS[token.lower_], token.text)
        edits.append((token.idx, token.idx + len(token.text), new))
        article = _article_edit(token, new)
        if article is not None:
            edits.append(article)
    edits.sort()
    changes = tuple({"at": start, "old": text[start:end], "new": new} for start, end, new in edits)
    return Corruption(_apply(text, edits), changes)


@dataclass(frozen=True)
class Operation:
    """A corruption as :func:`corrupt` applies it: ``label`` goes into the copy's source
    (``"<source> (<label>)"``), ``suffix`` into its id (``"<story_id>-<suffix>"``),
    ``cannot`` says why a story could not be changed, ``summary`` what it does (for the
    researcher's form)."""

    name: str
    label: str
    suffix: str
    cannot: str
    apply: Callable[[StoryRecord, Mapping[str, Sequence[str]], random.Random], Corruption | None]
    summary: str


OPERATIONS: dict[str, Operation] = {
    operation.name: operation
    for operation in (
        Operation(
            "shuffle_span",
            "span shuffled",
            "span",
            "it has fewer than two different sentences",
            lambda story, donors, rng: shuffle_span(story.text, rng),
            "FEI §5.2, transitional coherence (default): the order of 3 consecutive "
            "sentences shuffled",
        ),
        Operation(
            "swap_antonyms",
            "antonyms",
            "antonyms",
            "none of its adjectives or adverbs has an antonym in the list",
            lambda story, donors, rng: swap_antonyms(story.text, rng),
            f"FEI §5.1, world coherence (default): up to {ANTONYM_SWAPS} adjectives or "
            "adverbs turned into their antonyms",
        ),
        Operation(
            "shuffle_sentences",
            "shuffled",
            "shuffled",
            "it has fewer than two different sentences",
            lambda story, donors, rng: shuffle_sentences(story.text, rng),
            "stronger: every sentence in another order",
        ),
        Operation(
            "swap_sentences",
            "sentences swapped",
            "swapped",
            "it has fewer than two sentences, or no other story has a different one",
            lambda story, donors, rng: swap_sentences(story.text, donors, rng),
            "stronger: a third of the sentences replaced by other stories' sentences",
        ),
        Operation(
            "negate",
            "negated",
            "negated",
            "no sentence has a verb or auxiliary to negate",
            lambda story, donors, rng: negate(story.text, rng),
            "stronger: a third of the sentences negated",
        ),
        Operation(
            "swap_adjectives",
            "adjectives swapped",
            "adjectives",
            "it has fewer than two different adjectives",
            lambda story, donors, rng: swap_adjectives(story.text, rng),
            "stronger: every adjective moved to another adjective's place",
        ),
    )
}
# The paper's corruption for each kind of coherence (Castricato et al. 2021, §5.1–5.2).
PAPER_OPERATIONS = {"transitional": "shuffle_span", "world": "swap_antonyms"}


def _checked_request(stories: list[StoryRecord], operation: str, fraction: float) -> Operation:
    """The operation named ``operation``; :class:`CorruptionError` for an unknown one, a
    fraction outside (0, 1], no stories, a repeated story id or a story without text."""
    chosen_operation = OPERATIONS.get(operation)
    if chosen_operation is None:
        raise CorruptionError(
            f"Unknown corruption {operation!r}: use one of {', '.join(OPERATIONS)}."
        )
    if not 0 < fraction <= 1:
        raise CorruptionError(
            f"fraction must be above 0 and at most 1 (the share of stories to copy), "
            f"not {fraction!r}."
        )
    if not stories:
        raise CorruptionError("There are no stories to corrupt: give at least one.")
    ids = [story.story_id for story in stories]
    repeated = sorted({story_id for story_id in ids if ids.count(story_id) > 1})
    if repeated:
        raise CorruptionError(
            f"Story id(s) {', '.join(repeated)} appear more than once: give each story its own id."
        )
    without_text = [story.story_id for story in stories if not story.text.strip()]
    if without_text:
        raise CorruptionError(
            f"Stories {', '.join(without_text)} have no text (only a link): a corrupted copy "
            f"needs the text. Leave them out of the set to corrupt."
        )
    return chosen_operation


def corrupt(
    stories: Sequence[StoryRecord], operation: str, seed: int, fraction: float = 1.0
) -> list[StoryRecord]:
    """Corrupted copies of ``fraction`` of ``stories`` by ``operation`` (a name in
    :data:`OPERATIONS`), in the order of ``stories``.

    Which stories are copied: ⌊fraction · n + ½⌋ of them (at least one), drawn with ``seed``.
    Each copy: id ``"<story_id>-<suffix>"`` (e.g. ``"7-shuffled"``), source ``"<source>
    (<label>)"`` (e.g. ``"gpt4 (shuffled)"``), the original's title, ``family`` the
    original's family (its id, for a story that is not a copy), and ``origin`` =
    ``{"operation", "seed", "original_id", "original_source", "changes", "original_origin"}``.
    The same stories, operation and seed always give the same copies; a story's copy depends
    on the seed and its own text only (``swap_sentences``: also on the other stories, its
    donors, which are every story of another family).

    Raises :class:`CorruptionError`, saying what to do, for an unknown operation, a fraction
    outside (0, 1], a story without text (a link only), a repeated story id, a copy's id that
    is taken, and stories the operation cannot change (named, with the reason).
    """
    stories = list(stories)
    chosen_operation = _checked_request(stories, operation, fraction)
    ids = [story.story_id for story in stories]
    count = max(1, math.floor(fraction * len(stories) + 0.5))
    picked = set(random.Random(f"{seed}:{operation}:select").sample(range(len(stories)), count))
    # Only swap_sentences reads other stories: their sentences, split once for all copies.
    sentences = (
        dict(zip(ids, _split_stories(stories), strict=True))
        if operation == "swap_sentences"
        else {}
    )
    copies = []
    unchanged = []
    for index, story in enumerate(stories):
        if index not in picked:
            continue
        donors = {
            other.story_id: other_sentences
            for other in stories
            if other.family_id != story.family_id
            and (other_sentences := sentences.get(other.story_id)) is not None
        }
        rng = random.Random(f"{seed}:{operation}:{story.story_id}")
        result = chosen_operation.apply(story, donors, rng)
        if result is None:
            unchanged.append(story.story_id)
            continue
        copies.append(_copy(story, result, chosen_operation, seed))
    if unchanged:
        raise CorruptionError(
            f"{chosen_operation.name} cannot change stories {', '.join(unchanged)}: "
            f"{chosen_operation.cannot}. Leave them out, or choose another operation."
        )
    taken = set(ids) & {copy.story_id for copy in copies}
    if taken:
        raise CorruptionError(
            f"The copies' ids {', '.join(sorted(taken))} are taken by stories of the set: "
            f"rename those stories first."
        )
    return copies


def _split_stories(stories: list[StoryRecord]) -> list[list[str]]:
    return [[s for paragraph in _layout(story.text) for s in paragraph] for story in stories]


def _copy(story: StoryRecord, result: Corruption, operation: Operation, seed: int) -> StoryRecord:
    return replace(
        story,
        story_id=f"{story.story_id}-{operation.suffix}",
        source=f"{story.source} ({operation.label})",
        text=result.text,
        family=story.family_id,
        origin={
            "operation": operation.name,
            "seed": seed,
            "original_id": story.story_id,
            "original_source": story.source,
            "changes": list(result.changes),
            "original_origin": story.origin,
        },
    )
