"""The keystroke record over Socket.IO, as the page sends it: stored before it is
acknowledged, once however often it is sent, checked against each line, draft and turn
(a mismatch recorded, never refused), and neither sent nor stored in a study that turns it
off."""

from __future__ import annotations

import html
import json

import pytest
from conftest import Researcher, Writer

from cyoa import store
from cyoa.cowriting.process.batches import (
    AHEAD,
    MALFORMED,
    MAX_BATCH_CHARS,
    MAX_TEXT,
    OFF,
    TOO_LARGE,
)
from cyoa.cowriting.process.operations import operation_between

pytestmark = pytest.mark.both_databases


class Recorder:
    """The page's recorder in miniature: each change of a box as one row, numbered."""

    def __init__(self, writer: Writer, first: int = 1):
        self.writer, self.seq, self.rows = writer, first - 1, []

    def change(self, round_number, box, slot, before, after, source="typed"):
        self.seq += 1
        position, deleted, inserted = operation_between(before, after)
        row = [self.seq, round_number, 1_700_000_000_000 + 150 * self.seq, "text", box]
        self.rows.append([*row, slot, position, deleted, inserted, source])

    def typing(self, round_number, box, slot, start, text):
        for n in range(len(start), len(text)):
            self.change(round_number, box, slot, text[:n], text[: n + 1])

    def send(self):
        ack = self.writer.io.emit("record", {"operations": self.rows}, callback=True)
        self.rows = []
        return ack


def events(app, session_id, kind):
    db = store.connect(app.config["DATABASE"])
    try:
        rows = db.query(
            "SELECT payload FROM events WHERE session_id = ? AND type = ? ORDER BY seq",
            [session_id, kind],
        )
        return [json.loads(r["payload"]) for r in rows]
    finally:
        db.close()


def stored_rows(app, session_id):
    db = store.connect(app.config["DATABASE"])
    try:
        return list(db.query("SELECT * FROM text_operations WHERE session_id = ?", [session_id]))
    finally:
        db.close()


def test_the_join_tells_the_page_the_record_is_on_and_where_to_go_on(writer):
    assert writer.joined["record"] == {"on": True, "next_seq": 1}
    recorder = Recorder(writer)
    recorder.typing(1, "line", None, "", "Once")
    assert recorder.send() == {"ok": True, "stored": 4}
    assert writer.reconnect()["record"] == {"on": True, "next_seq": 5}


def test_a_batch_sent_again_is_stored_once(app, writer):
    recorder = Recorder(writer)
    recorder.typing(1, "line", None, "", "Once upon")
    rows = list(recorder.rows)
    assert recorder.send()["stored"] == 9
    assert writer.io.emit("record", {"operations": rows}, callback=True)["stored"] == 0
    assert len(stored_rows(app, writer.session_id)) == 9


def test_a_story_written_with_its_record_is_checked_at_every_line_draft_and_turn(app, writer):
    recorder = Recorder(writer)
    line = "The writer's own line for round 1."
    recorder.typing(1, "line", None, "", line[:10])
    recorder.change(1, "line", None, line[:10], line, source="pasted")
    recorder.send()
    ack = writer.act("line_submitted", {"text": line, "round": 1, "record_seq": recorder.seq})
    assert ack["ok"], ack
    state = writer.wait_for("choosing")
    suggestion = state["current"]["suggestions"][1]["text"]
    assert writer.act("suggestion_chosen", {"slot": 2, "round": 1})["ok"]
    draft = suggestion + " And then"
    recorder.typing(1, "edit", 2, suggestion, draft)
    recorder.send()
    draft_payload = {"slot": 2, "text": draft, "round": 1, "record_seq": recorder.seq}
    assert writer.act("draft_saved", draft_payload)["ok"]
    turn = draft + " it rained."
    recorder.typing(1, "edit", 2, draft, turn)
    recorder.send()
    ack = writer.act("turn_submitted", {"text": turn, "round": 1, "record_seq": recorder.seq})
    assert ack["ok"], ack

    sid = writer.session_id
    [line_event] = events(app, sid, "line_submitted")
    assert line_event["record"] == {"through": 11, "box": "line", "slot": None, "matches": True}
    [draft_event] = events(app, sid, "draft_saved")
    assert draft_event["record"]["matches"] and draft_event["record"]["slot"] == 2
    [turn_event] = events(app, sid, "turn_submitted")
    assert turn_event["record"]["matches"], turn_event["record"]
    pasted = [r for r in stored_rows(app, sid) if r["source"] == "pasted"]
    assert [(r["position"], r["inserted"]) for r in pasted] == [(10, line[10:])]


def test_a_line_whose_record_differs_is_kept_and_the_difference_is_recorded(app, writer):
    recorder = Recorder(writer)
    recorder.typing(1, "line", None, "", "Something else entirely")
    recorder.send()
    line = "The writer's own line for round 1."
    ack = writer.act("line_submitted", {"text": line, "round": 1, "record_seq": recorder.seq + 2})
    assert ack["ok"] and ack["state"]["phase"] == "suggesting"
    [event] = events(app, writer.session_id, "line_submitted")
    assert event["text"] == line
    assert event["record"]["matches"] is False
    assert event["record"]["problem"] == "2 of the record's first 25 rows had not arrived."


def test_a_malformed_batch_or_one_for_a_later_round_is_refused_with_a_sentence(app, writer):
    good = [1, 1, 1_700_000_000_000, "text", "line", None, 0, "", "O", "typed"]
    for batch in (
        {"operations": []},
        {"operations": [good[:-1]]},
        {"operations": [[*good[:5], 1, *good[6:]]]},  # a line has no slot
        {"operations": [[*good[:9], "keyboard"]]},
        {"operations": [[1, 1, 0, "view", None, 1, 0, "", "", "visible"]]},
        {"operations": [[*good[:8], "\x00", "typed"]]},
        {"operations": [[True, *good[1:]]]},
    ):
        ack = writer.io.emit("record", batch, callback=True)
        assert ack == {"ok": False, "error": str(MALFORMED)}
    ahead = [[1, 2, *good[2:]]]
    ack = writer.io.emit("record", {"operations": ahead}, callback=True)
    assert ack == {"ok": False, "error": str(AHEAD)}
    full = MAX_TEXT  # rows of a full box each, more of them than one page's batch holds
    count = MAX_BATCH_CHARS // full + 1
    large = [
        [n, 1, 0, "text", "line", None, 0, "", "x" * full, "pasted"] for n in range(1, count + 1)
    ]
    ack = writer.io.emit("record", {"operations": large}, callback=True)
    assert ack == {"ok": False, "error": str(TOO_LARGE)}
    assert stored_rows(app, writer.session_id) == []


def test_a_study_that_turns_the_record_off_stores_none_of_it(make_app):
    app = make_app(top="record_keystrokes = false")
    writer = Writer(app)
    assert writer.joined["record"] == {"on": False}
    row = [1, 1, 1_700_000_000_000, "text", "line", None, 0, "", "O", "typed"]
    ack = writer.io.emit("record", {"operations": [row]}, callback=True)
    assert ack == {"ok": False, "error": str(OFF)}
    line = "The writer's own line for round 1."
    assert writer.act("line_submitted", {"text": line, "round": 1, "record_seq": 1})["ok"]
    assert stored_rows(app, writer.session_id) == []
    assert "record" not in events(app, writer.session_id, "line_submitted")[0]


def test_the_consent_page_says_what_is_recorded_only_when_the_record_is_on(make_app):
    on = make_app().test_client().get("/s/fake-ab?pid=c1").get_data(as_text=True)
    assert "every change you make in the story's boxes" in html.unescape(on)
    off_app = make_app(top="record_keystrokes = false")
    off = off_app.test_client().get("/s/fake-ab?pid=c2").get_data(as_text=True)
    assert 'id="recorded"' not in off and "Consent text for the test study." in off


def test_the_replay_plays_the_record_and_shows_each_round_s_check(app, writer, researcher):
    recorder = Recorder(writer)
    line = "The writer's own line for round 1."
    recorder.typing(1, "line", None, "", line)
    recorder.send()
    writer.act("line_submitted", {"text": line, "round": 1, "record_seq": recorder.seq + 1})
    page = researcher.get("/research/experiments/fake-ab/writers/1").get_data(as_text=True)
    assert f"{len(line)} recorded rows over" in page
    assert "Keystroke record differs: Wrote their line: 1 of the record&#39;s first 35" in page
    assert 'id="ks-data"' in page and '"1:' not in page  # no suggestion shown yet


def test_the_evaluation_card_says_whether_keystrokes_were_recorded(make_app):
    cards = []
    for top in ("", "record_keystrokes = false"):
        researcher = Researcher(make_app(top=top))
        researcher.login()
        cards.append(researcher.get("/research/experiments/fake-ab/evaluation-card.md"))
    on, off = cards
    assert "Keystroke record: on (`record_keystrokes = true`" in on.get_data(True)
    assert "Keystroke record: off (`record_keystrokes = false`)" in off.get_data(True)
