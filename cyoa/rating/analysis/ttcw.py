"""Yes/No test batteries such as the Torrance Test of Creative Writing (TTCW): pass rates,
tests passed per story, agreement per test, and agreement on the number of tests passed.

Following Chakrabarty et al. (CHI 2024, §5.4):

- **pass rate** of a test for a source: the share of that source's judgements of the test that
  are Yes (Table 5, in % there; fractions here);
- **tests passed** per story: the number of tests the story passes, either by the majority of
  its raters or per rater (then averaged over the story's raters);
- **Fleiss' κ** per test over all stories, each with its raters' Yes/No, and their mean;
  beside it **Gwet's AC1** (Gwet 2008), which stays near the raters' observed agreement when
  Yes is rare, where κ falls towards 0 (the prevalence paradox);
- **Pearson r** between raters on the number of tests passed per story (the paper's 0.69 for
  its 48 stories; see :func:`rater_correlation` for exactly what is computed here).

Reference: Chakrabarty, T., Laban, P., Agarwal, D., Muresan, S. and Wu, C.-S. (2024). Art or
Artifice? Large Language Models and the False Promise of Creativity. CHI. Pearson (1896);
Griffin, D. and Gonzalez, R. (1995). Correlational analysis of dyad-level data in the
exchangeable case. Psychological Bulletin 118(3) (the pairwise correlation). Gwet, K. L.
(2008). Computing inter-rater reliability and its variance in the presence of high agreement.
British Journal of Mathematical and Statistical Psychology 61(1).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from cyoa.rating.analysis.agreement import Fleiss, GwetAC1, fleiss_kappa, gwet_ac1
from cyoa.rating.analysis.mixed import ModelEstimate, source_model
from cyoa.rating.analysis.scales import (
    MeanInterval,
    SourceTest,
    compare_sources,
    mean_interval,
    with_holm,
)
from cyoa.rating.instruments.types import Instrument

# Rater pairs need this many stories in common for their own correlation.
MIN_SHARED_STORIES = 3


@dataclass(frozen=True)
class PassRate:
    """Share of one source's judgements of one test that are Yes (``rate``, a fraction;
    ``None`` without judgements)."""

    test_id: str
    category: str
    dimension: str | None
    source: str
    yes: int
    n: int
    rate: float | None


@dataclass(frozen=True)
class DimensionRate:
    """Share of Yes over all of one source's judgements of a dimension's tests."""

    dimension: str
    source: str
    yes: int
    n: int
    rate: float | None


@dataclass(frozen=True)
class TestsPassed:
    """Tests passed per story for one source, over ``stories`` stories (t interval over
    stories): ``majority`` counts the tests passed by more than half of the story's raters;
    ``per_rater`` is the story's mean over its raters of the Yes count of each rater who
    answered every test."""

    source: str
    stories: int
    tests: int
    majority: MeanInterval
    per_rater: MeanInterval


@dataclass(frozen=True)
class TestAgreement:
    """Fleiss' κ and Gwet's AC1 (point estimate; the agreement table gives its interval) of
    one test over all stories."""

    test_id: str
    category: str
    fleiss: Fleiss
    ac1: GwetAC1 | None = None


@dataclass(frozen=True)
class RaterCorrelation:
    """Agreement of raters on the number of tests passed per story (see
    :func:`rater_correlation`)."""

    pairwise_r: float | None
    story_pairs: int
    stories: int
    mean_rater_pair_r: float | None
    rater_pairs: int
    min_shared: int


@dataclass(frozen=True)
class TtcwAnalysis:
    """The Yes/No part of a rating analysis. ``average``: per source, the mean of its
    per-test pass rates (Table 5's "Average" row). ``mean_kappa``/``mean_ac1``: the mean of
    the tests' Fleiss' κ and Gwet's AC1. ``test``: tests passed per rater (story
    means) between sources. ``model``: the headline, tests passed per rater × story from the
    crossed story × rater mixed model (:func:`cyoa.rating.analysis.mixed.source_model`).
    ``rationales``: judgements of tests that ask for a rationale that came
    with one, out of ``rationale_asked``."""

    pass_rates: tuple[PassRate, ...]
    average: dict[str, float | None]
    dimensions: tuple[DimensionRate, ...]
    tests_passed: tuple[TestsPassed, ...]
    kappa: tuple[TestAgreement, ...]
    mean_kappa: float | None
    correlation: RaterCorrelation
    test: SourceTest | None
    rationales: int
    rationale_asked: int
    mean_ac1: float | None = None
    model: ModelEstimate | None = None


def _yes_no(instrument: Instrument, judgements: pd.DataFrame) -> pd.DataFrame:
    ids = [item.id for item in instrument.items if item.kind == "yes_no"]
    return judgements[judgements["item"].isin(ids)].dropna(subset=["value"])


def pass_rates(instrument: Instrument, judgements: pd.DataFrame) -> tuple[PassRate, ...]:
    """Pass rate of every Yes/No test for every source: Yes judgements ÷ judgements
    (Chakrabarty et al. 2024, Table 5, there in %). In test order, then source order."""
    rows = _yes_no(instrument, judgements)
    counts = rows.groupby(["item", "source"])["value"].agg(["sum", "count"])
    rates = []
    for item in instrument.items:
        if item.kind != "yes_no":
            continue
        for source in sorted(judgements["source"].unique()):
            yes, n = (0, 0)
            if (item.id, source) in counts.index:
                yes, n = (int(v) for v in counts.loc[(item.id, source)])
            rates.append(
                PassRate(
                    test_id=item.id,
                    category=item.category or item.text,
                    dimension=item.factor,
                    source=source,
                    yes=yes,
                    n=n,
                    rate=yes / n if n else None,
                )
            )
    return tuple(rates)


def dimension_rates(instrument: Instrument, judgements: pd.DataFrame) -> tuple[DimensionRate, ...]:
    """Share of Yes per dimension (factor) and source, over all judgements of its tests."""
    rows = _yes_no(instrument, judgements)
    results = []
    for dimension, item_ids in instrument.factors().items():
        own = rows[rows["item"].isin(item_ids)]
        if own.empty:
            continue
        for source in sorted(judgements["source"].unique()):
            values = own.loc[own["source"] == source, "value"]
            yes, n = int(values.sum()), int(values.size)
            results.append(DimensionRate(dimension, source, yes, n, yes / n if n else None))
    return tuple(results)


def story_totals(instrument: Instrument, judgements: pd.DataFrame) -> pd.DataFrame:
    """Per rater × story who answered every Yes/No test: the number of Yes (tests passed).

    Columns ``story_id``, ``source``, ``rater_id``, ``passed``.
    """
    rows = _yes_no(instrument, judgements)
    tests = sum(1 for item in instrument.items if item.kind == "yes_no")
    totals = rows.groupby(["story_id", "source", "rater_id"])["value"].agg(["sum", "count"])
    totals = totals[totals["count"] == tests].reset_index()
    return totals.rename(columns={"sum": "passed"})[["story_id", "source", "rater_id", "passed"]]


def majority_passed(instrument: Instrument, judgements: pd.DataFrame) -> pd.Series:
    """Per story: the number of tests that more than half of the raters who answered the test
    said Yes to (a tie is not a pass)."""
    rows = _yes_no(instrument, judgements)
    shares = rows.groupby(["story_id", "item"])["value"].mean()
    return (shares > 0.5).groupby(level="story_id").sum().astype(float)


def rater_correlation(
    totals: pd.DataFrame, min_shared: int = MIN_SHARED_STORIES
) -> RaterCorrelation:
    """Agreement of raters on the number of tests passed per story (``totals``: columns
    ``story_id``, ``rater_id``, ``passed``, as :func:`story_totals` gives).

    - ``pairwise_r``: Pearson's r over every pair of two different raters' counts for the
      same story, each pair entered in both orders, (x_a, x_b) and (x_b, x_a), so the result
      does not depend on which rater is called first (the pairwise, or double-entry,
      intraclass correlation of Griffin & Gonzalez 1995). With three raters per story this is
      the average relation of the three pairs of raters that the paper's "Pearson
      correlation" between experts describes, without fixing an arbitrary order of raters.
      ``story_pairs`` counts the unordered pairs.
    - ``mean_rater_pair_r``: the mean, over pairs of raters who judged at least
      ``min_shared`` stories in common (and whose counts vary on them), of Pearson's r
      between their counts on those stories; ``rater_pairs`` counts them.

    Either is ``None`` when nothing can be correlated. Units: r in [−1, 1].
    Reference: Pearson (1896); Griffin & Gonzalez (1995); Chakrabarty et al. (2024) §5.4.
    """
    from scipy import stats as scipy_stats

    first: list[float] = []
    second: list[float] = []
    story_pairs = 0
    stories = 0
    for _, group in totals.groupby("story_id"):
        values = group["passed"].to_numpy(dtype=float)
        if values.size < 2:
            continue
        stories += 1
        for a, b in itertools.combinations(range(values.size), 2):
            first += [values[a], values[b]]
            second += [values[b], values[a]]
            story_pairs += 1
    pairwise = None
    if story_pairs and np.std(first) > 0:
        pairwise = float(scipy_stats.pearsonr(first, second).statistic)

    by_rater = {
        rater: group.set_index("story_id")["passed"] for rater, group in totals.groupby("rater_id")
    }
    correlations = []
    for a, b in itertools.combinations(sorted(by_rater), 2):
        shared = by_rater[a].index.intersection(by_rater[b].index)
        if shared.size < min_shared:
            continue
        x = by_rater[a].loc[shared].to_numpy(dtype=float)
        y = by_rater[b].loc[shared].to_numpy(dtype=float)
        if np.std(x) > 0 and np.std(y) > 0:
            correlations.append(float(scipy_stats.pearsonr(x, y).statistic))
    return RaterCorrelation(
        pairwise_r=pairwise,
        story_pairs=story_pairs,
        stories=stories,
        mean_rater_pair_r=float(np.mean(correlations)) if correlations else None,
        rater_pairs=len(correlations),
        min_shared=min_shared,
    )


def fleiss_per_test(instrument: Instrument, judgements: pd.DataFrame) -> tuple[TestAgreement, ...]:
    """Fleiss' κ of each Yes/No test over all stories (every source), each story a unit with
    its raters' answers (:func:`cyoa.rating.analysis.agreement.fleiss_kappa`; ``None`` with a reason
    when the stories have different numbers of raters), and Gwet's AC1 of the same units
    (:func:`cyoa.rating.analysis.agreement.gwet_ac1`, defined for any number of raters per
    story). Reference: Fleiss (1971); Gwet (2008); Chakrabarty et al. (2024), Table 5."""
    rows = _yes_no(instrument, judgements)
    by_item = dict(tuple(rows.groupby("item")))
    results = []
    for item in instrument.items:
        if item.kind != "yes_no" or item.id not in by_item:
            continue
        units = [group.tolist() for _, group in by_item[item.id].groupby("story_id")["value"]]
        results.append(
            TestAgreement(
                item.id,
                item.category or item.text,
                fleiss_kappa(units, [0.0, 1.0]),
                gwet_ac1(units, [0.0, 1.0], bootstrap=0),
            )
        )
    return tuple(results)


def analyze_tests(
    instrument: Instrument, judgements: pd.DataFrame, raters_known: bool = True
) -> TtcwAnalysis:
    """The Yes/No part of a rating analysis (``judgements``: the rating contract of
    :func:`cyoa.rating.analysis.ratings.analyze_ratings`; Yes is 1.0, No 0.0).
    ``raters_known``: False when rater ids are positions (no rater effect in the model)."""
    rates = pass_rates(instrument, judgements)
    sources = sorted(judgements["source"].unique())
    average = {}
    for source in sources:
        own = [rate.rate for rate in rates if rate.source == source and rate.rate is not None]
        average[source] = float(np.mean(own)) if own else None
    totals = story_totals(instrument, judgements)
    majority = majority_passed(instrument, judgements)
    story_source = _yes_no(instrument, judgements).groupby("story_id")["source"].first()
    tests = sum(1 for item in instrument.items if item.kind == "yes_no")
    passed = []
    per_rater_by_source = {}
    for source in sources:
        stories = story_source[story_source == source].index
        per_rater = totals[totals["source"] == source].groupby("story_id")["passed"].mean()
        per_rater_by_source[source] = per_rater.to_numpy()
        passed.append(
            TestsPassed(
                source=source,
                stories=int(stories.size),
                tests=tests,
                majority=mean_interval(
                    majority.reindex(stories).dropna().to_numpy(), bounds=(0, tests)
                ),
                per_rater=mean_interval(per_rater.to_numpy(), bounds=(0, tests)),
            )
        )
    kappa = fleiss_per_test(instrument, judgements)
    defined = [test.fleiss.kappa for test in kappa if test.fleiss.kappa is not None]
    ac1s = [test.ac1.ac1 for test in kappa if test.ac1 and test.ac1.ac1 is not None]
    asked = judgements[
        judgements["item"].isin([item.id for item in instrument.items if item.rationale])
    ]
    given = sum(1 for text in asked["rationale"] if isinstance(text, str) and text.strip())
    test = compare_sources(per_rater_by_source, "tests passed per rater")
    model = source_model(
        totals.rename(columns={"passed": "score"}),
        "tests passed per rater",
        (0, tests),
        raters_known=raters_known,
    )
    return TtcwAnalysis(
        pass_rates=rates,
        average=average,
        dimensions=dimension_rates(instrument, judgements),
        tests_passed=tuple(passed),
        kappa=kappa,
        mean_kappa=float(np.mean(defined)) if defined else None,
        mean_ac1=float(np.mean(ac1s)) if ac1s else None,
        correlation=rater_correlation(totals),
        test=None if test is None else with_holm([test])[0],
        rationales=given,
        rationale_asked=int(asked.shape[0]),
        model=model,
    )
