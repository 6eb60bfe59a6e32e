"""End-to-end in Chromium, on stories the two packaged models wrote: two raters go through a
TTCW study and two through an AISS study against the real server process. The first rater of
each reloads mid-story and finds every answer kept; the second fails the attention check. The
researcher's dashboard then shows their judgements, agreement and the exclusion."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from conftest import PACKAGED_MODELS, RESEARCHER_PASSWORD, STORY_PROMPT, db_rows

from cyoa import store
from cyoa.cli import cli
from cyoa.web.auth import create_researcher
from tests.cowriting.test_browser import Server
from tests.web.test_research_browser import browser  # noqa: F401 - a fixture

pytestmark = [pytest.mark.browser, pytest.mark.real_model]

RATIONALE = "The story shows this clearly in the way the keeper acts."


def command(server: Server, *args: str) -> None:
    """``python -m cyoa --db DB ARGS`` with the server's settings, run in this process (the
    same command, without starting Python again)."""
    env = {key: value for key, value in server.env.items() if key.startswith("CYOA_")}
    result = CliRunner().invoke(cli, ["--db", server.db, *args], env=env)
    assert result.exit_code == 0, result.output


@pytest.fixture
def server(tmp_path, packaged_stories):
    """The app with a researcher account, and a story per packaged model (one prompt, three
    sentences, the same seeds) written by ``generate-stories`` with the real models (the
    run's one file of them, tests/conftest.py)."""
    srv = Server(tmp_path)
    # Each rater answers 30 to 46 questions within seconds, faster than the default limit
    # lets a person (1 a second after 30); the page's resending when limited has its own test.
    srv.env["CYOA_RATER_ACTION_BURST"] = "1000"
    db = store.connect(srv.db)
    store.init_db(db)
    create_researcher(db, "alice", RESEARCHER_PASSWORD)
    db.close()
    shutil.copy(packaged_stories, tmp_path / "stories.jsonl")
    for kind, instrument, checks in (
        ("ttcw", "ttcw", [{"id": "qc-english", "text": "The story is written in English.",
                           "kind": "true_false", "answer": True}]),
        ("aiss", "aiss-v1", [{"builtin": "aiss"}]),
    ):  # fmt: skip
        spec = {
            "id": f"{kind}-generated",
            "title": "Two short stories",
            "kind": "rating",
            "instrument": instrument,
            "raters_per_story": 2,
            "stories_per_rater": 2,
            "consent": "You will read two short stories and answer questions about each.",
            "instructions": "Read each story, then answer every question about it.",
            "attention_checks": checks,
            "exclusions": [{"rule": "failed_attention_checks", "at_least": 1}],
            "stories": {"file": "stories.jsonl"},
        }
        (tmp_path / f"{kind}.json").write_text(json.dumps(spec))
        command(srv, "experiment", "create", str(tmp_path / f"{kind}.json"))
        command(srv, "experiment", "open", spec["id"])
    srv.start()
    yield srv
    srv.stop()


def items(page) -> list[str]:
    return page.locator("fieldset.question").evaluate_all("els => els.map(e => e.dataset.item)")


def answer(page, item: str, value: str) -> None:
    box = page.locator(f'fieldset[data-item="{item}"]')
    if box.get_attribute("data-rationale"):
        box.locator("textarea[data-part=why]").fill(RATIONALE)
    box.locator(f'input[value="{value}"]').check()
    box.locator(".saved").filter(has_text="Saved").wait_for(timeout=10_000)


def start(page, url: str, exp_id: str, pid: str) -> None:
    page.goto(f"{url}/r/{exp_id}?PROLIFIC_PID={pid}&STUDY_ID=study&SESSION_ID={pid}-session")
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(f"**/r/{exp_id}/rate")


def finish_story(page, position: int, total: int) -> None:
    page.click("#finish")
    if position < total:
        page.locator("#progress").filter(has_text=f"Story {position + 1} of {total}").wait_for()
    else:
        page.wait_for_url("**/done")


def rate(page, url: str, exp_id: str, pid: str, choose, reload_after: int | None = None) -> None:
    """One rater through both stories; ``choose(item)`` is the answer to ``item``. With
    ``reload_after``, the page is reloaded after that many answers of the first story, and
    every answer must still be there."""
    start(page, url, exp_id, pid)
    for position in (1, 2):
        assert f"Story {position} of 2" in page.inner_text("#progress")
        questions = items(page)
        if position == 1 and reload_after:
            for item in questions[:reload_after]:
                answer(page, item, choose(item))
            page.reload()
            for item in questions[:reload_after]:
                box = page.locator(f'fieldset[data-item="{item}"]')
                assert box.locator(f'input[value="{choose(item)}"]').is_checked()
            assert page.inner_text("#answered") == str(reload_after)
            questions = questions[reload_after:]
        for item in questions:
            answer(page, item, choose(item))
        finish_story(page, position, 2)
    assert page.inner_text("#completion-code")


def dashboard(page, url: str, exp_id: str) -> str:
    page.goto(f"{url}/research/ratings/{exp_id}")
    if "/login" in page.url:
        page.fill("input[name=name]", "alice")
        page.fill("input[name=password]", RESEARCHER_PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url(f"**/research/ratings/{exp_id}")
    # The page answers at once from the stored analysis and starts a newer one; its script
    # shows the newer one when it lands (the analysis event), however busy the machine is.
    page.locator('#analysis-status[data-state="current"]').wait_for(timeout=300_000)
    return page.inner_text("main")


def test_two_raters_rate_generated_stories_with_ttcw_and_aiss(server, browser):  # noqa: F811
    stories = [json.loads(line) for line in (server.root / "stories.jsonl").open()]
    assert sorted(s["source"] for s in stories) == sorted(PACKAGED_MODELS)
    assert all(s["text"].startswith(STORY_PROMPT) for s in stories)
    assert all(len(s["text"]) > len(STORY_PROMPT) for s in stories)

    def ttcw_reader(item: str) -> str:
        return "1" if item == "qc-english" or int(item) % 2 else "0"

    def ttcw_careless(item: str) -> str:
        return "0" if item == "qc-english" else "1"

    rate(browser(), server.url, "ttcw-generated", "ttcw-r1", ttcw_reader, reload_after=6)
    rate(browser(), server.url, "ttcw-generated", "ttcw-r2", ttcw_careless)

    def aiss_reader(item: str) -> str:
        return "2" if item == "qc-aiss" else "4"

    def aiss_careless(item: str) -> str:
        return "5" if item == "qc-aiss" else "3"

    rate(browser(), server.url, "aiss-generated", "aiss-r1", aiss_reader, reload_after=10)
    rate(browser(), server.url, "aiss-generated", "aiss-r2", aiss_careless)

    for exp_id, items_per_story in (("ttcw-generated", 14), ("aiss-generated", 22)):
        judgements = db_rows(
            server.db, f"SELECT * FROM judgements WHERE experiment_id = '{exp_id}'"
        )
        assert len(judgements) == 2 * 2 * items_per_story
        raters = db_rows(server.db, f"SELECT * FROM raters WHERE experiment_id = '{exp_id}'")
        assert [r["phase"] for r in raters] == ["done", "done"]

    researcher = browser()
    for exp_id in ("ttcw-generated", "aiss-generated"):
        text = dashboard(researcher, server.url, exp_id)
        assert "Raters started\n2" in text and "Finished\n2" in text and "Excluded\n1" in text
        flagged = researcher.locator("#quality tr.flagged")
        assert flagged.count() == 1
        assert "failed at least 1 attention check" in flagged.inner_text()
        headline = researcher.inner_text("#agreement-headline")
        # Two raters who rated the same two stories: an α with its interval, with every
        # rater and without the excluded one (one rater left: no agreement to measure).
        assert headline.startswith("Krippendorff's α over every item") and "[" in headline
        assert "without the excluded raters" in headline
