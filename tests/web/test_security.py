"""Writers cannot reach each other's stories; identifiers cannot be guessed or forged."""

import re

from conftest import Writer

from cyoa.web.participants import new_completion_code, new_token
from cyoa.web.realtime import socketio


def test_session_ids_and_completion_codes_are_long_random_values():
    tokens = {new_token() for _ in range(1000)}
    codes = {new_completion_code() for _ in range(1000)}
    assert len(tokens) == len(codes) == 1000
    assert all(len(t) >= 22 for t in tokens)  # 16 random bytes, URL-safe base64
    assert all(re.fullmatch(r"[A-Z2-9]{4}-[A-Z2-9]{4}-[A-Z2-9]{4}", c) for c in codes)


def test_a_writer_only_ever_acts_on_the_session_in_their_own_signed_cookie(app):
    alice = Writer(app)
    bob = Writer(app)
    bob.act("line_submitted", {"text": "Bob's line, and only Bob's line."})
    # A payload naming Alice's session is ignored: the session comes from the cookie.
    ack = bob.io.emit(
        "action",
        {
            "type": "line_submitted",
            "payload": {"text": "Sneaking into Alice's story now."},
            "session_id": alice.session_id,
        },
        callback=True,
    )
    assert not ack["ok"]
    assert alice.state()["story"] == []


def test_a_tampered_cookie_gets_no_session(app):
    alice = Writer(app)
    mallory = app.test_client()
    cookie = alice.http.get_cookie("session")
    mallory.set_cookie("session", cookie.value[:-2] + "xx")
    io = socketio.test_client(app, flask_test_client=mallory)
    assert not io.emit("join", {"experiment": "fake-ab"}, callback=True)["ok"]
    assert mallory.get("/s/fake-ab/write").status_code == 302


def test_text_is_stored_exactly_as_typed_apart_from_normalisation(writer):
    typed = "Ünïcödé — “quotes”, emoji 🐉, and <b>tags</b> stay as typed."
    assert writer.act("line_submitted", {"text": typed})["ok"]
    assert writer.state()["story"][0]["text"] == typed


def test_a_huge_draft_is_refused_and_the_stored_draft_kept(writer):
    writer.act("line_submitted", {"text": "A line before the huge draft arrives."})
    writer.wait_for("choosing")
    writer.act("suggestion_chosen", {"slot": 1})
    writer.act("draft_saved", {"slot": 1, "text": "A sensible draft."})
    ack = writer.act("draft_saved", {"slot": 1, "text": "x" * 10_000})
    assert not ack["ok"] and "too long" in ack["error"]
    assert writer.state()["current"]["drafts"]["1"] == "A sensible draft."
