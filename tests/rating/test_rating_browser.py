"""End-to-end: a rater in a real headless Chromium reads two stories of an AISS study against
the real server process, reloads mid-story, fails the attention check, and finishes; the
answers are in the database and the analysis excludes the rater by the spec's rule."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import db_rows

from cyoa.cli import cli
from tests.cowriting.test_browser import Server, page  # noqa: F401 - `page` is a fixture

pytestmark = pytest.mark.browser

STORIES = [
    {
        "story_id": f"s{n}",
        "source": source,
        "title": f"The lighthouse, part {n}",
        "text": "The keeper climbed the stairs every night. The lamp had never failed.\n"
        "One night the light went out, and a ship was near the rocks.",
    }
    for n, source in enumerate(["human", "model"], start=1)
]


def cyoa(server: Server, *args: str) -> str:
    """The output of ``python -m cyoa --db DB ARGS`` with the server's settings, run in this
    process (the same command, without starting Python again)."""
    env = {key: value for key, value in server.env.items() if key.startswith("CYOA_")}
    result = CliRunner().invoke(cli, ["--db", server.db, *args], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def server(tmp_path):
    srv = Server(tmp_path)
    srv.start()
    (tmp_path / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in STORIES))
    spec = {
        "id": "aiss-pilot",
        "title": "Two short stories",
        "kind": "rating",
        "instrument": "aiss-v1",
        "raters_per_story": 1,
        "stories_per_rater": 2,
        "consent": "You will read two short stories and say what you think of them.",
        "instructions": "Read each story, then say how far you agree with each statement.",
        "attention_checks": [{"builtin": "aiss"}],
        "exclusions": [{"rule": "failed_attention_checks", "at_least": 1}],
        "stories": {"file": "stories.jsonl"},
    }
    (tmp_path / "rating.json").write_text(json.dumps(spec))
    cyoa(srv, "experiment", "create", str(tmp_path / "rating.json"))
    cyoa(srv, "experiment", "open", "aiss-pilot")
    yield srv
    srv.stop()


def answer(page, item: str, value: str) -> None:  # noqa: F811 - `page` is the browser page
    box = page.locator(f'fieldset[data-item="{item}"]')
    box.locator(f'input[value="{value}"]').check()
    box.locator(".saved").filter(has_text="Saved").wait_for(timeout=10_000)


def items(page) -> list[str]:  # noqa: F811
    return page.locator("fieldset.question").evaluate_all("els => els.map(e => e.dataset.item)")


def test_a_rater_reads_two_stories_reloads_fails_the_check_and_is_excluded(server, page):  # noqa: F811
    page.goto(f"{server.url}/r/aiss-pilot?PROLIFIC_PID=reader1&STUDY_ID=s&SESSION_ID=x")
    page.check("#consent")
    page.click("#start")
    page.wait_for_url("**/r/aiss-pilot/rate")
    assert "Story 1 of 2" in page.inner_text("#progress")
    questions = items(page)
    assert len(questions) == 23 and "qc-aiss" in questions  # 22 AISS items and the check
    first_half = [q for q in questions if q != "qc-aiss"][:10]
    for item in first_half:
        answer(page, item, "4")
    page.reload()
    for item in first_half:
        assert page.locator(f'fieldset[data-item="{item}"] input[value="4"]').is_checked()
    assert page.inner_text("#answered") == "10"
    page.click("#finish")  # too early: the page says what is missing
    assert "12 left" in page.inner_text("#error") or "13 left" in page.inner_text("#error")
    for item in items(page):
        # The check asks for "Somewhat disagree" (2); this rater does not read it.
        answer(page, item, "5" if item == "qc-aiss" else "4")
    page.click("#finish")
    page.locator("#progress").filter(has_text="Story 2 of 2").wait_for(timeout=10_000)
    for item in items(page):
        answer(page, item, "3")
    page.click("#finish")
    page.wait_for_url("**/r/aiss-pilot/done")
    code = page.inner_text("#completion-code")
    raters = db_rows(server.db, "SELECT * FROM raters WHERE external_id = 'reader1'")
    assert raters[0]["completion_code"] == code and raters[0]["phase"] == "done"
    judgements = db_rows(server.db, "SELECT * FROM judgements")
    assert len(judgements) == 44 and all(j["shown_at"] and j["answered_at"] for j in judgements)
    checks = db_rows(server.db, "SELECT * FROM check_answers")
    assert [(c["value"], c["correct"]) for c in checks] == [(5.0, 0), (3.0, 0)]
    report = json.loads(cyoa(server, "analyze", "aiss-pilot", "--format", "json"))
    assert report["quality"]["excluded"] == 1
    assert report["quality"]["per_rater"][0]["rules_broken"] == (
        "failed at least 1 attention check"
    )
