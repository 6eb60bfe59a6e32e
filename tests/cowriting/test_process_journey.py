"""A writer's story sent with its keystroke record over Socket.IO, as the page sends it, then
read by the researcher: the round measured in the process table, and the pasted line shown
as evidence in the participants table."""

from __future__ import annotations

import csv
import io

from tests.cowriting.test_record_socket import Recorder


def table(researcher, url):
    return list(csv.DictReader(io.StringIO(researcher.get(url).get_data(as_text=True))))


def test_a_pasted_line_and_an_edited_suggestion_reach_the_researchers_tables(writer, researcher):
    recorder = Recorder(writer)
    line = "The writer's own line for round 1."
    recorder.change(1, "line", None, "", line, source="pasted")
    recorder.send()
    assert writer.act("line_submitted", {"text": line, "round": 1, "record_seq": recorder.seq})[
        "ok"
    ]
    suggestion = writer.wait_for("choosing")["current"]["suggestions"][0]["text"]
    assert writer.act("suggestion_chosen", {"slot": 1, "round": 1})["ok"]
    turn = suggestion + " It rained."
    recorder.typing(1, "edit", 1, suggestion, turn)
    recorder.send()
    ack = writer.act("turn_submitted", {"text": turn, "round": 1, "record_seq": recorder.seq})
    assert ack["ok"], ack

    [measured] = table(researcher, "/research/experiments/fake-ab/download/process.csv")
    assert measured["recorded"] == "true" and measured["record_problem"] == ""
    assert measured["line_pasted_chars"] == str(len(line))
    assert measured["edit_typed_chars"] == str(len(" It rained."))
    assert measured["kept_chars"] == measured["suggestion_chars"] == str(len(suggestion))
    flag = (
        "Round 1: 28 of the 28 characters of the writer's line were pasted or dropped in, "
        "not typed."
    )
    assert measured["flags"] == flag
    [participant] = table(researcher, "/research/experiments/fake-ab/participants.csv")
    assert participant["evidence"] == flag
