"""End-to-end: a real headless Chromium (Debian's, driven by Playwright) writes a whole story
against the real server process. Screenshots of each step land in test-artifacts/ on failure."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import db_rows, write_setup
from playwright.sync_api import expect

from cyoa.cowriting.flow import DRAFT_MAX_CHARS
from cyoa.cowriting.spec import OPEN_ANSWER_MAX_CHARS
from tests.paths import ROOT

pytestmark = pytest.mark.browser

ARTIFACTS = ROOT / "test-artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The app as `python app.py` runs it, in its own process, with fake models (each waiting
    ``delays`` seconds before each word); it can be killed (SIGKILL) and started again on the
    same port and database. It tags new sentences in the background (a process per run,
    loading spaCy) only when ``tags`` is on: few tests read the tags, and the runs would only
    compete with the test for the CPU."""

    def __init__(
        self,
        root: Path,
        rounds: int = 5,
        delays: tuple[float, float] = (0.02, 0.02),
        tags: bool = False,
    ):
        config = write_setup(
            root,
            rounds=rounds,
            options_a=f"delay_seconds = {delays[0]}",
            options_b=f"delay_seconds = {delays[1]}",
        )
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.db = config["DATABASE"]
        self.env = {
            **os.environ,
            "CYOA_PORT": str(self.port),
            "CYOA_DATABASE": config["DATABASE"],
            "CYOA_MODELS_DIR": config["MODELS_DIR"],
            "CYOA_EXPERIMENTS_DIR": config["EXPERIMENTS_DIR"],
            "CYOA_MODEL_CACHE": config["MODEL_CACHE"],
            "CYOA_SECRET_KEY": "browser-test",
            "CYOA_TAG_SENTENCES": "true" if tags else "false",
            "CYOA_TAG_DELAY_SECONDS": "1",  # soon after each turn
            # As in the in-process tests (write_setup): a page test's intervals need not be
            # precise, and the default 1,000 replicates keep a dashboard busy for seconds.
            "CYOA_RATING_BOOTSTRAP": str(config["RATING_BOOTSTRAP"]),
        }
        self.proc: subprocess.Popen | None = None
        self.log = open(root / "server.log", "a")  # noqa: SIM115 - closed in stop()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "app.py"], cwd=ROOT, env=self.env, stdout=self.log, stderr=self.log
        )
        # Waits for the port to answer; the bound is for a start that hangs, and is generous
        # because a start on a busy machine can take several times its 5 s on a quiet one.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    break  # it exited: no use waiting
                time.sleep(0.1)
        self.proc.kill()
        pytest.fail("the server did not start: " + (self.root / "server.log").read_text())

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as in a crash or an out-of-memory kill."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        self.log.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the file's tests that leave it running as it is: each writes a story of
    its own, under its own participant id, and reads back only its own session's rows
    (:func:`session_of`), so they can share it (a start takes seconds). None of them reads
    the sentence tags, so it tags nothing: a tagging run (a process of its own) left over from
    one test would only slow the next."""
    srv = Server(tmp_path_factory.mktemp("browser"))
    srv.env["CYOA_START_BURST"] = "1000"  # every test's writers start from this one address
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def own_server(tmp_path):
    """A server of the test's own, for a test that kills it or restarts it with other
    settings."""
    srv = Server(tmp_path)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def tagging_server(tmp_path):
    """A server of the test's own that tags each new sentence in the background."""
    srv = Server(tmp_path, tags=True)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def short_server(tmp_path):
    """A server whose stories have one round, for the survey."""
    srv = Server(tmp_path, rounds=1)
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def page(request, chromium):
    """A page in a fresh browser context of the file's Chromium; its steps' screenshots are
    saved in test-artifacts/ when the test failed."""
    context = chromium.new_context()
    pg = context.new_page()
    pg.set_default_timeout(20_000)
    pg.steps = []

    def shot(name: str) -> None:
        pg.steps.append((name, pg.screenshot(full_page=True)))

    pg.shot = shot
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        folder = ARTIFACTS / request.node.name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for i, (name, png) in enumerate(pg.steps):
            (folder / f"{i:02d}-{name}.png").write_bytes(png)
        (folder / "final.png").write_bytes(pg.screenshot(full_page=True))
    context.close()


def session_of(server: Server, pid: str) -> str:
    """The id of the session of the writer whose participant id is ``pid``."""
    [row] = db_rows(
        server.db,
        "SELECT sessions.id FROM sessions JOIN participants"
        " ON participants.id = sessions.participant_id"
        f" WHERE participants.external_id = '{pid}'",
    )
    return row["id"]


def start_story(page, server: Server, pid: str) -> None:
    page.goto(f"{server.url}/s/fake-ab?pid={pid}")
    page.check("#consent")
    page.click("#start")
    page.wait_for_selector("#writing:not([hidden])")


def write_line(page, text: str) -> None:
    page.fill("#line", text)
    page.click("#line-submit")


def choose_and_add(page, slot: int, edit: str) -> None:
    page.wait_for_selector(f"#choose-{slot}")
    if page.inner_text(f"#choose-{slot}") != "Chosen":
        page.wait_for_selector(f"#choose-{slot}:not([disabled])")
        page.click(f"#choose-{slot}")
    page.wait_for_selector("#editing:not([hidden])")
    page.fill("#edit", edit)
    page.click("#edit-submit")


def test_a_writer_writes_a_whole_story_in_the_browser(tagging_server, page):
    page.goto(tagging_server.url + "/s/fake-ab?PROLIFIC_PID=browser1")
    page.shot("consent")
    page.click("#start")
    assert "Please tick the box" in page.content()
    page.check("#consent")
    page.click("#start")
    page.wait_for_selector("#writing:not([hidden])")
    page.shot("first-turn")

    # The live counter and the friendly length message.
    page.fill("#line", "Too short")
    assert page.inner_text("#line-message") == "Too short — at least 20 characters."
    assert page.is_disabled("#line-submit")
    assert page.inner_text("#line-counter") == "9 / 260"

    for n in range(1, 6):
        write_line(page, f"My own sentence number {n} in the story.")
        page.wait_for_selector("#suggestion-1 .text")
        page.shot(f"round-{n}-suggestions")
        if n == 2:
            # Choose one, edit, switch to the other and back: each keeps its own draft.
            page.wait_for_selector("#choose-1:not([disabled])")
            page.click("#choose-1")
            page.fill("#edit", "A draft of the first suggestion.")
            page.click("#choose-2")
            page.wait_for_selector("#choose-1:not([disabled])")
            assert page.input_value("#edit") != "A draft of the first suggestion."
            page.click("#choose-1")
            page.wait_for_selector("#choose-2:not([disabled])")
            assert page.input_value("#edit") == "A draft of the first suggestion."
        if n == 3:
            # Reload in the middle of a round: the story and suggestions come back.
            page.wait_for_selector("#choose-2:not([disabled])")
            page.click("#choose-2")
            page.fill("#edit", "Half edited before the reload happened.")
            page.wait_for_selector("#draft-status:text-is('Draft saved')")
            page.reload()
            page.wait_for_selector("#editing:not([hidden])")
            assert page.input_value("#edit") == "Half edited before the reload happened."
            page.shot("after-reload")
        choose_and_add(page, 1 + n % 2, f"The edited suggestion of round {n}.")
        if n < 5:
            page.wait_for_selector("#writing:not([hidden])")
            assert page.inner_text("#round-label") == f"Round {n + 1} of 5"

    page.wait_for_selector("#survey:not([hidden])")
    story = page.inner_text("#story")
    assert "My own sentence number 1 in the story." in story
    assert "The edited suggestion of round 5." in story
    page.shot("survey")
    for i, item in enumerate(["happy", "collaborative", "useful", "connected", "ideas"]):
        page.check(f"input[name='{item}'][value='{1 + i}']")
    page.fill("#q-why_chosen", "It <b>fit</b> the story.")
    page.click("#survey-submit")
    page.wait_for_selector("#completion-code")
    page.shot("done")
    code = page.inner_text("#completion-code")
    assert len(code) == 14
    link = page.get_attribute("#completion-link", "href")
    assert link == f"https://example.org/complete?cc={code}"

    # The same participant link later goes straight back to the finished story.
    page.goto(tagging_server.url + "/s/fake-ab?PROLIFIC_PID=browser1")
    page.wait_for_selector("#completion-code")

    # Meanwhile the server has tagged the story's sentences for the text metrics.
    deadline = time.monotonic() + 120
    tagged: set[str] = set()
    while time.monotonic() < deadline and "My own sentence number 5 in the story." not in tagged:
        time.sleep(0.5)
        tagged = {
            row["sentence"] for row in db_rows(tagging_server.db, "SELECT * FROM sentence_tags")
        }
    assert {f"My own sentence number {n} in the story." for n in range(1, 6)} <= tagged


def test_the_server_killed_mid_story_comes_back_and_the_page_continues(own_server, page):
    page.goto(own_server.url + "/s/fake-ab?pid=crash1")
    page.check("#consent")
    page.click("#start")
    page.wait_for_selector("#writing:not([hidden])")
    write_line(page, "Before the crash the story began well.")
    choose_and_add(page, 1, "The first kept sentence before the crash.")
    page.wait_for_selector("#writing:not([hidden])")
    write_line(page, "Then the writer wrote a second line.")
    page.wait_for_selector("#choose-2:not([disabled])")
    page.click("#choose-2")
    page.fill("#edit", "A draft typed just before the server died.")
    page.wait_for_selector("#draft-status:text-is('Draft saved')")

    own_server.kill()
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    page.shot("server-down")
    own_server.start()
    page.wait_for_selector("#connection:text-is('Connected')", timeout=30_000)
    page.shot("reconnected")
    assert page.input_value("#edit") == "A draft typed just before the server died."
    page.click("#edit-submit")
    page.wait_for_selector("#writing:not([hidden])")
    assert page.inner_text("#round-label") == "Round 3 of 5"

    turns = db_rows(
        own_server.db, "SELECT round, writer_line, final_text FROM rounds ORDER BY round"
    )
    assert [(t["round"], t["final_text"]) for t in turns] == [
        (1, "The first kept sentence before the crash."),
        (2, "A draft typed just before the server died."),
        (3, None),
    ]
    lines = db_rows(own_server.db, "SELECT count(*) AS n FROM events WHERE type = 'line_submitted'")
    assert lines[0]["n"] == 2


def test_what_a_writer_types_is_shown_as_text_never_run(server, page):
    page.goto(server.url + "/s/fake-ab")
    page.check("#consent")
    page.click("#start")
    page.wait_for_selector("#writing:not([hidden])")
    attack = '<img src=x onerror="document.title=1">"><script>document.title=2</script>'
    write_line(page, attack)
    page.wait_for_selector("#suggestion-1 .text")
    assert attack in page.inner_text("#story")
    assert page.locator("#story img, #story script").count() == 0
    assert page.title() == "A test study"


OFFLINE = (
    "The connection is lost. What you did is kept and will be sent as soon as the connection"
    " is back; please keep this page open."
)
DRAFT_TOO_LONG = "Too long to save: your text is kept in this browser until you shorten it."


RECORD_FRAME = re.compile(r'42\d*\["record"')


class Traffic:
    """What the page sends: its Socket.IO connections and every frame sent on them."""

    def __init__(self, page):
        self.connections = 0
        self.frames: list[str] = []
        page.on("websocket", self._opened)

    def _opened(self, ws) -> None:
        self.connections += 1
        ws.on("framesent", lambda payload: self.frames.append(str(payload)))


def events(server: Server, pid: str, kind: str) -> list[dict]:
    """The events of type ``kind`` in the session of participant ``pid``."""
    return db_rows(
        server.db,
        "SELECT payload, client_action_id FROM events"
        f" WHERE session_id = '{session_of(server, pid)}' AND type = '{kind}'",
    )


def test_a_sentence_added_while_the_server_is_down_is_sent_once_it_is_back(own_server, page):
    start_story(page, own_server, "offline1")
    own_server.kill()
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    write_line(page, "Written while the server was down.")
    expect(page.locator("#notice")).to_have_text(OFFLINE)
    expect(page.locator("#line-submit")).to_be_disabled()
    page.shot("click-while-down")

    own_server.start()
    page.wait_for_selector("#suggesting:not([hidden])", timeout=30_000)
    expect(page.locator("#notice")).to_be_hidden()
    choose_and_add(page, 1, "The suggestion kept after the restart.")
    page.wait_for_selector("#round-label:text-is('Round 2 of 5')")
    [line] = events(own_server, "offline1", "line_submitted")
    assert "Written while the server was down." in line["payload"]


def test_an_action_whose_reply_was_lost_is_sent_again_and_recorded_once(server, page):
    # The connection drops after the server recorded the sentence but before its reply
    # reached the page: the page sends the same action again after it has joined.
    lost: dict[str, str | bool] = {"done": False}

    def route(ws) -> None:
        upstream = ws.connect_to_server()

        def from_page(message) -> None:
            sent = re.match(r'42(\d+)\["action",.*"line_submitted"', str(message))
            if sent and not lost["done"]:
                lost["ack"] = f"43{sent.group(1)}["
            upstream.send(message)

        def from_server(message) -> None:
            if not lost["done"] and "ack" in lost and str(message).startswith(lost["ack"]):
                lost["done"] = True
                ws.close()
                upstream.close()
                return
            ws.send(message)

        ws.on_message(from_page)
        upstream.on_message(from_server)

    page.route_web_socket(re.compile(r"/socket\.io/"), route)
    start_story(page, server, "lostreply1")
    write_line(page, "A sentence whose reply was lost.")
    page.wait_for_selector("#suggesting:not([hidden])")
    page.wait_for_selector("#choose-1:not([disabled])")
    assert lost["done"]
    expect(page.locator("#notice")).to_be_hidden()
    [line] = events(server, "lostreply1", "line_submitted")
    assert "A sentence whose reply was lost." in line["payload"]


def test_a_click_queued_while_the_server_is_down_is_answered_when_the_story_is_gone(
    own_server, page
):
    start_story(page, own_server, "gone1")
    own_server.kill()
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    write_line(page, "Written for a story the server forgot.")
    expect(page.locator("#notice")).to_have_text(OFFLINE)
    # A new secret key: the browser's cookie no longer names a story.
    own_server.env["CYOA_SECRET_KEY"] = "another-key"
    own_server.start()
    expect(page.locator("#notice")).to_have_text(
        "No story found for this browser. Please open your link.", timeout=30_000
    )
    expect(page.locator("#line-submit")).to_be_enabled()
    assert page.input_value("#line") == "Written for a story the server forgot."
    assert events(own_server, "gone1", "line_submitted") == []


def finish_the_round(page) -> None:
    write_line(page, "The only sentence of a short story.")
    choose_and_add(page, 1, "The only suggestion of a short story.")
    page.wait_for_selector("#survey:not([hidden])")


def test_an_error_shown_to_the_writer_stays_after_a_reconnect(short_server, page):
    start_story(page, short_server, "errorstays1")
    finish_the_round(page)
    page.click("#survey-submit")
    missing = "Please answer every statement (missing: “I'm happy with my final story.”)."
    expect(page.locator("#notice")).to_have_text(missing)

    short_server.kill()
    page.wait_for_selector("#connection:text-is('Reconnecting… your text is kept')")
    short_server.start()
    page.wait_for_selector("#connection:text-is('Connected')", timeout=30_000)
    expect(page.locator("#notice")).to_have_text(missing)
    expect(page.locator("#survey-message")).to_have_text(missing)


def test_a_huge_paste_is_cut_to_what_a_box_takes_and_never_sent_whole(server, page):
    traffic = Traffic(page)
    start_story(page, server, "paste1")
    novel = "A pasted novel goes on. " * 4000  # 96,000 characters, over 64 KB
    page.fill("#line", novel)
    expect(page.locator("#line-message")).to_have_text("Too long — at most 260 characters.")
    expect(page.locator("#line-submit")).to_be_disabled()
    write_line(page, "A line of a sensible length.")
    page.wait_for_selector("#choose-1:not([disabled])")
    page.click("#choose-1")

    page.fill("#edit", novel)
    expect(page.locator("#edit-message")).to_have_text("Too long — at most 260 characters.")
    expect(page.locator("#draft-status")).to_have_text(DRAFT_TOO_LONG)
    expect(page.locator("#edit-submit")).to_be_disabled()
    # Within the limit once trimmed; the box keeps only as many blanks as a draft may hold.
    page.fill("#edit", "A short turn with a long tail of blanks." + " " * 70_000)
    assert len(page.input_value("#edit")) == DRAFT_MAX_CHARS
    page.click("#edit-submit")
    page.wait_for_selector("#round-label:text-is('Round 2 of 5')", timeout=5_000)

    assert page.inner_text("#connection") == "Connected"
    assert traffic.connections == 1  # the connection never dropped
    # The actions stay small; the keystroke record carries each change of a box, so at most
    # what a box takes (twice, where a change replaces a full box), never the novel whole.
    record = [f for f in traffic.frames if RECORD_FRAME.match(f)]
    actions = [f for f in traffic.frames if not RECORD_FRAME.match(f)]
    assert record and max(len(frame) for frame in actions) < 2_000
    assert max(len(frame) for frame in record) < 4 * DRAFT_MAX_CHARS < len(novel)
    session = session_of(server, "paste1")
    turns = db_rows(
        server.db, f"SELECT final_text FROM rounds WHERE session_id = '{session}' AND round = 1"
    )
    assert turns == [{"final_text": "A short turn with a long tail of blanks."}]
    assert all(
        len(d["payload"]) < DRAFT_MAX_CHARS + 100 for d in events(server, "paste1", "draft_saved")
    )


def test_one_unbroken_100_kb_line_pasted_is_cut_at_once_and_the_writer_told(server, page):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    start_story(page, server, "paste2")
    page.evaluate("text => navigator.clipboard.writeText(text)", "x" * 100_000)
    page.focus("#line")
    began = time.monotonic()
    page.keyboard.press("Control+V")
    # Reading the box's size makes the page lay it out: this waits out any freeze.
    page.evaluate("document.getElementById('line').getBoundingClientRect().height")
    took = time.monotonic() - began
    expect(page.locator("#notice")).to_have_text(
        f"What you pasted was cut: a box here takes at most {DRAFT_MAX_CHARS:,} characters."
    )
    assert len(page.input_value("#line")) == DRAFT_MAX_CHARS
    expect(page.locator("#line-message")).to_have_text("Too long — at most 260 characters.")
    assert took < 2, f"the page took {took:.1f} s to take the paste"


def test_a_survey_answer_over_the_limit_is_refused_before_sending(short_server, page):
    traffic = Traffic(page)
    start_story(page, short_server, "longanswer1")
    finish_the_round(page)
    for item in ["happy", "collaborative", "useful", "connected", "ideas"]:
        page.check(f"input[name='{item}'][value='4']")
    page.fill("#q-why_chosen", "Because. " * 8000)  # 72,000 characters
    page.click("#survey-submit")
    too_long = f"Please keep each answer under {OPEN_ANSWER_MAX_CHARS:,} characters."
    expect(page.locator("#survey-message")).to_have_text(too_long)
    assert not [frame for frame in traffic.frames if "survey_submitted" in frame]

    page.fill("#q-why_chosen", "It fit the story.")
    page.click("#survey-submit")
    page.wait_for_selector("#completion-code", timeout=5_000)
    assert traffic.connections == 1
    [answer] = db_rows(
        short_server.db, "SELECT text FROM survey_answers WHERE item_id = 'why_chosen'"
    )
    assert answer["text"] == "It fit the story."
