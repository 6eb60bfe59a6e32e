"""Fuzz: random sequences of writer events and hostile payloads against the Socket.IO server.

Every event must be answered with a well-formed acknowledgement (never a server error, never
a traceback in the server's log), and after every sequence the session must be consistent:
the state the browser is sent equals the state replayed from the stored events, and the
researcher tables agree with the events. Besides the page's own actions the fuzzer sends
lone surrogates, Likert answers that are not integers, events with no argument or two,
events nested thousands deep, and batches of the keystroke record, well formed or not.
"""

from __future__ import annotations

import json
import logging
from typing import NamedTuple

import pytest
from conftest import Writer, write_setup
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cyoa import create_app, store
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.flow import Event, replay
from cyoa.cowriting.service import client_view

TOTALS = {"events": 0, "sequences": 0}


@pytest.fixture(scope="module", autouse=True)
def fuzz_report():
    """Report how much was sent, in the test output (the issue asks for the count)."""
    yield
    if TOTALS["sequences"]:
        print(
            f"\nfuzz: {TOTALS['events']} Socket.IO events in {TOTALS['sequences']} sessions, "
            "0 server errors, 0 inconsistent sessions"
        )


@pytest.fixture
def app(tmp_path):
    """The test app, with rate limits far above what the fuzzer sends: it explores the
    rules (the limits have their own tests, test_robustness_flood.py)."""
    limits = {"MESSAGES_PER_SECOND": 1e6, "MESSAGE_BURST": 1e6}
    return create_app({**write_setup(tmp_path), **limits, "DRAFTS_PER_SECOND": 1e6})


json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)
texts = st.one_of(
    st.text(max_size=300),
    st.sampled_from(
        [
            "A perfectly ordinary sentence for the story.",
            "<script>alert(1)</script> and some more text.",
            "x" * 261,
            "",
            "\x00\x01\u202e" * 10,
            "Half an emoji \ud83d and the rest of the line.",
            "\udfff" * 30,
        ]
    ),
)
slots = st.one_of(st.sampled_from([1, 2]), json_scalars)
likert = st.dictionaries(
    st.sampled_from(
        [
            "happy",
            "collaborative",
            "useful",
            "connected",
            "ideas",
            "why_chosen",
            "looking_for",
            "bogus",
        ]
    ),
    st.one_of(
        st.integers(0, 6),
        st.text(max_size=20),
        st.sampled_from([4.0, 1.5, True, None, [4], "\ud800"]),
    ),
    max_size=8,
)
actions = st.one_of(
    st.builds(lambda t: {"type": "line_submitted", "payload": {"text": t}}, texts),
    st.builds(lambda s: {"type": "suggestion_chosen", "payload": {"slot": s}}, slots),
    st.builds(
        lambda s, t: {"type": "draft_saved", "payload": {"slot": s, "text": t}}, slots, texts
    ),
    st.builds(lambda t: {"type": "turn_submitted", "payload": {"text": t}}, texts),
    st.builds(lambda a: {"type": "survey_submitted", "payload": {"answers": a}}, likert),
    st.just({"type": "suggestions_retried", "payload": {}}),
    st.builds(  # an action naming its round, as the page does: right, stale or nonsense
        lambda kind, text, meant: {
            "type": kind,
            "payload": {"slot": 1, "text": text, "round": meant},
        },
        st.sampled_from(["line_submitted", "suggestion_chosen", "draft_saved", "turn_submitted"]),
        texts,
        st.one_of(st.integers(0, 6), json_scalars),
    ),
    st.builds(
        lambda t, p: {"type": t, "payload": p},
        st.sampled_from(["suggestion_completed", "suggestion_failed", "session_started", "x"]),
        json_values,
    ),
    json_values,
)
action_ids = st.one_of(st.none(), st.text(max_size=80), st.sampled_from(["same", "same"]))
DEEP = "[" * 3000 + "]" * 3000


class Encoded(NamedTuple):
    """A message no page sends, as it comes off the wire: the event and its arguments as
    encoded JSON (the test client cannot encode a document nested thousands deep)."""

    event: str
    arguments: str


class Recorded(NamedTuple):
    """A ``record`` message: a batch of the keystroke record as the page sends it, or not."""

    operations: object


wire_rows = st.builds(
    lambda seq, r, box, slot, position, deleted, inserted, source: [
        seq, r, 1_700_000_000_000, "text", box, slot, position, deleted, inserted, source,
    ],
    st.integers(-1, 6), st.integers(0, 3), st.sampled_from(["line", "edit", None]),
    st.one_of(st.none(), st.sampled_from([1, 2, True])), st.integers(-1, 60), texts, texts,
    st.sampled_from(["typed", "pasted", "undo", "visible", "keyboard"]),
)  # fmt: skip
records = st.builds(
    Recorded,
    st.one_of(
        st.lists(st.one_of(wire_rows, st.lists(json_scalars, max_size=11)), max_size=4), json_values
    ),
)
odd_messages = st.sampled_from(
    [
        Encoded("action", ""),
        Encoded("action", ',{"type":"line_submitted","payload":{}},"extra"'),
        Encoded("action", ",null"),
        Encoded("action", f",{DEEP}"),
        Encoded("action", f',{{"type":"draft_saved","payload":{{"slot":1,"text":{DEEP}}}}}'),
        Encoded("action", f',{{"type":{DEEP},"payload":{{}}}}'),
        Encoded("join", ""),
        Encoded("join", ',{"experiment":"fake-ab"},1'),
        Encoded("join", f",{DEEP}"),
        Encoded("record", ""),
        Encoded("record", ",null"),
        Encoded("record", f',{{"operations":{DEEP}}}'),
        Encoded("record", ',{"operations":[' + ",".join(["[1]"] * 201) + "]}"),
    ]
)


def send_encoded(writer: Writer, message: Encoded):
    """Send an encoded message and return its acknowledgement (None if none)."""
    text = f'2900["{message.event}"{message.arguments}]'
    writer.io.socketio.server._handle_eio_message(writer.io.eio_sid, text)
    ack, writer.io.acks = writer.io.acks, None
    return None if ack is None else ack["args"][0]


def check_consistent(app, writer: Writer) -> None:
    study = writer.study
    row, state = study.state(writer.session_id)
    db = store.connect(app.config["DATABASE"])
    try:
        events = cowriting_store.load_events(db, writer.session_id)
        rounds = list(db.query("SELECT * FROM rounds WHERE session_id = ?", [writer.session_id]))
    finally:
        db.close()
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    exp = study.experiments[row["experiment_id"]]
    replayed = replay(exp.limits, [Event(e["type"], e["payload"]) for e in events])
    assert replayed == state
    view = writer.state()
    expected = client_view(exp, row, state)
    assert (view["phase"], view["round"], view["story"]) == (
        expected["phase"],
        expected["round"],
        expected["story"],
    )
    finished = [r for r in rounds if r["final_text"] is not None]
    assert len(finished) == sum(1 for e in events if e["type"] == "turn_submitted")
    assert row["phase"] == state.phase.value
    for r in finished:
        assert exp.limits.min_chars <= len(r["final_text"]) <= exp.limits.max_chars


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    sequence=st.lists(
        st.one_of(st.tuples(actions, action_ids), odd_messages, records), min_size=10, max_size=40
    )
)
def test_random_event_sequences_never_break_the_server_or_a_session(app, caplog, sequence):
    caplog.clear()
    caplog.set_level(logging.INFO)
    writer = Writer(app)
    for message in sequence:
        if isinstance(message, Encoded):
            ack = send_encoded(writer, message)
            data = None
        elif isinstance(message, Recorded):
            ack = writer.io.emit("record", {"operations": message.operations}, callback=True)
            data = None
        else:
            data, action_id = message
            if isinstance(data, dict) and action_id is not None:
                data = {**data, "action_id": action_id}
            ack = writer.io.emit("action", data, callback=True)
        TOTALS["events"] += 1
        assert isinstance(ack, dict) and isinstance(ack.get("ok"), bool), ack
        if not ack["ok"]:
            assert isinstance(ack["error"], str) and ack["error"]
        json.dumps(ack)  # every reply is plain JSON
        if ack["ok"] and data and data["type"] in ("line_submitted", "suggestions_retried"):
            writer.runner.wait_idle(10)
    writer.runner.wait_idle(10)
    check_consistent(app, writer)
    tracebacks = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    TOTALS["sequences"] += 1


def test_the_fuzzing_sent_thousands_of_events():
    assert TOTALS["events"] >= 3000, TOTALS
