"""The rater's page in a real headless Chromium against the real server process: answers saved
as they are typed, the badge telling the truth, drafts and unsent answers surviving a reload
(offline too) and stored exactly once, busy and broken replies retried, ids with quotes, the
researcher's preview that records nothing, and a phone screen left to the story."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest
from conftest import RESEARCHER_PASSWORD, db_rows
from playwright.sync_api import expect

from cyoa import store
from cyoa.rating.experiment import create_from_spec
from cyoa.rating.spec import parse_rating_spec
from cyoa.web.auth import create_researcher
from cyoa.web.experiments import set_status
from tests.cowriting.test_browser import Server, page  # noqa: F401 - `page` is a fixture

pytestmark = pytest.mark.browser

REASON = "The ending follows from the letter and feels earned to me."
QUOTED_ITEM = 'the "twist" worked'
QUOTED_TEXT = 'say "why"'
QUOTED_CHECK = 'qc "read"'
STORIES = [
    {
        "story_id": f"s{n}",
        "source": source,
        "title": f"The letter, part {n}",
        "text": "She found the letter under the door. "
        + "It was in her mother's hand, though her mother had been gone ten years. " * 12
        + "\nShe read it twice, then walked to the harbour.",
    }
    for n, source in enumerate(["human", "model"], start=1)
]


def spec(exp_id: str, **fields) -> dict:
    return {
        "id": exp_id,
        "title": "A short story",
        "kind": "rating",
        "raters_per_story": 2,
        "stories_per_rater": 1,
        "consent": "You will read a short story and answer questions about it.",
        "instructions": "Read the story, then answer every question about it.",
        "stories": {"file": "stories.jsonl"},
        **fields,
    }


SPECS = [
    spec("ttcw-pilot", instrument="ttcw"),
    spec(
        "quotes",
        stories_per_rater=2,
        instrument={
            "id": "quoted",
            "name": "Quoted ids",
            "items": [
                {"id": QUOTED_ITEM, "text": "The twist worked.", "kind": "likert", "points": 5},
                {"id": QUOTED_TEXT, "text": "Say why, in a word or two.", "kind": "text"},
            ],
        },
        attention_checks=[
            {"id": QUOTED_CHECK, "text": "Answer Yes.", "kind": "yes_no", "answer": True}
        ],
    ),
]


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """The app with a researcher account and both studies, created and opened in-process
    (as `experiment create` and `open` do), started once for the file (a start takes
    seconds); with a copy of its database as it was before any rater came."""
    root = tmp_path_factory.mktemp("rating-client")
    srv = Server(root)
    srv.env["CYOA_START_BURST"] = "1000"  # every test's raters start from this one address
    (root / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in STORIES))
    db = store.connect(srv.db)
    store.init_db(db)
    create_researcher(db, "alice", RESEARCHER_PASSWORD)
    for raw in SPECS:
        create_from_spec(db, parse_rating_spec(raw, raw["id"], root, db))
        set_status(db, raw["id"], "open")
    db.close()
    fresh = root / "fresh.sqlite"
    copy_database(srv.db, fresh)
    srv.start()
    yield srv, fresh
    srv.stop()


@pytest.fixture
def server(started):
    """The file's server with its database reset to the fresh copy: every test finds both
    studies open and nothing recorded, whatever the tests before it did."""
    srv, fresh = started
    copy_database(fresh, srv.db)
    return srv


def copy_database(source: Path, target: Path) -> None:
    """Overwrite ``target`` with ``source`` through SQLite's backup API, which is safe while
    the server has the target open."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def pause(server: Server, exp_id: str) -> None:
    db = store.connect(server.db)
    try:
        set_status(db, exp_id, "paused")
    finally:
        db.close()


def start(page, server: Server, exp_id: str, pid: str) -> None:  # noqa: F811
    page.goto(f"{server.url}/r/{exp_id}?PROLIFIC_PID={pid}&STUDY_ID=s&SESSION_ID={pid}-x")
    page.check("#consent")
    page.click("#start")
    page.wait_for_url(f"**/r/{exp_id}/rate")


def box(page, number: int):  # noqa: F811
    return page.locator(f"#q-{number}")


def tick_and_reason(page, number: int, reason: str = REASON) -> None:  # noqa: F811
    question = box(page, number)
    question.locator('input[value="1"]').check()
    question.locator(".rationale textarea").fill(reason)


def saved(page, number: int) -> None:  # noqa: F811
    box(page, number).locator(".saved").filter(has_text="Saved").wait_for(timeout=10_000)


def answer_events(server: Server) -> list[dict]:
    rows = db_rows(server.db, "SELECT payload, client_action_id FROM rating_events")
    return [
        {**json.loads(row["payload"]), "action_id": row["client_action_id"]}
        for row in rows
        if "item" in json.loads(row["payload"])
    ]


def badge(page) -> str:  # noqa: F811
    return page.inner_text("#saving")


def test_a_reason_is_saved_as_it_is_typed_and_the_badge_never_claims_more(server, page):  # noqa: F811
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.accept()))
    start(page, server, "ttcw-pilot", "typist1")
    assert badge(page) == "No answers yet"  # nothing answered: nothing to call saved
    tick_and_reason(page, 1)
    assert badge(page) == "1 answer not saved yet"  # typed a moment ago: not stored yet
    expect(page.locator("#saving")).to_have_text("All answers saved")  # no blur, no click
    saved(page, 1)

    tick_and_reason(page, 2, "Too short.")  # under the five words a reason needs
    expect(box(page, 2).locator(".saved")).to_have_text(
        "Add your reason (at least a sentence) to save this answer."
    )
    page.wait_for_timeout(1000)
    assert badge(page) == "1 answer not saved yet"
    page.reload()  # the page warns first; the rater leaves anyway
    assert dialogs == ["beforeunload"]
    assert box(page, 1).locator('input[value="1"]').is_checked()
    assert box(page, 2).locator(".rationale textarea").input_value() == "Too short."
    assert box(page, 2).locator('input[value="1"]').is_checked()
    assert badge(page) == "1 answer not saved yet"
    [stored] = answer_events(server)  # the first answer only
    assert stored["item"] == box(page, 1).get_attribute("data-item")
    assert stored["rationale"] == REASON


def test_a_rater_reloads_goes_offline_reloads_and_finishes_with_every_answer_stored_once(
    server,
    page,  # noqa: F811
):
    page.on("dialog", lambda dialog: dialog.accept())
    start(page, server, "ttcw-pilot", "journey1")
    items = page.locator("fieldset.question").evaluate_all("els => els.map(e => e.dataset.item)")
    assert len(items) == 14  # the TTCW's 14 tests
    numbers = list(range(1, 15))
    for n in numbers[:3]:
        tick_and_reason(page, n)
        saved(page, n)
    tick_and_reason(page, 4)
    page.reload()  # mid-reason, before it could be sent: the draft is in the browser
    assert box(page, 4).locator(".rationale textarea").input_value() == REASON
    saved(page, 4)  # and sent from there

    page.context.set_offline(True)
    for n in numbers[4:8]:
        tick_and_reason(page, n)
    expect(page.locator("#saving")).to_contain_text("4 answers not saved yet — offline")
    # Back online the answers cannot get through yet; then the page is reloaded.
    sent_before_reload: set[str] = set()

    def refuse(route) -> None:
        sent_before_reload.add(json.loads(route.request.post_data)["action_id"])
        route.abort()

    page.route("**/r/ttcw-pilot/action", refuse)
    page.context.set_offline(False)
    deadline = time.monotonic() + 20
    while not sent_before_reload:
        assert time.monotonic() < deadline, "the queued answers were not sent once online"
        page.wait_for_timeout(100)
    refused_ids = set(sent_before_reload)
    page.reload()
    for n in numbers[4:8]:  # the queued answers are on the page again
        assert box(page, n).locator(".rationale textarea").input_value() == REASON
    expect(page.locator("#saving")).to_contain_text("4 answers not saved yet")
    assert len(answer_events(server)) == 4
    page.unroute("**/r/ttcw-pilot/action")

    # The first answer that gets through has its reply lost: the resend is stored once.
    lost = {"replies": 0}

    def lose_first_reply(route) -> None:
        if lost["replies"] == 0:
            lost["replies"] += 1
            route.fetch()
            route.abort()
        else:
            route.continue_()

    page.route("**/r/ttcw-pilot/action", lose_first_reply)
    for n in numbers[4:8]:
        saved(page, n)
    for n in numbers[8:]:
        tick_and_reason(page, n)
    page.click("#finish")  # at once, the last reason typed a moment ago: one click
    page.wait_for_url("**/r/ttcw-pilot/done")

    events = answer_events(server)
    assert sorted(e["item"] for e in events) == sorted(items)  # each exactly once
    assert all(e["rationale"] == REASON and float(e["value"]) == 1 for e in events)
    offline_ids = {e["action_id"] for e in events if e["item"] in items[4:8]}
    assert refused_ids and refused_ids <= offline_ids  # sent under the ids queued offline
    assert lost["replies"] == 1
    judgements = db_rows(server.db, "SELECT * FROM judgements")
    assert len(judgements) == 14
    [rater] = db_rows(server.db, "SELECT phase FROM raters")
    assert rater["phase"] == "done"


def test_a_busy_or_broken_reply_keeps_the_answer_queued_and_resends_it_with_its_id(
    server,
    page,  # noqa: F811
):
    start(page, server, "ttcw-pilot", "busy1")
    ids: list[str] = []
    replies = [
        {"status": 503, "headers": {"Retry-After": "1"}, "content_type": "application/json",
         "body": json.dumps({"ok": False, "retry": True, "error": "The study is busy."})},
        {"status": 429, "content_type": "application/json",
         "body": json.dumps({"ok": False, "retry": True, "error": "Too fast."})},
        {"status": 502, "content_type": "text/html", "body": "<h1>Bad gateway</h1>"},
        {"status": 200, "content_type": "text/html", "body": "<p>A captive portal</p>"},
    ]  # fmt: skip

    def flaky(route) -> None:
        ids.append(json.loads(route.request.post_data)["action_id"])
        if len(ids) <= len(replies):
            route.fulfill(**replies[len(ids) - 1])
        else:
            route.continue_()

    page.route("**/r/ttcw-pilot/action", flaky)
    tick_and_reason(page, 1)
    expect(page.locator("#saving")).to_have_text("1 answer not saved yet — trying again")
    assert page.locator("#error").is_hidden()  # not an error: it is being retried
    saved(page, 1)
    expect(page.locator("#saving")).to_have_text("All answers saved")
    assert len(ids) == 5 and len(set(ids)) == 1  # one action, the same id each time
    [stored] = answer_events(server)
    assert stored["action_id"] == ids[0]


def test_an_answer_the_server_keeps_failing_is_given_up_said_so_and_kept_as_a_draft(
    server,
    page,  # noqa: F811
):
    start(page, server, "ttcw-pilot", "failing1")
    first = box(page, 1).get_attribute("data-item")
    tries: list[str] = []

    def broken_for_the_first(route) -> None:
        payload = json.loads(route.request.post_data)["payload"]
        if payload.get("item") == first:
            tries.append(json.loads(route.request.post_data)["action_id"])
            route.fulfill(status=500, headers={"Retry-After": "1"}, body="<h1>Oops</h1>")
        else:
            route.continue_()

    page.route("**/r/ttcw-pilot/action", broken_for_the_first)
    tick_and_reason(page, 1)
    expect(page.locator("#error")).to_contain_text("could not be saved", timeout=20_000)
    expect(page.locator("#error")).to_contain_text("reload the page")
    expect(page.locator("#error")).to_contain_text("contact the researcher")
    expect(box(page, 1).locator(".saved")).to_have_text("Not saved")
    page.wait_for_timeout(2500)
    assert len(tries) == 5  # given up: no more tries of that action
    tick_and_reason(page, 2)  # a later answer still goes through
    saved(page, 2)
    expect(page.locator("#saving")).to_have_text("1 answer not saved yet")
    page.unroute("**/r/ttcw-pilot/action")
    page.reload()  # the draft was kept: the reload sends it, and now it is stored
    saved(page, 1)
    assert {event["item"] for event in answer_events(server)} == {
        first,
        box(page, 2).get_attribute("data-item"),
    }


def test_finishing_is_blocked_while_an_edited_answer_cannot_be_saved(server, page):  # noqa: F811
    page.on("dialog", lambda dialog: dialog.accept())
    start(page, server, "ttcw-pilot", "editor1")
    for n in range(1, 15):
        tick_and_reason(page, n)
    for n in range(1, 15):
        saved(page, n)
    box(page, 3).locator(".rationale textarea").fill("Too short.")  # the saved reason, cut
    page.click("#finish")
    expect(page.locator("#error")).to_have_text(
        "Add your reason (at least a sentence) to save this answer."
    )
    expect(box(page, 3)).to_have_class(re.compile(r"\bmissing\b"))
    expect(box(page, 3)).to_be_in_viewport()
    page.wait_for_timeout(1000)
    assert page.url.endswith("/r/ttcw-pilot/rate")  # not sent on with the old answer
    assert not db_rows(server.db, "SELECT * FROM rating_events WHERE type = 'story_finished'")
    better = "On second thought the ending came too quickly for me."
    box(page, 3).locator(".rationale textarea").fill(better)
    page.click("#finish")
    page.wait_for_url("**/r/ttcw-pilot/done")
    rationales = {e["rationale"] for e in answer_events(server)}
    assert better in rationales and "Too short." not in rationales


def test_ids_with_quotes_are_answered_saved_and_finished(server, page):  # noqa: F811
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    start(page, server, "quotes", "quoted1")
    for position in (1, 2):
        expect(page.locator("#progress")).to_contain_text(f"Story {position} of 2")
        for question in page.locator("fieldset.question").all():
            item = question.get_attribute("data-item")
            if item == QUOTED_ITEM:
                question.locator('input[value="4"]').check()
            elif item == QUOTED_CHECK:
                question.locator('input[value="1"]').check()
            else:
                question.locator("textarea").first.fill("Because.")
            question.locator(".saved").filter(has_text="Saved").wait_for(timeout=10_000)
        expect(page.locator("#saving")).to_have_text("All answers saved")
        page.click("#finish")
        if position == 1:
            expect(page.locator("#progress")).to_contain_text("Story 2 of 2")
    page.wait_for_url("**/r/quotes/done")
    assert "?" not in page.url and errors == []
    events = answer_events(server)
    assert sorted(e["item"] for e in events) == sorted([QUOTED_ITEM, QUOTED_TEXT, QUOTED_CHECK] * 2)
    checks = db_rows(server.db, "SELECT check_id, correct FROM check_answers")
    assert checks == [{"check_id": QUOTED_CHECK, "correct": 1}] * 2


def test_without_its_script_the_rater_form_sends_nothing(server, page):  # noqa: F811
    start(page, server, "quotes", "noscript1")
    address = page.url
    bare = page.context.browser.new_context(java_script_enabled=False)
    bare.add_cookies(page.context.cookies())
    still = bare.new_page()
    still.goto(address)
    still.locator('fieldset.question input[value="4"]').check()
    still.click("#finish")
    still.keyboard.press("Enter")
    still.wait_for_timeout(500)
    assert still.url == address  # no GET with the answers in the address, no POST either
    assert answer_events(server) == []
    bare.close()


def test_the_rating_dashboard_refreshes_itself_and_says_its_time_in_utc(server, page):  # noqa: F811
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(f"{server.url}/research/ratings/ttcw-pilot")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("#live-status")).to_have_text(
        re.compile(r"live: updated \d\d:\d\d:\d\d UTC"), timeout=30_000
    )
    assert errors == []


def test_a_researcher_previews_a_paused_study_and_nothing_is_sent_or_recorded(
    server,
    page,  # noqa: F811
):
    pause(server, "ttcw-pilot")
    sent: list[str] = []
    page.on("request", lambda r: sent.append(r.url) if r.method == "POST" else None)
    page.goto(f"{server.url}/research/ratings/ttcw-pilot")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    sent.clear()  # the login's own POST
    page.click("#preview-as-rater")
    expect(page.locator("#preview-banner")).to_contain_text("Preview — nothing you answer is saved")
    assert "Story 1 of 2" in page.inner_text("#progress")
    for n in range(1, 15):
        tick_and_reason(page, n)
    box(page, 14).locator(".saved").filter(has_text="preview").wait_for()
    page.click("#finish")
    expect(page.locator("#progress")).to_contain_text("Story 2 of 2")
    page.click("text=Previous story")
    expect(page.locator("#progress")).to_contain_text("Story 1 of 2")
    assert not box(page, 1).locator('input[value="1"]').is_checked()  # nothing was kept
    assert sent == []
    assert page.evaluate("Object.keys(localStorage).length") == 0
    for table in ("raters", "rating_events", "assignments", "judgements"):
        assert db_rows(server.db, f"SELECT * FROM {table}") == [], table


def test_on_a_phone_the_story_has_more_than_two_thirds_of_the_screen(server, page):  # noqa: F811
    page.set_viewport_size({"width": 390, "height": 844})
    start(page, server, "ttcw-pilot", "phone1")
    share = """() => {
      const story = document.getElementById('story').getBoundingClientRect();
      const bar = document.querySelector('.topbar').getBoundingClientRect();
      const top = Math.max(story.top, bar.bottom, 0);
      const bottom = Math.min(story.bottom, window.innerHeight);
      return Math.max(0, bottom - top) / window.innerHeight;
    }"""
    first_screen = page.evaluate(share)  # the title, the instructions (open), the story
    page.evaluate("document.getElementById('story').scrollIntoView({block: 'start'})")
    reading = page.evaluate(share)  # under the sticky bar
    assert first_screen > 2 / 3, f"the story has {first_screen:.0%} of the first screen"
    assert reading > 2 / 3, f"the story has {reading:.0%} of the screen while reading"


def test_the_rating_form_ticks_the_aiss_check_only_while_the_aiss_is_chosen(server, page):  # noqa: F811
    page.goto(f"{server.url}/research/ratings/new")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    check = page.locator("#aiss_check")
    expect(check).to_be_checked()
    expect(check).to_be_enabled()
    page.check('input[name=instrument][value="ttcw"]')
    expect(check).not_to_be_checked()
    expect(check).to_be_disabled()
    page.check('input[name=instrument][value="aiss-v1"]')
    expect(check).to_be_checked()
    expect(check).to_be_enabled()


def test_the_rating_form_shows_a_choices_fields_only_while_it_is_chosen_even_by_keyboard(
    server,
    page,  # noqa: F811
):
    page.goto(f"{server.url}/research/ratings/new")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    stories_file, prompts = page.locator("input[name=stories_file]"), page.locator("[name=prompts]")
    expect(stories_file).to_be_visible()  # "From a file" is chosen at first
    expect(prompts).to_be_hidden()
    expect(page.locator("input[name=questions_file]")).to_be_hidden()  # the AISS is chosen
    page.focus('input[name=stories_from][value="file"]')
    page.keyboard.press("ArrowDown")  # a co-writing experiment's stories
    page.keyboard.press("ArrowDown")  # generated by the systems
    expect(page.locator('input[name=stories_from][value="generated"]')).to_be_checked()
    expect(prompts).to_be_visible()
    expect(stories_file).to_be_hidden()
    page.keyboard.press("Tab")  # the next field in the keyboard's order is the choice's own
    inside = "document.activeElement.closest('#stories_from-generated-fields') !== null"
    assert page.evaluate(inside)


def test_the_open_page_tells_the_server_each_minute_that_the_rater_is_reading(server, page):  # noqa: F811
    page.clock.install()
    start(page, server, "ttcw-pilot", "reader1")
    [before] = db_rows(server.db, "SELECT updated_at FROM raters")
    events = len(db_rows(server.db, "SELECT * FROM rating_events"))
    with page.expect_request("**/r/ttcw-pilot/seen") as beat:
        page.clock.run_for(61_000)
    assert beat.value.method == "POST" and beat.value.headers["x-cyoa-action"] == "1"
    beat.value.response().finished()
    [after] = db_rows(server.db, "SELECT updated_at FROM raters")
    assert after["updated_at"] > before["updated_at"]
    assert len(db_rows(server.db, "SELECT * FROM rating_events")) == events  # no event
