"""The Plan page of each dashboard: a plan is started from the form, its progress is
reported while it is made, and it is shown and stored once made; bad input is a sentence."""

import html
import io
import re
import time
import zipfile
from pathlib import Path

from click.testing import CliRunner
from conftest import Researcher

from cyoa import store
from cyoa.cli import cli
from tests.cli.test_cli_plan import import_pilot, one_source_pilot, small_pilot
from tests.paths import DATA


def finished(person: Researcher, url: str, seconds: float = 60) -> dict:
    """The plan job's status once it is no longer running."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = person.get(f"{url}.json").get_json()
        if status["state"] != "running":
            return status
        time.sleep(0.2)
    raise AssertionError("the plan did not finish in time")


def test_a_co_writing_plan_started_from_the_form_is_shown_and_stored(app, researcher):
    start = researcher.post("/research/plan/fake-ab", data={
        "assume": "p=0.75,writer_sd=0.2,minutes=20", "simulations": "200", "seed": "7",
    })  # fmt: skip
    assert start.status_code == 302
    job_url = start.headers["Location"]
    status = finished(researcher, job_url)
    assert status["state"] == "saved", status
    assert status["done"] == status["total"] == 36
    page = researcher.get(job_url).get_data(as_text=True)
    assert "Saved as plan" in page
    assert "Chosen design:" in page and "Cost:" in page
    cost = page.split('id="plan-cost">', 1)[1].split("</p>", 1)[0]
    assert "× £12.00/h = £" in cost  # the currency: CYOA_CURRENCY, GBP by default
    assert 'name="simulations" value="200"' in page  # the form shows what this plan used
    assert 'name="seed" value="7"' in page
    again = researcher.get("/research/plan/fake-ab").get_data(as_text=True)  # a later visit
    assert 'name="simulations" value="200"' in again and 'name="seed" value="7"' in again
    plan = store.latest_plan(store.connect(app.config["DATABASE"]), "fake-ab")
    assert plan["kind"] == "cowriting"
    assert plan["record"]["seed"] == 7
    assert plan["record"]["inputs"]["p"] == {"value": 0.75, "source": "typed"}
    dashboard = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert "Latest plan" in dashboard


def test_the_co_writing_card_reports_the_latest_plan_or_how_to_make_one(app, researcher):
    def card() -> str:
        bundle = researcher.get("/research/experiments/fake-ab/download/bundle.zip").data
        return zipfile.ZipFile(io.BytesIO(bundle)).read("evaluation-card.md").decode()

    assert "python -m cyoa plan fake-ab --save" in card()
    start = researcher.post("/research/plan/fake-ab", data={
        "assume": "p=0.75,minutes=20", "simulations": "200",
    })  # fmt: skip
    assert finished(researcher, start.headers["Location"])["state"] == "saved"
    text = card()
    assert "## Planned sample size" in text
    assert "p = 0.75 (typed)" in text and "writer_sd = 0 (default)" in text
    assert "8 writers × 5 counted rounds each, power 0.885" in text and "- Cost: recruit" in text
    assert re.search(r"- Cost: .* × £12\.00/h, \+ 33% fee = £\d+\.\d\d\.", text)


def test_a_plan_in_progress_reports_how_far_it_has_got(app, researcher):
    start = researcher.post("/research/plan/fake-ab", data={
        "assume": "p=0.7", "simulations": "100",
    })  # fmt: skip
    status = researcher.get(f"{start.headers['Location']}.json").get_json()
    assert status["state"] in {"running", "saved"}
    assert "designs of the grid" in status["message"]
    finished(researcher, start.headers["Location"])


def test_a_bad_form_value_is_a_sentence_naming_the_field(researcher):
    for data, sentence in (
        ({"alpha": "often"}, "α: a number from"),
        ({"seed": "-3"}, "Seed: a whole number from 0"),
        ({"target_power": "2"}, "Target power: a number from"),
        ({"assume": "q=1"}, "'q' is not an assumption of this kind"),
    ):
        page = researcher.post("/research/plan/fake-ab", data=data)
        assert page.status_code == 400, data
        assert sentence in html.unescape(page.get_data(as_text=True))


def test_a_value_outside_the_planner_s_bounds_is_refused_on_the_form_before_it_plans(researcher):
    for data, sentence in (
        ({"hourly_rate": "inf"}, "Hourly rate: a number from 0 to 10000, or empty."),
        ({"fee": "nan"}, "Platform fee: a number from 0 to 10, or empty."),
        ({"alpha": "1e-60"}, "α: a number from 0.0001 to 0.5, or empty."),
        ({"effect": "2"}, "Effect to detect: a number from 0.01 to 0.99, or empty."),
        (
            {"assume": "writer_sd=1e308"},
            "writer_sd, the writers' spread (log-odds SD), is a number",
        ),
    ):
        page = researcher.post("/research/plan/fake-ab", data=data)
        assert page.status_code == 400, data
        assert sentence in html.unescape(page.get_data(as_text=True))
    assert store.latest_plan(store.connect(researcher.app.config["DATABASE"]), "fake-ab") is None


def test_a_co_writing_experiment_without_a_pilot_or_typed_values_fails_with_a_sentence(
    researcher,
):
    start = researcher.post("/research/plan/fake-ab", data={"simulations": "100"})
    status = finished(researcher, start.headers["Location"])
    assert status["state"] == "failed"
    assert "A pilot needs at least two writers" in status["error"]
    page = html.unescape(researcher.get(start.headers["Location"]).get_data(as_text=True))
    assert "A pilot needs at least two writers" in page and "Traceback" not in page


def test_a_rating_pilot_is_planned_from_its_dashboard_and_the_card_shows_the_plan(
    app, researcher, tmp_path
):
    scales = DATA / "scales"
    imported = CliRunner().invoke(cli, [
        "--db", app.config["DATABASE"], "import-ratings", str(small_pilot(tmp_path / "p.csv")),
        "--format", "long", "--instrument", str(scales / "crowd-1-4.toml"), "--name", "pilot",
    ])  # fmt: skip
    assert imported.exit_code == 0, imported.output
    dashboard = researcher.get("/research/ratings/pilot").get_data(as_text=True)
    assert "No plan yet." in dashboard and "/research/plan/pilot" in dashboard
    start = researcher.post("/research/plan/pilot", data={"assume": "minutes=10"})
    assert finished(researcher, start.headers["Location"])["state"] == "saved"
    page = researcher.get("/research/plan/pilot").get_data(as_text=True)
    assert "stories per source ×" in page
    assert "Caution: the pilot has 6 stories" in html.unescape(page)
    card = researcher.get("/research/ratings/pilot/evaluation-card.md").get_data(as_text=True)
    assert "## Planned sample size" in card
    assert "stories per source" in card


def test_the_plan_page_of_an_unknown_experiment_is_not_found(researcher):
    assert researcher.get("/research/plan/nothing-here").status_code == 404
    assert researcher.get("/research/plan/fake-ab/no-such-job").status_code == 404


def test_a_rating_plan_page_shows_the_precision_of_agreement_it_was_asked_for(
    app, researcher, tmp_path
):
    scales = DATA / "scales"
    imported = CliRunner().invoke(cli, [
        "--db", app.config["DATABASE"], "import-ratings", str(small_pilot(tmp_path / "p.csv")),
        "--format", "long", "--instrument", str(scales / "crowd-1-4.toml"), "--name", "pilot",
    ])  # fmt: skip
    assert imported.exit_code == 0, imported.output
    start = researcher.post("/research/plan/pilot", data={"alpha_width": "0.3"})
    assert finished(researcher, start.headers["Location"])["state"] == "saved"
    page = html.unescape(researcher.get("/research/plan/pilot").get_data(as_text=True))
    assert "<h3>Precision of agreement</h3>" in page
    assert "target width 0.3" in page
    plan = store.latest_plan(store.connect(app.config["DATABASE"]), "pilot")
    assert plan["record"]["sections"][0]["summary"].startswith("Smallest design for α ± 0.15")
    dashboard = html.unescape(researcher.get("/research/ratings/pilot").get_data(as_text=True))
    assert "Precision of agreement: Smallest design for α ± 0.15" in dashboard
    refused = researcher.post("/research/plan/pilot", data={"alpha_width": "5"})
    assert refused.status_code == 400
    assert "Width of α's and κ's interval: a number at least 0.01 and below 2" in html.unescape(
        refused.get_data(as_text=True)
    )


def test_a_one_source_rating_pilot_is_planned_on_its_page_without_the_comparison(
    app, researcher, tmp_path
):
    import_pilot(Path(app.config["DATABASE"]), one_source_pilot(tmp_path / "one.csv"), "one")
    start = researcher.post("/research/plan/one", data={"assume": "minutes=10"})
    status = finished(researcher, start.headers["Location"])
    assert status["state"] == "saved", status["error"]
    page = html.unescape(researcher.get("/research/plan/one").get_data(as_text=True))
    assert "The pilot's stories come from one source" in page
    assert "<h3>Precision of agreement</h3>" in page
    assert "raters per story" in page and "IndexError" not in page
    card = researcher.get("/research/ratings/one/evaluation-card.md").get_data(as_text=True)
    assert "Precision of agreement: Smallest design for α" in card
