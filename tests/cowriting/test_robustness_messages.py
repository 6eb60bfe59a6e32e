"""Every message a writer's connection sends is answered: stored, or refused with a sentence.

Lone surrogates (half of an emoji, which a browser can send but no database can store), a
Likert answer of 4.0, missing, null or extra arguments, action types that are lists or
dicts, a document nested thousands deep, a paste over the old 64 KB message limit: none of
them may raise in a handler (which leaves the page waiting for an answer that never comes)
or log a traceback.
"""

from __future__ import annotations

import logging
import re

import pytest
import socketio
from conftest import SURVEY_ANSWERS, Writer, db_rows, write_setup

from tests.web.test_workers import EXPERIMENT, AppProcess, new_writer

LINE = "The lighthouse keeper found a letter."
HALF = "\ud83d"  # the first half of 😀 without its second half


@pytest.fixture
def app(make_app):
    return make_app(rounds=1)  # one round: the survey is one story away


def writer_at(app, phase: str) -> Writer:
    """A writer whose session is in ``phase`` (with slot 1 chosen when choosing)."""
    writer = Writer(app)
    if phase == "writing":
        return writer
    assert writer.act("line_submitted", {"text": LINE})["ok"]
    writer.wait_for("choosing")
    assert writer.act("suggestion_chosen", {"slot": 1})["ok"]
    if phase == "choosing":
        return writer
    assert writer.act("turn_submitted", {"text": "The letter was addressed to the sea."})["ok"]
    assert phase == "survey"
    return writer


def raw_event(writer: Writer, text: str):
    """Send an encoded Socket.IO event as it came off the wire (the test client can only
    send what Python can encode) and return its acknowledgement."""
    writer.io.socketio.server._handle_eio_message(writer.io.eio_sid, "2900" + text)
    ack, writer.io.acks = writer.io.acks, None
    return None if ack is None else ack["args"][0]


DEEP = "[" * 5000 + "]" * 5000

# (what is sent, the phase it is sent in, how: stored or refused)
CASES = {
    "a lone surrogate in a line": (
        "writing",
        lambda w: w.act("line_submitted", {"text": f"A line with half an emoji {HALF} in it."}),
        "stored",
    ),
    "a lone surrogate in a draft": (
        "choosing",
        lambda w: w.act("draft_saved", {"slot": 1, "text": f"My draft {HALF} so far."}),
        "stored",
    ),
    "a lone surrogate in a turn": (
        "choosing",
        lambda w: w.act("turn_submitted", {"text": f"The turn I add {HALF} to the story."}),
        "stored",
    ),
    "a lone surrogate in a survey answer": (
        "survey",
        lambda w: w.act(
            "survey_submitted", {"answers": {**SURVEY_ANSWERS, "why_chosen": f"It fit {HALF}."}}
        ),
        "stored",
    ),
    "a Likert answer of 4.0": (
        "survey",
        lambda w: w.act("survey_submitted", {"answers": {**SURVEY_ANSWERS, "happy": 4.0}}),
        "refused",
    ),
    "a Likert answer of '4'": (
        "survey",
        lambda w: w.act("survey_submitted", {"answers": {**SURVEY_ANSWERS, "happy": "4"}}),
        "refused",
    ),
    "a join without an argument": (
        "writing",
        lambda w: w.io.emit("join", callback=True),
        "refused",
    ),
    "a join with null": ("writing", lambda w: w.io.emit("join", None, callback=True), "refused"),
    "a join with an extra argument": (
        "writing",
        lambda w: w.io.emit("join", {"experiment": "fake-ab"}, "extra", callback=True),
        "refused",
    ),
    "a join naming an experiment with a lone surrogate": (
        "writing",
        lambda w: w.io.emit("join", {"experiment": f"fake{HALF}"}, callback=True),
        "refused",
    ),
    "an action without an argument": (
        "writing",
        lambda w: w.io.emit("action", callback=True),
        "refused",
    ),
    "an action with null": (
        "writing",
        lambda w: w.io.emit("action", None, callback=True),
        "refused",
    ),
    "an action with an extra argument": (
        "writing",
        lambda w: w.io.emit(
            "action", {"type": "line_submitted", "payload": {"text": LINE}}, 2, callback=True
        ),
        "refused",
    ),
    "an action type that is a list": (
        "writing",
        lambda w: w.io.emit("action", {"type": ["line_submitted"], "payload": {}}, callback=True),
        "refused",
    ),
    "an action type that is a dict": (
        "writing",
        lambda w: w.io.emit("action", {"type": {"a": 1}, "payload": {}}, callback=True),
        "refused",
    ),
    "an action id with a lone surrogate": (
        "writing",
        lambda w: w.act("line_submitted", {"text": LINE}, action_id=f"id-{HALF}"),
        "refused",
    ),
    "a payload that is a list": (
        "writing",
        lambda w: w.io.emit("action", {"type": "line_submitted", "payload": [LINE]}, callback=True),
        "refused",
    ),
    "an action nested 5,000 deep": (
        "writing",
        lambda w: raw_event(w, f'["action",{{"type":"line_submitted","payload":{DEEP}}}]'),
        "refused",
    ),
    "an action whose argument is nested 5,000 deep": (
        "writing",
        lambda w: raw_event(w, f'["action",{DEEP}]'),
        "refused",
    ),
}


def tracebacks(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


def is_sentence(text) -> bool:
    return isinstance(text, str) and re.fullmatch(r"[A-Z].*[.!]", text) is not None


@pytest.mark.parametrize("case", list(CASES))
def test_every_bad_input_is_answered_with_its_outcome_and_no_traceback(app, caplog, case):
    phase, send, outcome = CASES[case]
    writer = writer_at(app, phase)
    caplog.clear()
    caplog.set_level(logging.INFO)
    ack = send(writer)
    assert isinstance(ack, dict) and isinstance(ack.get("ok"), bool), ack
    if outcome == "stored":
        assert ack["ok"], ack
    else:
        assert not ack["ok"] and is_sentence(ack["error"]), ack
    assert tracebacks(caplog) == []
    writer.runner.wait_idle(10)
    # Nothing half-stored: every stored text is plain UTF-8, and the session goes on.
    for row in db_rows(app.config["DATABASE"], "SELECT payload FROM events"):
        row["payload"].encode("utf-8")
    assert writer.state()["phase"] in ("writing", "suggesting", "choosing", "survey", "done")


def test_a_lone_surrogate_is_left_out_of_the_stored_text(app):
    writer = writer_at(app, "writing")
    assert writer.act("line_submitted", {"text": f"Half an emoji {HALF}is gone now."})["ok"]
    (row,) = db_rows(app.config["DATABASE"], "SELECT writer_line FROM rounds")
    assert row["writer_line"] == "Half an emoji is gone now."


# A paste longer than the old 64 KB message limit, against a real server.


@pytest.fixture
def server(tmp_path):
    config = write_setup(tmp_path)
    worker = AppProcess(tmp_path, config, "", "solo")
    try:
        worker.wait_ready()
        yield worker, config["DATABASE"]
    finally:
        worker.stop()


@pytest.mark.parametrize("transport", ["websocket", "polling"])
def test_a_paste_over_64_kb_is_refused_with_a_sentence_and_the_connection_stays(server, transport):
    worker, database = server
    io = socketio.Client(http_session=new_writer(worker), reconnection=False)
    io.connect(worker.url, wait_timeout=10, transports=[transport])
    try:
        assert io.call("join", {"experiment": EXPERIMENT}, timeout=10)["ok"]
        paste = "A very long paste. " * 5000  # 95,000 characters
        ack = io.call("action", {"type": "line_submitted", "payload": {"text": paste}}, timeout=10)
        assert ack["ok"] is False
        assert ack["error"] == "Too long — at most 260 characters."
        assert io.connected
        ack = io.call("action", {"type": "line_submitted", "payload": {"text": LINE}}, timeout=10)
        assert ack["ok"], ack
    finally:
        io.disconnect()
    lines = db_rows(database, "SELECT writer_line FROM rounds")
    assert [r["writer_line"] for r in lines] == [LINE]
