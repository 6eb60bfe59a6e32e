"""Exports: every table in every format read back with pandas / pyarrow, spreadsheet formula
injection neutralised in CSV, the CYOA TSV, the zip bundle and its evaluation card."""

import io
import json
import zipfile

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from conftest import SURVEY_ANSWERS, Researcher, Writer, fresh_database, write_setup

from cyoa import create_app, store
from cyoa.cli import cli
from cyoa.cowriting.research import exports
from cyoa.rating.research.exports import RATING_TABLES
from cyoa.web.security import neutralize_cell
from cyoa.web.tables import data_dictionary

pytestmark = pytest.mark.both_databases

FORMULA = '=HYPERLINK("http://evil.example","click me now")'
LINE = "-2+3 is how this writer's line begins."


def kept_as_is(writer: Writer, n: int) -> str:
    """Round ``n``: take the slot-1 suggestion without editing it; returns its text."""
    assert writer.act("line_submitted", {"text": f"The writer's own line for round {n}."})["ok"]
    state = writer.wait_for("choosing")
    text = state["current"]["suggestions"][0]["text"]
    assert writer.act("suggestion_chosen", {"slot": 1})["ok"]
    assert writer.act("turn_submitted", {"text": text})["ok"]
    return text


@pytest.fixture(scope="module")
def study(tmp_path_factory, request, database_kind):
    """One finished writer (round 1 kept as is, round 2 a formula, round 3 starting with
    '-', a switch in round 4) and one who stopped after a round; written once for the module
    and each kind of database (the tests only read)."""
    folder = tmp_path_factory.mktemp("exports")
    database = fresh_database(request, database_kind, folder)
    app = create_app({**write_setup(folder), "DATABASE": database})
    finished = Writer(app, "?pid=finished")
    kept = kept_as_is(finished, 1)
    finished.write_round(2, edit=FORMULA)
    ack = finished.act("line_submitted", {"text": LINE})
    assert ack["ok"], ack
    finished.wait_for("choosing")
    finished.act("suggestion_chosen", {"slot": 2})
    finished.act("turn_submitted", {"text": "+ a plus sign starts this kept text."})
    finished.act("line_submitted", {"text": "The writer's own line for round 4."})
    finished.wait_for("choosing")
    finished.act("suggestion_chosen", {"slot": 1})
    finished.act("suggestion_chosen", {"slot": 2, "switch": True})
    finished.act("turn_submitted", {"text": "The edited suggestion kept in round 4."})
    finished.write_round(5)
    answers = {**SURVEY_ANSWERS, "why_chosen": "@SUM(A1:A9) was my reason"}
    assert finished.act("survey_submitted", {"answers": answers})["ok"]
    Writer(app, "?pid=stopped").write_round(1)
    researcher = Researcher(app)
    assert researcher.login().status_code == 302
    return {"app": app, "researcher": researcher, "kept": kept}


@pytest.fixture
def app(study):
    return study["app"]


@pytest.fixture
def researcher(study):
    return study["researcher"]


def read_back(data: bytes, fmt: str) -> pd.DataFrame:
    if fmt == "csv":
        return pd.read_csv(io.BytesIO(data), keep_default_na=False, na_values=[""])
    if fmt == "jsonl":
        return pd.read_json(io.BytesIO(data), lines=True, dtype=False)
    return pq.read_table(io.BytesIO(data)).to_pandas()


def download(researcher, name: str):
    response = researcher.get(f"/research/experiments/fake-ab/download/{name}")
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Content-Disposition"].startswith("attachment; filename=fake-ab-")
    return response.data


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_the_preference_table_has_one_row_per_writer_and_round(researcher, study, fmt):
    table = read_back(download(researcher, f"preference.{fmt}"), fmt)
    assert list(table.columns) == [c.name for c in exports.PREFERENCE_COLUMNS]
    assert list(zip(table["participant"], table["round"], strict=True)) == [
        ("finished", 1),
        ("finished", 2),
        ("finished", 3),
        ("finished", 4),
        ("finished", 5),
        ("stopped", 1),
    ]
    first = table.iloc[0]
    assert first["chosen_slot"] == 1 and first["chosen_suggestion"] == study["kept"]
    assert first["final_text"] == study["kept"] == first["slot1_text"]
    assert first["edit_distance"] == 0 and first["jaccard"] == 100.0
    assert first["chosen_system"] == first["slot1_system"]
    assert {first["slot1_model"], first["slot2_model"]} == {"fake-a", "fake-b"}
    sampling = json.loads(
        first["slot2_sampling"] if first["slot2_model"] == "fake-b" else first["slot1_sampling"]
    )
    assert sampling["top_k"] == 20
    assert first["slot1_generation_seconds"] >= 0
    assert first["slot1_waited_seconds"] >= 0
    assert first["turn_submitted_at"].endswith("Z") and first["round_seconds"] >= 0
    fourth = table.iloc[3]
    assert fourth["switches"] == 1 and fourth["chosen_slot"] == 2
    assert fourth["edit_distance"] > 0
    assert not table["one_suggestion_only"].astype(bool).any()
    formula = table.iloc[1]["final_text"]
    line = table.iloc[2]["writer_line"]
    if fmt == "csv":
        assert formula == "'" + FORMULA and line == "'" + LINE
    else:
        assert formula == FORMULA and line == LINE


def test_parquet_columns_are_typed(researcher, study):
    schema = pq.read_table(io.BytesIO(download(researcher, "preference.parquet"))).schema
    assert str(schema.field("round").type) == "int64"
    assert str(schema.field("one_suggestion_only").type) == "bool"
    assert str(schema.field("edit_distance").type) == "int64"
    assert str(schema.field("user").type) == "double"
    assert str(schema.field("final_text").type) == "string"


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_sessions_events_and_survey_tables(app, researcher, study, fmt):
    sessions = read_back(download(researcher, f"sessions.{fmt}"), fmt)
    assert list(sessions["participant"]) == ["finished", "stopped"]
    assert list(sessions["status"]) == ["finished", "in_progress"]
    assert list(sessions["rounds_submitted"]) == [5, 1]
    assert sessions.iloc[0]["session_seconds"] > 0
    events = read_back(download(researcher, f"events.{fmt}"), fmt)
    db = store.connect(app.config["DATABASE"])
    stored = db.execute("SELECT count(*) FROM events").fetchone()[0]
    db.close()
    assert len(events) == stored
    assert events.iloc[0]["type"] == "session_started"
    assert json.loads(events.iloc[0]["payload"])["experiment"] == "fake-ab"
    survey = read_back(download(researcher, f"survey.{fmt}"), fmt)
    assert len(survey) == len(SURVEY_ANSWERS)
    happy = survey[survey["item_id"] == "happy"].iloc[0]
    assert happy["value"] == 4 and happy["label"] == "Agree"
    why = survey[survey["item_id"] == "why_chosen"].iloc[0]["text"]
    assert why == ("'@SUM(A1:A9) was my reason" if fmt == "csv" else "@SUM(A1:A9) was my reason")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("+1", "'+1"),
        ("-1", "'-1"),
        ("@A1", "'@A1"),
        ("\tX", "'\tX"),
        ("\rX", "'\rX"),
        ("Safe = text", "Safe = text"),
        (-1, -1),
        (None, None),
    ],
)
def test_formula_like_cells_are_neutralised(value, expected):
    assert neutralize_cell(value) == expected


def test_the_cyoa_tsv_has_one_row_per_complete_story(researcher, study):
    table = pd.read_table(io.BytesIO(download(researcher, "cyoa.tsv")), index_col=0)
    assert list(table.index) == ["finished"]
    assert table.loc["finished", "Q1"] == 4


def test_the_cyoa_tsv_is_neutralised_unless_the_exact_text_is_asked_for(app, researcher, tmp_path):
    for data in (
        download(researcher, "cyoa.tsv"),
        zipfile.ZipFile(io.BytesIO(download(researcher, "bundle.zip"))).read("cyoa.tsv"),
    ):
        table = pd.read_table(io.BytesIO(data), index_col=0)
        assert table.loc["finished", "userEdits2"] == "'" + FORMULA
        assert table.loc["finished", "userLines3"] == "'" + LINE
        assert table.loc["finished", "userEdits3"] == "'+ a plus sign starts this kept text."
    out = tmp_path / "exact.tsv"
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    base = ["--db", app.config["DATABASE"], "export", "fake-ab", "--out", str(out)]
    result = CliRunner().invoke(cli, [*base, "--format", "cyoa-tsv", "--exact-text"], env=env)
    assert result.exit_code == 0, result.output
    table = pd.read_table(out, index_col=0)
    assert table.loc["finished", "userEdits2"] == FORMULA
    assert table.loc["finished", "userLines3"] == LINE
    wrong = CliRunner().invoke(cli, [*base, "--format", "csv", "--exact-text"], env=env)
    assert wrong.exit_code != 0 and "--exact-text is for --format cyoa-tsv" in wrong.output


def test_the_bundle_holds_every_table_the_docs_the_spec_and_the_card(researcher, study):
    researcher.post(
        "/research/experiments/fake-ab/details",
        data={"pay": "GBP 2.50 per story", "qualifications": "Fluent English speakers"},
    )
    archive = zipfile.ZipFile(io.BytesIO(download(researcher, "bundle.zip")))
    names = set(archive.namelist())
    for table in exports.TABLES:
        assert {f"{table}.csv", f"{table}.parquet"} <= names
    assert {"cyoa.tsv", "data-dictionary.md", "experiment-spec.json", "evaluation-card.md"} <= names
    preference = pq.read_table(io.BytesIO(archive.read("preference.parquet"))).to_pandas()
    assert len(preference) == 6
    assert json.loads(archive.read("experiment-spec.json"))["id"] == "fake-ab"
    assert "## preference" in archive.read("data-dictionary.md").decode()
    card = archive.read("evaluation-card.md").decode()
    for heading in (
        "## Task",
        "## Length of the rated text",
        "## Rated attributes",
        "## Scale and labels",
        "## Instructions",
        "## Qualifications and quality control",
        "## Number of items",
        "## Systems",
        "## Raters per item",
        "## Human references shown",
        "## Pay",
        "## Time on task (measured)",
    ):
        assert heading in card
    assert "> GBP 2.50 per story" in card and "> Fluent English speakers" in card
    assert "Writers (sessions started): 2; finished (survey submitted): 1" in card
    assert "| fake-b-topk | fake-b |" in card and '"top_k": 20' in card
    assert "> Write with the machine." in card
    assert "1 = Strongly disagree" in card
    assert "## Results (writers as the unit)" in card
    assert "- Headline: the mean writer chose fake-a-topk in" in card and "(2 writers)" in card
    assert "- Clark & Smith's pooled binomial (rounds as independent):" in card
    assert "- Per round, binomial p (Holm across the rounds): round 1 " in card
    assert "after 1 complete stories" in card
    assert "- Study status: not yet decisive, and no planned N" in card
    assert "Per-round edit means are descriptive: no test is made per round." in card


def test_every_export_column_is_in_the_data_dictionary():
    dictionary = data_dictionary().decode("utf-8")
    rating = dictionary.split("## Exports of rating experiments", 1)[1]
    cowriting = dictionary.split("## Exports\n", 1)[1].split("## Exports of rating", 1)[0]
    for part, tables in ((cowriting, exports.TABLES), (rating, RATING_TABLES)):
        for table, columns in tables.items():
            assert f"### {table}" in part
            section = part.split(f"### {table}", 1)[1].split("\n### ", 1)[0]
            for column in columns:
                assert f"`{column.name}`" in section, (table, column.name)


def test_the_command_line_writes_the_same_exports(app, study, tmp_path):
    runner = CliRunner()
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    base = ["--db", app.config["DATABASE"], "export", "fake-ab"]
    for fmt in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"survey.{fmt}"
        result = runner.invoke(
            cli, [*base, "--format", fmt, "--table", "survey", "--out", str(out)], env=env
        )
        assert result.exit_code == 0, result.output
        assert len(read_back(out.read_bytes(), fmt)) == len(SURVEY_ANSWERS)
    out = tmp_path / "preference.csv"
    result = runner.invoke(cli, [*base, "--format", "csv", "--out", str(out)], env=env)
    assert len(read_back(out.read_bytes(), "csv")) == 6
    out = tmp_path / "bundle.zip"
    result = runner.invoke(cli, [*base, "--format", "bundle", "--out", str(out)], env=env)
    assert result.exit_code == 0, result.output
    assert "evaluation-card.md" in zipfile.ZipFile(out).namelist()
    missing = runner.invoke(
        cli,
        ["--db", app.config["DATABASE"], "export", "nope", "--format", "csv", "--out", "-"],
        env=env,
    )
    assert missing.exit_code != 0 and "There is no experiment 'nope'" in missing.output
