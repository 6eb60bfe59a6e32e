"""The analysis verbs of ``python -m cyoa``: analyze, metrics, import-tsv, export."""

import csv
import io
import json

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from cyoa.cowriting.analysis.tsv import write_cyoa_tsv
from cyoa.metrics.edit import METRIC_COLUMNS
from tests.study_builder import add_writer, make_experiment, story
from tests.study_builder import tsv_rows as rows

pytestmark = pytest.mark.both_databases


@pytest.fixture
def runner():
    return CliRunner()


@pytest.fixture
def study(tmp_path, runner, database):
    """A database holding the TSV of ``rows()`` imported as experiment ``study``."""
    tsv = tmp_path / "study.tsv"
    tsv.write_text(write_cyoa_tsv(rows(), 5, 5), encoding="utf-8")
    db = database
    result = runner.invoke(cli, ["--db", str(db), "import-tsv", str(tsv), "--name", "study"])
    assert result.exit_code == 0, result.output
    assert "Imported 4 writers (20 rounds) as experiment 'study'." in result.output
    return db, tsv


def test_import_then_export_gives_the_same_file(runner, study, tmp_path):
    db, tsv = study
    out = tmp_path / "out.tsv"
    args = ["--db", str(db), "export", "study", "--format", "cyoa-tsv", "--out", str(out)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8") == tsv.read_text(encoding="utf-8")


def test_export_names_the_formats_it_offers(runner, study, tmp_path):
    db, _ = study
    args = ["--db", str(db), "export", "study", "--format", "xlsx", "--out", "x"]
    result = runner.invoke(cli, args)
    assert result.exit_code != 0
    assert "'cyoa-tsv'" in result.output and "'parquet'" in result.output


def test_analyze_prints_markdown_tables(runner, study):
    db, _ = study
    result = runner.invoke(cli, ["--db", str(db), "analyze", "study"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "## Tables 1/4: % of rounds in which model was chosen over baseline" in out
    assert "| Overall | 11 / 20 | 55.0% |" in out
    assert "p (two-sided)" in out
    assert "## Tables 2/5" in out and "## Tables 7/8" in out and "## Tables 3/6" in out
    assert "## Likert items" in out
    assert "Position bias: not computed" in out


def test_analyze_shows_the_chosen_alternative(runner, study):
    db, _ = study
    result = runner.invoke(cli, ["--db", str(db), "analyze", "study", "--alternative", "greater"])
    assert result.exit_code == 0, result.output
    assert "p (greater)" in result.output


def test_analyze_compat_says_what_the_script_did(runner, study):
    db, _ = study
    result = runner.invoke(cli, ["--db", str(db), "analyze", "study", "--compat", "cyoa-2021"])
    assert result.exit_code == 0, result.output
    assert "--compat cyoa-2021" in result.output
    assert "one-sided" in result.output
    assert "JS (fraction)" in result.output


def test_analyze_json_holds_every_number(runner, study):
    db, _ = study
    result = runner.invoke(cli, ["--db", str(db), "analyze", "study", "--format", "json"])
    assert result.exit_code == 0, result.output
    (data,) = json.loads(result.output)
    overall = data["preference"]["rows"][0]
    assert (overall["chosen"], overall["total"], overall["share"]) == (11, 20, 0.55)
    assert data["edits"]["rows"][0]["by_round"]["1"]["Overall"]["n"] == 4
    assert data["compat"] is None


def test_analyze_csv_is_one_value_per_line(runner, study):
    db, _ = study
    result = runner.invoke(cli, ["--db", str(db), "analyze", "study", "--format", "csv"])
    assert result.exit_code == 0, result.output
    table = list(csv.DictReader(io.StringIO(result.output)))
    assert set(table[0]) == {"pair", "table", "row", "column", "value"}
    assert {r["pair"] for r in table} == {"model vs baseline"}
    values = {(r["table"], r["row"], r["column"]): r["value"] for r in table}
    assert values[("preference", "Overall", "chosen")] == "11"
    assert values[("preference", "Overall", "alternative")] == "two-sided"


def test_analyze_unknown_experiment_says_what_exists(runner, study):
    db, _ = study
    result = runner.invoke(cli, ["--db", str(db), "analyze", "nope"])
    assert result.exit_code != 0
    assert "no experiment 'nope'" in result.output
    assert "experiments: study" in result.output


@pytest.mark.sqlite_only  # a missing SQLite file
def test_analyze_without_a_database_file(runner, tmp_path):
    result = runner.invoke(cli, ["--db", str(tmp_path / "missing.sqlite"), "analyze", "x"])
    assert result.exit_code != 0
    assert "There is no database" in result.output


def test_import_reports_a_bad_file(runner, tmp_path, database):
    bad = tmp_path / "bad.tsv"
    bad.write_text(write_cyoa_tsv(rows(), 5, 5).replace("\ttrue\t", "\tTRUE\t", 1))
    db = database
    result = runner.invoke(cli, ["--db", str(db), "import-tsv", str(bad), "--name", "bad"])
    assert result.exit_code != 0
    assert "expected the text 'true' or 'false', got 'TRUE'" in result.output


@pytest.mark.sqlite_only  # no database
def test_metrics_adds_the_eight_columns(runner, tmp_path):
    source = tmp_path / "in.jsonl"
    records = [
        {"id": 1, "original": "The old knight drew a sword.", "edited": "The knight drew."},
        {"id": 2, "original": "Same.", "edited": "Same."},
    ]
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["metrics", "--input", str(source), "--output", str(out)]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    scored = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in scored] == [1, 2]
    assert set(METRIC_COLUMNS) <= set(scored[0])
    assert scored[1]["edit_distance"] == 0 and scored[1]["user_f"] == 100.0


@pytest.mark.sqlite_only  # no database
def test_metrics_storium_variant_to_stdout(runner, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"original": "a b c", "edited": "a b c"}) + "\n")
    result = runner.invoke(cli, ["metrics", "--input", str(source), "--variant", "storium"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["user"] == record["user_precision"]


@pytest.mark.sqlite_only  # no database
def test_metrics_of_chinese_records_compare_characters(runner, tmp_path):
    source = tmp_path / "in.jsonl"
    record = {"original": "我们走了。", "edited": "我们来了。"}
    source.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    english = json.loads(runner.invoke(cli, ["metrics", "--input", str(source)]).output)
    chinese = runner.invoke(cli, ["metrics", "--input", str(source), "--language", "zh"])
    assert chinese.exit_code == 0, chinese.output
    # In English USER keeps ASCII letters only: nothing of a Chinese text. In Chinese, the
    # characters 我 们 and 了 of 4 are kept: 75.
    assert (english["user"], json.loads(chinese.output)["user"]) == (0.0, 75.0)


@pytest.mark.sqlite_only  # no database
def test_metrics_names_a_bad_line(runner, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text('{"original": "a", "edited": "b"}\n{"original": "a"}\n')
    result = runner.invoke(cli, ["metrics", "--input", str(source)])
    assert result.exit_code != 0
    assert "Line 2" in result.output and "'edited'" in result.output
    source.write_text("not json\n")
    result = runner.invoke(cli, ["metrics", "--input", str(source)])
    assert "Line 1 is not valid JSON" in result.output


def test_every_pair_of_a_three_system_experiment(runner, tmp_path, database):
    path = database
    db = store.connect(path)
    make_experiment(db, systems=("a", "b", "c"))
    add_writer(db, "w1", story(("a", "b"), "a", "w1"), pair=("a", "b"))
    add_writer(db, "w2", story(("c", "a"), "c", "w2"), pair=("c", "a"))
    db.close()
    result = runner.invoke(cli, ["--db", str(path), "analyze", "exp", "--format", "json"])
    assert result.exit_code == 0, result.output
    *pairs, last = json.loads(result.output)
    assert [a["systems"] for a in pairs] == [["a", "b"], ["a", "c"]]
    # Two writers do not determine three strengths: the ranking says so.
    assert last["ranking"]["plain"] is None and last["ranking"]["notes"]
    result = runner.invoke(cli, ["--db", str(path), "analyze", "exp", "--pair", "c", "a"])
    assert "# Analysis of exp: a vs c" in result.output
    assert "a vs b" not in result.output

    out = tmp_path / "ac.tsv"
    export = ["--db", str(path), "export", "exp", "--format", "cyoa-tsv", "--out", str(out)]
    result = runner.invoke(cli, export)
    assert result.exit_code != 0 and "--pair" in result.output
    result = runner.invoke(cli, [*export, "--pair", "a", "c"])
    assert result.exit_code == 0, result.output
    # Writer w2 took c, the pair's second system (Baseline), in every round.
    assert "\tfalse\tfalse\tfalse\tfalse\tfalse\t,false,false,false,false,false\t" in (
        out.read_text()
    )
