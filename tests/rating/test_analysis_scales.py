"""Likert scales: factor scores with reverse coding, means with t intervals over stories,
reliability, and tests between sources, worked out by hand."""

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from cyoa.rating.analysis.ratings import analyze_ratings
from cyoa.rating.analysis.render import render_rating_analysis
from cyoa.rating.analysis.scales import (
    ALL_ITEMS_SCALE,
    NESTED_RATERS_NOTE,
    NESTED_RATERS_REASON,
    SourceTest,
    analyze_scales,
    coded_values,
    compare_sources,
    cronbach_alpha,
    factor_scores,
    mcdonald_omega,
    mean_interval,
    reliability,
    story_means_share_raters,
    with_holm,
)
from cyoa.rating.instruments import AISS_V1, instrument_from_spec
from cyoa.stats import cliffs_delta

COLUMNS = ["story_id", "source", "rater_id", "item", "value"]

# Three 5-point items in one factor; b is reverse-keyed.
MINI = instrument_from_spec(
    {
        "id": "mini",
        "name": "Mini",
        "items": [
            {"id": "a", "text": "A.", "kind": "likert", "points": 5, "factor": "F"},
            {
                "id": "b",
                "text": "B.",
                "kind": "likert",
                "points": 5,
                "factor": "F",
                "reverse": True,
            },
            {"id": "c", "text": "C.", "kind": "likert", "points": 5, "factor": "F"},
        ],
    },
    "test",
)
# (story, source, rater, a, b, c) as answered; b codes to 6 − b.
MINI_ANSWERS = [
    ("s1", "X", "r1", 4, 2, 5),  # coded 4 4 5 → 13/3
    ("s1", "X", "r2", 3, 3, 3),  # 3 3 3 → 3
    ("s2", "X", "r1", 5, 1, 5),  # 5 5 5 → 5
    ("s2", "X", "r2", 4, 1, 4),  # 4 5 4 → 13/3
    ("s3", "Y", "r1", 2, 4, 1),  # 2 2 1 → 5/3
    ("s3", "Y", "r2", 1, 5, 2),  # 1 1 2 → 4/3
    ("s4", "Y", "r1", 2, 3, 2),  # 2 3 2 → 7/3
    ("s4", "Y", "r2", 3, 4, 2),  # 3 2 2 → 7/3
]


def mini_judgements(answers=MINI_ANSWERS):
    rows = []
    for story, source, rater, *values in answers:
        for item, value in zip("abc", values, strict=True):
            rows.append((story, source, rater, item, float(value)))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_mean_interval_by_hand():
    # 2, 4, 6: mean 4, sd = sqrt((4 + 0 + 4) / 2) = 2; t(0.975, 2) = 4.302653;
    # half width = 4.302653 · 2 / sqrt(3) = 4.968275.
    result = mean_interval([2, 4, 6])
    assert (result.mean, result.sd, result.n) == (4.0, 2.0, 3)
    assert result.ci_low == pytest.approx(4 - 4.968275, abs=1e-6)
    assert result.ci_high == pytest.approx(4 + 4.968275, abs=1e-6)


def test_mean_interval_of_one_or_no_value():
    assert mean_interval([3.0]).mean == 3.0 and mean_interval([3.0]).ci_low is None
    assert mean_interval([]).mean is None
    assert mean_interval([float("nan"), 1.0]).n == 1


def test_reverse_coding_of_a_column():
    frame = mini_judgements()
    coded = coded_values(MINI, frame)
    # b answered 2 codes to 6 − 2 = 4; a and c unchanged.
    assert coded.iloc[:3].tolist() == [4.0, 4.0, 5.0]


def test_factor_scores_per_rater_and_story():
    scores = factor_scores(MINI, mini_judgements())
    first = scores[(scores["story_id"] == "s1") & (scores["rater_id"] == "r1")]
    # (4 + (6 − 2) + 5) / 3 = 13/3
    assert first["score"].item() == pytest.approx(13 / 3)
    assert len(scores) == 8 and set(scores["factor"]) == {"F"}


def test_a_rater_who_skipped_an_item_gets_no_factor_score():
    frame = mini_judgements()
    frame.loc[
        (frame["rater_id"] == "r2") & (frame["story_id"] == "s1") & (frame["item"] == "b"), "value"
    ] = math.nan
    scores = factor_scores(MINI, frame)
    assert len(scores) == 7
    assert not ((scores["story_id"] == "s1") & (scores["rater_id"] == "r2")).any()


def aiss_answers(story, rater, item_8, items_9_to_12):
    """A rater's answers to the AISS Avoiding Repetition items (8–12) for one story."""
    rows = [(story, "S", rater, "8", float(item_8))]
    rows += [(story, "S", rater, str(item), float(items_9_to_12)) for item in range(9, 13)]
    return rows


def test_aiss_avoiding_repetition_reverse_codes_item_9():
    # Story "fresh": "avoided repetition" strongly agreed (8 = 5), every repetition statement
    # (9–12) strongly disagreed (1). Coded: 5, 6−1, 6−1, 6−1, 6−1 = 5 5 5 5 5 → score 5.0.
    # Forgetting item 9's reversal would give (5 + 1 + 5 + 5 + 5) / 5 = 4.2.
    # Story "repetitive": 8 = 1, 9–12 = 5 → coded 1 1 1 1 1 → 1.0 (forgetting: 1.8).
    rows = aiss_answers("fresh", "r1", 5, 1) + aiss_answers("repetitive", "r1", 1, 5)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    scores = factor_scores(AISS_V1, frame).set_index("story_id")["score"]
    assert scores["fresh"] == 5.0
    assert scores["repetitive"] == 1.0

    # The same data scored with item 9 left as v1 marks it (not reversed): the test sees it.
    unmarked = dataclasses.replace(
        AISS_V1,
        items=tuple(
            dataclasses.replace(item, reverse=False) if item.id == "9" else item
            for item in AISS_V1.items
        ),
    )
    wrong = factor_scores(unmarked, frame).set_index("story_id")["score"]
    assert wrong["fresh"] == pytest.approx(4.2)
    assert wrong["repetitive"] == pytest.approx(1.8)


def test_cronbach_alpha_by_hand():
    # The eight coded rows of MINI (a, b, c): item sums of squares about the mean
    # a: 3 mean, deviations 1 0 2 1 −1 −2 −1 0 → 12; b: mean 3.125, Σb² = 93 → 93 − 25²/8 = 14.875;
    # c: mean 3, Σc² = 88 → 88 − 72 = 16. Totals 13 9 15 13 5 4 7 7: Σt = 73, Σt² = 783 →
    # 783 − 73²/8 = 116.875. α = 3/2 · (1 − (12 + 14.875 + 16) / 116.875) = 1.5 · 74/116.875
    # = 0.9497326.
    wide = pd.DataFrame(
        [(4, 4, 5), (3, 3, 3), (5, 5, 5), (4, 5, 4), (2, 2, 1), (1, 1, 2), (2, 3, 2), (3, 2, 2)],
        columns=list("abc"),
        dtype=float,
    )
    alpha, low, high = cronbach_alpha(wide)
    assert alpha == pytest.approx(1.5 * 74 / 116.875)
    assert low < alpha < high


def test_mcdonald_omega_of_three_items_by_hand():
    # With three items the one-factor model reproduces the correlations exactly:
    # λ_a² = r_ab r_ac / r_bc, etc. Cross-products of deviations: ab 12, ac 12, bc 13, so
    # r_ab = 12/√(12·14.875) = .898169, r_ac = 12/√(12·16) = .866025, r_bc = 13/√(14.875·16)
    # = .842667. λ_a² = .923077, λ_b² = .873950, λ_c² = .812500 (λ = .960769, .934853,
    # .901388); Σλ = 2.797010, (Σλ)² = 7.823265; Σψ = 3 − 2.609527 = .390473.
    # ω = 7.823265 / (7.823265 + .390473) = .952461.
    wide = pd.DataFrame(
        [(4, 4, 5), (3, 3, 3), (5, 5, 5), (4, 5, 4), (2, 2, 1), (1, 1, 2), (2, 3, 2), (3, 2, 2)],
        columns=list("abc"),
        dtype=float,
    )
    omega, reason = mcdonald_omega(wide)
    assert reason is None
    assert omega == pytest.approx(0.952461, abs=1e-4)


def test_omega_is_the_same_every_time_whatever_the_random_state():
    # statsmodels draws the fit's starting values at random; from some it stops in a local
    # optimum (ω ≈ .987 here) or does not converge. ω must not depend on the draw.
    wide = pd.DataFrame(
        [(4, 4, 5), (3, 3, 3), (5, 5, 5), (4, 5, 4), (2, 2, 1), (1, 1, 2), (2, 3, 2), (3, 2, 2)],
        columns=list("abc"),
        dtype=float,
    )
    omegas = {mcdonald_omega(wide) for _ in range(60)}
    assert omegas == {mcdonald_omega(wide)}
    ((omega, reason),) = omegas
    assert reason is None and omega == pytest.approx(0.952461, abs=1e-6)


def test_omega_is_not_estimated_for_two_items_or_constant_items():
    two = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [2.0, 2, 3, 5]})
    assert mcdonald_omega(two) == (None, "fewer than 3 items: a one-factor model is not identified")
    constant = pd.DataFrame({"a": [1.0, 2, 3, 4, 5], "b": [2.0, 2, 3, 5, 4], "c": [3.0] * 5})
    assert mcdonald_omega(constant)[1] == "an item has the same answer everywhere"
    assert cronbach_alpha(pd.DataFrame({"a": [1.0, 2.0]})) == (None, None, None)


def test_mann_whitney_between_two_sources_by_hand():
    # X story means 11/3, 14/3 all above Y's 1.5, 7/3: U_X = 4 of 4 pairs, r = 2·4/4 − 1 = 1;
    # exact two-sided p = 2 · 1/C(4,2) = 1/3.
    test = compare_sources({"Y": [1.5, 7 / 3], "X": [11 / 3, 14 / 3]}, "F")
    assert test.method == "Mann–Whitney U (two-sided)"
    assert test.p_method == "exact"
    assert test.sources == ("X", "Y")
    assert (test.statistic, test.effect) == (4.0, 1.0)
    assert test.p_value == pytest.approx(1 / 3)
    assert test.n == {"X": 2, "Y": 2}


def test_two_sources_get_cliffs_delta_with_its_interval_beside_the_test():
    # Cliff's δ of X against Y is the rank-biserial r, 1 here; the samples do not overlap, so
    # the interval's upper end is 1 (cyoa.stats.cliffs_delta).
    test = compare_sources({"Y": [1.5, 7 / 3, 2.0], "X": [11 / 3, 14 / 3, 4.0]}, "F")
    assert test.effect_name == "Cliff's δ = rank-biserial r (X vs Y)"
    ((pair,),) = [test.pairs]
    assert (pair.first, pair.second, pair.n_first, pair.n_second) == ("X", "Y", 3, 3)
    assert pair.delta == test.effect == 1.0
    assert pair.p_value == pair.p_holm == test.p_value == pytest.approx(2 / 20)
    expected = cliffs_delta([11 / 3, 14 / 3, 4.0], [1.5, 7 / 3, 2.0])
    assert (pair.delta_ci_low, pair.delta_ci_high) == (expected.ci_low, expected.ci_high)
    assert pair.delta_ci_high == 1.0


def test_three_sources_get_pairwise_mann_whitney_with_holm_and_cliffs_delta():
    # A = 1, 2, 3; B = 4, 5, 6; C = 2.5, 7, 8 (no ties: exact U distribution over the
    # C(6, 3) = 20 rank sets, whose counts for U = 0…9 are 1, 1, 2, 3, 3, 3, 3, 2, 1, 1).
    # A vs B: U_A = 0, δ = −1, p = 2 · 1/20 = .1.
    # A vs C: U_A = 1 (3 > 2.5), δ = 2/9 − 1 = −7/9, p = 2 · 2/20 = .2.
    # B vs C: U_B = 3 (4, 5, 6 > 2.5), δ = 6/9 − 1 = −1/3, p = 2 · 7/20 = .7.
    # Holm over the three pairs: .1 · 3 = .3, max(.3, .2 · 2) = .4, max(.4, .7) = .7.
    groups = {"A": [1, 2, 3], "B": [4, 5, 6], "C": [2.5, 7, 8]}
    test = compare_sources(groups, "F")
    assert test.method == "Kruskal–Wallis H"
    assert test.p_method == "permutation (exact enumeration)"
    pairs = {(pair.first, pair.second): pair for pair in test.pairs}
    assert list(pairs) == [("A", "B"), ("A", "C"), ("B", "C")]
    assert [pairs[key].u for key in pairs] == [0.0, 1.0, 3.0]
    assert [pairs[key].delta for key in pairs] == pytest.approx([-1, -7 / 9, -1 / 3])
    assert [pairs[key].p_value for key in pairs] == pytest.approx([0.1, 0.2, 0.7])
    assert [pairs[key].p_holm for key in pairs] == pytest.approx([0.3, 0.4, 0.7])
    assert {pair.p_method for pair in test.pairs} == {"exact"}
    for (first, second), pair in pairs.items():
        expected = cliffs_delta(groups[first], groups[second])
        assert (pair.delta_ci_low, pair.delta_ci_high) == (expected.ci_low, expected.ci_high)
        assert -1 <= pair.delta_ci_low <= pair.delta <= pair.delta_ci_high <= 1


def test_kruskal_wallis_between_three_sources_by_hand():
    # Ranks 1–6 in groups (1,2) (3,4) (5,6): rank sums 3, 7, 11, n = 6, no ties.
    # H = 12/(6·7) · (3² + 7² + 11²)/2 − 3·7 = (12/42) · 89.5 − 21 = 4.571429, the largest H;
    # of the 6!/(2!·2!·2!) = 90 splits, the 3! = 6 that keep the pairs together reach it:
    # exact p = 6/90 (the χ² approximation would say exp(−H/2) = .102). ε² = H / (n − 1).
    test = compare_sources({"A": [1, 2], "B": [3, 4], "C": [5, 6]}, "F")
    assert test.method == "Kruskal–Wallis H"
    assert test.statistic == pytest.approx(4.571429, abs=1e-6)
    assert test.p_value == pytest.approx(6 / 90)
    assert test.effect == pytest.approx(4.571429 / 5, abs=1e-6)


def test_nothing_to_test_with_one_source_or_identical_values():
    assert compare_sources({"A": [1, 2, 3]}, "F") is None
    assert compare_sources({"A": [1, 2], "B": []}, "F") is None
    same = compare_sources({"A": [2, 2], "B": [2]}, "F")
    assert same.p_value is None and same.reason == "every value is the same"


def test_holm_adjustment_across_factors():
    # p = .01, .04, none: Holm over the two tested: .01·2 = .02, max(.02, .04·1) = .04.
    tests = [
        SourceTest("F1", "m", ("A", "B"), {}, 1.0, 0.01, 0.0, "r"),
        SourceTest("F2", "m", ("A", "B"), {}, 1.0, 0.04, 0.0, "r"),
        SourceTest("F3", "m", ("A", "B"), {}, None, None, None, "r", reason="every value"),
    ]
    adjusted = with_holm(tests)
    assert [test.p_holm for test in adjusted] == [pytest.approx(0.02), pytest.approx(0.04), None]


def test_analyze_scales_of_the_mini_study():
    result = analyze_scales(MINI, mini_judgements())
    by_source = {factor.source: factor for factor in result.factors}
    # X: story means (13/3 + 3)/2 = 11/3 and (5 + 13/3)/2 = 14/3 → 25/6.
    # Y: (5/3 + 4/3)/2 = 3/2 and (7/3 + 7/3)/2 = 7/3 → 23/12.
    assert by_source["X"].mean.mean == pytest.approx(25 / 6)
    assert by_source["Y"].mean.mean == pytest.approx(23 / 12)
    # t(0.975, 1) = 12.706205; sd of X's story means = √2/2; half = 12.706205 · 0.5, so
    # 25/6 ± 6.353 leaves the 5-point scale at both ends and is cut at 1 and 5.
    x_mean = by_source["X"].mean
    assert (x_mean.ci_low, x_mean.ci_high, x_mean.clipped) == (1, 5, True)
    assert (by_source["X"].scores, by_source["X"].stories) == (4, 2)
    assert by_source["X"].items == ("a", "b", "c")
    (test,) = result.tests
    assert test.p_value == pytest.approx(1 / 3) and test.p_holm == pytest.approx(1 / 3)
    pooled, *within = result.reliability
    assert pooled.scope == "all" and [entry.scope for entry in within] == ["X", "Y"]
    assert pooled.cronbach_alpha == pytest.approx(1.5 * 74 / 116.875)
    assert pooled.omega == pytest.approx(0.952461, abs=1e-4)
    assert pooled.n == 8
    # Item b as answered (not coded) for source X: 2, 3, 1, 1 → counts at 1, 2, 3;
    # story means (2 + 3)/2 = 2.5 and 1 → 1.75.
    item_b = next(i for i in result.items if (i.item_id, i.source) == ("b", "X"))
    assert item_b.counts == {1: 2, 2: 1, 3: 1, 4: 0, 5: 0}
    assert item_b.mean.mean == pytest.approx(1.75)
    assert (item_b.answers, item_b.stories) == (4, 2)


def _nested(answers=MINI_ANSWERS):
    """The mini study with source Y's stories rated by raters of their own (r3, r4)."""
    return [
        (story, source, rater if source == "X" else {"r1": "r3", "r2": "r4"}[rater], *values)
        for story, source, rater, *values in answers
    ]


def test_with_raters_nested_in_sources_the_test_over_story_means_keeps_u_but_shows_no_p():
    # Each source's story means share that source's two raters: a rank test over them takes
    # dependent means as independent (in bench/rating_coverage.py's nested design it rejects
    # a true null in well over 10% of studies; tests/rating/test_analysis_mixed.py), so no p.
    crossed = analyze_scales(MINI, mini_judgements()).tests[0]
    nested = analyze_scales(MINI, mini_judgements(_nested())).tests[0]
    assert nested.p_value is None and nested.p_holm is None
    assert nested.reason == NESTED_RATERS_REASON
    assert (nested.statistic, nested.effect) == (crossed.statistic, crossed.effect)
    assert all(pair.p_value is None for pair in nested.pairs)
    analysis = analyze_ratings(MINI, mini_judgements(_nested()), bootstrap=0)
    text = render_rating_analysis(analysis)
    assert f"| – ({NESTED_RATERS_REASON}) | – |" in text
    assert NESTED_RATERS_NOTE in text


def test_story_means_share_raters_only_when_raters_are_nested_and_rate_several_stories():
    nested = mini_judgements(_nested())
    assert story_means_share_raters(nested)
    assert not story_means_share_raters(mini_judgements())  # crossed: raters rate both
    assert not story_means_share_raters(nested, raters_known=False)  # positions: unknown
    # Every rater rated one story: the story means are independent.
    own = nested.assign(rater_id=nested["story_id"] + "-" + nested["rater_id"])
    assert not story_means_share_raters(own)
    assert analyze_scales(MINI, own).tests[0].p_value is not None


def shifted(instrument, low: int, drop_factors: bool = False):
    """``instrument`` with every Likert item starting at ``low`` (and, if asked, no factors)."""
    items = tuple(
        dataclasses.replace(
            item,
            low=low,
            labels=(),
            factor=None if drop_factors else item.factor,
        )
        for item in instrument.items
    )
    return dataclasses.replace(instrument, items=items)


def test_a_scale_from_zero_is_reverse_coded_summarised_and_bounded_on_its_own_points():
    zero_based = shifted(MINI, low=0)  # points 0 … 4; b codes to 0 + 4 − b
    answers = mini_judgements().assign(value=lambda frame: frame["value"] - 1)
    assert coded_values(zero_based, answers).iloc[:3].tolist() == [3.0, 3.0, 4.0]
    result = analyze_scales(zero_based, answers)
    by_source = {factor.source: factor for factor in result.factors}
    # Every answer one lower than in the 1–5 mini study: each mean is one lower too.
    assert by_source["X"].mean.mean == pytest.approx(25 / 6 - 1)
    assert by_source["Y"].mean.mean == pytest.approx(23 / 12 - 1)
    x_mean = by_source["X"].mean
    assert (x_mean.ci_low, x_mean.ci_high, x_mean.clipped) == (0, 4, True)
    item_b = next(i for i in result.items if (i.item_id, i.source) == ("b", "X"))
    assert item_b.counts == {0: 2, 1: 1, 2: 1, 3: 0, 4: 0}
    assert item_b.mean.mean == pytest.approx(0.75)
    assert all(0 <= i.mean.ci_low <= i.mean.ci_high <= 4 for i in result.items)


def test_an_instrument_without_factors_is_analysed_as_one_scale_of_all_its_likert_items():
    unfactored = shifted(MINI, low=1, drop_factors=True)
    assert unfactored.factors() == {}
    result = analyze_scales(unfactored, mini_judgements())
    with_factor = analyze_scales(MINI, mini_judgements())
    # The same figures as when the three items form one declared factor (worked above).
    assert {(f.factor, f.source) for f in result.factors} == {
        (ALL_ITEMS_SCALE, "X"),
        (ALL_ITEMS_SCALE, "Y"),
    }
    assert [f.mean for f in result.factors] == [f.mean for f in with_factor.factors]
    assert [f.items for f in result.factors] == [("a", "b", "c")] * 2
    (test,) = result.tests
    assert test.what == ALL_ITEMS_SCALE and test.p_value == pytest.approx(1 / 3)
    pooled = [entry for entry in result.reliability if entry.scope == "all"]
    assert [entry.factor for entry in result.reliability] == [ALL_ITEMS_SCALE] * 3  # all, X, Y
    assert pooled[0].cronbach_alpha == pytest.approx(1.5 * 74 / 116.875)
    assert len(result.items) == 6  # and each item per source, as before


def test_items_on_different_scales_without_factors_are_not_averaged_into_one():
    mixed = shifted(MINI, low=1, drop_factors=True)
    mixed = dataclasses.replace(
        mixed, items=(dataclasses.replace(mixed.items[0], low=0), *mixed.items[1:])
    )
    answers = mini_judgements()
    answers.loc[answers["item"] == "a", "value"] -= 1
    result = analyze_scales(mixed, answers)
    assert result.factors == () and result.reliability == () and result.tests == ()
    assert len(result.items) == 6


# --- reliability within each source -------------------------------------------------------


def three_sources_apart(seed: int = 1) -> pd.DataFrame:
    """Three sources far apart on the factor, whose items hardly hang together within a
    source: each answer is the source's level, a small rater × story effect and much noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for source, level in (("A", 2.0), ("B", 3.0), ("C", 4.0)):
        for story in range(12):
            for rater in range(2):
                common = rng.normal(0, 0.4)
                for item in "abc":
                    agree = float(np.clip(round(level + common + rng.normal(0, 0.8)), 1, 5))
                    value = 6 - agree if item == "b" else agree
                    rows.append((f"{source}{story}", source, f"r{rater}", item, value))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_reliability_is_reported_within_each_source_as_well_as_pooled():
    # Differences between sources make the items covary in the pooled rows: pooled α is
    # about .76 while within each source it is .38, −.08 and .18.
    judgements = three_sources_apart()
    result = reliability(MINI, judgements)
    by_scope = {entry.scope: entry for entry in result}
    assert [entry.scope for entry in result] == ["all", "A", "B", "C"]
    assert {entry.factor for entry in result} == {"F"}
    for source in "ABC":
        own = judgements[judgements["source"] == source]
        wide = own.assign(value=coded_values(MINI, own)).pivot_table(
            index=["story_id", "rater_id"], columns="item", values="value"
        )
        assert by_scope[source].cronbach_alpha == pytest.approx(cronbach_alpha(wide)[0])
        assert by_scope[source].n == 24
        assert by_scope[source].cronbach_alpha < by_scope["all"].cronbach_alpha - 0.35
    assert by_scope["all"].cronbach_alpha > 0.7 and by_scope["all"].n == 72


def test_a_negative_alpha_warns_of_a_mis_keyed_item():
    result = {entry.scope: entry for entry in reliability(MINI, three_sources_apart())}
    assert result["B"].cronbach_alpha < 0
    assert result["B"].warnings == (
        "Cronbach's α is negative: an item is probably keyed the wrong way round (check which "
        "items are reverse-coded) or the items do not measure one thing.",
    )
    assert result["all"].warnings == ()


def test_an_item_that_never_varies_is_named():
    answers = [(story, "X", rater, a, b, 3) for story, _, rater, a, b, _ in MINI_ANSWERS]
    (entry,) = reliability(MINI, mini_judgements(answers))
    assert (
        "Item c has the same answer (3) in all 8 rows: it cannot add to α or ω; check it."
        in entry.warnings
    )
    assert entry.omega is None
