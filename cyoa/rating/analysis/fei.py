"""Fabula Entropy Indexing: story coherence as the readers' disagreement on true/false probes.

Castricato et al. (2021), §4: readers of a coherent story build similar models of its world,
so they answer questions about it alike; an incoherent story leaves them guessing. For each
question q, with P(q) the share of readers answering true, the entropy is the binary entropy
H(P(q)) in bits (Eq. 2). Averaging over a set of questions Q gives E(Q) (Eq. 3):

- **ETC** (entropy of transitional coherence) of a story: E over its *transitional* questions,
  which ask whether a belief from before a plot point (kernel) implies one from after it;
- **EWC** (entropy of world coherence): E over its *world* questions, about static facts of
  the story world (what its adjectives and adverbs describe).

Both lie in [0, 1] bits; **lower is more coherent**. Readers answer plainly true or false
("yes or no questions", §5.4): no confidence is asked, so P(q) is a share of answers.

P(q) from a handful of readers is a plug-in estimate, and so biased low (with two readers, H
is 0 or 1): compare sources whose questions had similar numbers of readers. A question needs
at least two answers to have an entropy; those with fewer are left out and counted.

The paper reports means per condition and no test ("statistical significance tests are
undefined on entropy distributions", §5.5). Here each story's ETC and EWC are treated as one
observation of its source, so stories can be compared between sources with the rank tests
of :func:`cyoa.rating.analysis.scales.compare_sources` (Holm-adjusted across ETC and EWC).

Reference: Castricato, L. et al. (2021). Fabula Entropy Indexing: Objective Measures of Story
Coherence. Third Workshop on Narrative Understanding. Shannon, C. E. (1948). A mathematical
theory of communication. Bell System Technical Journal 27.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cyoa.rating.analysis.scales import (
    MeanInterval,
    SourceTest,
    compare_sources,
    mean_interval,
    with_holm,
)
from cyoa.rating.instruments.types import Instrument

MIN_ANSWERS = 2


def binary_entropy(p: float) -> float:
    """H(p) = −p log₂ p − (1 − p) log₂ (1 − p), in bits, with H(0) = H(1) = 0.

    1 bit when the answers split evenly, 0 when all readers agree. Raises ``ValueError`` for
    p outside [0, 1]. Reference: Shannon (1948); Castricato et al. (2021), Eq. 2.
    """
    if not 0 <= p <= 1 or math.isnan(p):
        raise ValueError(f"A share of true answers lies in [0, 1], got {p}.")
    if p in (0, 1):
        return 0.0
    return -p * math.log2(p) - (1 - p) * math.log2(1 - p)


@dataclass(frozen=True)
class QuestionEntropy:
    """One question about one story: ``answers``, the share answering true, and H in bits."""

    story_id: str
    source: str
    question_id: str
    kind: str
    answers: int
    p_true: float
    entropy: float


@dataclass(frozen=True)
class StoryIndices:
    """A story's ETC and EWC (bits; ``None`` without questions of that kind) and how many
    questions each averages."""

    story_id: str
    source: str
    etc: float | None
    ewc: float | None
    etc_questions: int
    ewc_questions: int


@dataclass(frozen=True)
class IndexSummary:
    """``index`` ("ETC" or "EWC") for one source: mean over stories with a t interval."""

    index: str
    source: str
    mean: MeanInterval
    questions: int


@dataclass(frozen=True)
class FeiAnalysis:
    """The FEI part of a rating analysis. ``skipped_questions``: story × question pairs with
    fewer than two answers, left out."""

    questions: tuple[QuestionEntropy, ...]
    stories: tuple[StoryIndices, ...]
    summaries: tuple[IndexSummary, ...]
    tests: tuple[SourceTest, ...]
    skipped_questions: int


def question_entropies(
    instrument: Instrument, judgements: pd.DataFrame
) -> tuple[tuple[QuestionEntropy, ...], int]:
    """H of each story × question with at least two true/false answers, and how many had
    fewer (Castricato et al. 2021, Eq. 2)."""
    kinds = {item.id: item.fei_kind for item in instrument.items if item.fei_kind}
    rows = judgements[judgements["item"].isin(kinds)].dropna(subset=["value"])
    entropies = []
    skipped = 0
    for (story_id, source, question_id), group in rows.groupby(
        ["story_id", "source", "item"], sort=True
    ):
        if group.shape[0] < MIN_ANSWERS:
            skipped += 1
            continue
        p = float(group["value"].mean())
        entropies.append(
            QuestionEntropy(
                story_id=story_id,
                source=source,
                question_id=question_id,
                kind=kinds[question_id],
                answers=int(group.shape[0]),
                p_true=p,
                entropy=binary_entropy(p),
            )
        )
    return tuple(entropies), skipped


def story_indices(questions: tuple[QuestionEntropy, ...]) -> tuple[StoryIndices, ...]:
    """ETC and EWC of each story: the mean entropy of its transitional and of its world
    questions (Castricato et al. 2021, Eq. 3), in bits."""
    by_story: dict[tuple[str, str], dict[str, list[float]]] = {}
    for question in questions:
        kinds = by_story.setdefault((question.story_id, question.source), {})
        kinds.setdefault(question.kind, []).append(question.entropy)
    results = []
    for (story_id, source), kinds in sorted(by_story.items()):
        etc = kinds.get("transitional", [])
        ewc = kinds.get("world", [])
        results.append(
            StoryIndices(
                story_id=story_id,
                source=source,
                etc=float(np.mean(etc)) if etc else None,
                ewc=float(np.mean(ewc)) if ewc else None,
                etc_questions=len(etc),
                ewc_questions=len(ewc),
            )
        )
    return tuple(results)


def analyze_fei(instrument: Instrument, judgements: pd.DataFrame) -> FeiAnalysis:
    """The FEI part of a rating analysis (``judgements``: the rating contract of
    :func:`cyoa.rating.analysis.ratings.analyze_ratings`; true is 1.0, false 0.0): entropies per
    question, ETC and EWC per story, their means per source over stories with t intervals,
    and a test between sources per index."""
    questions, skipped = question_entropies(instrument, judgements)
    stories = story_indices(questions)
    sources = sorted(judgements["source"].unique())
    summaries = []
    tests = []
    for index, attribute in (("ETC", "etc"), ("EWC", "ewc")):
        by_source = {}
        for source in sources:
            own = [story for story in stories if story.source == source]
            values = [getattr(story, attribute) for story in own]
            values = [value for value in values if value is not None]
            if not values:
                continue
            by_source[source] = values
            summaries.append(
                IndexSummary(
                    index=index,
                    source=source,
                    mean=mean_interval(values, bounds=(0, 1)),
                    questions=sum(getattr(story, f"{attribute}_questions") for story in own),
                )
            )
        test = compare_sources(by_source, index)
        if test is not None:
            tests.append(test)
    return FeiAnalysis(
        questions=questions,
        stories=stories,
        summaries=tuple(summaries),
        tests=with_holm(tests),
        skipped_questions=skipped,
    )
