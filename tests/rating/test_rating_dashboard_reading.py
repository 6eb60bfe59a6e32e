"""What a rating study's dashboard says, as a researcher reads it: numbers rounded for reading
(the downloads keep full precision), each label once, intervals inside their scale, charts
whose labels can be read, and the evaluation card served as Markdown in UTF-8."""

from __future__ import annotations

import json
import random
import re
from xml.etree import ElementTree

import pandas as pd
import pytest
from conftest import Researcher, write_setup

from cyoa import create_app, store
from cyoa.rating.analysis.ratings import analyze_ratings
from cyoa.rating.analysis.report import rating_report, render_report
from cyoa.rating.analysis.scales import FactorSummary, mean_interval
from cyoa.rating.analysis.ttcw import PassRate
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.form import RatingFormError, form_defaults, spec_from_form
from cyoa.rating.importing import Judgement
from cyoa.rating.instruments import TTCW, FeiQuestion, fei_instrument
from cyoa.rating.research.charts import (
    CLIPPED_NOTE,
    factor_chart,
    pass_rate_chart,
    rating_chart,
)
from cyoa.rating.spec import RatingSpecError, parse_rating_spec
from tests.rating.test_rating_dashboard import open_study
from tests.rating.test_rating_journey import Rater

SOURCES = ("gemma-3-270m-nucleus-sampling", "smollm2-360m-instruct-topk")
BASE = "/research/ratings/ttcw-import"
AISS = "/research/ratings/aiss-pilot"
SVG = "{http://www.w3.org/2000/svg}"
COLUMNS = ["story_id", "source", "rater_id", "item", "value", "rationale"]


def open_ttcw(app) -> Researcher:
    """An imported TTCW study in ``app``: two stories per source, three raters each, Yes at
    random (seeded), so rates such as 2/3 and wide t intervals over two stories come up; the
    researcher who sees it, once its dashboard serves the analysis."""
    rnd = random.Random(1)
    judgements = [
        Judgement(
            f"{source}-{n}", source, f"e{rater}", item.id, float(rnd.random() < 0.5), None, "Why."
        )
        for source in SOURCES
        for n in range(2)
        for rater in range(3)
        for item in TTCW.items
    ]
    db = store.connect(app.config["DATABASE"])
    import_rating_experiment(db, "ttcw-import", TTCW, judgements)
    db.close()
    researcher = Researcher(app)
    researcher.login()
    researcher.analysed(f"{BASE}/progress.json")
    return researcher


@pytest.fixture(scope="module")
def ttcw(tmp_path_factory) -> Researcher:
    """The study of :func:`open_ttcw` in one app for the module's tests that only read its
    pages and stored analysis (its first analysis takes seconds). None of them writes to it;
    a test that posts to it opens its own."""
    return open_ttcw(create_app(write_setup(tmp_path_factory.mktemp("ttcw-reading"))))


@pytest.fixture(scope="module")
def ttcw_report(ttcw):
    """The shared study's :func:`rating_report` at 50 replicates, computed once: the tests
    that read it look at exact fractions and t intervals, no bootstrap interval, and
    rendering it changes nothing."""
    db = store.connect(ttcw.app.config["DATABASE"])
    try:
        return rating_report(db, "ttcw-import", bootstrap=50)
    finally:
        db.close()


def test_the_results_tables_show_rounded_numbers_and_each_label_once(ttcw):
    tables = ttcw.get(f"{BASE}/progress.json").get_json()["tables"]
    cells = [cell for table in tables for row in table["rows"] for cell in row[1:]]
    assert not [cell for cell in cells if re.search(r"\d\.\d{4,}", cell)]
    assert "-0.00" not in cells  # a small negative κ reads as the zero it rounds to
    passed = next(t for t in tables if t["name"] == "tests_passed")
    low, high = (passed["columns"].index(f"per rater {end}") + 1 for end in ("ci_low", "ci_high"))
    assert {(row[low], row[high]) for row in passed["rows"]} == {("0.00", "14.00")}
    agreement = next(t for t in tables if t["name"] == "agreement")
    assert agreement["columns"][:3] == ["alpha", "alpha ci_low", "alpha ci_high"]
    rates = next(t for t in tables if t["name"] == "pass_rates")
    sixths = {f"{k / 6:.3f}" for k in range(7)}  # six judgements per test and source
    assert {row[3] for row in rates["rows"] if not row[0].startswith("average")} <= sixths
    page = ttcw.get(BASE).get_data(as_text=True)
    assert "0.6666666666666666" not in page and "alpha alpha" not in page


def test_the_downloaded_analysis_keeps_full_precision(ttcw_report):
    # The pass rates are exact fractions; no bootstrap interval is looked at.
    text = render_report(ttcw_report, "csv")
    assert "0.6666666666666666" in text


def test_a_t_interval_is_cut_at_the_bounds_of_its_scale_and_says_so():
    # 2, 4, 6: mean 4 ± 4.968275 (t(0.975, 2) · 2 / √3), i.e. [−0.968, 8.968] unbounded.
    cut = mean_interval([2, 4, 6], bounds=(0, 8))
    assert (cut.mean, cut.ci_low, cut.ci_high, cut.clipped) == (4.0, 0.0, 8.0, True)
    inside = mean_interval([2, 4, 6], bounds=(-1, 9))
    assert inside.ci_low == pytest.approx(4 - 4.968275, abs=1e-6) and not inside.clipped
    one_side = mean_interval([2, 4, 6], bounds=(0, 100))
    assert one_side.ci_low == 0.0 and one_side.ci_high == pytest.approx(8.968275, abs=1e-6)


def test_tests_passed_intervals_stay_between_0_and_the_number_of_tests(ttcw_report):
    report = ttcw_report  # t intervals, no bootstrap
    for passed in report.all_raters.tests.tests_passed:
        for mean in (passed.majority, passed.per_rater):
            assert 0 <= mean.ci_low <= mean.mean <= mean.ci_high <= 14
    assert any(p.per_rater.clipped for p in report.all_raters.tests.tests_passed)
    markdown = render_report(report, "markdown")
    assert "[0.00, 14.00]†" in markdown
    assert "† The t interval reached past the scale and is cut at its bound" in markdown


def svg_texts(svg: bytes) -> list[str]:
    root = ElementTree.fromstring(svg)
    return ["".join(node.itertext()).strip() for node in root.iter(f"{SVG}text")]


def test_long_source_names_are_wrapped_under_their_heat_map_column_never_cut():
    rates = [
        PassRate(item.id, item.category, item.factor, source, 1, 2, 0.5)
        for item in TTCW.items
        for source in SOURCES
    ]
    shown = svg_texts(pass_rate_chart(rates, list(SOURCES)))
    assert SOURCES[0] not in shown  # one line of 29 characters ran into its neighbour's
    assert [t for t in shown if t in ("gemma-3-270m-", "nucleus-", "sampling")] == [
        "gemma-3-270m-",
        "nucleus-",
        "sampling",
    ]
    assert "smollm2-360m-" in shown and "instruct-topk" in shown


def test_a_mean_whose_interval_was_cut_at_the_scale_is_marked_on_the_chart():
    summaries = [
        FactorSummary(
            "Coherence", "model", ("a",), 4, 2, mean_interval([4, 5], bounds=(1, 5)), 4.5
        ),
        FactorSummary(
            "Coherence", "human", ("a",), 4, 2, mean_interval([3, 3.25, 3.5], bounds=(1, 5)), 3
        ),
    ]
    shown = svg_texts(factor_chart(summaries, ["Coherence"], (1, 5)))
    assert "4.50†" in shown and "3.25" in shown
    assert CLIPPED_NOTE in shown


def test_the_fei_chart_with_one_answer_per_question_says_what_is_missing():
    questions = [
        FeiQuestion(f"s{n}", f"q{n}{k}", kind, f"Statement {k}.")
        for n in (1, 2)
        for k, kind in enumerate(("transitional", "transitional", "world"))
    ]
    fei = fei_instrument(questions)
    # One reader per story so far: 6 judgements, each question answered once.
    rows = [(q.story_id, "model", f"r{q.story_id}", q.question_id, 1.0, None) for q in questions]
    judgements = pd.DataFrame(rows, columns=COLUMNS)
    analysis = analyze_ratings(fei, judgements, bootstrap=0)
    shown = " ".join(svg_texts(rating_chart("entropy", fei, analysis, "all 2 raters")))
    assert "No judgements yet." not in shown
    assert "6 questions answered so far has one answer" in shown
    assert "at least 2 readers" in shown


def test_the_quality_table_shows_each_rater_s_platform_id(app, tmp_path, researcher):
    open_study(app, tmp_path, attention_checks=[{"builtin": "aiss"}])
    prolific = "?PROLIFIC_PID=5f1a2b3c4d5e6f7a8b9c0d1e&STUDY_ID=s1&SESSION_ID=x1"
    for query in (prolific, "?pid=careful", ""):
        rater = Rater(app, query)
        rater.start()
        task = rater.state()[1].current
        for item in task.questions[:2]:  # the check and an item of the scale
            rater.act("answer_given", {"story": task.story_id, "item": item, "value": "2"})
    quality = researcher.analysed(f"{AISS}/progress.json")["quality"]
    assert sorted(row["platform_id"] for row in quality) == [
        "5f1a2b3c4d5e6f7a8b9c0d1e",
        "anonymous",
        "careful",
    ]
    page = researcher.get(AISS).get_data(as_text=True)
    assert "<th>Platform id</th>" in page and "<td><bdi>5f1a2b3c4d5e6f7a8b9c0d1e</bdi></td>" in page


def test_the_evaluation_card_is_served_with_one_charset(ttcw):
    card = ttcw.get(f"{BASE}/evaluation-card.md")
    assert card.headers["Content-Type"] == "text/markdown; charset=utf-8"


def test_the_actions_panel_comes_below_the_title(ttcw):
    page = ttcw.get(BASE).get_data(as_text=True)
    assert page.index("<h1>") < page.index('id="lifecycle"') < page.index('id="progress"')


def test_imported_raters_have_no_platform_id_to_show(ttcw):
    quality = ttcw.get(f"{BASE}/progress.json").get_json()["quality"]
    assert {row["platform_id"] for row in quality} == {"–"}


def write_stories(folder, count: int) -> str:
    text = "It begins here. Then it ends."
    lines = [
        json.dumps({"story_id": f"s{n}", "source": "model", "text": text}) for n in range(count)
    ]
    (folder / "stories.jsonl").write_text("\n".join(lines) + "\n")
    return "stories.jsonl"


def rating_spec(stories: str, **fields) -> dict:
    return {
        "id": "pilot",
        "kind": "rating",
        "title": "Short stories",
        "instrument": "aiss-v1",
        "consent": "You agree.",
        "instructions": "Read, then answer.",
        "stories": {"file": stories},
        **fields,
    }


def test_more_stories_per_rater_than_the_study_has_is_refused_with_a_sentence(tmp_path):
    spec = rating_spec(write_stories(tmp_path, 3), stories_per_rater=4)
    with pytest.raises(RatingSpecError, match="stories_per_rater is 4, but the study has 3"):
        parse_rating_spec(spec, "pilot.toml", tmp_path)
    assert parse_rating_spec({**spec, "stories_per_rater": 3}, "pilot.toml", tmp_path)


def test_a_story_and_its_corrupted_copy_count_once_for_stories_per_rater(tmp_path):
    corrupt = [{"operation": "shuffle_sentences", "seed": 1}]
    spec = rating_spec(write_stories(tmp_path, 2), stories_per_rater=3, corrupt=corrupt)
    with pytest.raises(RatingSpecError, match="a rater reads one of a story and its copies"):
        parse_rating_spec(spec, "pilot.toml", tmp_path)


def test_the_aiss_check_ticked_for_another_instrument_is_refused_not_dropped():
    values = {
        **form_defaults(),
        "id": "pilot",
        "title": "Short stories",
        "consent": "You agree.",
        "instructions": "Read, then answer.",
        "instrument": "ttcw",
        "aiss_check": "on",
    }
    with pytest.raises(RatingFormError, match="the AISS quality check goes with the AISS only"):
        spec_from_form(values, {"stories": "stories.jsonl"})
    assert "attention_checks" not in spec_from_form(
        {**values, "aiss_check": ""}, {"stories": "stories.jsonl"}
    )


def test_check_numbers_count_only_the_researcher_s_own_checks(tmp_path):
    checks = [{"builtin": "aiss"}, {"id": "qc-village", "kind": "maybe", "answer": "yes"}]
    spec = rating_spec(write_stories(tmp_path, 2), attention_checks=checks)
    with pytest.raises(RatingSpecError, match=r"attention check 1 \('qc-village'\)"):
        parse_rating_spec(spec, "pilot.toml", tmp_path)
    bad_builtin = [{"builtin": "aiss", "points": 3}]
    spec = rating_spec("stories.jsonl", attention_checks=bad_builtin)
    with pytest.raises(RatingSpecError, match="the built-in check: a built-in check"):
        parse_rating_spec(spec, "pilot.toml", tmp_path)


def test_over_long_pay_is_refused_with_a_sentence_and_the_typed_text_kept(app):
    ttcw = open_ttcw(app)  # its own: it posts the details form
    page = ttcw.get(BASE).get_data(as_text=True)
    # A browser cuts a paste at maxlength without a word: the server refuses instead.
    assert "maxlength" not in page and "at most 4,000 characters" in page
    pay = "£2.50 per story. " + "x" * 4000
    reply = ttcw.post(f"{BASE}/details", data={"pay": pay, "qualifications": "UK"})
    text = reply.get_data(as_text=True)
    assert reply.status_code == 400
    assert "Not saved: Pay is 4,017 characters long; the limit is 4,000." in text
    assert pay in text and ">UK</textarea>" in text
    db = store.connect(ttcw.app.config["DATABASE"])
    assert store.get_evaluation_details(db, "ttcw-import").get("pay") in (None, "")
    db.close()


def test_with_three_sources_the_dashboard_compares_every_pair_of_sources(app):
    rnd = random.Random(2)
    sources = ("alpha", "beta", "gamma")
    judgements = [
        Judgement(
            f"{source}-{n}", source, f"e{rater}", item.id, float(rnd.random() < 0.3 + 0.2 * k),
            None, "Why.",
        )
        for k, source in enumerate(sources)
        for n in range(3)
        for rater in range(3)
        for item in TTCW.items
    ]  # fmt: skip
    db = store.connect(app.config["DATABASE"])
    import_rating_experiment(db, "ttcw-three", TTCW, judgements)
    db.close()
    researcher = Researcher(app)
    researcher.login()
    url = "/research/ratings/ttcw-three"
    tables = researcher.analysed(f"{url}/progress.json")["tables"]
    pairs = next(t for t in tables if t["name"] == "tests_passed_pairs" and t["raters"] == "all")
    assert [row[0] for row in pairs["rows"]] == [
        "tests passed per rater: alpha vs beta",
        "tests passed per rater: alpha vs gamma",
        "tests passed per rater: beta vs gamma",
    ]
    assert pairs["columns"][-3:] == ["delta", "delta_ci_low", "delta_ci_high"]
    delta = pairs["columns"].index("delta") + 1
    assert all(re.fullmatch(r"-?[01]\.\d\d", row[delta]) for row in pairs["rows"])
    assert "tests passed pairs" in researcher.get(url).get_data(as_text=True)


def test_the_quality_table_shows_each_rater_s_severity_and_says_what_it_measures(ttcw):
    body = ttcw.get(f"{BASE}/progress.json").get_json()
    assert all("severity" in row for row in body["quality"])
    assert body["quality_note"].startswith("Severity")
    page = ttcw.get(BASE).get_data(as_text=True)
    assert "<th>Severity</th>" in page and 'id="quality-note"' in page
