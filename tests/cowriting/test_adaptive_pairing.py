"""Adaptive pairing in a running study: each new writer's pair is drawn with the stated
probabilities, the probability is stored with the session (and its first event) before the
writer starts, and the dashboard's ranking says it is the unweighted fit, with the check
beside it."""

import json

import pytest
from conftest import Researcher, Writer, db_rows

from cyoa.cowriting.assignment import UNIFORM_SHARE

MORE_SYSTEMS = (
    '[[systems]]\nname = "fake-c-topk"\nmodel = "fake-a"\nsampling = { top_k = 5 }\n'
    '[[systems]]\nname = "fake-d-topk"\nmodel = "fake-b"\nsampling = { top_k = 5 }\n'
)


@pytest.fixture
def adaptive(make_app):
    return make_app(rounds=2, systems=MORE_SYSTEMS, top='pairing = "adaptive"')


@pytest.mark.both_databases
def test_each_adaptively_paired_writer_has_the_probability_of_their_pair_stored(adaptive):
    app = adaptive
    for n in range(8):
        writer = Writer(app, f"?pid=w{n}")
        for round_number in (1, 2):
            writer.write_round(round_number)
    sessions = db_rows(
        app.config["DATABASE"], "SELECT id, system_a, system_b, pair_probability FROM sessions"
    )
    assert len(sessions) == 8
    floor = UNIFORM_SHARE / 6
    for row in sessions:
        assert floor <= row["pair_probability"] <= 1
    # The first writer came before any choice: every one of the six pairs equally likely.
    first = db_rows(
        app.config["DATABASE"], "SELECT pair_probability FROM sessions ORDER BY started_at LIMIT 1"
    )
    assert first[0]["pair_probability"] == pytest.approx(1 / 6)
    events = db_rows(
        app.config["DATABASE"],
        "SELECT session_id, payload FROM events WHERE type = 'session_started'",
    )
    stored = {row["id"]: row["pair_probability"] for row in sessions}
    for event in events:
        assert json.loads(event["payload"])["pair_probability"] == stored[event["session_id"]]
    researcher = Researcher(app)
    researcher.login()
    results = researcher.analysed("/research/experiments/fake-ab/results.json")
    style = next(t for t in results["tables"] if t["key"] == "ranking-style")
    shown = " ".join(style["notes"])
    assert "Adaptive pairing (8 writers with a stored pair probability)" in shown
    assert "Check with every pair weighing the same" in shown


def test_a_balanced_study_stores_no_pair_probability(make_app):
    app = make_app(rounds=1, systems=MORE_SYSTEMS)
    Writer(app, "?pid=w1").write_round(1)
    assert [
        row["pair_probability"] for row in db_rows(app.config["DATABASE"], "SELECT * FROM sessions")
    ] == [None]
