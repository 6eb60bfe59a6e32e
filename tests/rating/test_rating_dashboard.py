"""The researcher's dashboard of a rating study over HTTP: only for researchers, charts as
SVG that can run no script, agreement with its interval, live progress while raters work,
and the evaluation card on the page, as a download and in the bundle."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from conftest import Researcher, db_rows, write_setup

from cyoa import create_app, default_settings, store
from cyoa.cli import cli
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement
from cyoa.rating.instruments import TTCW
from cyoa.rating.research import views as rating_views
from cyoa.rating.research.views import analysis_tables
from cyoa.web.research import CHART_CSP
from tests.rating.test_rating_journey import Rater, write_spec

BASE = "/research/ratings/aiss-pilot"


def open_study(app, tmp_path, **fields):
    """The AISS study of four stories, two raters each, with the spec's ``fields``; created
    from its spec and opened."""
    spec = write_spec(tmp_path, **fields)
    for args in (["experiment", "create", str(spec)], ["experiment", "open", "aiss-pilot"]):
        result = CliRunner().invoke(cli, ["--db", app.config["DATABASE"], *args])
        assert result.exit_code == 0, result.output
    return app


@pytest.fixture
def study(app, tmp_path):
    """The AISS study with the AISS attention check and a rule excluding whoever fails it."""
    return open_study(
        app,
        tmp_path,
        attention_checks=[{"builtin": "aiss"}],
        exclusions=[{"rule": "failed_attention_checks", "at_least": 1}],
    )


def rate_everything(app, pid: str, check_answer: str = "2", value: str = "4") -> None:
    """A rater who answers every question of both their stories and finishes."""
    rater = Rater(app, f"?pid={pid}")
    rater.start()
    while (task := rater.state()[1].current) is not None:
        for item in task.questions:
            answer = check_answer if item == "qc-aiss" else value
            rater.act("answer_given", {"story": task.story_id, "item": item, "value": answer})
        rater.act("story_finished", {"story": task.story_id})
        rater.page()


@pytest.mark.parametrize(
    "path",
    ["", "/progress.json", "/charts/factors.svg", "/evaluation-card.md", "/download/raters.csv"],
)
def test_every_rating_page_needs_a_researcher(study, path):
    reply = study.test_client().get(BASE + path)
    assert reply.status_code == 302 and "/research/login" in reply.location


def test_saving_the_card_details_needs_the_form_s_token(study, researcher):
    forged = researcher.http.post(f"{BASE}/details", data={"pay": "nothing"})
    assert forged.status_code == 400
    assert db_rows(study.config["DATABASE"], "SELECT * FROM evaluation_details") == []


def test_charts_are_svg_that_can_run_no_script_and_only_those_of_the_instrument(study, researcher):
    rate_everything(study, "careful")
    chart = researcher.get(f"{BASE}/charts/factors.svg")
    assert chart.status_code == 200 and chart.mimetype == "image/svg+xml"
    assert chart.headers["Content-Security-Policy"] == CHART_CSP
    assert b"<svg" in chart.data and b"<script" not in chart.data
    assert b"Coherence" in chart.data and b"model" in chart.data
    for name in ("pass-rates", "entropy", "nope"):  # AISS has no Yes/No tests nor FEI probes
        assert researcher.get(f"{BASE}/charts/{name}.svg").status_code == 404
    assert researcher.get("/research/ratings/nope/charts/factors.svg").status_code == 404


def test_before_any_judgement_the_dashboard_and_its_charts_say_there_is_none(study, researcher):
    page = researcher.get(BASE)
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "No judgements yet." in text and "failed at least 1 attention check" in text
    assert 'src="/static/js/research/rating_dashboard.js"' in text
    chart = researcher.get(f"{BASE}/charts/factors.svg")
    assert chart.status_code == 200 and b"No judgements yet." in chart.data


def test_progress_counts_stay_live_and_the_analysis_is_recomputed_at_most_every_30_s(
    study, researcher, monkeypatch
):
    assert rating_views.RECOMPUTE_SECONDS == 30
    before = researcher.get(f"{BASE}/progress.json").get_json()
    assert before["progress"]["judgements"] == 0 and before["quality"] == []
    assert re.fullmatch(r"\d\d:\d\d:\d\d UTC", before["progress"]["as_of"])
    rater = Rater(study, "?pid=first")
    rater.start()
    _, state = rater.state()
    item = next(i for i in state.current.questions if i != "qc-aiss")
    rater.act("answer_given", {"story": state.current.story_id, "item": item, "value": "5"})
    soon = researcher.get(f"{BASE}/progress.json").get_json()
    assert soon["progress"]["judgements"] == 1 and soon["progress"]["started"] == 1
    assert soon["version"] == before["version"] and soon["quality"] == []
    monkeypatch.setattr(rating_views, "RECOMPUTE_SECONDS", 0)
    after = researcher.get(f"{BASE}/progress.json").get_json()
    assert after["version"] != before["version"]
    assert [row["failed_checks"] for row in after["quality"]] == ["0 of 0"]
    assert after["tables"]  # the analysis of the one judgement
    again = researcher.get(f"{BASE}/progress.json").get_json()
    assert again["version"] == after["version"]


def test_a_study_is_analysed_again_only_30_seconds_after_its_last_analysis(study):
    noon = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    rate_everything(study, "careful")
    db = store.connect(study.config["DATABASE"])
    with study.app_context():
        first = rating_views.snapshot(db, "aiss-pilot", noon)
    rate_everything(study, "second")
    with study.app_context():
        assert rating_views.snapshot(db, "aiss-pilot", noon + timedelta(seconds=29)) is first
        later = rating_views.snapshot(db, "aiss-pilot", noon + timedelta(seconds=30))
        quiet = rating_views.snapshot(db, "aiss-pilot", noon + timedelta(seconds=90))
    db.close()
    assert first.report.all_raters.raters == 1 and later.report.all_raters.raters == 2
    assert later.version != first.version and later.as_of == noon + timedelta(seconds=30)
    assert quiet.report is later.report and quiet.as_of == noon + timedelta(seconds=90)


def test_the_dashboard_says_when_its_analysis_was_computed(study, researcher):
    text = researcher.get(BASE).get_data(as_text=True)
    assert re.search(r"<dt>Analysis as of</dt><dd>\d\d:\d\d:\d\d UTC</dd>", text)


def test_the_dashboard_shows_agreement_exclusions_and_links_the_card(study, researcher):
    # Four raters of two stories each: every story gets its two raters.
    for pid, value in (("careful", "4"), ("second", "4"), ("third", "3")):
        rate_everything(study, pid, value=value)
    rate_everything(study, "careless", check_answer="5", value="2")
    text = researcher.get(BASE).get_data(as_text=True)
    headline = re.search(r'<strong id="agreement-headline">(.*?)</strong>', text)[1]
    assert re.fullmatch(
        r"Krippendorff&#39;s α over every item \(ordinal; percentile bootstrap over 4 stories, "
        rf"each with all its items, {study.config['RATING_BOOTSTRAP']:,} replicates, seed 0\): "
        r"-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\]‡; without the excluded raters: .+",
        headline,
    )
    assert 'class="flagged"' in text and "failed at least 1 attention check" in text
    assert "(kept raters)" in text and "(all raters)" in text
    assert f'href="{BASE}/evaluation-card.md"' in text
    assert f'src="{BASE}/charts/factors.svg?v=' in text
    progress = researcher.get(f"{BASE}/progress.json").get_json()
    pooled = progress["agreement"]["rows"][0]
    assert pooled["item"] == "all items" and pooled["all"].count("[") == 1
    assert pooled["stories"] == "4"
    # Four stories are too few for a trustworthy interval, and the page says so.
    assert "‡ The interval rests on 4 stories (fewer than 10)" in progress["agreement"]["note"]
    assert progress["progress"]["excluded"] == 1
    chart = researcher.get(f"{BASE}/charts/factors.svg").data
    assert b"3 kept raters (1 excluded by the spec" in chart


def test_the_dashboard_draws_as_many_bootstrap_replicates_as_the_app_is_set_to(tmp_path):
    assert default_settings(tmp_path)["RATING_BOOTSTRAP"] == 1000
    app = open_study(create_app({**write_setup(tmp_path), "RATING_BOOTSTRAP": 37}), tmp_path)
    rate_everything(app, "careful")
    rate_everything(app, "second")
    researcher = Researcher(app)
    researcher.login()
    text = researcher.get(BASE).get_data(as_text=True)
    headline = re.search(r'<strong id="agreement-headline">(.*?)</strong>', text)[1]
    assert "each with all its items, 37 replicates, seed 0" in headline


def test_the_charts_count_only_kept_raters_who_answered(study, researcher):
    for pid in ("careful", "second"):
        rate_everything(study, pid)
    rate_everything(study, "careless", check_answer="5", value="2")
    assert Rater(study, "?pid=idle").start().status_code == 302  # started, never answered
    assert researcher.get(f"{BASE}/progress.json").get_json()["progress"]["started"] == 4
    chart = researcher.get(f"{BASE}/charts/factors.svg").data
    assert b"2 kept raters (1 excluded by the spec" in chart


def test_when_every_rater_is_excluded_the_charts_say_so(study, researcher):
    rate_everything(study, "careless", check_answer="5", value="2")
    chart = researcher.get(f"{BASE}/charts/factors.svg").data
    assert b"No kept raters" in chart and b"all 1 raters" not in chart


def test_the_card_details_are_saved_and_the_card_is_in_the_page_download_and_bundle(
    study, researcher
):
    rate_everything(study, "careful")
    saved = researcher.post(
        f"{BASE}/details", data={"pay": "£3 per story", "qualifications": "Prolific, UK"}
    )
    assert saved.status_code == 302 and saved.location.endswith(f"{BASE}#card")
    assert "£3 per story" in researcher.get(BASE).get_data(as_text=True)
    card = researcher.get(f"{BASE}/evaluation-card.md")
    assert card.mimetype == "text/markdown"
    text = card.get_data(as_text=True)
    assert "## Pay\n\n> £3 per story" in text and "> Prolific, UK" in text
    assert "AI Story Scale" in text and "Raters who started: 1" in text
    bundle = researcher.get(f"{BASE}/download/bundle.zip")
    archive = zipfile.ZipFile(io.BytesIO(bundle.data))
    assert "evaluation-card.md" in archive.namelist()
    assert "> £3 per story" in archive.read("evaluation-card.md").decode()


def test_card_details_over_4000_characters_are_refused_and_nothing_is_saved(study, researcher):
    reply = researcher.post(f"{BASE}/details", data={"pay": "£" * 4001, "qualifications": "UK"})
    assert reply.status_code == 400
    text = reply.get_data(as_text=True)
    assert "Not saved: Pay is 4,001 characters long; the limit is 4,000." in text
    assert db_rows(study.config["DATABASE"], "SELECT * FROM evaluation_details") == []


def test_a_line_break_of_the_card_details_counts_as_one_character_as_in_the_browser(
    study, researcher
):
    pay = "a\r\n" * 1000 + "a" * 2000  # 4,000 characters as the browser counts them
    researcher.post(f"{BASE}/details", data={"pay": pay, "qualifications": ""})
    rows = db_rows(study.config["DATABASE"], "SELECT pay FROM evaluation_details")
    assert rows == [{"pay": "a\n" * 1000 + "a" * 2000}]


def test_straight_lined_pages_are_counted_as_the_spec_s_rule_counts_them(app, tmp_path, researcher):
    # The AISS asks its 22 items on one page; the rule counts only pages of 30 or more.
    rule = {"rule": "straight_lining", "at_least": 1, "min_items": 30}
    open_study(app, tmp_path, exclusions=[rule])
    rate_everything(app, "steady", value="4")
    text = researcher.get(BASE).get_data(as_text=True)
    assert "<th>Straight-lined pages</th>" in text
    progress = researcher.get(f"{BASE}/progress.json").get_json()
    assert [(row["straight_lined"], row["excluded"]) for row in progress["quality"]] == [
        ("0", False)
    ]


def test_an_imported_ttcw_study_charts_its_pass_rates(app):
    db = store.connect(app.config["DATABASE"])
    judgements = [
        Judgement(f"{source}-{n}", source, f"e{rater}", item.id, float(rater == 0), None, "Why.")
        for source in ("GPT4", "Human")
        for n in range(2)
        for rater in range(2)
        for item in TTCW.items
    ]
    import_rating_experiment(db, "ttcw-import", TTCW, judgements)
    db.close()
    researcher = Researcher(app)
    researcher.login()
    chart = researcher.get("/research/ratings/ttcw-import/charts/pass-rates.svg")
    assert chart.status_code == 200 and chart.data.count(b"50%") == 28
    assert b"GPT4" in chart.data and b"Human" in chart.data
    assert researcher.get("/research/ratings/ttcw-import/charts/factors.svg").status_code == 404
    card = researcher.get("/research/ratings/ttcw-import/evaluation-card.md")
    assert "imported" in card.get_data(as_text=True)


def test_the_model_s_differences_between_sources_are_labelled_fixed_sample():
    report_csv = (
        "raters,table,row,column,value\n"
        "all,model_differences,overall: A − B,p_value,0.04\n"
        "all,agreement,overall,alpha,0.6\n"
    )
    notes = {table["name"]: table["note"] for table in analysis_tables(report_csv)}
    assert notes["model_differences"].startswith("Fixed-sample p-values: valid for one look")
    assert notes["agreement"] == ""
