"""The writer's pages meet WCAG 2.2 level AA in a real headless Chromium: axe-core's A/AA rules
on every page in every state, 320 CSS px without scrolling sideways, a whole story written with
the keyboard alone (focus always on what comes next, never <body>, and visible), the
suggestions announced twice rather than token by token, a phone's screen that does not jump
while they stream, and nothing moving for those who ask for less motion. One server and one
browser for the file; each journey runs its checks at each state it passes through."""

from __future__ import annotations

import pytest
from conftest import db_rows
from playwright.sync_api import expect

from cyoa import store
from cyoa.web.experiments import set_status
from tests.a11y import MouseWatch, check, tab_to
from tests.cowriting.test_browser import Server

pytestmark = pytest.mark.browser

LINE = "The lighthouse keeper heard a knock at midnight."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Two rounds; the second model writes a word each 0.3 s, so its suggestion streams for
    about three seconds, long enough to check the page while it does."""
    srv = Server(tmp_path_factory.mktemp("a11y-writer"), rounds=2, delays=(0.02, 0.3))
    srv.env["CYOA_START_BURST"] = "1000"  # every test's writers start from this one address
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def context(chromium):
    """A fresh browser context of the file's Chromium, 1,280 × 720 px as Playwright opens it."""
    ctx = chromium.new_context()
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


def test_every_writer_page_in_every_state_passes_axe_and_fits_320_px(server, context):
    page = context.new_page()
    page.set_viewport_size({"width": 320, "height": 640})
    page.goto(f"{server.url}/s/fake-ab?pid=axe1")
    check(page, "consent")
    page.click("#start")
    expect(page.locator("p.error[role=alert]")).to_contain_text("Please tick the box")
    check(page, "consent, not ticked")
    page.check("#consent")
    page.click("#start")
    page.wait_for_selector("#writing:not([hidden])")
    check(page, "writing")
    page.fill("#line", "Too short")
    check(page, "writing, a line too short")
    page.fill("#line", LINE)
    page.click("#line-submit")
    page.wait_for_selector("#suggestions .suggestion.pending")  # the slower model's
    expect(page.locator("#suggest-status")).to_have_text("Suggestions are being written…")
    live = "[aria-live], [role=status], [role=alert], [role=log]"
    inside = page.eval_on_selector_all(
        "#suggestions .text", f"ps => ps.filter(p => p.closest('{live}')).length"
    )
    assert inside == 0, "the streaming text is in a live region: every token would be read"
    check(page, "waiting for suggestions (streaming)")
    expect(page.locator("#suggest-status")).to_have_text("Two suggestions are ready.")
    check(page, "choosing")
    page.click("#choose-1")
    page.wait_for_selector("#editing:not([hidden])")
    check(page, "editing")
    page.fill("#edit", "The keeper opened the door to nobody at all.")
    page.click("#edit-submit")
    page.wait_for_selector("#round-label:text-is('Round 2 of 2')")
    page.fill("#line", "Footprints led from the door into the sea.")
    page.click("#line-submit")
    page.click("#choose-2")
    page.click("#edit-submit")
    page.wait_for_selector("#survey:not([hidden])")
    check(page, "survey")
    page.click("#survey-submit")
    expect(page.locator("#survey-message")).to_contain_text("Please answer every statement")
    check(page, "survey, answers missing")
    for item in ["happy", "collaborative", "useful", "connected", "ideas"]:
        page.check(f"input[name='{item}'][value='3']")
    page.click("#survey-submit")
    page.wait_for_selector("#completion-code")
    check(page, "done")

    first, second = context.browser.new_context(), context.browser.new_context()
    started = first.new_page()
    started.goto(f"{server.url}/s/fake-ab?pid=axe2")
    started.check("#consent")
    started.click("#start")
    started.wait_for_selector("#writing:not([hidden])")
    started.set_viewport_size({"width": 320, "height": 640})
    first.set_offline(True)
    started.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    started.fill("#line", LINE)
    started.click("#line-submit")
    expect(started.locator("#notice")).to_contain_text("The connection is lost")
    check(started, "writing, the connection lost and a line queued")
    elsewhere = second.new_page()  # the same participant id in a second browser
    elsewhere.set_viewport_size({"width": 320, "height": 640})
    elsewhere.goto(f"{server.url}/s/fake-ab?pid=axe2")
    expect(elsewhere.locator("[role=alert]")).to_contain_text("already has a story in progress")
    check(elsewhere, "consent, refused: started in another browser")
    first.close()
    second.close()

    page.goto(f"{server.url}/s/no-such-study")
    check(page, "404")
    db = store.connect(server.db)
    try:
        set_status(db, "fake-ab", "paused")
        page.goto(f"{server.url}/s/fake-ab?pid=axe3")
        expect(page.locator("main")).to_contain_text("not taking new writers")
        check(page, "closed")
    finally:
        set_status(db, "fake-ab", "open")
        db.close()


def test_a_writer_finishes_a_whole_story_with_the_keyboard_alone(server, context):
    mouse = MouseWatch(context)
    page = context.new_page()
    page.goto(f"{server.url}/s/fake-ab?pid=keys1")
    tab_to(page, "#consent")
    page.keyboard.press("Space")
    tab_to(page, "#start")
    page.keyboard.press("Enter")
    page.wait_for_selector("#writing:not([hidden])")
    for n in (1, 2):
        tab_to(page, "#line")
        page.keyboard.type(f"{LINE} Round {n}.")
        tab_to(page, "#line-submit")
        page.keyboard.press("Enter")
        # Focus goes to the suggestions' heading, read out as it changes, never <body>.
        expect(page.locator("#suggest-heading")).to_be_focused()
        expect(page.locator("#suggest-heading")).to_have_text("Choose the suggestion you like best")
        expect(page.locator("#suggest-heading")).to_be_focused()
        tab_to(page, "#choose-1")
        page.keyboard.press("Enter")
        expect(page.locator("#edit")).to_be_focused()  # Choose: straight to the edit box
        page.keyboard.press("Control+End")
        page.keyboard.type(" Edited.")
        tab_to(page, "#choose-2", back=True)
        page.keyboard.press("Enter")
        expect(page.locator("#edit")).to_be_focused()  # Switch: the other draft's box
        tab_to(page, "#choose-1", back=True)
        page.keyboard.press("Enter")
        expect(page.locator("#edit")).to_have_value(f"{_suggestion(page, 1)} Edited.")
        tab_to(page, "#edit-submit")
        page.keyboard.press("Enter")
        if n == 1:
            page.wait_for_selector("#round-label:text-is('Round 2 of 2')")
            expect(page.locator("#line")).to_be_focused()  # Add to story: the next line's box
    expect(page.locator("#survey-heading")).to_be_focused()
    # At 1,280 px (the context's width) each scale's five points sit on one row.
    tops = page.eval_on_selector_all(
        "#q-happy label", "ls => ls.map(l => Math.round(l.getBoundingClientRect().top))"
    )
    assert len(tops) == 5 and len(set(tops)) == 1, f"the scale's labels start at {tops}"
    for item in ["happy", "collaborative", "useful", "connected", "ideas"]:
        tab_to(page, f"input[name='{item}']")
        page.keyboard.press("ArrowRight")  # the second point, "Disagree"
        page.keyboard.press("ArrowRight")  # the third, "Neither agree nor disagree"
    tab_to(page, "#q-why_chosen")
    page.keyboard.type("It kept the mystery going.")
    tab_to(page, "#survey-submit")
    page.keyboard.press("Enter")
    page.wait_for_selector("#completion-code")
    assert mouse.presses == 0
    answers = db_rows(
        server.db,
        "SELECT a.value, a.text FROM survey_answers a JOIN sessions s ON s.id = a.session_id"
        " JOIN participants p ON p.id = s.participant_id WHERE p.external_id = 'keys1'",
    )
    given = [str(row["value"] or row["text"]) for row in answers if row["value"] or row["text"]]
    assert sorted(given) == [
        "3", "3", "3", "3", "3", "It kept the mystery going.",
    ]  # fmt: skip


def _suggestion(page, slot: int) -> str:
    return page.inner_text(f"#suggestion-{slot} .text")


def test_on_a_phone_the_suggestions_and_edit_box_stay_put_while_the_story_grows(server, context):
    page = context.new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{server.url}/s/fake-ab?pid=phone1")
    page.check("#consent")
    page.click("#start")
    long_line = "The storm rolled in over the grey cliffs while the keeper watched and waited."
    page.fill("#line", long_line)
    page.click("#line-submit")
    page.click("#choose-1")
    page.fill("#edit", long_line + " It did not stop for hours.")
    page.click("#edit-submit")
    page.wait_for_selector("#round-label:text-is('Round 2 of 2')")
    page.fill("#line", long_line)
    page.click("#line-submit")
    page.wait_for_selector("#suggestions .suggestion.pending")  # the slower model's
    where = "() => document.getElementById('suggesting').getBoundingClientRect().top + scrollY"
    streaming = page.evaluate(where)
    story = page.evaluate("document.getElementById('story').getBoundingClientRect().height")
    assert story <= 0.35 * 844 + 1, f"the story takes {story:.0f} px of the phone's 844"
    page.wait_for_selector("#choose-2:not([disabled])")
    assert page.evaluate(where) == streaming  # nothing above the suggestions moved
    page.click("#choose-2")
    bottom = page.evaluate("document.getElementById('edit').getBoundingClientRect().bottom")
    assert page.evaluate(where) == streaming
    assert bottom + page.evaluate("scrollY") < 3 * 844, "the edit box is screens away"
    # Writer's and suggestion's lines differ by more than colour: words and the line's pattern.
    assert page.inner_text("#story .turn.writer").startswith("You wrote:")
    assert page.inner_text("#story .turn.model").startswith("From a suggestion:")
    styles = page.eval_on_selector_all(
        "#story .turn", "ps => ps.map(p => getComputedStyle(p).borderLeftStyle)"
    )
    assert styles == ["solid", "dashed", "solid"]


def test_nothing_moves_for_a_writer_who_asks_for_less_motion(server, chromium):
    still = chromium.new_context(reduced_motion="reduce")
    page = still.new_page()
    page.goto(f"{server.url}/s/fake-ab?pid=still1")
    page.check("#consent")
    page.click("#start")
    page.fill("#line", LINE)
    page.click("#line-submit")
    page.wait_for_selector(".thinking")
    motion = page.evaluate(
        """() => ({
          bar: getComputedStyle(document.getElementById('round-bar')).transitionDuration,
          dot: getComputedStyle(document.querySelector('.thinking'), '::after').animationName,
        })"""
    )
    still.close()
    assert motion == {"bar": "0s", "dot": "none"}
