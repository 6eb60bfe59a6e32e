"""End-to-end in Chromium: a researcher watches the dashboard while a writer (in another
browser context) writes; the dashboard updates without a reload, and its charts load under
the Content-Security-Policy. Screenshots land in test-artifacts/ on failure."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from conftest import RESEARCHER_PASSWORD, write_setup

from cyoa import store
from cyoa.web.auth import create_researcher
from tests.paths import ROOT

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """``python app.py`` with fake models, and a researcher account in its database; one for
    the file (a start takes seconds). No test stops it or changes its settings, and only the
    dashboard's test starts a story: the other only asks the new-experiment form for more
    rows, which creates nothing."""
    tmp_path = tmp_path_factory.mktemp("research-browser")
    config = write_setup(tmp_path, options_a="delay_seconds = 0.02")
    db = store.connect(config["DATABASE"])
    store.init_db(db)
    create_researcher(db, "alice", RESEARCHER_PASSWORD)
    db.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "CYOA_PORT": str(port),
        "CYOA_DATABASE": config["DATABASE"],
        "CYOA_MODELS_DIR": config["MODELS_DIR"],
        "CYOA_EXPERIMENTS_DIR": config["EXPERIMENTS_DIR"],
        "CYOA_MODEL_CACHE": config["MODEL_CACHE"],
        "CYOA_SECRET_KEY": "research-browser-test",
    }
    log = open(tmp_path / "server.log", "w")  # noqa: SIM115 - closed in the teardown below
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + 120  # as Server.start: a busy machine's start is slow
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("the server did not start: " + (tmp_path / "server.log").read_text())
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


@pytest.fixture
def browser(request, chromium):
    """Opens pages, each in a fresh context of the file's Chromium; their screenshots are
    saved in test-artifacts/ when the test failed."""
    contexts = []

    def new_page():
        contexts.append(chromium.new_context())
        page = contexts[-1].new_page()
        page.set_default_timeout(20_000)
        return page

    yield new_page
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        folder = ARTIFACTS / request.node.name
        folder.mkdir(parents=True, exist_ok=True)
        for i, context in enumerate(contexts):
            context.pages[0].screenshot(path=str(folder / f"page{i}.png"), full_page=True)
    for context in contexts:
        context.close()


def write_round(page, line: str, edit: str) -> None:
    page.fill("#line", line)
    page.click("#line-submit")
    page.wait_for_selector("#choose-1:not([disabled])")
    page.click("#choose-1")
    page.wait_for_selector("#editing:not([hidden])")
    page.fill("#edit", edit)
    page.click("#edit-submit")


def test_the_dashboard_updates_live_while_a_writer_writes(server, browser):
    page = browser()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server + "/research/experiments/fake-ab")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#connection:text-is('live')")
    assert page.inner_text("[data-progress=started]") == "0"

    writer = browser()
    writer.goto(server + "/s/fake-ab?pid=live1")
    writer.check("#consent")
    writer.click("#start")
    write_round(
        writer, "A <b>bold</b> first sentence of the story.", "The edited suggestion of round one."
    )
    writer.wait_for_selector("#writing:not([hidden])")

    page.wait_for_selector("[data-progress=rounds_submitted]:text-is('1')")
    assert page.inner_text("[data-progress=started]") == "1"
    # The results are the stored analysis: the table appears when the newer one, computed in
    # the background, lands (the event), however busy the machine is.
    page.wait_for_selector(".result-table h3:has-text('Preference')", timeout=300_000)
    loaded = "imgs => imgs.every(i => i.complete && i.naturalWidth > 0)"
    deadline = time.monotonic() + 20
    while not page.eval_on_selector_all("img.chart", loaded):
        assert time.monotonic() < deadline, "the charts did not load"
        time.sleep(0.1)

    page.click("#writers-body a:text-is('live1')")  # the writers list is live too
    page.wait_for_selector("#replay-position:text-is('Turn 1 of 1')")
    assert "A <b>bold</b> first sentence of the story." in page.inner_text("#round-1")
    assert not [e for e in errors if "Content Security Policy" in e], errors


def test_the_new_experiment_form_fits_1280_pixels_and_shows_the_card_defaults(server, browser):
    page = browser()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(server + "/research/experiments/new")
    page.fill("input[name=name]", "alice")
    page.fill("input[name=password]", RESEARCHER_PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/research/experiments/new")
    # Every column is inside the visible part of the table's scrolling box.
    shown = page.locator("table.systems").locator("xpath=..").bounding_box()
    for key in ("name", "model", "top_k", "top_p", "temperature", "max_new_tokens"):
        box = page.locator(f"[name=system1_{key}]").bounding_box()
        assert box is not None and box["width"] > 20, key
        assert shown["x"] <= box["x"] and box["x"] + box["width"] <= shown["x"] + shown["width"]
    page.select_option("[name=system1_model]", "fake-a")
    assert page.get_attribute("[name=system1_top_k]", "placeholder") == "40"
    page.fill("[name=system2_name]", "typed before more rows")
    page.click("button[value=more_rows]")
    assert page.input_value("[name=system2_name]") == "typed before more rows"
    assert page.locator("[name=system6_name]").count() == 1
