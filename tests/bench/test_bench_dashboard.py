"""The dashboard benchmark's co-writing study (bench/cowriting_study.py): its writers' keystroke
records rebuild every submitted turn, so the "How writers wrote" tables the benchmark times
are measured from real records, and the co-writing dashboard's analysis of it shows them."""

from __future__ import annotations

import random

from bench import cowriting_study
from cyoa import store
from cyoa.cowriting.research import dashboard, lifecycle
from cyoa.cowriting.research.exports import process_rows


def _study(tmp_path, writers: int):
    db = store.connect(str(tmp_path / "bench.sqlite"))
    store.init_db(db)
    cowriting_study.build(db, "cw", writers=writers)
    return db


def test_every_built_round_is_measured_from_a_keystroke_record_that_matches_it(tmp_path):
    db = _study(tmp_path, writers=2)
    rows = process_rows(db, "cw")
    assert len(rows) == 2 * 5
    assert all(r["recorded"] and r["record_problem"] == "" for r in rows)
    assert all(r["line_typed_chars"] > 50 and r["kept_chars"] > 0 for r in rows)


def test_a_writer_added_later_changes_the_data_the_dashboard_analysed(tmp_path):
    db = _study(tmp_path, writers=2)
    before = dashboard.data_version(db, "cw")
    cowriting_study.add_writer(db, "cw", 3, 5, random.Random(3))
    assert dashboard.data_version(db, "cw") != before


def test_the_dashboard_analysis_of_the_built_study_shows_how_writers_wrote(tmp_path):
    db = _study(tmp_path, writers=4)
    exp = lifecycle.stored_experiment(db, "cw", {})
    rounds, _, result = dashboard.analyse(db, exp, lambda step: None)
    assert rounds == 4 * 5
    process = [t for t in result["tables"] if t["key"].startswith("process-")]
    assert process and process[0]["rows"], process
