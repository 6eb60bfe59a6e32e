"""The rating dashboard's charts: valid SVG documents that show the analysis' numbers for
small datasets worked out by hand, and only the charts that fit the instrument."""

from xml.etree import ElementTree

import pandas as pd
import pytest

from cyoa.rating.analysis.fei import EntropyMean, IndexSummary
from cyoa.rating.analysis.ratings import analyze_ratings
from cyoa.rating.analysis.scales import FactorSummary, mean_interval
from cyoa.rating.analysis.ttcw import pass_rates
from cyoa.rating.instruments import (
    AISS_V1,
    TTCW,
    FeiQuestion,
    fei_instrument,
    instrument_from_spec,
)
from cyoa.rating.research.charts import (
    NO_DATA,
    chart_names,
    entropy_chart,
    factor_chart,
    pass_rate_chart,
    rating_chart,
)

COLUMNS = ["story_id", "source", "rater_id", "item", "value", "rationale"]
SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: bytes) -> list[str]:
    """Every text the SVG document shows, in document order (it must parse as XML)."""
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return ["".join(node.itertext()).strip() for node in root.iter(f"{SVG}text")]


def test_the_heat_map_shows_each_test_s_share_of_yes_and_n_per_source():
    # Test 1 (Fluency): GPT4 Yes from 2 of 3 raters, Human from 3 of 3.
    # Test 6 (Flexibility): GPT4 Yes from 0 of 3; Human was never asked it.
    answers = {("1", "GPT4"): [1, 1, 0], ("1", "Human"): [1, 1, 1], ("6", "GPT4"): [0, 0, 0]}
    rows = [
        (f"{source}-story", source, f"r{n}", test, float(value), "why")
        for (test, source), values in answers.items()
        for n, value in enumerate(values)
    ]
    rates = pass_rates(TTCW, pd.DataFrame(rows, columns=COLUMNS))
    shown = texts(pass_rate_chart([r for r in rates if r.test_id in ("1", "6")], ["GPT4", "Human"]))
    assert "GPT4" in shown and "Human" in shown
    assert "1. Narrative Ending" in shown and "6. Emotional Flexibility" in shown
    assert "Fluency" in shown and "Flexibility" in shown
    # Cells in reading order: test 1 (GPT4, Human), then test 6 (GPT4, Human).
    cells = [t for t in shown if t.endswith("%") or t.startswith("n=") or t == "–"]
    assert cells == ["67%", "n=3", "100%", "n=3", "0%", "n=3", "–"]


def test_the_factor_profile_shows_each_source_s_mean_score_per_factor():
    def summary(factor: str, source: str, story_means: list[float]) -> FactorSummary:
        items = AISS_V1.factors()[factor]
        mean = mean_interval(story_means)
        return FactorSummary(factor, source, items, len(story_means), len(story_means), mean, 0)

    factors = [
        summary("Coherence", "human", [4.0, 5.0]),  # mean 4.5, t interval 4.5 ± 6.35
        summary("Coherence", "model", [2.0, 3.0, 4.0]),  # mean 3.0
        summary("Pace", "model", [3.5]),  # one story: a point without whiskers
    ]
    shown = texts(factor_chart(factors, tuple(AISS_V1.factors()), (1, 5), "all 3 raters"))
    assert "human" in shown and "model" in shown
    assert "Coherence" in shown and "Pace" in shown
    assert not any("Repetition" in t for t in shown)  # factors without scores are left out
    assert [t for t in shown if t in ("4.50", "3.00", "3.50")] == ["4.50", "3.00", "3.50"]
    assert any("95% t interval; all 3 raters" in t for t in shown)


def test_the_entropy_chart_shows_etc_and_ewc_per_source_in_bits():
    def summary(index, source, mean, low, high, readers=4):
        equal = EntropyMean(mean, low, high, 2, 4)
        return IndexSummary(index, source, equal, equal, readers, readers, readers, readers)

    summaries = [
        summary("ETC", "original", 0.0, 0.0, 0.0),
        summary("ETC", "original (shuffled)", 0.75, 0.5, 1.0),
        summary("EWC", "original", 0.5, 0.25, 0.75, readers=3),
    ]
    shown = texts(entropy_chart(summaries))
    assert "original" in shown and "original (shuffled)" in shown
    assert "ETC" in shown and "EWC" in shown
    assert [t for t in shown if t in ("0.00", "0.75", "0.50")] == ["0.00", "0.50", "0.75"]
    assert any("lower is more coherent" in t for t in shown)
    assert any("readers per question: ETC 4, EWC 3; 95% bootstrap" in t for t in shown)


def test_each_instrument_gets_the_charts_that_fit_it():
    fei = fei_instrument([FeiQuestion("s1", "q1", "world", "Is it night?")])
    assert chart_names(TTCW) == ("pass-rates",)
    assert chart_names(AISS_V1) == ("factors",)
    assert chart_names(fei) == ("entropy",)
    with pytest.raises(KeyError):
        rating_chart("factors", TTCW, None)


@pytest.mark.parametrize("name", ["pass-rates", "factors", "entropy"])
def test_a_chart_before_any_judgement_says_so(name):
    instrument = {"pass-rates": TTCW, "factors": AISS_V1}.get(
        name, fei_instrument([FeiQuestion("s1", "q1", "world", "Is it night?")])
    )
    assert texts(rating_chart(name, instrument, None)) == [NO_DATA]


def test_the_dispatch_draws_the_analysis_of_the_judgements():
    rows = [
        (f"{source}-{n}", source, f"r{rater}", item.id, float(rater == 0), "why")
        for source in ("GPT4", "Human")
        for n in range(2)
        for rater in range(2)
        for item in TTCW.items
    ]
    analysis = analyze_ratings(TTCW, pd.DataFrame(rows, columns=COLUMNS), bootstrap=10)
    shown = texts(rating_chart("pass-rates", TTCW, analysis, "all 2 raters"))
    # Every test: 2 of 4 judgements are Yes, for both sources.
    assert shown.count("50%") == 28 and shown.count("n=4") == 28


def test_a_0_to_10_rubric_without_factors_charts_its_one_scale_on_0_to_10():
    rubric = instrument_from_spec(
        {"id": "rubric", "name": "Rubric", "items": [
            {"id": "plot", "text": "Plot?", "kind": "likert", "low": 0, "points": 11},
            {"id": "tone", "text": "Tone?", "kind": "likert", "low": 0, "points": 11},
        ]},
        "test",
    )  # fmt: skip
    rows = [
        (f"{source}-{n}", source, f"r{rater}", item, float(value + rater), None)
        for source, value in (("model", 0), ("human", 8))
        for n in range(2)
        for rater in range(2)
        for item in ("plot", "tone")
    ]
    analysis = analyze_ratings(rubric, pd.DataFrame(rows, columns=COLUMNS), bootstrap=10)
    assert chart_names(rubric) == ("factors",)
    shown = texts(rating_chart("factors", rubric, analysis, "all 2 raters"))
    assert "all items" in shown and "0.50" in shown and "8.50" in shown
    assert any("0–10" in t for t in shown)
    assert "0" in shown and "10" in shown  # the axis runs over the scale's own points


def test_the_factor_chart_of_raters_numbered_per_story_says_the_model_has_no_rater_effect():
    rows = [
        (f"{source}-{n}", source, f"{rater}", item.id, float(1 + (n + rater + shift) % 5), None)
        for source, shift in (("A", 0), ("B", 2))
        for n in range(4)
        for rater in range(3)
        for item in AISS_V1.items
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    known = analyze_ratings(AISS_V1, frame, bootstrap=10)
    assert any(
        "random story and rater" in t for t in texts(rating_chart("factors", AISS_V1, known))
    )
    positions = analyze_ratings(AISS_V1, frame, bootstrap=10, raters_known=False)
    shown = texts(rating_chart("factors", AISS_V1, positions))
    assert not any("random story and rater" in t for t in shown)
    assert any("raters of unknown identity" in t for t in shown)
