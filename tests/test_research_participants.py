"""The participants table of an experiment, for paying people on a crowd platform: who started,
finished, returned or timed out, or was excluded by the spec's rules, with the code they were
shown, and the approve/reject lists and CSV that Prolific's bulk approve takes."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner
from conftest import SURVEY_ANSWERS, Researcher, Writer

from cyoa import store
from cyoa.cli import cli
from cyoa.research.participants import decision, status
from tests.test_rating_journey import Rater, rows, write_spec

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
HOUR = timedelta(hours=1)


def test_a_participants_status_follows_the_rules_and_the_silence():
    assert status(True, True, NOW, NOW, HOUR) == "excluded"
    assert status(True, False, NOW, NOW, HOUR) == "finished"
    assert status(False, False, NOW - 2 * HOUR, NOW, HOUR) == "returned or timed out"
    assert status(False, False, NOW - HOUR / 2, NOW, HOUR) == "started"


def test_finished_participants_are_approved_excluded_rejected_with_the_rules_others_left():
    assert decision("finished", "") == ("approve", "finished")
    assert decision("excluded", "failed at least 1 attention check") == (
        "reject",
        "failed at least 1 attention check",
    )
    assert decision("started", "") == ("", "")
    assert decision("returned or timed out", "") == ("", "")


def rate_everything(rater: Rater, check_answer: str) -> None:
    rater.start()
    while (task := rater.state()[1].current) is not None:
        for item in task.questions:
            value = check_answer if item == "qc-aiss" else "4"
            rater.act("answer_given", {"story": task.story_id, "item": item, "value": value})
        rater.act("story_finished", {"story": task.story_id})
        rater.page()


@pytest.fixture
def rated(app, tmp_path):
    """An AISS study with a study-wide code and the built-in check: a careful and a careless
    Prolific rater finished, one rater still at work, and one who went silent hours ago."""
    spec = write_spec(
        tmp_path,
        raters_per_story=4,
        completion_code="C1ABC2XY",
        attention_checks=[{"builtin": "aiss"}],
        exclusions=[{"rule": "failed_attention_checks", "at_least": 1}],
    )
    runner = CliRunner()
    for args in (["experiment", "create", str(spec)], ["experiment", "open", "aiss-pilot"]):
        assert runner.invoke(cli, ["--db", app.config["DATABASE"], *args]).exit_code == 0
    rate_everything(Rater(app, "?PROLIFIC_PID=careful&STUDY_ID=s&SESSION_ID=a"), "2")
    rate_everything(Rater(app, "?PROLIFIC_PID=careless&STUDY_ID=s&SESSION_ID=b"), "5")
    Rater(app, "?pid=working").start()
    Rater(app, "?PROLIFIC_PID=gone&STUDY_ID=s&SESSION_ID=c").start()
    db = store.connect(app.config["DATABASE"])
    try:
        db.execute(
            "UPDATE raters SET updated_at = '2020-01-01T00:00:00Z' WHERE external_id = 'gone'"
        )
        db.conn.commit()
    finally:
        db.close()
    researcher = Researcher(app)
    researcher.login()
    return researcher


def test_the_rating_participants_page_shows_each_raters_status_code_and_exclusion(rated):
    page = rated.get("/research/ratings/aiss-pilot/participants").get_data(as_text=True)
    assert "1 started · 1 finished · 1 returned or timed out · 1 excluded" in page
    assert "failed at least 1 attention check" in page
    approve = page.split('id="approve-ids"', 1)[1].split("</textarea>", 1)[0]
    reject = page.split('id="reject-ids"', 1)[1].split("</textarea>", 1)[0]
    assert approve.endswith(">careful") and reject.endswith(">careless")


def test_the_participants_csv_has_a_decision_and_reason_per_platform_id(rated):
    reply = rated.get("/research/ratings/aiss-pilot/participants.csv")
    assert reply.status_code == 200 and reply.mimetype == "text/csv"
    table = {row["platform_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}
    assert set(table) == {"careful", "careless", "working", "gone"}
    assert table["careful"]["status"] == "finished" and table["careful"]["decision"] == "approve"
    assert table["careful"]["completion_code"] == "C1ABC2XY" and table["careful"]["finished_at"]
    assert table["careless"]["decision"] == "reject"
    assert table["careless"]["reason"] == "failed at least 1 attention check"
    assert table["working"]["status"] == "started" and table["working"]["decision"] == ""
    assert table["gone"]["status"] == "returned or timed out"


def test_the_rating_dashboard_links_to_its_participants(rated):
    page = rated.get("/research/ratings/aiss-pilot").get_data(as_text=True)
    assert 'href="/research/ratings/aiss-pilot/participants"' in page


def test_the_raters_export_carries_the_code_shown_and_whether_they_finished(rated):
    reply = rated.get("/research/ratings/aiss-pilot/download/raters.csv")
    table = {row["external_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}
    assert table["careful"]["completion_code"] == "C1ABC2XY"
    assert table["careful"]["finished"] == "true" and table["working"]["finished"] == "false"
    assert table["careful"]["started_at"] and table["careful"]["finished_at"]


def test_the_stories_export_carries_each_storys_text(rated, app):
    reply = rated.get("/research/ratings/aiss-pilot/download/stories.csv")
    table = list(csv.DictReader(io.StringIO(reply.text)))
    stored = {r["story_id"]: r["text"] for r in rows(app, "SELECT story_id, text FROM stories")}
    assert table and all(row["text"] == stored[row["story_id"]] for row in table)


def test_the_cowriting_participants_page_lists_each_writer_with_their_code(app):
    writer = Writer(app, "?PROLIFIC_PID=w1&STUDY_ID=s&SESSION_ID=x")
    for n in range(1, 6):
        writer.write_round(n)
    assert writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})["ok"]
    Writer(app, "?PROLIFIC_PID=w2&STUDY_ID=s&SESSION_ID=y")
    researcher = Researcher(app)
    researcher.login()
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert 'href="/research/experiments/fake-ab/participants"' in page
    reply = researcher.get("/research/experiments/fake-ab/participants.csv")
    table = {row["platform_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}
    code = rows(app, "SELECT completion_code FROM sessions WHERE phase = 'done'")[0]
    assert table["w1"]["decision"] == "approve"
    assert table["w1"]["completion_code"] == code["completion_code"]
    assert table["w2"]["status"] == "started" and table["w2"]["decision"] == ""
    page = researcher.get("/research/experiments/fake-ab/participants").get_data(as_text=True)
    assert ">w1</textarea>" in page


def test_a_rater_who_never_answered_has_timed_out_after_the_first_answer_timeout(rated, app):
    db = store.connect(app.config["DATABASE"])
    try:
        twenty_minutes_ago = (datetime.now(UTC) - timedelta(minutes=20)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        db.execute(
            "UPDATE raters SET updated_at = ? WHERE external_id = 'working'", [twenty_minutes_ago]
        )
        db.conn.commit()
    finally:
        db.close()
    # Silent for 20 minutes without an answer: past first_answer_minutes (15), within
    # dropout_minutes (60). Their places are free again, and the table says so.
    reply = rated.get("/research/ratings/aiss-pilot/participants.csv")
    table = {row["platform_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}
    assert table["working"]["status"] == "returned or timed out"
