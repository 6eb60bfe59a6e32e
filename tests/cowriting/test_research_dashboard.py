"""The live dashboard: progress pushed over Socket.IO when writers act, the results as
tables and SVG charts, dropouts, and the ranking of more than two systems."""

import io
import threading
import zipfile
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from conftest import SURVEY_ANSWERS, Researcher, Writer, db_rows

from cyoa import store
from cyoa.cowriting.research import dashboard
from cyoa.cowriting.research.progress import summarize

RESULTS = "/research/experiments/fake-ab/results.json"


def updates(io) -> list[dict]:
    return [m["args"][0] for m in io.get_received() if m["name"] == "research_update"]


def test_the_dashboard_is_told_when_a_writer_finishes_a_round(app, researcher):
    io = researcher.socket()
    ack = io.emit("research_join", {"experiment": "fake-ab"}, callback=True)
    assert ack["ok"] and ack["progress"]["started"] == 0
    writer = Writer(app, "?pid=w1")
    writer.write_round(1)
    received = updates(io)
    assert received, "no update reached the researcher"
    last = received[-1]
    assert last == {"experiment": "fake-ab", "event": "turn_submitted", "results_changed": True}
    progress = researcher.get("/research/experiments/fake-ab/progress.json").get_json()
    assert progress["started"] == 1 and progress["in_progress"] == 1
    assert progress["rounds_submitted"] == 1
    assert progress["median_turn_seconds"] is not None
    # Drafts come often and change nothing the dashboard shows: no update for them.
    writer.act("line_submitted", {"text": "The writer's own line for round 2."})
    writer.wait_for("choosing")
    writer.act("suggestion_chosen", {"slot": 1})
    updates(io)
    writer.act("draft_saved", {"slot": 1, "text": "A draft being typed"})
    assert updates(io) == []


def test_a_tab_logged_out_meanwhile_learns_only_that_something_changed(app, researcher):
    io = researcher.socket()
    assert io.emit("research_join", {"experiment": "fake-ab"}, callback=True)["ok"]
    researcher.post("/research/logout")
    Writer(app, "?pid=w1").write_round(1)
    received = updates(io)
    assert received and all(set(u) == {"experiment", "event", "results_changed"} for u in received)
    assert researcher.get("/research/experiments/fake-ab/progress.json").status_code == 302


def test_the_dashboard_counts_finished_writers(app, researcher):
    io = researcher.socket()
    io.emit("research_join", {"experiment": "fake-ab"}, callback=True)
    writer = Writer(app, "?pid=w1")
    for n in range(1, 6):
        writer.write_round(n)
    writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})
    assert updates(io)[-1]["event"] == "survey_submitted"
    progress = researcher.get("/research/experiments/fake-ab/progress.json").get_json()
    assert progress["finished"] == 1 and progress["in_progress"] == 0
    assert progress["median_session_seconds"] > 0
    assert progress["per_pair"] == {"fake-a-topk vs fake-b-topk": 1}


def test_researchers_of_another_experiment_are_not_told(app, researcher):
    io = researcher.socket()
    assert io.emit("research_join", {"experiment": "nope"}, callback=True)["ok"] is False
    Writer(app).write_round(1)
    assert updates(io) == []


def test_a_writer_without_an_action_for_30_minutes_has_dropped_out(app, researcher):
    Writer(app, "?pid=gone").write_round(1)
    Writer(app, "?pid=here")
    db = store.connect(app.config["DATABASE"])
    old = (datetime.now(UTC) - timedelta(minutes=31)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    db.execute("UPDATE sessions SET updated_at = ? WHERE participant_id = 1", [old])
    db.close()
    progress = researcher.get("/research/experiments/fake-ab/progress.json").get_json()
    assert (progress["started"], progress["dropped"], progress["in_progress"]) == (2, 1, 1)


def test_progress_times_are_medians_over_rounds_and_finished_sessions():
    now = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    session = {"system_a": "a", "system_b": "b"}
    sessions = [
        {
            **session,
            "phase": "done",
            "started_at": "2026-01-01T10:00:00.000Z",
            "updated_at": "2026-01-01T10:10:00.000Z",
            "finished_at": "2026-01-01T10:10:00.000Z",
        },
        {
            **session,
            "phase": "choosing",
            "started_at": "2026-01-01T11:00:00.000Z",
            "updated_at": "2026-01-01T11:40:00.000Z",
            "finished_at": None,
        },
        {
            **session,
            "phase": "writing",
            "started_at": "2026-01-01T11:50:00.000Z",
            "updated_at": "2026-01-01T11:55:00.000Z",
            "finished_at": None,
        },
    ]
    rounds = [
        {
            "round_started_at": "2026-01-01T10:00:00.000Z",
            "turn_submitted_at": "2026-01-01T10:01:00.000Z",
        },
        {
            "round_started_at": "2026-01-01T10:01:00.000Z",
            "turn_submitted_at": "2026-01-01T10:04:00.000Z",
        },
        {
            "round_started_at": "2026-01-01T10:04:00.000Z",
            "turn_submitted_at": "2026-01-01T10:06:00.000Z",
        },
        {"round_started_at": "2026-01-01T11:55:00.000Z", "turn_submitted_at": None},
    ]
    progress = summarize("x", "open", 10, sessions, rounds, now, dropout_minutes=15)
    assert (progress.started, progress.finished, progress.dropped, progress.in_progress) == (
        3,
        1,
        1,
        1,
    )
    assert progress.rounds_submitted == 3
    assert progress.median_turn_seconds == 120.0
    assert progress.median_session_seconds == 600.0
    assert progress.per_pair == {"a vs b": 3}


def test_the_results_are_tables_and_svg_charts(app, researcher):
    writer = Writer(app, "?pid=w1")
    for n in range(1, 6):
        writer.write_round(n, slot=1)
    writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})
    researcher.analysed(RESULTS)
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert "Preference: % of rounds in which fake-a-topk was chosen over fake-b-topk" in page
    assert "Edits of accepted suggestions" in page
    assert "Text metrics of suggestions" in page
    assert "I&#39;m happy with my final story." in page
    results = researcher.get("/research/experiments/fake-ab/results.json").get_json()
    titles = [t["title"] for t in results["tables"]]
    assert titles[0].startswith("Preference:")
    rows = results["tables"][0]["rows"]
    # One writer: no writer-level test yet, the sequence of one complete story.
    assert rows[0][0] == "Anytime-valid (1 complete stories)" and rows[0][3] == "0.0% – 100.0%"
    assert rows[1][0] == "Clark & Smith's binomial, all rounds" and rows[1][1].endswith("/ 5")
    assert [r[0] for r in rows][2:] == [f"Round {n}" for n in range(1, 6)]
    assert results["tables"][0]["notes"][0].startswith("Study status: not yet decisive, and no")
    assert results["charts"] == ["preference", "edits", "likert"]
    for name in results["charts"]:
        chart = researcher.get(f"/research/experiments/fake-ab/charts/{name}.svg")
        assert chart.status_code == 200 and chart.mimetype == "image/svg+xml"
        assert b"<svg" in chart.data and b"<script" not in chart.data
        assert "script-src" not in chart.headers["Content-Security-Policy"]
    likert = researcher.get("/research/experiments/fake-ab/charts/likert.svg").data.decode()
    assert "happy (n=1)" in likert
    assert researcher.get("/research/experiments/fake-ab/charts/nope.svg").status_code == 404


def test_card_details_over_4000_characters_are_refused_on_the_dashboard(app, researcher):
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert page.count('maxlength="4000"') == 2
    reply = researcher.post(
        "/research/experiments/fake-ab/details",
        data={"pay": "£2", "qualifications": "UK " * 1400},
    )
    assert reply.status_code == 302 and reply.location.endswith(
        "/research/experiments/fake-ab#card"
    )
    text = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert (
        "Not saved: Qualifications and quality control is 4,199 characters long; the limit "
        "is 4,000." in text
    )
    assert db_rows(app.config["DATABASE"], "SELECT * FROM evaluation_details") == []


def test_the_dashboard_escapes_what_writers_typed(app, researcher):
    Writer(app, "?pid=w1").write_round(1, edit="<img src=x onerror=alert(1)> was kept here")
    page = researcher.get("/research/experiments/fake-ab/writers/1").get_data(as_text=True)
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def choose_system(writer: Writer, app, n: int, system: str) -> None:
    """Round ``n``: choose the slot in which ``system`` was shown."""
    assert writer.act("line_submitted", {"text": f"The writer's own line for round {n}."})["ok"]
    writer.wait_for("choosing")
    db = store.connect(app.config["DATABASE"])
    row = db.execute(
        "SELECT slot1_system FROM rounds WHERE session_id = ? AND round = ?",
        [writer.session_id, n],
    ).fetchone()
    db.close()
    slot = 1 if row[0] == system else 2
    assert writer.act("suggestion_chosen", {"slot": slot})["ok"]
    assert writer.act("turn_submitted", {"text": f"The kept text of round {n} here."})["ok"]


@pytest.fixture
def three_systems(make_app):
    third = '[[systems]]\nname = "fake-c-topk"\nmodel = "fake-a"\nsampling = { top_k = 5 }\n'
    return make_app(rounds=2, systems=third)


def test_more_than_two_systems_are_ranked_by_bradley_terry(three_systems):
    app = three_systems
    # Each writer chooses each system of their pair once: every system is chosen over and
    # passed over for the others, and all strengths are equal.
    for n in range(6):
        writer = Writer(app, f"?pid=w{n}")
        db = store.connect(app.config["DATABASE"])
        a, b = db.execute(
            "SELECT system_a, system_b FROM sessions WHERE id = ?", [writer.session_id]
        ).fetchone()
        db.close()
        choose_system(writer, app, 1, a)
        choose_system(writer, app, 2, b)
    researcher = Researcher(app)
    researcher.login()
    results = researcher.analysed(RESULTS)
    ranking = results["tables"][0]
    assert ranking["title"] == "Ranking of all systems (Bradley–Terry)"
    assert sorted(row[1] for row in ranking["rows"]) == [
        "fake-a-topk",
        "fake-b-topk",
        "fake-c-topk",
    ]
    assert all(row[2] == "0.333" and row[4] == "4 / 8" for row in ranking["rows"])
    assert "ranking" in results["charts"]
    assert sum(t["title"].startswith("Preference:") for t in results["tables"]) == 3
    chart = researcher.get("/research/experiments/fake-ab/charts/ranking.svg")
    assert chart.status_code == 200 and b"fake-c-topk" in chart.data
    # The CYOA TSV layout holds two systems: one file per compared pair in the bundle.
    bundle = researcher.get("/research/experiments/fake-ab/download/bundle.zip").data
    archive = zipfile.ZipFile(io.BytesIO(bundle))
    tsvs = sorted(name for name in archive.namelist() if name.endswith(".tsv"))
    assert tsvs == [
        "cyoa-fake-a-topk-vs-fake-b-topk.tsv",
        "cyoa-fake-a-topk-vs-fake-c-topk.tsv",
        "cyoa-fake-b-topk-vs-fake-c-topk.tsv",
    ]
    for name in tsvs:
        assert len(pd.read_table(io.BytesIO(archive.read(name)), index_col=0)) == 2
    single = researcher.get("/research/experiments/fake-ab/download/cyoa.tsv")
    assert single.status_code == 302
    page = researcher.get(single.headers["Location"]).get_data(as_text=True)
    assert "one TSV per pair that writers compared" in page


def test_a_ranking_that_the_choices_do_not_determine_is_explained(three_systems):
    app = three_systems
    writer = Writer(app, "?pid=w0")
    choose_system(writer, app, 1, "fake-a-topk")
    researcher = Researcher(app)
    researcher.login()
    researcher.analysed(RESULTS)
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert "Ranking: " in page and "more choices are needed" in page


def test_the_results_come_from_the_stored_analysis_while_a_newer_one_is_computed(
    app, researcher, monkeypatch
):
    writer = Writer(app, "?pid=w1")
    writer.write_round(1, slot=1)
    first = researcher.analysed(RESULTS)
    assert first["analysis"]["as_of"].startswith("1 rounds, ")
    monkeypatch.setattr(dashboard, "RECOMPUTE_SECONDS", 0)
    real, started, released = dashboard.analyse, threading.Event(), threading.Event()

    def held(*args, **kwargs):
        started.set()
        assert released.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(dashboard, "analyse", held)
    socket = researcher.socket()
    assert socket.emit("research_join", {"experiment": "fake-ab"}, callback=True)["ok"]
    writer.write_round(2, slot=1)
    busy = researcher.get(RESULTS).get_json()  # starts the newer analysis, answers without it
    assert started.wait(60) and busy["tables"] == first["tables"]
    busy = researcher.get(RESULTS).get_json()
    assert busy["analysis"]["state"] == "computing" and busy["version"] == first["version"]
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert "Analysis as of 1 rounds, " in page and "a newer analysis is being computed" in page
    socket.get_received()
    released.set()
    landed = researcher.analysed(RESULTS)
    assert landed["analysis"]["as_of"].startswith("2 rounds, ")
    assert landed["tables"][0]["rows"][0][1].endswith("/ 2")  # the preference over 2 rounds
    pushed = [m["args"][0] for m in socket.get_received() if m["name"] == "research_update"]
    assert {"experiment": "fake-ab", "event": "analysis_stored", "results_changed": True} in pushed


def test_the_status_line_reads_the_planned_n_and_the_headline_counts_writers(app, researcher):
    for pid, slot in (("w1", 1), ("w2", 2)):
        writer = Writer(app, f"?pid={pid}")
        for n in range(1, 6):
            writer.write_round(n, slot=slot)
    record = {"kind": "cowriting", "chosen": {"writers": 60, "rounds": 5, "power": 0.8}}
    store.insert_plan(store.connect(app.config["DATABASE"]), "fake-ab", "cowriting", record, "")
    table = researcher.analysed(RESULTS)["tables"][0]
    assert table["rows"][0][0] == "Writers (headline, 2 writers)"
    assert table["rows"][1][0] == "Anytime-valid (2 complete stories)"
    assert (
        table["notes"][0] == "Study status: not yet: keep going to the planned N (2 of 60 writers)."
    )
    assert (
        "fixed-sample p-values: valid at the planned N only, not yet reached" in table["notes"][1]
    )
    assert table["columns"][-1] == "p (Holm, rounds)"
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert "Study status: not yet: keep going to the planned N (2 of 60 writers)." in page
