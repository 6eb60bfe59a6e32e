"""In a real browser (Debian's Chromium): a whole co-writing story and a whole rating study in
Arabic, right to left, and both again in Spanish. The strings are the catalogue's, the page's
direction is computed right to left, and the layout mirrors: text starts at the right edge of
its column and the story's coloured rule stands on the right. At every state each journey
passes through, axe-core's WCAG 2.2 A/AA rules find nothing and the page, 320 CSS px wide,
does not scroll sideways (:mod:`tests.a11y`)."""

from __future__ import annotations

import json

import pytest
from babel.messages.pofile import read_po
from conftest import write_setup
from playwright.sync_api import expect

from cyoa import store
from cyoa.languages import TRANSLATIONS
from cyoa.rating.experiment import create_from_spec
from cyoa.rating.spec import parse_rating_spec
from cyoa.web.experiments import set_status
from tests.a11y import assert_accessible, assert_fits_320
from tests.cowriting.test_browser import Server, page  # noqa: F401 - `page` is a fixture
from tests.i18n.pages import english_words

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}
# WCAG 1.4.10's reflow width: a 1,280 px screen at 400% zoom.
REFLOW = {"width": 320, "height": 640}
STORY = {
    "story_id": "s1",
    "source": "human",
    "title": "الرسالة",
    "text": "وجدت الرسالة تحت الباب. كانت بخط أمها.\nقرأتها مرتين، ثم مشت إلى الميناء.",
}
RATING = {
    "id": "rating-ar",
    "title": "قصة قصيرة",
    "kind": "rating",
    "language": "ar",
    "raters_per_story": 2,
    "stories_per_rater": 1,
    "consent": "ستقرأ قصة قصيرة وتجيب عن أسئلة عنها.",
    "instructions": "اقرأ القصة، ثم أجب عن كل سؤال.",
    "stories": {"file": "stories.jsonl"},
    "instrument": {
        "id": "short-ar",
        "name": "Two questions",
        "language": "ar",  # written in Arabic: it needs no translation
        "items": [
            {"id": "liked", "text": "أعجبتني القصة.", "kind": "likert", "points": 5},
            {"id": "clear", "text": "هل كانت النهاية واضحة؟", "kind": "yes_no"},
        ],
    },
}


RATING_ES = {
    **RATING,
    "id": "rating-es",
    "title": "Un cuento",
    "language": "es",
    "consent": "Leerá un cuento breve y responderá a preguntas sobre él.",
    "instructions": "Lea el cuento y responda a cada pregunta.",
    "instrument": {
        "id": "short-es",
        "name": "Two questions",
        "language": "es",  # written in Spanish: it needs no translation
        "items": [
            {"id": "liked", "text": "Me gustó el cuento.", "kind": "likert", "points": 5},
            {"id": "clear", "text": "¿Quedó claro el final?", "kind": "yes_no"},
        ],
    },
}


def arabic(msgid: str) -> str | tuple[str, ...]:
    """The Arabic catalogue's translation of ``msgid`` (its six forms for a plural one)."""
    with (TRANSLATIONS / "ar" / "LC_MESSAGES" / "messages.po").open("rb") as file:
        return read_po(file).get(msgid).string


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the file: the co-writing study (two rounds) in Arabic, or in Spanish for
    a browser that prefers it, and a rating study in each."""
    root = tmp_path_factory.mktemp("rtl")
    srv = Server(root, rounds=2)
    fast = "delay_seconds = 0.02"
    languages = 'language = "ar"\nlanguages = ["ar", "es"]'
    write_setup(root, rounds=2, options_a=fast, options_b=fast, top=languages)
    (root / "stories.jsonl").write_text(json.dumps(STORY, ensure_ascii=False) + "\n")
    db = store.connect(srv.db)
    store.init_db(db)
    for spec in (RATING, RATING_ES):
        create_from_spec(db, parse_rating_spec(spec, spec["id"], root, db))
        set_status(db, spec["id"], "open")
    db.close()
    srv.start()
    yield srv
    srv.stop()


def check(page, where: str) -> None:  # noqa: F811
    """axe's WCAG 2.2 A/AA rules and the reflow check on ``page`` at 320 px wide, then back
    to its own size (where the layout checks measure)."""
    own = page.viewport_size
    page.set_viewport_size(REFLOW)
    assert_accessible(page, where)
    assert_fits_320(page, where)
    page.set_viewport_size(own)


def direction(page) -> str:  # noqa: F811
    return page.evaluate("getComputedStyle(document.documentElement).direction")


def text_gaps(page, selector: str) -> tuple[float, float]:  # noqa: F811
    """The room (CSS px) left of and right of the text of ``selector`` inside its content
    box."""
    return tuple(
        page.evaluate(
            """(selector) => {
                const box = document.querySelector(selector);
                const range = document.createRange();
                range.selectNodeContents(box);
                const text = range.getBoundingClientRect(), own = box.getBoundingClientRect();
                const style = getComputedStyle(box), px = (name) => parseFloat(style[name]);
                const left = own.left + px("borderLeftWidth") + px("paddingLeft");
                const right = own.right - px("borderRightWidth") - px("paddingRight");
                return [text.left - left, right - text.right];
            }""",
            selector,
        )
    )


def assert_starts_at_the_right(page, selector: str) -> None:  # noqa: F811
    left, right = text_gaps(page, selector)
    assert right < 2 < left, (selector, left, right)


def test_a_writer_writes_a_whole_story_in_arabic_right_to_left(server, page):  # noqa: F811
    page.set_viewport_size(PHONE)
    page.goto(f"{server.url}/s/fake-ab?pid=rtl1")
    assert direction(page) == "rtl"
    expect(page.locator("#start")).to_have_text(arabic("Start writing"))
    assert english_words(page.content()) == []
    page.shot("consent")
    check(page, "Arabic consent")
    page.check("#consent")
    page.click("#start")
    page.wait_for_selector("#writing:not([hidden])")
    expect(page.locator("#connection")).to_have_text(arabic("Connected"))
    expect(page.locator("#round-label")).to_have_text("الجولة 1 من 2")
    assert_starts_at_the_right(page, "#writing h2")
    check(page, "Arabic writing")
    page.fill("#line", "قصير")
    expect(page.locator("#line-message")).to_have_text("قصير جدًا — 20 حرفًا على الأقل.")
    check(page, "Arabic writing, a line too short")
    for n in (1, 2):
        page.fill("#line", f"كتبت الجملة رقم {n} من قصتي بنفسي.")
        page.click("#line-submit")
        choose = page.locator("#choose-1")
        expect(choose).to_have_text(arabic("Choose this one"))
        expect(choose).to_be_enabled()
        if n == 1:
            check(page, "Arabic choosing")
        choose.click()
        expect(choose).to_have_text(arabic("Chosen"))
        if n == 1:
            check(page, "Arabic editing")
        page.fill("#edit", f"الاقتراح المعدّل في الجولة {n} من القصة.")
        page.click("#edit-submit")
        if n == 1:
            page.wait_for_selector("#writing:not([hidden])")
            expect(page.locator("#round-label")).to_have_text("الجولة 2 من 2")
    page.wait_for_selector("#survey:not([hidden])")
    page.shot("survey")
    assert english_words(page.content()) == []
    check(page, "Arabic survey")
    # The story's rule stands at the start of each line: on the right.
    rule = page.evaluate(
        """() => { const s = getComputedStyle(document.querySelector('#story p'));
                   return [s.borderRightWidth, s.borderLeftWidth]; }"""
    )
    assert rule == ["3px", "0px"]
    column = page.locator("#story").bounding_box()
    assert abs(column["x"] + column["width"] - PHONE["width"]) < 40  # the column's right edge
    assert_starts_at_the_right(page, "#story p")
    survey = page.locator("#survey-items")
    expect(survey).to_contain_text(arabic("Strongly agree"))
    expect(survey).to_contain_text(arabic("I'm happy with my final story."))
    for item in ("happy", "collaborative", "useful", "connected", "ideas"):
        page.check(f"input[name='{item}'][value='4']")
    page.click("#survey-submit")
    page.wait_for_selector("#completion-code")
    page.shot("done")
    check(page, "Arabic done")
    assert direction(page) == "rtl"
    expect(page.locator("main")).to_contain_text(arabic("Your completion code is:"))
    code = page.locator("#completion-code").evaluate("e => getComputedStyle(e).direction")
    assert code == "ltr"  # a code is read left to right in every language
    assert english_words(page.content()) == []


def test_a_rater_rates_a_story_in_arabic_right_to_left(server, page):  # noqa: F811
    page.set_viewport_size(PHONE)
    page.goto(f"{server.url}/r/rating-ar?pid=rtl-rater")
    assert direction(page) == "rtl"
    expect(page.locator("#start")).to_have_text(arabic("Start reading"))
    check(page, "Arabic rater's consent")
    page.check("#consent")
    page.click("#start")
    page.wait_for_url("**/r/rating-ar/rate")
    page.shot("story")
    check(page, "Arabic rater's story")
    assert direction(page) == "rtl"
    assert english_words(page.content()) == []
    expect(page.locator("#saving")).to_have_text(arabic("No answers yet"))
    expect(page.locator("#progress")).to_contain_text("القصة 1 من 1، أُجيب عن 0 من 2 أسئلة")
    assert_starts_at_the_right(page, "#story p")
    assert_starts_at_the_right(page, "#q-1 legend")
    # The scale starts at the right: its first point stands in the right half of the question.
    first = page.locator("#q-1 input[value='1']").bounding_box()
    question = page.locator("#q-1").bounding_box()
    assert first["x"] > question["x"] + question["width"] / 2
    page.click("#finish")
    # Two questions left: Arabic's dual, the third of its six plural forms.
    two_left = arabic("Please answer every question first ({n} left).")[2]
    expect(page.locator("#error")).to_have_text(two_left)
    check(page, "Arabic rater's story, questions left")
    top = "e => e.getBoundingClientRect().top + window.scrollY"  # in the page, not the view
    where = page.locator("#q-2").evaluate(top)
    page.locator("#q-1 input[value='4']").check()
    expect(page.locator("#error")).to_be_hidden()  # cleared once the answer is saved
    assert page.locator("#q-2").evaluate(top) == where  # no question moved as it cleared
    page.locator("#q-2 input[value='1']").check()
    expect(page.locator("#saving")).to_have_text(arabic("All answers saved"))
    expect(page.locator("#answered")).to_have_text("2")
    check(page, "Arabic rater's story, answered")
    page.click("#finish")
    page.wait_for_selector("#completion-code")
    page.shot("done")
    check(page, "Arabic rater's done")
    expect(page.locator("main")).to_contain_text(arabic("Your answers are saved."))
    assert english_words(page.content()) == []


@pytest.fixture
def spanish(chromium):
    """A page of a browser that prefers Spanish (its Accept-Language is es-ES), 320 px wide."""
    context = chromium.new_context(locale="es-ES", viewport=PHONE)
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    yield pg
    context.close()


def spanish_text(msgid: str) -> str:
    """The Spanish catalogue's translation of ``msgid``."""
    with (TRANSLATIONS / "es" / "LC_MESSAGES" / "messages.po").open("rb") as file:
        return read_po(file).get(msgid).string


def test_a_writer_whose_browser_prefers_spanish_writes_a_story_in_accessible_spanish_pages(
    server, spanish
):
    spanish.goto(f"{server.url}/s/fake-ab?pid=es1")
    assert spanish.get_attribute("html", "lang") == "es" and direction(spanish) == "ltr"
    check(spanish, "Spanish consent")
    spanish.check("#consent")
    spanish.click("#start")
    spanish.wait_for_selector("#writing:not([hidden])")
    expect(spanish.locator("#connection")).to_have_text(spanish_text("Connected"))
    check(spanish, "Spanish writing")
    for n in (1, 2):
        spanish.fill("#line", f"Escribí yo misma la frase número {n} de mi cuento.")
        spanish.click("#line-submit")
        choose = spanish.locator("#choose-1")
        expect(choose).to_be_enabled()
        if n == 1:
            check(spanish, "Spanish choosing")
        choose.click()
        expect(choose).to_have_text(spanish_text("Chosen"))
        if n == 1:
            check(spanish, "Spanish editing")
        spanish.click("#edit-submit")
        if n == 1:
            spanish.wait_for_selector("#round-label:text-is('Ronda 2 de 2')")
    spanish.wait_for_selector("#survey:not([hidden])")
    check(spanish, "Spanish survey")
    spanish.click("#survey-submit")
    expect(spanish.locator("#survey-message")).not_to_be_empty()
    check(spanish, "Spanish survey, answers missing")
    for item in ("happy", "collaborative", "useful", "connected", "ideas"):
        spanish.check(f"input[name='{item}'][value='4']")
    spanish.click("#survey-submit")
    spanish.wait_for_selector("#completion-code")
    expect(spanish.locator("main")).to_contain_text(spanish_text("Your completion code is:"))
    check(spanish, "Spanish done")


def test_a_rater_rates_a_story_in_accessible_spanish_pages(server, spanish):
    spanish.goto(f"{server.url}/r/rating-es?pid=es-rater")
    assert spanish.get_attribute("html", "lang") == "es"
    expect(spanish.locator("#start")).to_have_text(spanish_text("Start reading"))
    check(spanish, "Spanish rater's consent")
    spanish.check("#consent")
    spanish.click("#start")
    spanish.wait_for_url("**/r/rating-es/rate")
    check(spanish, "Spanish rater's story")
    spanish.click("#finish")
    expect(spanish.locator("#error")).not_to_be_empty()
    check(spanish, "Spanish rater's story, questions left")
    spanish.locator("#q-1 input[value='4']").check()
    spanish.locator("#q-2 input[value='1']").check()
    expect(spanish.locator("#saving")).to_have_text(spanish_text("All answers saved"))
    check(spanish, "Spanish rater's story, answered")
    spanish.click("#finish")
    spanish.wait_for_selector("#completion-code")
    expect(spanish.locator("main")).to_contain_text(spanish_text("Your answers are saved."))
    check(spanish, "Spanish rater's done")
