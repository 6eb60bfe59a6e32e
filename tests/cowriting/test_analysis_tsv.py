"""The original script's TSV layout: reading, writing, importing as events, exporting."""

import json

import pytest

from cyoa import store
from cyoa.cowriting import flow
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.analysis.data import load_study
from cyoa.cowriting.analysis.tsv import (
    WriterRow,
    export_cyoa_tsv,
    header,
    import_tsv,
    read_cyoa_tsv,
    write_cyoa_tsv,
)
from cyoa.errors import AnalysisError
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment


def row(writer: str, accepted: str, likert=(4, 5, 3, None, 2)) -> WriterRow:
    flags = tuple("true" if c == "T" else "false" for c in accepted)
    return WriterRow(
        writer=writer,
        model_lines=tuple(f'Model line {n} of {writer}, "quoted".' for n in range(1, 6)),
        baseline_lines=tuple(f"Baseline line {n} of {writer}." for n in range(1, 6)),
        user_lines=tuple(f"true story {n}" for n in range(1, 6)),
        user_edits=tuple(f"Edited line {n} of {writer}\twith a tab." for n in range(1, 6)),
        is_model_accepted=flags,
        likert=likert,
    )


SMALL = [row("w1", "TTFTF"), row("w2", "FFFFT", (1, 1, 1, 1, 1)), row("w3", "TTTTT")]


def test_header_is_the_script_layout():
    columns = header(5, 5)
    assert columns[0] == "writer"
    assert columns[1:6] == [f"modelLines{n}" for n in range(1, 6)]
    assert columns[21:26] == [f"isModelAccepted{n}" for n in range(1, 6)]
    assert columns[26] == "isModelAccepted"
    assert columns[-5:] == ["Q1", "Q2", "Q3", "Q4", "Q5"]


def test_write_then_read_gives_the_same_rows():
    text = write_cyoa_tsv(SMALL, 5, 5)
    rows, rounds, likert, ignored = read_cyoa_tsv(text)
    assert (rows, rounds, likert, ignored) == (SMALL, 5, 5, ())
    # The comma-joined column the script's preference count reads, after a leading field.
    assert ",true,true,false,true,false\t" in text


def test_accepted_flags_are_read_as_text():
    text = write_cyoa_tsv(SMALL, 5, 5)
    rows, *_ = read_cyoa_tsv(text)
    assert rows[0].is_model_accepted == ("true", "true", "false", "true", "false")
    # A user line that says "true" stays a text.
    assert rows[0].user_lines[0] == "true story 1"
    bad = text.replace("\ttrue\t", "\tTrue\t", 1)
    with pytest.raises(AnalysisError, match="expected the text 'true' or 'false', got 'True'"):
        read_cyoa_tsv(bad)


def test_reading_rejects_inconsistent_files():
    text = write_cyoa_tsv(SMALL, 5, 5)
    with pytest.raises(AnalysisError, match="disagrees"):
        read_cyoa_tsv(text.replace(",true,true,false,true,false", ",true,true,true,true,false"))
    with pytest.raises(AnalysisError, match="Likert answer 1 to 5"):
        read_cyoa_tsv(text.replace("\t4\t5\t3\t\t2\n", "\t4\t5\t7\t\t2\n", 1))
    with pytest.raises(AnalysisError, match="appears twice"):
        read_cyoa_tsv(text.replace("w2\t", "w1\t", 1))
    without_edits = "\t".join(c for c in header(5, 0) if not c.startswith("userEdits"))
    with pytest.raises(AnalysisError, match="userEdits1"):
        read_cyoa_tsv(without_edits + "\n")


def test_reading_a_file_without_index_names_writers_by_row():
    text = write_cyoa_tsv(SMALL, 5, 5)
    lines = [line.split("\t", 1)[1] for line in text.splitlines()]
    rows, *_ = read_cyoa_tsv("\n".join(lines) + "\n")
    assert [r.writer for r in rows] == ["row1", "row2", "row3"]


def test_pandas_style_float_likert_values_are_accepted():
    text = write_cyoa_tsv(SMALL, 5, 5).replace("\t4\t5\t3\t\t2\n", "\t4.0\t5.0\t3.0\t\t2.0\n")
    rows, *_ = read_cyoa_tsv(text)
    assert rows[0].likert == (4, 5, 3, None, 2)


@pytest.fixture
def db(tmp_path):
    database = store.connect(tmp_path / "import.sqlite")
    yield database
    database.close()


def test_round_trip_import_then_export_is_identical(db):
    text = write_cyoa_tsv(SMALL, 5, 5, exact=True)
    summary = import_tsv(db, text, "imported", source="small.tsv")
    assert (summary.writers, summary.rounds) == (3, 15)
    assert export_cyoa_tsv(db, "imported", exact=True) == text


def test_formula_like_text_is_neutralised_unless_exact(db):
    formula = row("=cmd|' /C calc'!A0", "TTFTF")
    text = write_cyoa_tsv([formula], 5, 5)
    assert "\n'=cmd|' /C calc'!A0\t" in text and "\n=cmd" not in text
    assert "'Model line 1" not in text  # only cells that a spreadsheet would run
    import_tsv(db, write_cyoa_tsv([formula], 5, 5, exact=True), "imported")
    rows, *_ = read_cyoa_tsv(export_cyoa_tsv(db, "imported", exact=True))
    assert rows == [formula]
    rows, *_ = read_cyoa_tsv(export_cyoa_tsv(db, "imported"))
    assert rows[0].writer == "'=cmd|' /C calc'!A0"


def test_import_records_the_events_of_a_study(db):
    import_tsv(db, write_cyoa_tsv(SMALL, 5, 5), "imported")
    session = db.execute(
        "SELECT s.id FROM sessions s JOIN participants p ON p.id = s.participant_id"
        " WHERE p.external_id = 'w1'"
    ).fetchone()[0]
    events = cowriting_store.load_events(db, session)
    types = [event["type"] for event in events]
    per_round = [
        "line_submitted",
        "suggestion_completed",
        "suggestion_completed",
        "suggestion_chosen",
        "turn_submitted",
    ]
    assert types == ["session_started", *per_round * 5, "survey_submitted"]
    # Replaying the events gives the finished story that the tables hold.
    state = flow.replay(
        flow.Limits(rounds=5), [flow.Event(e["type"], e["payload"]) for e in events]
    )
    assert state.phase == flow.Phase.DONE
    assert state.rounds[2].final_text == SMALL[0].user_edits[2]
    rounds = list(db.query("SELECT * FROM rounds WHERE session_id = ? ORDER BY round", [session]))
    assert [r["chosen_system"] for r in rounds] == [
        "model",
        "model",
        "baseline",
        "model",
        "baseline",
    ]
    assert rounds[2]["chosen_suggestion"] == SMALL[0].baseline_lines[2]
    assert rounds[2]["final_text"] == SMALL[0].user_edits[2]
    answers = {
        a["item_id"]: a["value"]
        for a in db.query("SELECT * FROM survey_answers WHERE session_id = ?", [session])
    }
    assert answers == {"Q1": 4, "Q2": 5, "Q3": 3, "Q5": 2}
    experiment = store.get_experiment(db, "imported")
    assert experiment["status"] == "closed"
    assert json.loads(experiment["spec"])["import"]["slot_order_recorded"] is False


def test_import_refuses_a_name_in_use_or_invalid(db):
    text = write_cyoa_tsv(SMALL, 5, 5)
    import_tsv(db, text, "imported")
    with pytest.raises(AnalysisError, match="already an experiment 'imported'"):
        import_tsv(db, text, "imported")
    with pytest.raises(AnalysisError, match="cannot be an experiment name"):
        import_tsv(db, text, "Bad Name")


def test_imported_study_reports_no_position_bias(db):
    import_tsv(db, write_cyoa_tsv(SMALL, 5, 5), "imported")
    data = load_study(db, "imported")
    assert data.systems == ("model", "baseline")
    assert not data.slot_order_recorded


def test_export_of_a_study_maps_first_system_to_model_whatever_the_slot(tmp_path):
    db = store.connect(tmp_path / "native.sqlite")
    make_experiment(db)
    turns = [
        Turn(
            line=f"My line {n}.",
            suggestions={FIRST: f"Alpha says {n}.", SECOND: f"Beta says {n}."},
            slot1=SECOND,
            chosen=SECOND if n == 2 else FIRST,
            final=f"Final {n}.",
        )
        for n in range(1, 6)
    ]
    add_writer(
        db,
        "writer-1",
        turns,
        {"happy": 5, "collaborative": 4, "useful": 3, "connected": 2, "ideas": 1},
    )
    # An unfinished story is not exported.
    add_writer(db, "writer-2", turns[:2])
    rows, rounds, likert, _ = read_cyoa_tsv(export_cyoa_tsv(db, "exp"))
    assert (rounds, likert, len(rows)) == (5, 5, 1)
    only = rows[0]
    assert only.writer == "writer-1"
    assert only.model_lines == tuple(f"Alpha says {n}." for n in range(1, 6))
    assert only.baseline_lines == tuple(f"Beta says {n}." for n in range(1, 6))
    assert only.is_model_accepted == ("true", "false", "true", "true", "true")
    assert only.likert == (5, 4, 3, 2, 1)
    db.close()
