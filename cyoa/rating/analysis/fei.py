"""Fabula Entropy Indexing: story coherence as the readers' disagreement on true/false probes.

Castricato et al. (2021), §4: readers of a coherent story build similar models of its world,
so they answer questions about it alike; an incoherent story leaves them guessing. For each
question q, with P(q) the share of readers answering true, the entropy is the binary entropy
H(P(q)) in bits (Eq. 2). Averaging over a set of questions Q gives E(Q) (Eq. 3):

- **ETC** (entropy of transitional coherence): E over *transitional* questions, which ask
  whether a belief from before a plot point (kernel) implies one from after it;
- **EWC** (entropy of world coherence): E over *world* questions, about static facts of the
  story world (what its adjectives and adverbs describe).

Both lie in [0, 1] bits; **lower is more coherent**. Readers answer plainly true or false
("yes or no questions", §5.4): no confidence is asked, so P(q) is a share of answers. A
question needs at least two answers to have an entropy; those with fewer are left out and
counted.

- **Per source** the figure is the paper's E(Q) over all of the source's questions of a kind
  (not the mean of its stories' means, which weighs a story of one question like a story of
  fifteen), with a percentile bootstrap interval over stories: each replicate draws the
  source's stories with replacement and pools their questions, so its ends are E(Q) values
  and stay inside [0, 1] (Efron & Tibshirani 1993, ch. 13).
- **Readers per question.** H of a handful of answers is a plug-in estimate, biased low, and
  more so the fewer the readers: three readers of a question people split on evenly score
  0.69 bits on average, not 1. Sources whose questions had different numbers of readers (after
  exclusions, say) are therefore compared at an equal number m, the fewest any question of
  that kind had: each question's entropy is *rarefied* to m readers, the exact mean of H over
  every subset of m of its readers (a hypergeometric expectation, as species counts are
  rarefied to a common sample size: Sanders 1968; Hurlbert 1971). With equal counts the
  rarefied entropy is the plug-in one. Readers per question are reported per source, and a
  warning says when counts differ.
- **Between sources** each story's rarefied ETC and EWC are one observation of its source,
  compared with the rank tests of :func:`cyoa.rating.analysis.scales.compare_sources`
  (Holm-adjusted across ETC and EWC). The paper reports means and no test ("statistical
  significance tests are undefined on entropy distributions", §5.5).
- **Corrupted copies against their originals.** A copy (a story whose ``family`` is another
  story, :mod:`cyoa.rating.stories.corrupt`) is the same story made less coherent, so it is
  compared with its own original: per pair, the difference copy − original of the rarefied
  index, with a Wilcoxon signed-rank test over pairs (zero differences dropped; p by
  enumerating every sign pattern up to :data:`EXACT_PAIRS` pairs, else from seeded random
  sign flips), the matched-pairs rank-biserial r and a percentile bootstrap interval of the
  mean difference over pairs (Wilcoxon 1945; Kerby 2014). A source made only of copies is
  left out of the unpaired tests between sources.

Reference: Castricato, L. et al. (2021). Fabula Entropy Indexing: Objective Measures of Story
Coherence. Third Workshop on Narrative Understanding. Shannon, C. E. (1948). A mathematical
theory of communication. Bell System Technical Journal 27. Sanders, H. L. (1968). Marine
benthic diversity: a comparative study. The American Naturalist 102. Hurlbert, S. H. (1971).
The nonconcept of species diversity: a critique and alternative parameters. Ecology 52(4).
Wilcoxon, F. (1945). Individual comparisons by ranking methods. Biometrics Bulletin 1(6).
Kerby, D. S. (2014). The simple difference formula: an approach to teaching nonparametric
correlation. Comprehensive Psychology 3. Efron, B. and Tibshirani, R. J. (1993). An
Introduction to the Bootstrap, ch. 13.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from cyoa.rating.analysis.scales import SourceTest, compare_sources, with_holm
from cyoa.rating.instruments.types import Instrument
from cyoa.stats import holm

MIN_ANSWERS = 2
CONFIDENCE = 0.95
# Up to this many non-zero pair differences, the signed-rank p enumerates all 2ⁿ sign patterns.
EXACT_PAIRS = 16
INDICES = (("ETC", "transitional"), ("EWC", "world"))


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


def entropy_at_readers(true: int, answers: int, readers: int) -> float:
    """The entropy of a question answered ``true`` times true out of ``answers``, rarefied to
    ``readers`` readers: the mean, in bits, of H(x / readers) over every subset of ``readers``
    of its readers, x being the true answers in the subset (x is hypergeometric).

    Equals H(true / answers) when ``readers`` = ``answers``. Raises ``ValueError`` unless
    0 ≤ true ≤ answers and 1 ≤ readers ≤ answers. Reference: Hurlbert (1971), rarefaction.
    """
    from scipy import stats

    if not (0 <= true <= answers and 1 <= readers <= answers):
        raise ValueError(
            f"Rarefy {answers} answers ({true} true) to between 1 and {answers} readers, "
            f"not {readers}."
        )
    low, high = max(0, readers - (answers - true)), min(true, readers)
    counts = np.arange(low, high + 1)
    chances = stats.hypergeom.pmf(counts, answers, true, readers)
    return float(sum(c * binary_entropy(x / readers) for x, c in zip(counts, chances, strict=True)))


@dataclass(frozen=True)
class QuestionEntropy:
    """One question about one story: ``answers``, the share answering true, H in bits, and
    H rarefied to ``readers`` readers (the fewest any question of its kind had)."""

    story_id: str
    source: str
    question_id: str
    kind: str
    answers: int
    p_true: float
    entropy: float
    readers: int | None = None
    entropy_at_readers: float | None = None


@dataclass(frozen=True)
class StoryIndices:
    """A story's ETC and EWC (bits; ``None`` without questions of that kind), how many
    questions each averages, and both rarefied to the study's equal number of readers."""

    story_id: str
    source: str
    etc: float | None
    ewc: float | None
    etc_questions: int
    ewc_questions: int
    etc_equal: float | None = None
    ewc_equal: float | None = None


@dataclass(frozen=True)
class EntropyMean:
    """E(Q) in bits over ``questions`` questions of ``n`` stories, with a percentile
    bootstrap interval over stories at ``confidence`` (``None`` with fewer than two stories)."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int
    questions: int
    confidence: float = CONFIDENCE


@dataclass(frozen=True)
class IndexSummary:
    """``index`` ("ETC" or "EWC") for one source: ``mean``, E(Q) over its questions as
    answered; ``equal``, E(Q) with each question rarefied to ``readers`` readers, the number
    every source is compared at; readers per question (min, median, max) as answered."""

    index: str
    source: str
    mean: EntropyMean
    equal: EntropyMean
    readers: int
    readers_min: int
    readers_median: float
    readers_max: int

    @property
    def questions(self) -> int:
        return self.mean.questions


@dataclass(frozen=True)
class PairedComparison:
    """``index`` of the corrupted copies in source ``copies`` against their originals in
    ``originals``: ``pairs`` copy–original pairs, the mean difference copy − original in bits
    (rarefied) with its bootstrap interval over pairs, Wilcoxon's signed-rank ``statistic``
    (the sum of the ranks of positive differences), its two-sided ``p_value`` (``method``
    says how it was computed), ``p_holm`` across the paired comparisons, and ``effect``, the
    matched-pairs rank-biserial r in [−1, 1] (positive: copies have the higher entropy).
    ``reason``: why there is no p-value."""

    index: str
    copies: str
    originals: str
    pairs: int
    mean_difference: float | None
    ci_low: float | None
    ci_high: float | None
    statistic: float | None
    p_value: float | None
    p_holm: float | None
    effect: float | None
    method: str
    reason: str | None = None


@dataclass(frozen=True)
class FeiAnalysis:
    """The FEI part of a rating analysis. ``skipped_questions``: story × question pairs with
    fewer than two answers, left out. ``warnings``: sentences on what limits the figures."""

    questions: tuple[QuestionEntropy, ...]
    stories: tuple[StoryIndices, ...]
    summaries: tuple[IndexSummary, ...]
    tests: tuple[SourceTest, ...]
    paired: tuple[PairedComparison, ...]
    skipped_questions: int
    bootstrap: int
    seed: int
    warnings: tuple[str, ...] = ()


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


def rarefied(questions: Sequence[QuestionEntropy]) -> tuple[QuestionEntropy, ...]:
    """``questions`` with ``readers`` set to the fewest answers any question of the same kind
    had, and ``entropy_at_readers`` to its entropy rarefied to that many readers
    (:func:`entropy_at_readers`)."""
    fewest: dict[str, int] = {}
    for question in questions:
        fewest[question.kind] = min(fewest.get(question.kind, question.answers), question.answers)
    result = []
    for question in questions:
        readers = fewest[question.kind]
        true = round(question.p_true * question.answers)
        entropy = entropy_at_readers(true, question.answers, readers)
        result.append(replace(question, readers=readers, entropy_at_readers=entropy))
    return tuple(result)


def _mean_or_none(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def story_indices(questions: Sequence[QuestionEntropy]) -> tuple[StoryIndices, ...]:
    """ETC and EWC of each story: the mean entropy of its transitional and of its world
    questions (Castricato et al. 2021, Eq. 3), in bits; also rarefied, where the questions
    carry their rarefied entropy (:func:`rarefied`)."""
    by_story: dict[tuple[str, str], list[QuestionEntropy]] = {}
    for question in questions:
        by_story.setdefault((question.story_id, question.source), []).append(question)
    results = []
    for (story_id, source), own in sorted(by_story.items()):
        etc = [q for q in own if q.kind == "transitional"]
        ewc = [q for q in own if q.kind == "world"]
        results.append(
            StoryIndices(
                story_id=story_id,
                source=source,
                etc=_mean_or_none([q.entropy for q in etc]),
                ewc=_mean_or_none([q.entropy for q in ewc]),
                etc_questions=len(etc),
                ewc_questions=len(ewc),
                etc_equal=_mean_or_none(
                    [q.entropy_at_readers for q in etc if q.entropy_at_readers is not None]
                ),
                ewc_equal=_mean_or_none(
                    [q.entropy_at_readers for q in ewc if q.entropy_at_readers is not None]
                ),
            )
        )
    return tuple(results)


def _percentiles(replicates: np.ndarray) -> tuple[float, float]:
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(replicates, [tail, 1 - tail])
    return float(low), float(high)


def pooled_entropy(
    sums: Sequence[float], counts: Sequence[int], bootstrap: int, rng: np.random.Generator
) -> EntropyMean:
    """E(Q) of stories whose questions' entropies add up to ``sums`` (bits) over ``counts``
    questions: Σ sums / Σ counts, with a percentile bootstrap interval over stories
    (``bootstrap`` replicates, each the pooled E(Q) of as many stories drawn with
    replacement). Reference: Castricato et al. (2021), Eq. 3; Efron & Tibshirani (1993)."""
    total, n = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    if not n.sum():
        return EntropyMean(None, None, None, 0, 0)
    mean = float(total.sum() / n.sum())
    low = high = None
    if len(n) >= 2 and bootstrap > 0:
        draws = rng.integers(0, len(n), size=(bootstrap, len(n)))
        low, high = _percentiles(total[draws].sum(axis=1) / n[draws].sum(axis=1))
    return EntropyMean(mean, low, high, len(n), int(n.sum()))


def _summary(
    index: str, source: str, questions: list[QuestionEntropy], bootstrap: int, seed: int
) -> IndexSummary:
    stories = sorted({q.story_id for q in questions})
    counts = [sum(1 for q in questions if q.story_id == s) for s in stories]
    plain = [sum(q.entropy for q in questions if q.story_id == s) for s in stories]
    equal = [
        sum(q.entropy_at_readers or 0.0 for q in questions if q.story_id == s) for s in stories
    ]
    answers = [q.answers for q in questions]
    # One generator per figure, so that a figure does not depend on what else is analysed.
    return IndexSummary(
        index=index,
        source=source,
        mean=pooled_entropy(plain, counts, bootstrap, _rng(seed, index, source, "as answered")),
        equal=pooled_entropy(equal, counts, bootstrap, _rng(seed, index, source, "equal")),
        readers=questions[0].readers or min(answers),
        readers_min=min(answers),
        readers_median=float(np.median(answers)),
        readers_max=max(answers),
    )


def _rng(seed: int, *labels: str) -> np.random.Generator:
    words = [int.from_bytes(label.encode(), "little") % 2**32 for label in labels]
    return np.random.default_rng([seed, *words])


def _readers_warning(index: str, summaries: list[IndexSummary]) -> str | None:
    if not summaries or all(s.readers_min == s.readers_max == s.readers for s in summaries):
        return None
    counts = "; ".join(
        f"{s.source}: {s.readers_min}–{s.readers_max} (median {s.readers_median:g})"
        for s in summaries
    )
    return (
        f"{index}: questions had different numbers of readers ({counts}). The plug-in "
        f"entropy falls with fewer readers, so sources are compared at {summaries[0].readers} "
        f"readers per question: each question's entropy averaged over every subset of "
        f"{summaries[0].readers} readers (rarefied; docs/analysis.md)."
    )


def _families(judgements: pd.DataFrame) -> dict[str, str]:
    """Story → its family (the original it is a copy of, or itself), from the optional
    ``family`` column."""
    if "family" not in judgements.columns:
        return {}
    rows = judgements[["story_id", "family"]].drop_duplicates("story_id")
    return {
        str(story): str(family) if isinstance(family, str) and family else str(story)
        for story, family in zip(rows["story_id"], rows["family"], strict=True)
    }


def signed_rank(differences: Sequence[float], seed: int) -> tuple[float, float, float, str]:
    """Wilcoxon's signed-rank test of ``differences`` (zeros dropped; at least one left):
    (W⁺, two-sided p, matched-pairs rank-biserial r = (W⁺ − W⁻) / (W⁺ + W⁻), method).

    p is exact, by enumerating every sign pattern, for up to :data:`EXACT_PAIRS` non-zero
    differences, ties included; beyond, from 2¹⁶ seeded random sign flips. scipy's
    ``wilcoxon`` with a ``PermutationMethod``. Reference: Wilcoxon (1945); Kerby (2014).
    """
    from scipy import stats

    d = np.asarray([value for value in differences if value != 0], dtype=float)
    ranks = stats.rankdata(np.abs(d))
    positive, negative = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    method = stats.PermutationMethod(n_resamples=2**EXACT_PAIRS, rng=seed)
    # One difference: both of its sign patterns are as extreme as the one seen.
    p = float(stats.wilcoxon(d, method=method).pvalue) if len(d) > 1 else 1.0
    exact = len(d) <= EXACT_PAIRS
    name = "Wilcoxon signed-rank, " + (
        "exact p (every sign pattern)" if exact else f"p from {2**EXACT_PAIRS:,} sign flips"
    )
    return positive, min(1.0, p), (positive - negative) / (positive + negative), name


def _paired(
    index: str,
    copies: str,
    originals: str,
    differences: list[float],
    bootstrap: int,
    seed: int,
) -> PairedComparison:
    d = np.asarray(differences, dtype=float)
    low = high = None
    if len(d) >= 2 and bootstrap > 0:
        draws = _rng(seed, index, copies, "pairs").integers(0, len(d), size=(bootstrap, len(d)))
        low, high = _percentiles(d[draws].mean(axis=1))
    common = {
        "index": index,
        "copies": copies,
        "originals": originals,
        "pairs": len(d),
        "mean_difference": float(d.mean()),
        "ci_low": low,
        "ci_high": high,
        "p_holm": None,
    }
    if not d.any():
        method = "Wilcoxon signed-rank"
        reason = "every copy scores the same as its original"
        return PairedComparison(
            **common, statistic=None, p_value=None, effect=None, method=method, reason=reason
        )
    statistic, p, effect, method = signed_rank(differences, seed)
    return PairedComparison(**common, statistic=statistic, p_value=p, effect=effect, method=method)


def paired_comparisons(
    stories: Sequence[StoryIndices],
    families: Mapping[str, str],
    bootstrap: int,
    seed: int,
) -> tuple[tuple[PairedComparison, ...], list[str]]:
    """Each source of corrupted copies against its originals, per index, on the rarefied
    story indices (copy − original, bits), Holm-adjusted across the comparisons; and a
    sentence for each copy whose original has no value to pair with."""
    by_id = {story.story_id: story for story in stories}
    groups: dict[tuple[str, str, str], list[float]] = {}
    unpaired: set[str] = set()
    for story in stories:
        family = families.get(story.story_id, story.story_id)
        if family == story.story_id:
            continue
        original = by_id.get(family)
        for index, _ in INDICES:
            value = getattr(story, f"{index.lower()}_equal")
            if value is None:
                continue
            base = getattr(original, f"{index.lower()}_equal") if original else None
            if base is None:
                unpaired.add(story.story_id)
                continue
            key = (index, story.source, original.source)
            groups.setdefault(key, []).append(value - base)
    results = [
        _paired(index, copies, originals, differences, bootstrap, seed)
        for (index, copies, originals), differences in sorted(groups.items())
    ]
    tested = [n for n, result in enumerate(results) if result.p_value is not None]
    for n, p in zip(tested, holm([results[n].p_value for n in tested]), strict=True):
        results[n] = replace(results[n], p_holm=p)
    warnings = [
        f"Corrupted copies {', '.join(sorted(unpaired))} have no answers to their original's "
        "questions of the same kind: they are left out of the paired comparisons."
    ]
    return tuple(results), warnings if unpaired else []


def analyze_fei(
    instrument: Instrument, judgements: pd.DataFrame, *, bootstrap: int = 1000, seed: int = 0
) -> FeiAnalysis:
    """The FEI part of a rating analysis (``judgements``: the rating contract of
    :func:`cyoa.rating.analysis.ratings.analyze_ratings`, true 1.0 and false 0.0, with an
    optional ``family`` column naming the original a story is a corrupted copy of):
    entropies per question, ETC and EWC per story, E(Q) per source with ``bootstrap``
    replicates over stories (seeded with ``seed``) as answered and at an equal number of
    readers, tests between sources that are not copies, and each source of copies against
    its originals."""
    raw, skipped = question_entropies(instrument, judgements)
    questions = rarefied(raw)
    stories = story_indices(questions)
    families = _families(judgements)
    copies = {s.story_id for s in stories if families.get(s.story_id, s.story_id) != s.story_id}
    copy_sources = {s.source for s in stories} - {
        s.source for s in stories if s.story_id not in copies
    }
    summaries: list[IndexSummary] = []
    tests = []
    warnings = []
    for index, kind in INDICES:
        of_kind = [q for q in questions if q.kind == kind]
        own = [
            _summary(index, source, [q for q in of_kind if q.source == source], bootstrap, seed)
            for source in sorted({q.source for q in of_kind})
        ]
        summaries += own
        warnings += [w for w in [_readers_warning(index, own)] if w]
        values: dict[str, list[float]] = {}
        for story in stories:
            value = getattr(story, f"{index.lower()}_equal")
            if value is not None and story.source not in copy_sources:
                values.setdefault(story.source, []).append(value)
        test = compare_sources(dict(sorted(values.items())), index)
        if test is not None:
            tests.append(test)
    paired, unpaired = paired_comparisons(stories, families, bootstrap, seed)
    return FeiAnalysis(
        questions=questions,
        stories=stories,
        summaries=tuple(summaries),
        tests=with_holm(tests),
        paired=paired,
        skipped_questions=skipped,
        bootstrap=bootstrap,
        seed=seed,
        warnings=tuple(warnings + unpaired),
    )
