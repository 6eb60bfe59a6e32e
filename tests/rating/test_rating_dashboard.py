"""The researcher's dashboard of a rating study over HTTP: only for researchers, charts as
SVG that can run no script, agreement with its interval, live progress while raters work,
and the evaluation card on the page, as a download and in the bundle."""

from __future__ import annotations

import io
import re
import threading
import zipfile

import pytest
from click.testing import CliRunner
from conftest import Researcher, db_rows, write_setup

from cyoa import create_app, default_settings, store
from cyoa.cli import cli
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement
from cyoa.rating.instruments import TTCW
from cyoa.rating.research import dashboard
from cyoa.rating.research.dashboard import analysis_tables
from cyoa.web.parts import shared
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
    researcher.analysed(f"{BASE}/progress.json")
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
    no_judges = text.split('id="no-judges">', 1)[1].split("</p>", 1)[0]
    assert f'href="{BASE}/judges/run"' in no_judges and "Judge runs</a>" in no_judges
    assert "import-ratings" in no_judges
    chart = researcher.get(f"{BASE}/charts/factors.svg")
    assert chart.status_code == 200 and b"No judgements yet." in chart.data


def test_progress_counts_stay_live_and_the_analysis_is_recomputed_at_most_every_30_s(
    study, researcher, monkeypatch
):
    assert dashboard.RECOMPUTE_SECONDS == 30
    before = researcher.get(f"{BASE}/progress.json").get_json()
    assert before["progress"]["judgements"] == 0 and before["quality"] == []
    assert before["analysis"]["text"] == "No judgements yet."
    rater = Rater(study, "?pid=first")
    rater.start()
    _, state = rater.state()
    item, other = [i for i in state.current.questions if i != "qc-aiss"][:2]
    rater.act("answer_given", {"story": state.current.story_id, "item": item, "value": "5"})
    first = researcher.analysed(f"{BASE}/progress.json")
    assert first["progress"]["judgements"] == 1 and first["progress"]["started"] == 1
    assert [row["failed_checks"] for row in first["quality"]] == ["0 of 0"]
    assert first["tables"]  # the analysis of the one judgement
    assert re.fullmatch(r"1 answers, \d\d:\d\d UTC", first["progress"]["as_of"])
    rater.act("answer_given", {"story": state.current.story_id, "item": other, "value": "4"})
    soon = researcher.get(f"{BASE}/progress.json").get_json()
    assert soon["progress"]["judgements"] == 2  # live
    assert soon["version"] == first["version"] and soon["analysis"]["state"] == "waiting"
    assert "the newer answers are analysed from" in soon["analysis"]["text"]
    monkeypatch.setattr(dashboard, "RECOMPUTE_SECONDS", 0)
    after = researcher.analysed(f"{BASE}/progress.json")
    assert after["version"] != first["version"]
    assert after["progress"]["as_of"].startswith("2 answers, ")
    again = researcher.get(f"{BASE}/progress.json").get_json()
    assert again["version"] == after["version"]


def test_the_dashboard_says_as_of_how_many_answers_and_when_its_analysis_was_computed(
    study, researcher
):
    rate_everything(study, "careful")
    researcher.analysed(f"{BASE}/progress.json")
    text = researcher.get(BASE).get_data(as_text=True)
    answers = db_rows(study.config["DATABASE"], "SELECT count(*) AS n FROM judgements")[0]["n"]
    assert re.search(rf"<dt>Analysis as of</dt><dd>{answers} answers, \d\d:\d\d UTC</dd>", text)
    assert re.search(rf"Analysis as of {answers} answers, \d\d:\d\d UTC\.</p>", text)


def test_the_dashboard_shows_agreement_exclusions_and_links_the_card(study, researcher):
    # Four raters of two stories each: every story gets its two raters.
    for pid, value in (("careful", "4"), ("second", "4"), ("third", "3")):
        rate_everything(study, pid, value=value)
    rate_everything(study, "careless", check_answer="5", value="2")
    researcher.analysed(f"{BASE}/progress.json")
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
    warnings = progress["agreement"]["warnings"]
    assert any(w.startswith("The interval rests on 4 stories (fewer than 10)") for w in warnings)
    listed = text.split('id="agreement-warnings">', 1)[1].split("</ul>", 1)[0]
    assert listed.count("<li>‡ ") == len(warnings)  # one line each, not one run-on note
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
    researcher.analysed(f"{BASE}/progress.json")
    text = researcher.get(BASE).get_data(as_text=True)
    headline = re.search(r'<strong id="agreement-headline">(.*?)</strong>', text)[1]
    assert "each with all its items, 37 replicates, seed 0" in headline


def test_the_charts_count_only_kept_raters_who_answered(study, researcher):
    for pid in ("careful", "second"):
        rate_everything(study, pid)
    rate_everything(study, "careless", check_answer="5", value="2")
    assert Rater(study, "?pid=idle").start().status_code == 302  # started, never answered
    assert researcher.analysed(f"{BASE}/progress.json")["progress"]["started"] == 4
    chart = researcher.get(f"{BASE}/charts/factors.svg").data
    assert b"2 kept raters (1 excluded by the spec" in chart


def test_when_every_rater_is_excluded_the_charts_say_so(study, researcher):
    rate_everything(study, "careless", check_answer="5", value="2")
    researcher.analysed(f"{BASE}/progress.json")
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
    researcher.analysed(f"{BASE}/progress.json")
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
    researcher.analysed("/research/ratings/ttcw-import/progress.json")
    chart = researcher.get("/research/ratings/ttcw-import/charts/pass-rates.svg")
    assert chart.status_code == 200 and chart.data.count(b"50%") == 28
    assert b"GPT4" in chart.data and b"Human" in chart.data
    assert researcher.get("/research/ratings/ttcw-import/charts/factors.svg").status_code == 404
    card = researcher.get("/research/ratings/ttcw-import/evaluation-card.md")
    assert "imported" in card.get_data(as_text=True)


class HeldAnalysis:
    """The dashboard's analysis, held until released: it records each computation and waits
    for :meth:`release` before computing, as a long analysis of a big study would."""

    def __init__(self, monkeypatch):
        self.real = dashboard.analyse
        self.started = threading.Event()
        self.released = threading.Event()
        self.calls = 0
        monkeypatch.setattr(dashboard, "analyse", self)

    def __call__(self, *args, **kwargs):
        self.calls += 1
        self.started.set()
        assert self.released.wait(60)
        return self.real(*args, **kwargs)

    def release(self):
        self.released.set()


def test_the_page_answers_from_the_stored_analysis_while_a_newer_one_is_computed(
    study, researcher, monkeypatch
):
    rate_everything(study, "careful")
    first = researcher.analysed(f"{BASE}/progress.json")
    counted = first["progress"]["judgements"]
    monkeypatch.setattr(dashboard, "RECOMPUTE_SECONDS", 0)
    held = HeldAnalysis(monkeypatch)
    rate_everything(study, "second")
    page = researcher.get(BASE)  # starts the newer analysis, and answers without it
    assert page.status_code == 200 and held.started.wait(60)
    text = page.get_data(as_text=True)
    assert f"Analysis as of {counted} answers, " in text
    busy = researcher.get(f"{BASE}/progress.json").get_json()
    assert busy["analysis"]["state"] == "computing" and busy["version"] == first["version"]
    assert "a newer analysis is being computed" in busy["analysis"]["text"]
    assert busy["progress"]["judgements"] == 2 * counted  # the live counts are live
    assert busy["tables"] == first["tables"]
    held.release()
    landed = researcher.analysed(f"{BASE}/progress.json")
    assert landed["version"] != first["version"]
    assert landed["progress"]["as_of"].startswith(f"{2 * counted} answers, ")
    assert held.calls == 1


def test_the_first_load_of_a_study_never_analysed_says_its_first_analysis_is_being_computed(
    study, researcher, monkeypatch
):
    rate_everything(study, "careful")
    held = HeldAnalysis(monkeypatch)
    page = researcher.get(BASE)
    assert page.status_code == 200 and held.started.wait(60)
    text = page.get_data(as_text=True)
    assert "Computing the first analysis…" in text and "No judgements yet." not in text
    busy = researcher.get(f"{BASE}/progress.json").get_json()
    assert busy["analysis"]["state"] == "first"
    assert busy["analysis"]["text"].startswith("Computing the first analysis… (")
    chart = researcher.get(f"{BASE}/charts/factors.svg")
    assert chart.status_code == 200 and b"Computing the first analysis" in chart.data
    held.release()
    assert researcher.analysed(f"{BASE}/progress.json")["tables"]


def test_concurrent_requests_of_two_web_workers_start_one_analysis_and_both_serve_it(
    study, researcher, monkeypatch
):
    other = Researcher(create_app(dict(study.config)))
    other.login()
    rate_everything(study, "careful")
    held = HeldAnalysis(monkeypatch)
    replies = []
    askers = [
        threading.Thread(target=lambda who=who: replies.append(who.get(f"{BASE}/progress.json")))
        for who in (researcher, other, researcher, other)
    ]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert [reply.status_code for reply in replies] == [200] * 4
    assert held.started.wait(60)
    assert len(db_rows(study.config["DATABASE"], "SELECT * FROM analysis_jobs")) == 1
    held.release()
    mine = researcher.analysed(f"{BASE}/progress.json")
    theirs = other.analysed(f"{BASE}/progress.json")
    assert held.calls == 1
    assert mine["version"] == theirs["version"] and mine["tables"] == theirs["tables"]


def test_an_analysis_that_fails_is_said_on_the_page_and_the_page_still_answers(
    study, researcher, monkeypatch
):
    rate_everything(study, "careful")

    def broken(*args, **kwargs):
        raise ValueError("the bootstrap found no story")

    monkeypatch.setattr(dashboard, "analyse", broken)
    researcher.get(f"{BASE}/progress.json")
    shared(study).analyses.wait_idle(60)
    page = researcher.get(BASE)
    assert page.status_code == 200
    progress = researcher.get(f"{BASE}/progress.json").get_json()
    assert progress["analysis"]["state"] == "failed"
    assert progress["analysis"]["text"] == (
        "The newest analysis failed: ValueError: the bootstrap found no story. "
        "It is tried again when the data changes."
    )


def test_the_model_s_differences_between_sources_are_labelled_fixed_sample():
    report_csv = (
        "raters,table,row,column,value\n"
        "all,model_differences,overall: A − B,p_value,0.04\n"
        "all,agreement,overall,alpha,0.6\n"
    )
    notes = {table["name"]: table["note"] for table in analysis_tables(report_csv)}
    assert notes["model_differences"].startswith("Fixed-sample p-values: valid for one look")
    assert notes["agreement"] == ""
