"""Session replay: turn by turn from the events, with the diff between the chosen suggestion
and what the writer kept."""

import html
import re

import pytest
from conftest import SURVEY_ANSWERS, Writer

from cyoa.cowriting.research.replay import build_replay, word_diff

pytestmark = pytest.mark.both_databases


def test_the_word_diff_marks_what_was_removed_and_added():
    assert word_diff("The cat sat on the mat.", "The dog sat on the mat!") == [
        ("equal", "The "),
        ("delete", "cat"),
        ("insert", "dog"),
        ("equal", " sat on the mat"),
        ("delete", "."),
        ("insert", "!"),
    ]
    assert word_diff("Same words here.", "Same words here.") == [("equal", "Same words here.")]
    parts = word_diff("She didn't go home", "He didn't go home at all")
    assert "".join(t for op, t in parts if op != "delete") == "He didn't go home at all"
    assert "".join(t for op, t in parts if op != "insert") == "She didn't go home"
    assert ("equal", " didn't go home") in parts


def test_replay_steps_through_each_turn_with_suggestions_choices_and_timings(app, researcher):
    writer = Writer(app, "?pid=w1")
    writer.act("line_submitted", {"text": "A knight rode to the <b>castle</b> at dawn."})
    state = writer.wait_for("choosing")
    chosen = state["current"]["suggestions"][1]["text"]
    writer.act("suggestion_chosen", {"slot": 1})
    writer.act("suggestion_chosen", {"slot": 2, "switch": True})
    kept = "Nobody saw it. " + chosen.removesuffix(".") + " tonight."
    assert writer.act("turn_submitted", {"text": kept})["ok"]
    for n in range(2, 6):
        writer.write_round(n)
    writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})

    page = researcher.get("/research/experiments/fake-ab/writers/1")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    first = text.split('id="round-1"', 1)[1].split('id="round-2"', 1)[0]
    assert "A knight rode to the &lt;b&gt;castle&lt;/b&gt; at dawn." in first
    assert "<b>castle</b>" not in text
    assert "Slot 1 · " in first and "Slot 2 · " in first
    assert "chose slot 1" in first and "switched to slot 2" in first and "1 switch" in first
    diff = re.search(r'<p class="diff">(.*?)</p>', first).group(1)
    parts = re.findall(r"<(span|ins|del)>(.*?)</\1>", diff)
    assert [(tag, html.unescape(t)) for tag, t in parts] == [
        ("ins", "Nobody saw it. "),
        ("span", chosen.removesuffix(".")),
        ("ins", " tonight"),
        ("span", "."),
    ]
    assert "Timeline" in first and "Wrote their line" in first and "Added the turn" in first
    assert text.count('class="card turn"') == 5
    assert "The one that fit the mood." in text and "4 – Agree" in text
    assert researcher.get("/research/experiments/fake-ab/writers/99").status_code == 404


def test_the_replay_is_built_from_the_events_with_retries_and_failures():
    def event(seq, kind, payload, second):
        return {
            "seq": seq,
            "type": kind,
            "payload": payload,
            "server_time": f"2026-01-01T10:00:{second:02d}.000Z",
        }

    events = [
        event(1, "session_started", {"experiment": "x"}, 0),
        event(
            2,
            "line_submitted",
            {
                "round": 1,
                "text": "Line one is here.",
                "slot_systems": ["a", "b"],
                "slot_models": ["ma", "mb"],
            },
            10,
        ),
        event(
            3,
            "suggestion_failed",
            {"round": 1, "slot": 1, "attempt": 1, "system": "a", "model": "ma", "error": "timeout"},
            12,
        ),
        event(
            4,
            "suggestion_completed",
            {
                "round": 1,
                "slot": 2,
                "attempt": 1,
                "system": "b",
                "model": "mb",
                "text": "B says hello.",
                "generation_seconds": 1.5,
            },
            13,
        ),
        event(
            5,
            "suggestion_completed",
            {
                "round": 1,
                "slot": 1,
                "attempt": 2,
                "system": "a",
                "model": "ma",
                "text": "A says hi.",
                "generation_seconds": 2.0,
            },
            15,
        ),
        event(6, "suggestion_chosen", {"round": 1, "slot": 1, "switch": False}, 20),
        event(7, "turn_submitted", {"round": 1, "slot": 1, "text": "A says hi there."}, 30),
    ]
    replay = build_replay(events)
    turn = replay.turns[0]
    assert turn.shown[1].text == "A says hi." and turn.shown[1].attempt == 2
    assert turn.chosen_system == "a" and turn.chosen_suggestion == "A says hi."
    assert turn.diff == [("equal", "A says hi"), ("insert", " there"), ("equal", ".")]
    assert [s.seconds for s in turn.steps] == [10.0, 2.0, 1.0, 2.0, 5.0, 10.0]
    assert turn.seconds == 20.0 and turn.steps[-1].elapsed == 30.0
    assert replay.survey is None
