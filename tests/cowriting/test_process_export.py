"""The ``process`` export table: a built study with a stored keystroke record, measured per
writer × round, with its flags; a round without a record says so."""

from __future__ import annotations

import csv
import io

import pytest

from cyoa import store
from cyoa.cowriting.process.store import store_operations
from cyoa.cowriting.research.exports import export_table, process_rows
from tests.cowriting.test_process_measures import Log
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment


@pytest.fixture
def study(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    make_experiment(db, rounds=2)
    turns = [
        Turn(
            "Cats nap all day.",
            {FIRST: "They dream.", SECOND: "Dogs bark."},
            FIRST,
            FIRST,
            "dream.",
        ),
        Turn(
            "Then it rained.",
            {FIRST: "Wet.", SECOND: "Puddles formed."},
            FIRST,
            SECOND,
            "Puddles formed.",
        ),
    ]
    session = add_writer(db, "w1", turns, rounds=2)
    log = Log(1)
    log.text(0, "line", 0, "Cats nap all day.", source="pasted")
    log.view(5000, 1, "visible").view(5000, 2, "visible")
    log.text(6500, "edit", 0, "", "They ", slot=1)
    store_operations(db, session, log.ops)
    yield db
    db.close()


def test_each_round_is_measured_from_its_record_and_says_what_was_flagged(study):
    first, second = process_rows(study, "exp")
    assert first["recorded"] is True
    assert (first["first_keystroke_ms"], first["line_pasted_chars"]) == (1500, 17)
    # "They dream." loses "They ": 6 of 11 characters kept.
    assert (first["suggestion_chars"], first["kept_chars"]) == (11, 6)
    assert first["flags"] == (
        "Round 1: 14 of the 14 characters of the writer's line were pasted or dropped in, "
        "not typed."
    )
    assert second["recorded"] is False
    assert second["kept_chars"] is None and second["flags"] == ""


def test_the_process_table_downloads_as_csv_with_every_documented_column(study):
    rows = list(csv.DictReader(io.StringIO(export_table(study, "exp", "process", "csv").decode())))
    assert len(rows) == 2
    assert rows[0]["chosen_system"] == FIRST and rows[0]["kept_share"] == str(6 / 11)


def test_a_record_that_does_not_apply_is_named_not_measured(study):
    session = study.execute("SELECT id FROM sessions").fetchone()[0]
    broken = Log(2).text(0, "edit", 0, "", "Nope", slot=2).ops
    broken[0]["seq"] = 10
    store_operations(study, session, broken)
    second = process_rows(study, "exp")[1]
    assert second["recorded"] is True and second["kept_chars"] is None
    assert "the record of this round is broken" in second["record_problem"]


def test_the_dashboard_shows_how_writers_wrote_with_each_system(app, researcher):
    db = store.connect(app.config["DATABASE"])
    make_experiment(db, rounds=1)
    for writer, kept_from in (("w1", "They "), ("w2", "")):
        turn = Turn("Cats nap.", {FIRST: "They dream.", SECOND: "No."}, FIRST, FIRST, "dream.")
        session = add_writer(db, writer, [turn], rounds=1)
        store_operations(db, session, Log(1).text(0, "edit", 0, "", kept_from, slot=1).ops)
    db.close()
    results = researcher.analysed("/research/experiments/exp/results.json")
    (table,) = [t for t in results["tables"] if t["key"] == "process-alpha-beta"]
    assert table["rows"][0][:2] == ["Characters kept of the suggestion", "77% (55%–100%)"]
    assert "Writers kept 77% of alpha's characters." in table["notes"]


def test_the_participants_table_shows_a_pasted_line_as_evidence_and_still_proposes_approval(
    app, researcher
):
    db = store.connect(app.config["DATABASE"])
    make_experiment(db, rounds=1)
    turn = Turn("Cats nap.", {FIRST: "They dream.", SECOND: "No."}, FIRST, FIRST, "They dream.")
    survey = {item: 3 for item in ("happy", "collaborative", "useful", "connected", "ideas")}
    session = add_writer(db, "w1", [turn], survey | {"why_chosen": "", "looking_for": ""}, rounds=1)
    store_operations(db, session, Log(1).text(0, "line", 0, "Cats nap.", source="pasted").ops)
    db.close()
    rows = list(
        csv.DictReader(
            io.StringIO(researcher.get("/research/experiments/exp/participants.csv").get_data(True))
        )
    )
    assert rows[0]["evidence"] == (
        "Round 1: 8 of the 8 characters of the writer's line were pasted or dropped in, not typed."
    )
    assert (rows[0]["status"], rows[0]["decision"]) == ("finished", "approve")
