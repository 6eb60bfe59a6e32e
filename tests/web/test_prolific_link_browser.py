"""In Chromium: the researcher copies an experiment's Prolific link with one click, whole,
with Prolific's placeholders (the Copy button puts it on the clipboard and leaves it
selected)."""

from __future__ import annotations

import pytest
from conftest import RESEARCHER_PASSWORD

from tests.web.test_research_browser import browser, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser

PROLIFIC = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def test_the_prolific_link_is_shown_whole_and_copied_with_one_click(server, browser):  # noqa: F811
    page = browser()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page.goto(server + "/research/experiments/fake-ab")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    # The Copy button's script is deferred: it listens once the page has been parsed.
    page.wait_for_url(f"{server}/research/experiments/fake-ab")
    page.wait_for_load_state("domcontentloaded")
    link = f"{server}/s/fake-ab{PROLIFIC}"
    assert page.input_value("#link-prolific") == link
    assert page.get_attribute("#link-prolific", "readonly") is not None
    page.click("button[data-copy=link-prolific]")
    page.wait_for_selector("[data-copied=link-prolific]:text-is('Copied.')")
    assert page.evaluate("navigator.clipboard.readText()") == link
    selected = page.evaluate(
        "(() => { const box = document.getElementById('link-prolific');"
        " return box.value.slice(box.selectionStart, box.selectionEnd); })()"
    )
    assert selected == link
