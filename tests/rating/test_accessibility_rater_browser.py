"""The rater's pages meet WCAG 2.2 level AA in a real headless Chromium: axe-core's A/AA rules
on the consent, story, questions and done pages of a TTCW, an AISS, an FEI and a custom study
(and a custom one in Arabic, right to left),
on the researcher's preview and on every "come back later" page, 320 CSS px without scrolling
sideways, each question a fieldset with its legend, and a whole TTCW and AISS study rated with
the keyboard alone. The researcher's pages get the same axe run; what it finds is counted in
docs/accessibility.md. One server and one browser for the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import RESEARCHER_PASSWORD, db_rows
from playwright.sync_api import expect

from cyoa import store
from cyoa.rating.experiment import create_from_spec
from cyoa.rating.spec import parse_rating_spec
from cyoa.web.auth import create_researcher
from tests.a11y import (
    MouseWatch,
    check,
    focused,
    tab_to,
    violations,
)
from tests.cowriting.test_browser import Server
from tests.i18n.test_rtl_browser import RATING, arabic
from tests.rating.test_rating_client_browser import REASON, STORIES
from tests.rating.test_rating_journey import Rater
from tests.rating.test_rating_limits import rating_study
from tests.web.test_web_outage import sqlite_outage

pytestmark = pytest.mark.browser

FEI_QUESTIONS = [
    {"story_id": s["story_id"], "question_id": f"q-{s['story_id']}-{k}", "kind": kind, "text": t}
    for s in STORIES
    for k, (kind, t) in enumerate(
        [("transitional", "She read the letter before she walked."), ("world", "It is night.")]
    )
]
CUSTOM = {
    "id": "mine",
    "name": "My scale",
    "items": [
        {
            "id": "vivid",
            "text": "The story is vivid.",
            "kind": "likert",
            "points": 5,
            "labels": ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"],
        },
        {"id": "ending", "text": "The ending surprised me.", "kind": "yes_no"},
        {"id": "why", "text": "What stayed with you?", "kind": "text"},
    ],
}


def spec(exp_id: str, **fields) -> dict:
    return {
        "id": exp_id,
        "title": f"Reading study {exp_id}",
        "kind": "rating",
        "raters_per_story": 2,
        "stories_per_rater": 1,
        "consent": "You will read a short story and answer questions about it.",
        "instructions": "Read the story, then answer every question about it.",
        "stories": {"file": "stories.jsonl"},
        **fields,
    }


SPECS = [
    spec("ttcw", instrument="ttcw"),
    spec("aiss", instrument="aiss-v1"),
    spec("fei", instrument="fei", questions={"file": "questions.jsonl"}),
    spec("custom", instrument=CUSTOM),
    {**RATING, "id": "arabic", "stories": {"file": "stories.jsonl"}},  # right to left
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app with a researcher and the four studies open, started once for the file; its
    co-writing study (the researcher's replay is checked too) has one round."""
    root = tmp_path_factory.mktemp("a11y-rater")
    srv = Server(root, rounds=1)
    srv.env["CYOA_START_BURST"] = "1000"  # every test's raters start from this one address
    (root / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in STORIES))
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in FEI_QUESTIONS))
    db = store.connect(srv.db)
    store.init_db(db)
    create_researcher(db, "alice", RESEARCHER_PASSWORD)
    for raw in SPECS:
        create_from_spec(db, parse_rating_spec(raw, raw["id"], root, db))
        store.set_experiment_status(db, raw["id"], "open")
    db.close()
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def context(chromium):
    ctx = chromium.new_context()
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


def answer_all(page) -> None:
    """Every question answered with its first choice (and a reason or text where asked)."""
    for question in page.locator("fieldset.question").all():
        radio = question.locator("input[type=radio]")
        if radio.count():
            radio.first.check()
        for box in question.locator("textarea").all():
            box.fill(REASON)


@pytest.mark.parametrize("exp_id", ["ttcw", "aiss", "fei", "custom", "arabic"])
def test_each_instrument_s_pages_pass_axe_and_fit_320_px(server, context, exp_id):
    said = arabic if exp_id == "arabic" else str
    page = context.new_page()
    page.set_viewport_size({"width": 320, "height": 640})
    page.goto(f"{server.url}/r/{exp_id}?pid=axe-{exp_id}")
    check(page, f"{exp_id}: consent")
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(f"**/r/{exp_id}/rate")
    check(page, f"{exp_id}: story and questions")
    unnamed = page.eval_on_selector_all(
        "fieldset.question", "fs => fs.filter(f => !f.querySelector(':scope > legend')).length"
    )
    assert unnamed == 0, "a question is not a fieldset with its legend"
    page.click("#finish")
    expect(page.locator("#error")).to_be_visible()
    check(page, f"{exp_id}: questions left unanswered")
    answer_all(page)
    expect(page.locator("#saving")).to_have_text(said("All answers saved"))
    check(page, f"{exp_id}: every answer saved")
    page.click("#finish")
    page.wait_for_url(f"**/r/{exp_id}/done")
    check(page, f"{exp_id}: done")


def log_in(page, server: Server, address: str) -> None:
    page.goto(f"{server.url}{address}")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")


def test_the_researcher_s_preview_passes_axe_and_fits_320_px(server, context):
    page = context.new_page()
    log_in(page, server, "/research/ratings/custom")
    page.set_viewport_size({"width": 320, "height": 640})
    page.click("#preview-as-rater")
    expect(page.locator("#preview-banner")).to_contain_text("Preview — nothing you answer is saved")
    check(page, "preview")


def shown(page, server: Server, response) -> None:
    """``response``, from an in-process app, shown in the browser as if the server had sent it
    (so the server's own style sheet and scripts load with it)."""
    address = f"{server.url}/come-back-later"
    page.route(
        address,
        lambda route: route.fulfill(
            status=response.status_code,
            body=response.get_data(),
            content_type="text/html; charset=utf-8",
        ),
    )
    page.goto(address)
    page.unroute(address)


def test_every_come_back_later_page_passes_axe_and_fits_320_px(server, context, tmp_path):
    app = rating_study(tmp_path, START_BURST=4, STARTS_PER_MINUTE=1)
    for n in range(4):
        assert Rater(app, f"?pid=r{n}").start().status_code == 302
    other = Rater(app, "?pid=r9")
    other.client.environ_base["REMOTE_ADDR"] = "192.0.2.7"  # an address with starts left
    pages = {"full": other.start(), "too many starts": Rater(app, "?pid=r5").start()}
    newcomer = app.test_client()
    newcomer.get("/r/aiss-pilot?pid=new1")
    with newcomer.session_transaction() as session:
        token = session["csrf"]
    with sqlite_outage(Path(app.config["DATABASE"]))():
        pages["reconnecting"] = newcomer.get("/r/aiss-pilot?pid=new1")
        pages["reconnecting, a form"] = newcomer.post(
            "/r/aiss-pilot/start", data={"consent": "yes", "csrf_token": token, "pid": "new1"}
        )
    assert [r.status_code for r in pages.values()] == [403, 429, 503, 503]
    page = context.new_page()
    page.set_viewport_size({"width": 320, "height": 640})
    for where, response in pages.items():
        shown(page, server, response)
        check(page, where)
    page.goto(f"{server.url}/r/no-such-study")
    check(page, "404")


def test_a_rater_finishes_a_ttcw_study_with_the_keyboard_alone(server, context):
    mouse = MouseWatch(context)
    page = context.new_page()
    start_by_keyboard(page, server, "ttcw", "keys-ttcw")
    for n in range(1, 15):
        tab_to(page, f"#q-{n} input[type=radio]")
        page.keyboard.press("Space")  # "Yes"
        tab_to(page, f"#q-{n} .rationale textarea")
        page.keyboard.type(REASON)
    finish_by_keyboard(page, server, "ttcw")
    assert mouse.presses == 0
    assert rated(server, "keys-ttcw") == 14


def test_a_rater_finishes_an_aiss_study_with_the_keyboard_alone(server, context):
    mouse = MouseWatch(context)
    page = context.new_page()
    start_by_keyboard(page, server, "aiss", "keys-aiss")
    count = page.locator("fieldset.question").count()
    for n in range(1, count + 1):
        tab_to(page, f"#q-{n} input[type=radio]")
        page.keyboard.press("ArrowRight")  # from the first point to the second, ticking it
        assert focused(page)["value"] == "2"
    finish_by_keyboard(page, server, "aiss")
    assert mouse.presses == 0
    assert rated(server, "keys-aiss") == count


def start_by_keyboard(page, server: Server, exp_id: str, pid: str) -> None:
    page.goto(f"{server.url}/r/{exp_id}?pid={pid}")
    tab_to(page, "#consent")
    page.keyboard.press("Space")
    tab_to(page, "#start")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/r/{exp_id}/rate")


def finish_by_keyboard(page, server: Server, exp_id: str) -> None:
    expect(page.locator("#saving")).to_have_text("All answers saved")
    tab_to(page, "#finish")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/r/{exp_id}/done")


def rated(server: Server, pid: str) -> int:
    """How many answers the rater with link id ``pid`` has stored."""
    return len(
        db_rows(
            server.db,
            "SELECT j.* FROM judgements j JOIN raters r ON r.rater_id = j.rater_id"
            f" AND r.experiment_id = j.experiment_id WHERE r.external_id = '{pid}'",
        )
    )


RESEARCHER_PAGES = [
    "/research/",
    "/research/experiments/fake-ab",
    "/research/experiments/new",
    "/research/experiments/fake-ab/edit",
    "/research/experiments/fake-ab/participants",
    "/research/ratings/ttcw",
    "/research/ratings/new",
    "/research/ratings/ttcw/edit",
    "/research/ratings/ttcw/participants",
    "/research/ratings/ttcw/judges/run",
    "/research/models/",
    "/research/plan/ttcw",
    "/research/password",
]


def write_a_story(page, server: Server, pid: str) -> int:
    """A writer's whole one-round story and survey; their participant id."""
    page.goto(f"{server.url}/s/fake-ab?pid={pid}")
    page.check("#consent")
    page.click("#start")
    page.fill("#line", "The lighthouse keeper heard a knock at midnight.")
    page.click("#line-submit")
    page.click("#choose-1")
    page.fill("#edit", "The keeper opened the door to nobody at all.")
    page.click("#edit-submit")
    for item in ["happy", "collaborative", "useful", "connected", "ideas"]:
        page.check(f"input[name='{item}'][value='4']")
    page.click("#survey-submit")
    page.wait_for_selector("#completion-code")
    [writer] = db_rows(server.db, f"SELECT id FROM participants WHERE external_id = '{pid}'")
    return writer["id"]


def test_the_researcher_s_pages_get_the_same_axe_run(server, context):
    page = context.new_page()
    writer = write_a_story(page, server, "replayed1")
    page.goto(f"{server.url}/research/login")
    found = {"/research/login": violations(page)}
    log_in(page, server, "/research/")
    for address in [*RESEARCHER_PAGES, f"/research/experiments/fake-ab/writers/{writer}"]:
        page.goto(f"{server.url}{address}")
        found[address] = violations(page)
    report = "\n".join(f"{address}: {line}" for address, lines in found.items() for line in lines)
    print(report)
    assert not report, report
