"""The rating analysis end to end: the judgement rows it accepts, what it computes for each
kind of instrument with any number of sources, and how it prints."""

import csv
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from cyoa.rating.analysis.ratings import analyze_ratings, validate_judgements
from cyoa.rating.analysis.render import render_rating_analysis
from cyoa.rating.instruments import (
    AISS_V1,
    TTCW,
    FeiQuestion,
    InstrumentError,
    fei_instrument,
    instrument_from_spec,
)

COLUMNS = ["story_id", "source", "rater_id", "item", "value", "rationale"]


def aiss_study(quality: dict[str, float], stories: int = 6, raters: int = 3, seed: int = 0):
    """AISS answers: each story has a latent quality around its source's; a rater agrees with
    positively keyed statements in proportion to it and with reverse-keyed ones inversely."""
    rng = np.random.default_rng(seed)
    rows = []
    for source, level in quality.items():
        for n in range(stories):
            story = f"{source}-{n}"
            latent = level + rng.normal(0, 0.5)
            for rater in range(raters):
                for item in AISS_V1.items:
                    agree = np.clip(round(3 + latent + rng.normal(0, 0.7)), 1, 5)
                    value = 6 - agree if item.reverse else agree
                    rows.append((story, source, f"r{rater}", item.id, float(value), None))
    return pd.DataFrame(rows, columns=COLUMNS)


def test_aiss_study_of_two_sources():
    frame = aiss_study({"good": 1.2, "poor": -1.2})
    # Its agreement rows are counted, not their intervals: 20 replicates as its neighbours.
    result = analyze_ratings(AISS_V1, frame, bootstrap=20)
    assert result.sources == ("good", "poor")
    assert result.stories == {"good": 6, "poor": 6}
    assert (result.raters, result.judgements, result.missing) == (3, 12 * 3 * 22, 0)
    assert result.tests is None and result.fei is None
    factors = {(f.factor, f.source): f for f in result.scales.factors}
    for factor in AISS_V1.factors():
        assert factors[(factor, "good")].mean.mean > factors[(factor, "poor")].mean.mean
    tests = {test.what: test for test in result.scales.tests}
    assert set(tests) == set(AISS_V1.factors())
    assert all(test.method == "Mann–Whitney U (two-sided)" for test in tests.values())
    assert tests["Coherence"].p_holm < 0.05
    reliability = {
        entry.factor: entry for entry in result.scales.reliability if entry.scope == "all"
    }
    # Reverse-keyed items coded back: the factors hang together.
    assert reliability["Coherence"].cronbach_alpha > 0.8
    assert reliability["Consistent Characterization"].omega is None
    assert reliability["Coherence"].omega > 0.8
    # Agreement per item over all stories and per source, plus every item pooled.
    scopes = {(row.item_id, row.scope) for row in result.agreement}
    assert ("9", "all") in scopes and ("all items", "poor") in scopes
    assert all(row.fleiss is None for row in result.agreement)  # Likert: no Fleiss' κ
    assert any("item 9 is reverse-coded" in note for note in result.notes)


def test_one_source_gives_summaries_without_tests():
    result = analyze_ratings(AISS_V1, aiss_study({"only": 0.0}, stories=3), bootstrap=20)
    assert result.sources == ("only",)
    assert result.scales.tests == ()
    assert {row.scope for row in result.agreement} == {"all"}


def test_three_sources_use_kruskal_wallis():
    frame = aiss_study({"a": 1.0, "b": 0.0, "c": -1.0}, stories=4, raters=2)
    result = analyze_ratings(AISS_V1, frame, bootstrap=20)
    assert {test.method for test in result.scales.tests} == {"Kruskal–Wallis H"}
    assert result.scales.tests[0].sources == ("a", "b", "c")


def test_ttcw_judgements_dispatch_to_the_yes_no_analysis():
    rows = [
        (f"{source}-{n}", source, f"e{rater}", item.id, float((n + rater) % 2), "because")
        for source in ("GPT4", "Human")
        for n in range(3)
        for rater in range(3)
        for item in TTCW.items
    ]
    result = analyze_ratings(TTCW, pd.DataFrame(rows, columns=COLUMNS), bootstrap=20)
    assert result.scales is None and result.fei is None
    assert len(result.tests.pass_rates) == 28
    assert all(test.fleiss.units == 6 for test in result.tests.kappa)
    assert [row.fleiss is not None for row in result.agreement] == [True] * len(result.agreement)
    assert result.tests.rationales == result.tests.rationale_asked == len(rows)


def test_fei_judgements_dispatch_to_the_entropy_analysis():
    questions = [
        FeiQuestion(f"s{n}", f"q{n}{kind[0]}", kind, "?")
        for n in range(4)
        for kind in ("transitional", "world")
    ]
    fei = fei_instrument(questions)
    rows = [
        (question.story_id, "A" if question.story_id in ("s0", "s1") else "B", f"r{r}",
         question.question_id, float(r % 2 == 0 or question.story_id in ("s0", "s1")), None)
        for question in questions
        for r in range(4)
    ]  # fmt: skip
    result = analyze_ratings(fei, pd.DataFrame(rows, columns=COLUMNS), bootstrap=20)
    assert result.scales is None and result.tests is None
    means = {(s.index, s.source): s.mean.mean for s in result.fei.summaries}
    # A's readers all answer true (H = 0); B's split 2–2 (H = 1).
    assert means == {("ETC", "A"): 0.0, ("ETC", "B"): 1.0, ("EWC", "A"): 0.0, ("EWC", "B"): 1.0}
    pooled = [row for row in result.agreement if row.item_id == "all items" and row.scope == "all"]
    assert pooled[0].alpha.units == 8  # each probe is asked about one story: pooled units
    # Each probe is about one story: no agreement row of its own.
    assert {row.item_id for row in result.agreement} == {"all items"}


MIXED = instrument_from_spec(
    {
        "id": "mixed",
        "name": "Mixed",
        "items": [
            {"id": "fun", "text": "Fun.", "kind": "likert", "points": 3, "factor": "Joy"},
            {"id": "dull", "text": "Dull.", "kind": "likert", "points": 3, "factor": "Joy",
             "reverse": True},
            {"id": "again", "text": "Again?", "kind": "yes_no"},
            {"id": "notes", "text": "Notes?", "kind": "text"},
        ],
    },
    "test",
)  # fmt: skip


def mixed_rows():
    rows = []
    for n, (fun, dull, again) in enumerate([(3, 1, 1), (2, 2, 1), (1, 3, 0), (1, 2, 0)]):
        story = f"s{n}"
        source = "X" if n < 2 else "Y"
        for rater in ("r1", "r2"):
            rows += [
                (story, source, rater, "fun", float(fun), None),
                (story, source, rater, "dull", float(dull), None),
                (story, source, rater, "again", float(again), "I would." if again else None),
                (story, source, rater, "notes", math.nan, "Nice." if rater == "r1" else ""),
            ]
    return pd.DataFrame(rows, columns=COLUMNS)


def test_a_custom_instrument_with_several_kinds():
    result = analyze_ratings(MIXED, mixed_rows(), bootstrap=20)
    factors = {f.source: f.mean.mean for f in result.scales.factors}
    # Joy = (fun + (4 − dull)) / 2: X stories (3 + 3)/2 = 3 and (2 + 2)/2 = 2 → 2.5;
    # Y stories (1 + 1)/2 = 1 and (1 + 2)/2 = 1.5 → 1.25.
    assert factors == {"X": 2.5, "Y": 1.25}
    rates = {(rate.test_id, rate.source): rate.rate for rate in result.tests.pass_rates}
    assert rates == {("again", "X"): 1.0, ("again", "Y"): 0.0}
    assert result.text_answers == {"notes": 4}
    assert result.missing == 0
    # Text items have no score, so no agreement row; kinds differ, so no pooled row.
    assert {row.item_id for row in result.agreement} == {"fun", "dull", "again"}


def test_missing_answers_are_counted_and_left_out():
    frame = mixed_rows()
    frame.loc[(frame["item"] == "fun") & (frame["story_id"] == "s0"), "value"] = math.nan
    result = analyze_ratings(MIXED, frame, bootstrap=20)
    assert result.missing == 2
    joy = {f.source: f for f in result.scales.factors}
    assert joy["X"].stories == 1  # s0's raters skipped "fun": no Joy score


@pytest.mark.parametrize(
    ("change", "error", "message"),
    [
        (lambda f: f.drop(columns=["rater_id"]), ValueError, "lack the column.*rater_id"),
        (lambda f: f.iloc[0:0], ValueError, "no judgements"),
        (
            lambda f: f.assign(item=f["item"].replace("fun", "funny")),
            InstrumentError,
            "item.*funny that mixed does not have",
        ),
        (lambda f: pd.concat([f, f.iloc[[0]]]), ValueError, "answered item fun of story s0 more"),
        (
            lambda f: f.assign(source=f["source"].where(f["rater_id"] == "r1", "Z")),
            ValueError,
            "several sources",
        ),
        (
            lambda f: f.assign(value=f["value"].where(f["item"] != "fun", 4.0)),
            InstrumentError,
            "Item fun of mixed has the value 4.0: store whole numbers from 1 to 3",
        ),
        (
            lambda f: f.assign(value=f["value"].where(f["item"] != "again", 0.5)),
            InstrumentError,
            r"1.0 \(yes/true\) or 0.0",
        ),
    ],
)
def test_judgements_that_cannot_be_analysed_say_what_to_fix(change, error, message):
    with pytest.raises(error, match=message):
        analyze_ratings(MIXED, change(mixed_rows()), bootstrap=0)


def test_fei_answers_must_be_under_their_questions_story():
    fei = fei_instrument([FeiQuestion("s1", "q1", "world", "?")])
    frame = pd.DataFrame([("s2", "A", "r1", "q1", 1.0, None)], columns=COLUMNS)
    with pytest.raises(ValueError, match="question q1 is about story s1 but was answered for"):
        validate_judgements(fei, frame)


def test_ids_are_read_as_strings_and_rationale_is_optional():
    frame = mixed_rows().drop(columns=["rationale"])
    frame["rater_id"] = frame["rater_id"].str[1:].astype(int)
    checked = validate_judgements(MIXED, frame)
    assert checked["rater_id"].tolist()[:2] == ["1", "1"]
    assert checked["rationale"].isna().all()


def test_renders_as_markdown_csv_and_json():
    result = analyze_ratings(AISS_V1, aiss_study({"good": 1.0, "poor": -1.0}, 3, 2), bootstrap=20)
    markdown = render_rating_analysis(result, "markdown")
    assert markdown.startswith("# Rating analysis: AI Story Scale (AISS) v1")
    assert "Attribution: AI Story Scale (AISS) v1 by M. Wiechmann" in markdown
    assert "## Factors" in markdown and "## Reliability" in markdown
    assert "| 9 | Many sentences in the story had frequently repeated words" in markdown
    assert "## Agreement" in markdown

    table = list(csv.reader(io.StringIO(render_rating_analysis(result, "csv"))))
    assert table[0] == ["table", "row", "column", "value"]
    assert ["study", "stories", "good", "3"] in table
    assert {row[0] for row in table[1:]} >= {"items", "factors", "reliability", "agreement"}

    plain = json.loads(render_rating_analysis(result, "json"))
    assert plain == json.loads(json.dumps(result.to_dict()))
    assert plain["instrument_id"] == "aiss-v1"
    assert plain["scales"]["factors"][0]["mean"]["n"] == 3
    with pytest.raises(ValueError, match="Unknown format 'html'"):
        render_rating_analysis(result, "html")


def test_agreement_and_reliability_print_what_they_resampled_and_their_warnings():
    result = analyze_ratings(AISS_V1, aiss_study({"good": 1.0, "poor": -1.0}, 3, 2), bootstrap=20)
    markdown = render_rating_analysis(result, "markdown")
    pooled = next(e for e in result.agreement if (e.item_id, e.scope) == ("all items", "all"))
    # 6 stories × 22 items = 132 units, resampled as 6 stories.
    assert (pooled.alpha.units, pooled.alpha.stories) == (132, 6)
    assert "percentile bootstrap over stories (each with all its items), 20 replicates" in markdown
    assert "| all items | all | ordinal | " in markdown and " | 132 | 6 |" in markdown
    warning = (
        "- ‡ The interval rests on 6 stories (fewer than 10): it shows little of how the "
        "coefficient varies between stories; collect more stories. Rows: 1 (all), 2 (all), "
    )
    assert warning in markdown and " all items (all).\n" in markdown
    assert "## Reliability (pooled over all sources, and within each source)" in markdown
    assert "| Coherence | good | 7 | 6 |" in markdown

    table = list(csv.reader(io.StringIO(render_rating_analysis(result, "csv"))))
    assert ["agreement", "all items all", "alpha stories", "6"] in table
    interval = "percentile bootstrap over 6 stories, 20 replicates, seed 0"
    assert ["agreement", "all items all", "alpha interval", interval] in table
    assert any(row[:3] == ["agreement", "1 all", "icc_2k"] for row in table)
    assert any(row[:3] == ["agreement", "all items all", "alpha q_below_0.667"] for row in table)
    assert any(row[:3] == ["reliability", "Coherence poor", "cronbach_alpha"] for row in table)


def test_ttcw_and_fei_render():
    rows = [
        (f"{source}-{n}", source, f"e{rater}", item.id, float(rater == 0), "ok")
        for source in ("GPT4", "Human")
        for n in range(2)
        for rater in range(3)
        for item in TTCW.items
    ]
    ttcw = analyze_ratings(TTCW, pd.DataFrame(rows, columns=COLUMNS), bootstrap=10)
    markdown = render_rating_analysis(ttcw, "markdown")
    assert "| Fluency | Narrative Ending | 33.3 | 33.3 |" in markdown
    assert "| Fleiss' κ | Gwet's AC1 |" in markdown
    assert "Rationales: 168 of 168 judgements came with one." in markdown
    assert "pass_rates" in render_rating_analysis(ttcw, "csv")

    fei = fei_instrument(
        [FeiQuestion("s1", "q1", "world", "?"), FeiQuestion("s2", "q2", "world", "?")]
    )
    frame = pd.DataFrame(
        [("s1", "A", "r1", "q1", 1.0, None), ("s1", "A", "r2", "q1", 0.0, None),
         ("s2", "B", "r1", "q2", 1.0, None), ("s2", "B", "r2", "q2", 1.0, None)],
        columns=COLUMNS,
    )  # fmt: skip
    markdown = render_rating_analysis(analyze_ratings(fei, frame, bootstrap=10), "markdown")
    assert "## Fabula Entropy Indexing (bits; lower is more coherent)" in markdown
    assert "| EWC | – | – |" not in markdown
    assert "1.000 (1 stories, 1 questions)" in markdown
    assert "0.000 (1 stories, 1 questions)" in markdown


def test_three_sources_print_every_pair_with_holm_and_cliffs_delta():
    frame = aiss_study({"a": 1.0, "b": 0.0, "c": -1.0}, stories=4, raters=2)
    result = analyze_ratings(AISS_V1, frame, bootstrap=20)
    markdown = render_rating_analysis(result, "markdown")
    assert "## Pairwise comparisons between sources" in markdown
    assert "| Coherence | a vs b | 4, 4 |" in markdown
    assert "Holm-adjusted within each factor's 3 pairs" in markdown
    assert "p: permutation (exact enumeration)" in markdown
    table = list(csv.reader(io.StringIO(render_rating_analysis(result, "csv"))))
    pairs = {(row[1], row[2]): row[3] for row in table if row[0] == "factor_pairs"}
    columns = {column for (_, column) in pairs}
    assert columns == {
        "n_first", "n_second", "u", "p_value", "p_method", "p_holm",
        "delta", "delta_ci_low", "delta_ci_high",
    }  # fmt: skip
    assert {row for (row, _) in pairs} >= {"Coherence: a vs b", "Pace: b vs c"}
    coherence = next(t for t in result.scales.tests if t.what == "Coherence")
    first = coherence.pairs[0]
    assert float(pairs[("Coherence: a vs b", "delta")]) == first.delta
    assert float(pairs[("Coherence: a vs b", "p_holm")]) == first.p_holm
    assert ["factor_tests", "Coherence", "p_method", coherence.p_method] in table


def test_two_sources_print_cliffs_delta_with_its_interval():
    result = analyze_ratings(AISS_V1, aiss_study({"good": 1.0, "poor": -1.0}, 3, 2), bootstrap=20)
    markdown = render_rating_analysis(result, "markdown")
    coherence = next(t for t in result.scales.tests if t.what == "Coherence")
    (pair,) = coherence.pairs
    cell = f"{pair.delta:.2f} [{pair.delta_ci_low:.2f}, {pair.delta_ci_high:.2f}]"
    assert cell in markdown
    assert "effect: Cliff's δ = rank-biserial r (good vs poor) [95% CI]" in markdown
    assert "## Pairwise comparisons" not in markdown
    assert "factor_pairs,Coherence: good vs poor,delta_ci_low," in render_rating_analysis(
        result, "csv"
    )


def test_ttcw_and_fei_with_three_sources_print_their_pairs():
    rows = [
        (f"{source}-{n}", source, f"e{rater}", item.id, float(int(item.id) % (k + 2) > n), "ok")
        for k, source in enumerate(("A", "B", "C"))
        for n in range(3)
        for rater in range(3)
        for item in TTCW.items
    ]
    ttcw = analyze_ratings(TTCW, pd.DataFrame(rows, columns=COLUMNS), bootstrap=10)
    assert [(p.first, p.second) for p in ttcw.tests.test.pairs] == [
        ("A", "B"), ("A", "C"), ("B", "C"),
    ]  # fmt: skip
    assert "tests_passed_pairs,tests passed per rater: A vs C,delta," in render_rating_analysis(
        ttcw, "csv"
    )
    assert "## Pairwise comparisons between sources" in render_rating_analysis(ttcw, "markdown")
    questions = [FeiQuestion(f"s{n}", f"q{n}", "world", "?") for n in range(6)]
    frame = pd.DataFrame(
        [
            (f"s{n}", "ABC"[n % 3], f"r{r}", f"q{n}", float(r < n % 3 + 1), None)
            for n in range(6)
            for r in range(4)
        ],
        columns=COLUMNS,
    )
    fei = analyze_ratings(fei_instrument(questions), frame, bootstrap=10)
    assert "fei_pairs,EWC: A vs B,p_holm," in render_rating_analysis(fei, "csv")


def test_ttcw_tests_passed_per_rater_get_the_mixed_model_as_their_headline():
    # Three experts judge every story of two sources: tests passed per rater × story
    # (0–14) share both the story and the expert, so the headline is the crossed model's.
    rng = np.random.default_rng(3)
    leniency = {"e0": 0.25, "e1": 0.5, "e2": 0.75}
    rows = [
        (f"{source}-{n}", source, rater, item.id, float(rng.random() < share), "ok")
        for source in ("GPT4", "Human")
        for n in range(6)
        for rater, share in leniency.items()
        for item in TTCW.items
    ]
    frame = pd.DataFrame(rows, columns=COLUMNS)
    result = analyze_ratings(TTCW, frame, bootstrap=10)  # one analysis, read three ways
    model = result.tests.model
    assert model.what == "tests passed per rater"
    assert model.method.startswith(
        "linear mixed model (REML), random story, rater and rater × source"
    )
    assert (model.stories, model.raters, model.observations) == (12, 3, 36)
    for mean in model.means:
        assert 0 <= mean.ci_low <= mean.mean <= mean.ci_high <= 14
    markdown = render_rating_analysis(result)
    assert markdown.index("## Source means from the mixed model") < markdown.index(
        "## Tests passed per story (mean [95% t CI over story means] (stories))"
    )
    assert "| tests passed per rater |" in markdown
    assert "model_means,tests passed per rater GPT4,mean," in render_rating_analysis(result, "csv")
    positions = analyze_ratings(TTCW, frame, bootstrap=10, raters_known=False).tests.model
    assert "raters of unknown identity" in positions.method


def test_every_interval_of_the_items_table_says_what_it_is():
    markdown = render_rating_analysis(
        analyze_ratings(AISS_V1, aiss_study({"A": 0, "B": 1}), bootstrap=10)
    )
    assert "## Items (mean answer as given [95% t CI over story means] (stories)" in markdown
