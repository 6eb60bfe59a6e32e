"""Agreement between raters: Krippendorff's α, Fleiss' κ and exact agreement, worked out by
hand on small examples."""

import pandas as pd
import pytest

from cyoa.rating.analysis.agreement import (
    ALL_ITEMS,
    ALL_SOURCES,
    agreement_table,
    exact_agreement,
    fleiss_kappa,
    krippendorff_alpha,
    value_counts,
)
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
