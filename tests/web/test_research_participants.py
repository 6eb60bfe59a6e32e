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
from cyoa.web.approvals import decision, status
from tests.rating.test_rating_journey import Rater, rows, write_spec

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
HOUR = timedelta(hours=1)


def test_a_participants_status_follows_the_rules_and_the_silence():
    assert status(True, True, NOW, NOW, HOUR) == "excluded"
    assert status(True, False, NOW, NOW, HOUR) == "finished"
    assert status(False, False, NOW - 2 * HOUR, NOW, HOUR) == "returned or timed out"
    assert status(False, False, NOW - HOUR / 2, NOW, HOUR) == "started"


def test_a_participant_who_has_not_finished_is_never_excluded():
    assert status(False, True, NOW - HOUR / 2, NOW, HOUR) == "started"
    assert status(False, True, NOW - 2 * HOUR, NOW, HOUR) == "returned or timed out"


def test_finished_participants_are_approved_and_excluded_ones_rejected_or_reviewed():
    assert decision("finished", "", 0) == ("approve", "finished")
    assert decision("excluded", "failed at least 1 attention check", 2, 2) == (
        "reject",
        "failed 2 of 2 attention checks",
    )
    assert decision("started", "", 0) == ("", "")
    assert decision("returned or timed out", "", 0) == ("", "")


def test_an_exclusion_other_than_two_failed_checks_is_reviewed_with_the_rules_broken():
    assert decision("excluded", "failed at least 1 attention check", 1, 2) == (
        "review",
        "failed at least 1 attention check (failed 1 of 2 attention checks: Prolific rejects "
        "on attention checks only at 2 or more failed)",
    )
    assert decision("excluded", "read faster than 800 words per minute", 0) == (
        "review",
        "read faster than 800 words per minute",
    )


def rate_everything(rater: Rater, check_answers: str) -> None:
    """Answer each story's built-in check with the next of ``check_answers`` (one
    character per story) and its other questions with 4; stop when they run out."""
    rater.start()
    answers = iter(check_answers)
    while (task := rater.state()[1].current) is not None:
        check = next(answers, None)
        if check is None:
            return
        for item in task.questions:
            value = check if item == "qc-aiss" else "4"
            rater.act("answer_given", {"story": task.story_id, "item": item, "value": value})
        rater.act("story_finished", {"story": task.story_id})
        rater.page()


@pytest.fixture
def rated(app, tmp_path):
    """An AISS study with a study-wide code and the built-in check (asked with each of a
    rater's two stories): a careful, a careless (both checks failed) and a sloppy (one failed)
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
    rate_everything(Rater(app, "?PROLIFIC_PID=careful&STUDY_ID=s&SESSION_ID=a"), "22")
    rate_everything(Rater(app, "?PROLIFIC_PID=careless&STUDY_ID=s&SESSION_ID=b"), "55")
    rate_everything(Rater(app, "?PROLIFIC_PID=sloppy&STUDY_ID=s&SESSION_ID=d"), "52")
    # Failed the first story's check and is still at work: not excluded, not rejected.
    rate_everything(Rater(app, "?pid=working"), "5")
    Rater(app, "?PROLIFIC_PID=gone&STUDY_ID=s&SESSION_ID=c").start()
    db = store.connect(app.config["DATABASE"])
    try:
        db.execute(
            "UPDATE raters SET updated_at = '2020-01-01T00:00:00Z' WHERE external_id = 'gone'"
        )
    finally:
        db.close()
    researcher = Researcher(app)
    researcher.login()
    return researcher


@pytest.mark.both_databases
def test_the_rating_participants_page_shows_each_raters_status_code_and_exclusion(rated):
    page = rated.get("/research/ratings/aiss-pilot/participants").get_data(as_text=True)
    counts = "5 started: 1 in progress · 1 finished · 1 returned or timed out · 2 excluded"
    assert counts in page
    assert "failed at least 1 attention check" in page
    approve = page.split('id="approve-ids"', 1)[1].split("</textarea>", 1)[0]
    reject = page.split('id="reject-ids"', 1)[1].split("</textarea>", 1)[0]
    assert approve.endswith(">careful") and reject.endswith(">careless")


def test_the_participants_page_lists_who_to_review_apart_from_approve_and_reject(rated):
    page = rated.get("/research/ratings/aiss-pilot/participants").get_data(as_text=True)
    boxes = page.split('id="approve-ids"', 1)[1].split('id="review"', 1)[0]
    review = page.split('id="review"', 1)[1].split("</table>", 1)[0]
    assert "sloppy" not in boxes and "working" not in boxes
    reason = "<td><bdi>sloppy</bdi></td><td>failed at least 1 attention check (failed 1 of 2"
    assert reason in review
    assert "decide by hand on Prolific" in page


def test_the_participants_csv_has_a_decision_and_reason_per_platform_id(rated):
    reply = rated.get("/research/ratings/aiss-pilot/participants.csv")
    assert reply.status_code == 200 and reply.mimetype == "text/csv"
    table = {row["platform_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}
    assert set(table) == {"careful", "careless", "sloppy", "working", "gone"}
    assert table["careful"]["status"] == "finished" and table["careful"]["decision"] == "approve"
    assert table["careful"]["completion_code"] == "C1ABC2XY" and table["careful"]["finished_at"]
    assert table["careless"]["decision"] == "reject"
    assert table["careless"]["reason"] == "failed 2 of 2 attention checks"
    assert table["careless"]["excluded_because"] == "failed at least 1 attention check"
    assert table["sloppy"]["status"] == "excluded" and table["sloppy"]["decision"] == "review"
    assert table["sloppy"]["reason"].startswith("failed at least 1 attention check (failed 1 of 2")
    assert table["gone"]["status"] == "returned or timed out"


def test_a_rater_at_work_who_broke_a_rule_is_started_with_no_code_and_no_decision(rated):
    reply = rated.get("/research/ratings/aiss-pilot/participants.csv")
    working = {row["platform_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}[
        "working"
    ]
    assert working["status"] == "started" and working["decision"] == ""
    assert working["excluded_because"] == "" and working["completion_code"] == ""


def test_the_rating_dashboard_links_to_its_participants(rated):
    page = rated.get("/research/ratings/aiss-pilot").get_data(as_text=True)
    assert 'href="/research/ratings/aiss-pilot/participants"' in page


def test_the_raters_export_carries_the_code_shown_and_whether_they_finished(rated):
    reply = rated.get("/research/ratings/aiss-pilot/download/raters.csv")
    table = {row["external_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}
    assert table["careful"]["completion_code"] == "C1ABC2XY"
    assert table["careful"]["finished"] == "true" and table["working"]["finished"] == "false"
    assert table["working"]["completion_code"] == ""
    assert table["careful"]["started_at"] and table["careful"]["finished_at"]


def test_the_stories_export_carries_each_storys_text(rated, app):
    reply = rated.get("/research/ratings/aiss-pilot/download/stories.csv")
    table = list(csv.DictReader(io.StringIO(reply.text)))
    stored = {r["story_id"]: r["text"] for r in rows(app, "SELECT story_id, text FROM stories")}
    assert table and all(row["text"] == stored[row["story_id"]] for row in table)


@pytest.mark.both_databases
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
    Rater(app, "?pid=idle").start()
    db = store.connect(app.config["DATABASE"])
    try:
        twenty_minutes_ago = (datetime.now(UTC) - timedelta(minutes=20)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        db.execute(
            "UPDATE raters SET updated_at = ? WHERE external_id = 'idle'", [twenty_minutes_ago]
        )
    finally:
        db.close()
    # Silent for 20 minutes without an answer: past first_answer_minutes (15), within
    # dropout_minutes (60). Their places are free again, and the table says so.
    reply = rated.get("/research/ratings/aiss-pilot/participants.csv")
    table = {row["platform_id"]: row for row in csv.DictReader(io.StringIO(reply.text))}
    assert table["idle"]["status"] == "returned or timed out"
