"""A writer's page keeps its unsent actions through a reload and sends them again with their
ids: every kind of action resent, however late, is stored once, and one made for a round the
story has left is refused rather than stored in a round it was not meant for."""

import json

import pytest
from conftest import SURVEY_ANSWERS, Writer, db_rows

from cyoa.cowriting.flow import STALE_ROUND
from cyoa.web.participants import storage_key


def events(app) -> list[dict]:
    return db_rows(app.config["DATABASE"], "SELECT type, client_action_id FROM events ORDER BY seq")


def test_every_kind_of_writer_action_resent_after_the_story_is_finished_is_stored_once(app):
    writer = Writer(app)
    sent: list[tuple[str, dict, str]] = []

    def act(kind: str, payload: dict) -> dict:
        action_id = f"{kind}-{len(sent)}"
        sent.append((kind, payload, action_id))
        ack = writer.act(kind, payload, action_id=action_id)
        assert ack["ok"], ack
        return ack

    act("line_submitted", {"text": "The writer's own line for round 1.", "round": 1})
    writer.wait_for("choosing")
    act("suggestion_chosen", {"slot": 1, "round": 1})
    act("draft_saved", {"slot": 1, "text": "A draft of the first suggestion.", "round": 1})
    act("suggestion_chosen", {"slot": 2, "round": 1})  # a switch
    act("turn_submitted", {"text": "The second suggestion, kept.", "round": 1})
    for n in range(2, 6):
        writer.write_round(n)
    act("survey_submitted", {"answers": SURVEY_ANSWERS, "round": 5})
    stored = events(app)

    writer.reconnect()  # the page reloaded: its outbox is sent again, in order
    for kind, payload, action_id in sent:
        ack = writer.act(kind, payload, action_id=action_id)
        assert ack["ok"] and ack["duplicate"], (kind, ack)
        assert ack["state"]["phase"] == "done"
    assert events(app) == stored
    ids = [e["client_action_id"] for e in stored if e["client_action_id"]]
    assert sorted(ids) == sorted(action_id for _, _, action_id in sent)


def test_a_retry_of_failed_suggestions_resent_later_is_stored_once(make_app):
    writer = Writer(make_app(options_a='fail = "raise"', options_b='fail = "raise"'))
    writer.act("line_submitted", {"text": "Neither machine is working today."})
    writer.runner.wait_idle()
    assert writer.act("suggestions_retried", {"round": 1}, action_id="retry-1")["ok"]
    writer.runner.wait_idle()
    again = writer.act("suggestions_retried", {"round": 1}, action_id="retry-1")
    assert again["ok"] and again["duplicate"]
    kinds = [e["type"] for e in events(writer.app)]
    assert kinds.count("suggestions_retried") == 1


@pytest.mark.parametrize(
    ("kind", "payload"),
    [
        ("suggestion_chosen", {"slot": 1}),
        ("draft_saved", {"slot": 1, "text": "A draft typed offline in the first round."}),
        ("turn_submitted", {"text": "A turn written offline for the first round."}),
    ],
)
def test_an_action_made_for_a_round_the_story_has_left_is_refused_and_stores_nothing(
    app, kind, payload
):
    writer = Writer(app)
    writer.write_round(1)
    writer.act("line_submitted", {"text": "The writer's own line for round 2."})
    writer.wait_for("choosing")  # round 2 takes the same kinds of action as round 1 did
    assert writer.act("suggestion_chosen", {"slot": 2, "round": 2})["ok"]
    before = events(app)
    ack = writer.act(kind, {**payload, "round": 1}, action_id="kept-offline")
    assert ack == {"ok": False, "error": STALE_ROUND, "state": ack["state"]}
    assert (ack["state"]["round"], ack["state"]["phase"]) == (2, "choosing")
    assert ack["state"]["current"]["chosen_slot"] == 2
    assert events(app) == before
    ack = writer.act(kind, {**payload, "round": 2}, action_id="made-now")
    assert ack["ok"], ack


@pytest.mark.parametrize("meant", ["1", 1.0, True, None, [1]])
def test_a_round_that_is_not_a_whole_number_is_refused_as_malformed(writer, meant):
    ack = writer.act("line_submitted", {"text": "A line with a strange round.", "round": meant})
    assert not ack["ok"] and "malformed" in ack["error"]
    assert [e["type"] for e in events(writer.app)] == ["session_started"]
    assert json.dumps(ack["state"]["story"]) == "[]"


def test_the_writing_page_keeps_its_outbox_under_a_key_of_the_session_not_its_id(app):
    first, second = Writer(app, "?pid=w1"), Writer(app, "?pid=w2")
    pages = [w.http.get("/s/fake-ab/write").get_data(as_text=True) for w in (first, second)]
    for writer, page in zip((first, second), pages, strict=True):
        assert f'data-outbox="{storage_key(writer.session_id)}"' in page
        assert writer.session_id not in page
    assert storage_key(first.session_id) != storage_key(second.session_id)
