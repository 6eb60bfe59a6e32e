"""Agreement between raters: Krippendorff's α, Fleiss' κ and exact agreement, worked out by
hand on small examples."""

import math
import warnings
from dataclasses import replace

import krippendorff
import numpy as np
import pandas as pd
import pingouin
import pytest

from cyoa.rating.analysis.agreement import (
    ALL_ITEMS,
    ALL_SOURCES,
    ALPHA_MIN,
    MIN_STORIES,
    ItemAgreement,
    agreement_table,
    exact_agreement,
    fleiss_kappa,
    gwet_ac1,
    icc_2k,
    krippendorff_alpha,
    value_counts,
)
from cyoa.rating.analysis.ratings import analyze_ratings
from cyoa.rating.analysis.render import alpha_cell, render_rating_analysis
from cyoa.rating.instruments import instrument_from_spec

# Three raters, four stories, Yes = 1 / No = 0.
YES_NO_UNITS = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0]]


def test_fleiss_kappa_of_three_raters_and_four_stories():
    # Counts (Yes, No) per story: (3,0) (2,1) (0,3) (1,2); n = 3 raters.
    # P_i = (Σ n_ij² − n) / (n(n − 1)): (9 − 3)/6 = 1, (4 + 1 − 3)/6 = 1/3, 1, 1/3.
    # P̄ = (1 + 1/3 + 1 + 1/3) / 4 = 2/3.
    # p_Yes = (3 + 2 + 0 + 1) / 12 = 1/2, p_No = 1/2, so P_e = 1/4 + 1/4 = 1/2.
    # κ = (2/3 − 1/2) / (1 − 1/2) = (1/6) / (1/2) = 1/3.
    result = fleiss_kappa(YES_NO_UNITS, [0, 1])
    assert result.kappa == pytest.approx(1 / 3)
    assert (result.units, result.raters, result.reason) == (4, 3, None)


def test_krippendorff_alpha_nominal_of_the_same_stories():
    # Coincidences o_ck = Σ_u (ordered pairs c,k in u) / (m_u − 1), m_u = 3:
    #   YYY: o_YY += 6/2 = 3.   YYN: o_YY += 2/2, o_YN += 2/2, o_NY += 2/2.
    #   NNN: o_NN += 3.         YNN: o_NN += 1, o_YN += 1, o_NY += 1.
    # o_YY = 4, o_NN = 4, o_YN = o_NY = 2; n_Y = n_N = 6, n = 12.
    # α = 1 − (n − 1)(o_YN + o_NY) / (n_Y n_N + n_N n_Y) = 1 − 11 · 4 / 72 = 28/72 = 7/18.
    result = krippendorff_alpha(YES_NO_UNITS, "nominal", [0, 1], bootstrap=0)
    assert result.alpha == pytest.approx(7 / 18)
    assert (result.units, result.ratings, result.level) == (4, 12, "nominal")
    assert (result.ci_low, result.ci_high) == (None, None)


def test_exact_agreement_is_the_share_of_unanimous_stories():
    # Stories 1 (Yes Yes Yes) and 3 (No No No) are unanimous: 2 of 4.
    result = exact_agreement(YES_NO_UNITS)
    assert (result.share, result.agreed, result.units) == (0.5, 2, 4)


# Two raters, three stories, on a 1–3 scale: [1, 1], [2, 3], [3, 3].
ORDINAL_UNITS = [[1, 1], [2, 3], [3, 3]]


def test_krippendorff_alpha_ordinal():
    # n_1 = 2, n_2 = 1, n_3 = 3, n = 6; coincidences (m_u = 2, weight 1): o_11 = 2,
    # o_23 = o_32 = 1, o_33 = 2.
    # Ordinal δ²(c,k) = (Σ_{g=c..k} n_g − (n_c + n_k)/2)²:
    #   δ²(1,2) = (3 − 1.5)² = 2.25, δ²(2,3) = (4 − 2)² = 4, δ²(1,3) = (6 − 2.5)² = 12.25.
    # D_o = Σ o_ck δ²_ck / n = (4 + 4) / 6 = 4/3.
    # D_e = Σ_{c≠k} n_c n_k δ²_ck / (n(n − 1)) = 2 (2·1·2.25 + 2·3·12.25 + 1·3·4) / 30
    #     = 2 · 90 / 30 = 6.
    # α = 1 − (4/3) / 6 = 7/9.
    result = krippendorff_alpha(ORDINAL_UNITS, "ordinal", [1, 2, 3], bootstrap=0)
    assert result.alpha == pytest.approx(7 / 9)


def test_krippendorff_alpha_interval():
    # δ²(c,k) = (c − k)²: D_o = (1 + 1) / 6 = 1/3;
    # D_e = 2 (2·1·1 + 2·3·4 + 1·3·1) / 30 = 58/30; α = 1 − (1/3)/(58/30) = 1 − 10/58 = 24/29.
    result = krippendorff_alpha(ORDINAL_UNITS, "interval", [1, 2, 3], bootstrap=0)
    assert result.alpha == pytest.approx(24 / 29)


def test_unused_scale_points_do_not_change_alpha():
    five_points = krippendorff_alpha(ORDINAL_UNITS, "ordinal", [1, 2, 3, 4, 5], bootstrap=0)
    assert five_points.alpha == pytest.approx(7 / 9)


def test_missing_ratings_and_single_ratings_are_not_pairable():
    # A NaN rating is missing; a story with one rating left is left out: same α as above.
    units = [[1, 1, float("nan")], [2, 3], [3, 3], [2]]
    result = krippendorff_alpha(units, "ordinal", [1, 2, 3], bootstrap=0)
    assert result.alpha == pytest.approx(7 / 9)
    assert (result.units, result.ratings) == (3, 6)


def test_bootstrap_interval_resamples_stories_with_a_seed():
    units = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 0, 1]] * 3
    first = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=300, seed=7)
    again = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=300, seed=7)
    other = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=300, seed=8)
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    assert first.ci_low < first.alpha < first.ci_high
    assert (first.resamples, first.seed, first.confidence) == (300, 7, 0.95)
    assert first.valid_resamples == 300


def test_perfect_agreement_gives_alpha_one_and_a_degenerate_interval():
    units = [[1, 1], [2, 2], [3, 3], [1, 1]]
    result = krippendorff_alpha(units, "ordinal", [1, 2, 3], bootstrap=100)
    assert result.alpha == pytest.approx(1.0)
    assert result.ci_low == pytest.approx(1.0) and result.ci_high == pytest.approx(1.0)
    # Replicates that draw only the stories rated 1 have one value and no α: left out.
    assert result.valid_resamples < 100


def test_alpha_is_undefined_without_variation_or_units():
    same = krippendorff_alpha([[1, 1], [1, 1]], "nominal", [0, 1], bootstrap=10)
    assert same.alpha is None and "same value" in same.reason
    single = krippendorff_alpha([[1, 0, 1]], "nominal", [0, 1], bootstrap=10)
    assert single.alpha is None and "fewer than 2 stories" in single.reason


def test_fleiss_kappa_needs_the_same_number_of_raters_per_story():
    result = fleiss_kappa([[1, 1, 0], [1, 0]], [0, 1])
    assert result.kappa is None
    assert result.reason == (
        "stories have 2 to 3 ratings; Fleiss' κ needs the same number for every story"
    )
    assert fleiss_kappa([[1, 1], [1, 1]], [0, 1]).reason == "every rating is in the same category"
    assert fleiss_kappa([[1], [0]], [0, 1]).reason == "each story has one rating only"
    assert fleiss_kappa([[1, 0, 1]], [0, 1]).reason == "fewer than 2 stories"


def test_value_counts_refuses_a_rating_off_the_scale():
    assert value_counts([[1, 3, 3]], [1, 2, 3]).tolist() == [[1, 0, 2]]
    with pytest.raises(ValueError, match="Rating 6.0 is not one of the values"):
        value_counts([[1, 6]], [1, 2, 3])


def _judgements(rows):
    return pd.DataFrame(rows, columns=["story_id", "source", "rater_id", "item", "value"])


SCALE = instrument_from_spec(
    {
        "id": "mini",
        "name": "Mini",
        "items": [
            {"id": "a", "text": "A.", "kind": "likert", "points": 3},
            {"id": "b", "text": "B.", "kind": "likert", "points": 3, "reverse": True},
        ],
    },
    "test",
)


def ordinal_example():
    rows = []
    for story, source, a_values, b_values in [
        ("s1", "X", [1, 1], [3, 3]),
        ("s2", "X", [2, 3], [2, 1]),
        ("s3", "Y", [3, 3], [1, 1]),
    ]:
        for rater, (a, b) in enumerate(zip(a_values, b_values, strict=True)):
            rows += [(story, source, f"r{rater}", "a", a), (story, source, f"r{rater}", "b", b)]
    return _judgements(rows)


def test_agreement_table_per_item_per_source_and_pooled():
    # Item a: stories s1 [1, 1], s2 [2, 3], s3 [3, 3] — the ordinal example, α = 7/9.
    # Item b (reversed, 4 − value): answers 3,3 / 2,1 / 1,1 code to 1,1 / 2,3 / 3,3: also 7/9.
    table = agreement_table(SCALE, ordinal_example(), bootstrap=50, seed=1)
    keys = [(row.item_id, row.scope) for row in table]
    assert keys == [
        ("a", ALL_SOURCES),
        ("b", ALL_SOURCES),
        (ALL_ITEMS, ALL_SOURCES),
        ("a", "X"),
        ("b", "X"),
        (ALL_ITEMS, "X"),
        ("a", "Y"),
        ("b", "Y"),
        (ALL_ITEMS, "Y"),
    ]
    by_key = {(row.item_id, row.scope): row for row in table}
    assert by_key[("a", ALL_SOURCES)].alpha.alpha == pytest.approx(7 / 9)
    assert by_key[("b", ALL_SOURCES)].alpha.alpha == pytest.approx(7 / 9)
    # Pooled: six story × item units (1,1) (2,3) (3,3) (1,1) (2,3) (3,3) after coding.
    # n_1 = 4, n_2 = 2, n_3 = 6, n = 12; o_11 = 4, o_23 = o_32 = 2, o_33 = 4.
    # δ²(1,2) = (6 − 3)² = 9, δ²(2,3) = (8 − 4)² = 16, δ²(1,3) = (12 − 5)² = 49.
    # D_o = (2·16 + 2·16) / 12 = 16/3; D_e = 2 (4·2·9 + 4·6·49 + 2·6·16) / (12·11) = 2880/132.
    # α = 1 − (16/3)(132/2880) = 1 − 11/45 = 34/45.
    pooled = by_key[(ALL_ITEMS, ALL_SOURCES)]
    assert pooled.alpha.alpha == pytest.approx(34 / 45)
    assert pooled.alpha.units == 6 and pooled.alpha.level == "ordinal"
    assert pooled.fleiss is None
    assert by_key[("a", "Y")].alpha.alpha is None  # one story only
    assert by_key[("a", ALL_SOURCES)].exact.share == pytest.approx(2 / 3)


def test_likert_items_can_be_taken_as_interval():
    # The interval example above: item a's stories [1, 1], [2, 3], [3, 3] give α = 24/29.
    table = agreement_table(SCALE, ordinal_example(), bootstrap=0, likert_level="interval")
    first = table[0]
    assert (first.item_id, first.alpha.level) == ("a", "interval")
    assert first.alpha.alpha == pytest.approx(24 / 29)
    with pytest.raises(ValueError, match="likert_level must be one of"):
        agreement_table(SCALE, ordinal_example(), likert_level="ratio")


# --- the unit of the bootstrap, and warnings on thin intervals ----------------------------


def test_the_pooled_alpha_resamples_whole_stories_and_says_so():
    # Two stories of two items each: a cluster bootstrap draws stories, so a replicate holds
    # story s1 twice (every rating 1: no α, left out), s2 twice, or both.
    # Both (half the replicates): n_0 = 2, n_1 = 6, o_01 = o_10 = 2,
    #   α = 1 − (n − 1)(o_01 + o_10)/(2 n_0 n_1) = 1 − 7 · 4/24 = −1/6, the α of the data.
    # s2 twice (a quarter): units (0,1) × 4, n_0 = n_1 = 4, o_01 = o_10 = 4,
    #   α = 1 − 7 · 8/32 = −0.75.
    # Resampling the four units one by one would also give other values (e.g. three of s1's).
    units = [[1, 1], [1, 1], [0, 1], [0, 1]]
    result = krippendorff_alpha(
        units, "nominal", [0, 1], stories=["s1", "s1", "s2", "s2"], bootstrap=400, seed=3
    )
    whole = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=0).alpha
    assert (result.units, result.stories) == (4, 2)
    assert result.ci_low == pytest.approx(-0.75)
    assert result.ci_high == pytest.approx(whole) == pytest.approx(-1 / 6)
    assert result.interval == "percentile bootstrap over 2 stories, 400 replicates, seed 3"


def test_a_story_level_bootstrap_is_wider_than_one_over_story_item_units():
    # Stories differ in how well their raters agree on every item at once (clear and murky
    # stories): story × item units of one story are not independent, and resampling them
    # one by one understates the uncertainty.
    rng = np.random.default_rng(5)
    units, stories = [], []
    for story in range(16):
        murky = story % 2 == 0
        for _ in range(8):
            truth = int(rng.integers(0, 2))
            if murky:
                units.append([int(v) for v in rng.integers(0, 2, size=3)])
            else:
                units.append([truth] * 3)
            stories.append(f"s{story}")
    by_story = krippendorff_alpha(units, "nominal", [0, 1], stories=stories, bootstrap=500)
    by_unit = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=500)
    assert by_story.alpha == pytest.approx(by_unit.alpha)
    assert (by_story.ci_high - by_story.ci_low) > 1.3 * (by_unit.ci_high - by_unit.ci_low)


def test_agreement_tables_pooled_row_counts_and_resamples_stories():
    table = agreement_table(SCALE, ordinal_example(), bootstrap=50, seed=1)
    pooled = next(row for row in table if (row.item_id, row.scope) == (ALL_ITEMS, ALL_SOURCES))
    # Six story × item units from three stories; the bootstrap draws the three stories.
    assert (pooled.alpha.units, pooled.alpha.stories) == (6, 3)
    assert pooled.alpha.interval == "percentile bootstrap over 3 stories, 50 replicates, seed 1"
    single = next(row for row in table if (row.item_id, row.scope) == ("a", ALL_SOURCES))
    assert (single.alpha.units, single.alpha.stories) == (3, 3)


def test_alpha_from_two_unanimous_stories_warns_that_too_few_stories_carry_it():
    result = krippendorff_alpha([[1, 1], [2, 2]], "ordinal", [1, 2, 3], bootstrap=200)
    assert result.alpha == pytest.approx(1.0)
    assert (result.ci_low, result.ci_high) == (pytest.approx(1.0), pytest.approx(1.0))
    assert any(
        f"rests on 2 stories (fewer than {MIN_STORIES})" in warning for warning in result.warnings
    )


def test_an_interval_whose_replicates_all_agree_says_why_its_bounds_are_equal():
    # Four items of one story: every resample draws that story, so every replicate is α.
    units = [[1, 2], [2, 2], [3, 1], [1, 1]]
    result = krippendorff_alpha(units, "ordinal", [1, 2, 3], stories=["s1"] * 4, bootstrap=50)
    assert result.alpha is not None and result.ci_low == result.ci_high == result.alpha
    assert any(
        "All 50 bootstrap replicates gave the same α, so its interval has no width" in warning
        for warning in result.warnings
    )
    assert any("rests on 1 story (fewer than" in warning for warning in result.warnings)
    varied = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 0, 1]] * 3
    spread = krippendorff_alpha(varied, "nominal", [0, 1], bootstrap=50, seed=7)
    assert not any("same α" in warning for warning in spread.warnings)


def test_replicates_without_alpha_are_counted_and_warned_about():
    # 19 of 20 stories unanimous on Yes: a replicate that misses the one split story has a
    # single value and no α. The draws are the documented ones (default_rng(seed), 20
    # stories drawn with replacement per replicate), so the count can be checked exactly.
    units = [[1, 1]] * 19 + [[1, 0]]
    result = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=1000, seed=0)
    rng = np.random.default_rng(0)
    missed = sum(19 not in rng.integers(0, 20, size=20) for _ in range(1000))
    assert 300 < missed < 400  # about (19/20)^20 = 36%
    assert result.valid_resamples == 1000 - missed
    assert (
        f"{missed} of 1,000 bootstrap replicates had a single value and no α: left out."
        in result.warnings
    )


def test_an_alpha_whose_interval_dropped_replicates_says_how_many_it_kept_beside_the_number():
    # 19 of 20 stories unanimous (as above): about 365 of 1,000 replicates have no α. The
    # cell the dashboard, analyze and the card print says so where the number is.
    units = [[1, 1]] * 19 + [[1, 0]]
    alpha = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=1000, seed=0)
    entry = ItemAgreement("1", ALL_SOURCES, "yes_no", alpha, None, exact_agreement(units))
    assert alpha_cell(entry).endswith(f" ({alpha.valid_resamples:,} of 1,000 replicates)")
    full = krippendorff_alpha(
        [[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0]] * 5, "nominal", [0, 1], bootstrap=200
    )
    assert "replicates" not in alpha_cell(replace(entry, alpha=full))


def test_enough_stories_and_no_dropped_replicates_give_no_warning():
    units = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 0, 1]] * 3
    assert krippendorff_alpha(units, "nominal", [0, 1], bootstrap=200).warnings == ()


def test_q_is_the_share_of_replicates_below_the_tentative_threshold():
    # Hayes & Krippendorff (2007): q(α < .667), the chance that the population α is below
    # the smallest acceptable value. The same 18 stories, drawn as documented.
    units = [[1, 1, 1], [1, 1, 0], [0, 0, 0], [1, 0, 0], [1, 1, 1], [0, 0, 1]] * 3
    result = krippendorff_alpha(units, "nominal", [0, 1], bootstrap=300, seed=2)
    rng = np.random.default_rng(2)
    counts = value_counts(units, [0, 1])
    replicates = [
        krippendorff.alpha(
            value_counts=counts[rng.integers(0, 18, size=18)], level_of_measurement="nominal"
        )
        for _ in range(300)
    ]
    assert ALPHA_MIN == 0.667
    assert result.q_below_min == pytest.approx(np.mean(np.asarray(replicates) < 0.667))
    assert 0 < result.q_below_min < 1
    clear = krippendorff_alpha([[1, 1], [0, 0]] * 10, "nominal", [0, 1], bootstrap=100)
    assert clear.q_below_min == 0.0


# --- Gwet's AC1 ----------------------------------------------------------------------------


def test_gwet_ac1_reproduces_gwets_worked_example():
    # Gwet (2014), Handbook of Inter-Rater Reliability, 4th ed.: 4 raters classify 12
    # subjects into 5 categories, with gaps; AC1 = 0.7754, p_a = 0.8182, p_e = 0.1903.
    # Units are the subjects' ratings; subject 12 has one rating (it counts in p_e only).
    nan = float("nan")
    subjects = [
        [1, 1, nan, 1],
        [2, 2, 3, 2],
        [3, 3, 3, 3],
        [3, 3, 3, 3],
        [2, 2, 2, 2],
        [1, 2, 3, 4],
        [4, 4, 4, 4],
        [1, 1, 2, 1],
        [2, 2, 2, 2],
        [nan, 5, 5, 5],
        [nan, nan, 1, 1],
        [nan, nan, 3, nan],
    ]
    result = gwet_ac1(subjects, [1, 2, 3, 4, 5], bootstrap=0)
    assert result.ac1 == pytest.approx(0.77544, abs=5e-6)
    assert result.pa == pytest.approx(0.81818, abs=5e-6)
    assert result.pe == pytest.approx(0.19032, abs=5e-6)
    assert result.units == 12


# TTCW-like: 20 stories, 3 raters, a rare Yes. Seventeen stories all No; three with one Yes.
RARE_YES = [[0, 0, 0]] * 17 + [[1, 0, 0]] * 3


def test_a_rare_yes_gives_kappa_near_zero_while_ac1_sees_the_agreement():
    # The prevalence paradox (Feinstein & Cicchetti 1990; Gwet 2008). Pairs of raters agree
    # on p_a = (17 · 1 + 3 · 1/3) / 20 = 0.9 of their comparisons.
    # Fleiss: p_Yes = 3/60 = 0.05, P_e = 0.05² + 0.95² = 0.905, κ = (0.9 − 0.905)/0.095 = −1/19.
    # AC1: p_e = Σ π_k (1 − π_k)/(q − 1) = 2 · 0.05 · 0.95 = 0.095,
    #      AC1 = (0.9 − 0.095)/(1 − 0.095) = 0.805/0.905 = 161/181.
    kappa = fleiss_kappa(RARE_YES, [0, 1])
    ac1 = gwet_ac1(RARE_YES, [0, 1], bootstrap=500)
    assert kappa.kappa == pytest.approx(-1 / 19)
    assert ac1.pa == pytest.approx(0.9)
    assert ac1.ac1 == pytest.approx(161 / 181)
    assert ac1.ci_low < ac1.ac1 <= ac1.ci_high <= 1
    assert ac1.interval == "percentile bootstrap over 20 stories, 500 replicates, seed 0"


def test_ac1_is_reported_beside_kappa_and_alpha_for_yes_no_items_only():
    yes_no = instrument_from_spec(
        {"id": "yn", "name": "YN", "items": [{"id": "q", "text": "Q?", "kind": "yes_no"}]},
        "test",
    )
    rows = [
        (f"s{story}", "A", f"r{rater}", "q", float(value))
        for story, values in enumerate(RARE_YES)
        for rater, value in enumerate(values)
    ]
    (row,) = agreement_table(yes_no, _judgements(rows), bootstrap=100)
    assert row.ac1.ac1 == pytest.approx(161 / 181)
    assert row.fleiss.kappa == pytest.approx(-1 / 19)
    assert row.icc is None
    likert = agreement_table(SCALE, ordinal_example(), bootstrap=0)
    assert all(entry.ac1 is None for entry in likert)


def test_ac1_of_no_ratings_says_why():
    result = gwet_ac1([[1], [0]], [0, 1], bootstrap=10)
    assert result.ac1 is None and result.reason == "no story has two or more ratings"


# --- ICC(2,k) ------------------------------------------------------------------------------


def _long(matrix):
    return pd.DataFrame(
        [
            (f"s{story}", f"j{judge}", float(value))
            for story, row in enumerate(matrix)
            for judge, value in enumerate(row)
        ],
        columns=["story_id", "rater_id", "value"],
    )


# Shrout & Fleiss (1979), Table 2: six targets rated by four judges.
SHROUT_FLEISS = [
    [9, 2, 5, 8],
    [6, 1, 3, 2],
    [8, 4, 6, 8],
    [7, 1, 2, 6],
    [10, 5, 6, 9],
    [6, 2, 4, 7],
]


def test_icc_2k_reproduces_shrout_and_fleiss():
    # Shrout & Fleiss (1979), Table 4: ICC(2,4) = .62. From their mean squares (BMS = 11.24,
    # JMS = 32.49, EMS = 1.02, n = 6): (BMS − EMS)/(BMS + (JMS − EMS)/n) = 10.22/16.485.
    result = icc_2k(_long(SHROUT_FLEISS))
    assert result.icc == pytest.approx(0.6200, abs=5e-4)
    assert result.ci_low < result.icc < result.ci_high
    assert (result.stories, result.raters, result.reason) == (6, 4, None)


def test_icc_2k_and_its_interval_equal_pingouins():
    rng = np.random.default_rng(4)
    story = rng.normal(0, 1, size=(15, 1))
    matrix = np.clip(np.round(3 + story + rng.normal(0, 0.8, size=(15, 3))), 1, 5)
    for data in (SHROUT_FLEISS, matrix):
        frame = _long(data)
        with warnings.catch_warnings():
            # pingouin 0.7 calls DataFrame.dropna(inplace=True), deprecated in pandas 3.1.
            warnings.simplefilter("ignore", DeprecationWarning)
            expected = pingouin.intraclass_corr(
                data=frame, targets="story_id", raters="rater_id", ratings="value"
            ).set_index("Type")
        result = icc_2k(frame)
        assert result.icc == pytest.approx(expected.loc["ICC(A,k)", "ICC"])
        # pingouin rounds its interval to 2 decimals.
        low, high = expected.loc["ICC(A,k)", "CI95"]
        assert (result.ci_low, result.ci_high) == (
            pytest.approx(low, abs=0.005),
            pytest.approx(high, abs=0.005),
        )


def test_an_icc_2k_interval_unbounded_below_contains_its_estimate():
    # Two raters, three stories (7, 9), (8, 8), (10, 9): ICC(2,k) = (BMS − EMS)/(BMS +
    # (JMS − EMS)/n) = .29. One rater's lower end (−2.08) lies below −1/(k − 1) = −1, where
    # Spearman–Brown, k·r/(1 + (k − 1)·r), has its pole: the k-rater interval has no lower
    # bound. Carried through the pole it reads [3.86, 0.99] (pingouin 0.7.0 prints that).
    result = icc_2k(_long([[7, 9], [8, 8], [10, 9]]))
    assert result.icc == pytest.approx(2 / 7)
    assert result.ci_low == -math.inf
    assert result.ci_high == pytest.approx(0.9857, abs=5e-4)
    rubric = instrument_from_spec(
        {
            "id": "rubric",
            "name": "Rubric",
            "items": [{"id": "plot", "text": "Plot.", "kind": "likert", "low": 0, "points": 11}],
        },
        "test",
    )
    rows = [
        (f"s{story}", "X", f"r{rater}", "plot", float(value))
        for story, pair in enumerate([[7, 9], [8, 8], [10, 9]])
        for rater, value in enumerate(pair)
    ]
    analysis = analyze_ratings(rubric, _judgements(rows), bootstrap=0)
    assert "| 0.29 [−∞, 0.99] (3 stories × 2 raters) |" in render_rating_analysis(analysis)


RUBRIC = instrument_from_spec(
    {
        "id": "rubric",
        "name": "Rubric",
        "items": [{"id": "plot", "text": "Plot.", "kind": "likert", "low": 0, "points": 11}],
    },
    "test",
)


def _shrout_fleiss_and_a_story_two_judges_rated():
    """Shrout & Fleiss's six targets by four judges, and a seventh story rated by two."""
    rows = [
        (f"s{story}", "X", f"j{judge}", "plot", float(value))
        for story, row in enumerate(SHROUT_FLEISS)
        for judge, value in enumerate(row)
    ]
    return _judgements(rows + [("s6", "X", "j0", "plot", 5.0), ("s6", "X", "j1", "plot", 4.0)])


def test_the_icc_cell_says_how_many_of_the_stories_and_which_raters_it_rests_on():
    analysis = analyze_ratings(RUBRIC, _shrout_fleiss_and_a_story_two_judges_rated(), bootstrap=0)
    (entry,) = [e for e in analysis.agreement if e.item_id == "plot"]
    assert (entry.icc.stories, entry.icc.rated, entry.icc.raters) == (6, 7, 4)
    assert entry.icc.icc == pytest.approx(0.6200, abs=5e-4)
    text = render_rating_analysis(analysis)
    # The row's story count is α's (7); the ICC's six stories and four raters sit beside it.
    assert "(6 of 7 stories × 4 raters) |" in text
    assert text.count("| 7 |") >= 1


def test_rater_ids_that_are_positions_give_no_icc_and_say_why():
    rows = _shrout_fleiss_and_a_story_two_judges_rated()
    analysis = analyze_ratings(RUBRIC, rows, bootstrap=0, raters_known=False)
    (entry,) = [e for e in analysis.agreement if e.item_id == "plot"]
    assert entry.icc.icc is None and entry.alpha.alpha is not None
    assert "rater ids are positions" in entry.icc.reason
    assert "– (rater ids are positions within each story" in render_rating_analysis(analysis)


def test_icc_2k_uses_the_stories_every_rater_rated_and_says_when_there_are_none():
    rows = _long(SHROUT_FLEISS)
    # One missing cell: story s5 is left out, the other five are complete.
    partial = icc_2k(rows[~((rows["story_id"] == "s5") & (rows["rater_id"] == "j0"))])
    assert (partial.stories, partial.raters) == (5, 4) and partial.icc is not None
    assert partial.note == "5 of 6 stories (those rated by all 4 raters)"
    # Crowd design: each story has its own raters.
    crowd = pd.DataFrame(
        [(f"s{s}", f"r{s}-{r}", float(v)) for s, v in enumerate([1, 2, 3]) for r in range(2)],
        columns=["story_id", "rater_id", "value"],
    )
    crossed = pd.DataFrame(
        [("a", "x", 1.0), ("a", "y", 2.0), ("b", "x", 2.0), ("b", "y", 1.0)],
        columns=["story_id", "rater_id", "value"],
    )
    assert "no variance to compare" in icc_2k(crossed).reason
    missing = icc_2k(crowd)
    assert missing.icc is None
    assert missing.reason == (
        "fewer than 2 stories were rated by all 6 raters: ICC(2,k) needs every rater to rate "
        "every story (a crossed design)"
    )


def test_icc_2k_is_reported_for_likert_items():
    table = agreement_table(SCALE, ordinal_example(), bootstrap=0)
    first = table[0]
    assert (first.item_id, first.scope) == ("a", ALL_SOURCES)
    # Item a: stories [1, 1], [2, 3], [3, 3] by raters r0 and r1, a complete 3 × 2 design.
    # Grand mean 13/6; story means 1, 5/2, 3; rater means 2, 7/3.
    # SS_stories = 2 · (49 + 4 + 25)/36 = 13/3, BMS = 13/6; SS_raters = 3 · 2/36 = 1/6 = JMS;
    # SS_total = (2 · 49 + 1 + 3 · 25)/36 = 29/6, SS_error = 1/3 over 2 df, EMS = 1/6.
    # ICC(2,k) = (BMS − EMS)/(BMS + (JMS − EMS)/n) = 2/(13/6) = 12/13.
    expected = 12 / 13
    assert first.icc.icc == pytest.approx(expected)
    assert first.fleiss is None and first.ac1 is None
