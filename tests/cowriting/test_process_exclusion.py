"""The spec's process-flag exclusion rule: a built study with a writer who pasted their line,
analysed without the rule (everyone counts: a flag alone excludes nobody) and with it (the
writer is left out, and every place that shows results says so)."""

from __future__ import annotations

import csv
import io

import pytest

from cyoa import store
from cyoa.cowriting.analysis.data import load_study
from cyoa.cowriting.analysis.report import report
from cyoa.cowriting.analysis.tables import analyze
from cyoa.cowriting.analysis.tsv import export_cyoa_tsv
from cyoa.cowriting.process.store import store_operations
from tests.cowriting.test_process_measures import Log
from tests.study_builder import FIRST, SECOND, Turn, add_writer

SUGGESTIONS = {FIRST: "They dream.", SECOND: "Dogs bark."}
LEFT_OUT = "1 writer left out by the spec's process-flag rule: w4 (pasted_line)."
SURVEY = {i: 3 for i in ("happy", "collaborative", "useful", "connected", "ideas")} | {
    "why_chosen": "",
    "looking_for": "",
}


def build(db, flags: list[str] | None) -> None:
    """Three writers who type their line and take alpha; a fourth who pastes it and takes
    beta. ``flags``: the spec's process-flag rule (None: no rule)."""
    spec = {
        "id": "exp",
        "title": "A synthetic study",
        "rounds": 1,
        "systems": [{"name": name, "model": f"m-{name}"} for name in (FIRST, SECOND)],
    }
    if flags is not None:
        spec["exclusions"] = [{"rule": "process_flags", "flags": flags}]
    store.init_db(db)
    store.upsert_experiment(db, "exp", "A synthetic study", spec)
    for writer, chosen, source in (
        ("w1", FIRST, "typed"),
        ("w2", FIRST, "typed"),
        ("w3", FIRST, "typed"),
        ("w4", SECOND, "pasted"),
    ):
        turn = Turn("Cats nap.", SUGGESTIONS, FIRST, chosen, SUGGESTIONS[chosen])
        session = add_writer(db, writer, [turn], SURVEY, rounds=1)
        log = Log(1)
        if source == "pasted":
            log.text(0, "line", 0, "Cats nap.", source="pasted")
        else:
            for i, char in enumerate("Cats nap."):
                log.text(300 * i, "line", i, char)
        store_operations(db, session, log.ops)


@pytest.fixture
def db(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    yield db
    db.close()


def headline(db) -> tuple[int, float, str]:
    analysis = analyze(load_study(db, "exp"), resamples=200, workers=1)
    return analysis.writers, analysis.preference.rows[0].share, analysis.left_out


def test_without_the_rule_the_pasting_writer_counts_in_the_headline(db):
    build(db, None)
    assert headline(db) == (4, 0.75, "")
    text = report(db, "exp", "markdown")
    assert "4 of 4 submitted rounds have a keystroke record." in text
    assert "process-flag rule" not in text


def test_a_rule_on_another_flag_leaves_the_pasting_writer_in_and_says_so(db):
    build(db, ["hidden_tab", "fast_typing"])
    assert headline(db) == (
        4,
        0.75,
        "No writer left out by the spec's process-flag rule (fast_typing, hidden_tab).",
    )


def test_with_the_rule_the_pasting_writer_is_left_out_and_the_analysis_says_so(db):
    build(db, ["pasted_line"])
    writers, share, left_out = headline(db)
    assert (writers, share, left_out) == (3, 1.0, LEFT_OUT)
    text = report(db, "exp", "markdown")
    header = text.split("## ", 1)[0]
    assert LEFT_OUT in header and "Writers: 3; rounds: 3." in header
    assert "3 of 3 submitted rounds have a keystroke record." in text  # the process table


def test_the_participants_page_says_why_the_writer_is_excluded(app, researcher):
    db = store.connect(app.config["DATABASE"])
    build(db, ["pasted_line"])
    db.close()
    reply = researcher.get("/research/experiments/exp/participants.csv").get_data(True)
    rows = {r["platform_id"]: r for r in csv.DictReader(io.StringIO(reply))}
    assert (rows["w4"]["status"], rows["w4"]["decision"]) == ("excluded", "review")
    assert rows["w4"]["excluded_because"] == (
        "left out by the spec's process-flag rule (pasted_line)"
    )
    assert rows["w4"]["evidence"].startswith("Round 1: 8 of the 8 characters")
    assert {rows[w]["decision"] for w in ("w1", "w2", "w3")} == {"approve"}


def test_the_dashboard_and_the_card_say_who_the_rule_left_out(app, researcher):
    db = store.connect(app.config["DATABASE"])
    build(db, ["pasted_line"])
    db.close()
    results = researcher.analysed("/research/experiments/exp/results.json")
    assert LEFT_OUT in results["notes"]
    card = researcher.get("/research/experiments/exp/evaluation-card.md").get_data(True)
    assert LEFT_OUT in card


def test_the_cyoa_tsv_export_keeps_every_writer_under_the_rule(db):
    build(db, ["pasted_line"])
    writers = [line.split("\t")[0] for line in export_cyoa_tsv(db, "exp").splitlines()[1:]]
    assert writers == ["w1", "w2", "w3", "w4"]
