"""Preference data for model builders, from a built study: TRL's field names, the human edit,
the left-out rounds, the dataset card."""

from __future__ import annotations

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from cyoa.cowriting.research.preference_data import export, preference_pairs
from cyoa.generation.text import build_prompt
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment


@pytest.fixture
def study(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    make_experiment(db, rounds=3)
    add_writer(
        db,
        "PROLIFIC123",
        [
            Turn("A fox ran.", {FIRST: "It hid.", SECOND: "It sang."}, FIRST, SECOND, "It sang!"),
            Turn("Rain came.", {FIRST: "Cold.", SECOND: None}, FIRST, FIRST, "Cold."),
            Turn("Night fell.", {FIRST: "Stars.", SECOND: "Moon."}, SECOND, FIRST, "Stars!"),
        ],
    )
    return db


def test_each_round_is_a_pair_with_the_story_so_far_and_the_writers_edit(study):
    rows, left_out = preference_pairs(study, "exp", "CC-BY-4.0")
    assert left_out == 1
    first, last = rows
    assert {k: first[k] for k in ("prompt", "chosen", "rejected", "edited")} == {
        "prompt": "A fox ran.",
        "chosen": "It sang.",
        "rejected": "It hid.",
        "edited": "It sang!",
    }
    assert (first["chosen_system"], first["rejected_system"], first["chosen_slot"]) == (
        SECOND,
        FIRST,
        2,
    )
    # The left-out round's turns stay in the story the next round continues.
    assert last["prompt"] == "A fox ran. It sang! Rain came. Cold. Night fell."
    assert (last["chosen"], last["rejected"], last["round"]) == ("Stars.", "Moon.", 3)


def test_the_prompt_is_the_story_as_the_models_saw_it(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    make_experiment(db, rounds=2)
    add_writer(
        db,
        "w1",
        [
            Turn("a fox  ran,", {FIRST: "It hid.", SECOND: "It sang."}, FIRST, FIRST, "It hid"),
            Turn("Rain\tcame", {FIRST: "Cold.", SECOND: "Wet."}, SECOND, SECOND, "Wet."),
        ],
    )
    rows, _ = preference_pairs(db, "exp")
    assert [r["prompt"] for r in rows] == ["a fox ran.", "a fox ran, It hid Rain came."]
    turns = [["a fox  ran,"], ["a fox  ran,", "It hid", "Rain\tcame"]]
    assert [r["prompt"] for r in rows] == [build_prompt(t, "{story}") for t in turns]
    db.close()


def test_a_licence_with_a_colon_and_a_line_break_keeps_the_cards_header_valid_yaml(study):
    licence = "CC-BY-4.0: ask first\nsecond line"
    with zipfile.ZipFile(io.BytesIO(export(study, "exp", "zip", licence))) as z:
        card = z.read("README.md").decode()
    header = card.split("---\n")[1]
    assert yaml.safe_load(header)["license"] == licence


def test_writers_appear_by_number_never_by_their_platform_id(study):
    data = export(study, "exp", "jsonl")
    assert b"PROLIFIC123" not in data
    rows = [json.loads(line) for line in data.splitlines()]
    assert {r["writer"] for r in rows} == {"writer-1"}
    assert {r["licence"] for r in rows} == {"not stated"}
    assert all(r["consented_at"] for r in rows)


def test_the_parquet_has_trls_preference_columns_first(study):
    table = pq.read_table(io.BytesIO(export(study, "exp", "parquet", "MIT")))
    assert table.column_names[:4] == ["prompt", "chosen", "rejected", "edited"]
    assert table.num_rows == 2


def test_the_zip_carries_a_dataset_card_with_the_licence_and_what_was_left_out(study):
    with zipfile.ZipFile(io.BytesIO(export(study, "exp", "zip", "CC-BY-4.0"))) as z:
        assert set(z.namelist()) == {
            "preference-data.jsonl",
            "preference-data.parquet",
            "README.md",
        }
        card = z.read("README.md").decode()
    assert 'license: "CC-BY-4.0"' in card
    assert "2 rounds by 1 writers. 1 rounds where one suggestion failed" in card
    assert "`edited`" in card


def test_without_a_licence_the_card_says_to_ask_before_reuse(study):
    with zipfile.ZipFile(io.BytesIO(export(study, "exp", "zip"))) as z:
        card = z.read("README.md").decode()
    assert 'license: "unknown"' in card
    assert "ask the study's researchers before you share or train on it" in card


def test_the_verb_writes_the_zip_and_refuses_an_unknown_study_with_a_sentence(tmp_path):
    path = tmp_path / "study.sqlite"
    db = store.connect(path)
    make_experiment(db)
    add_writer(db, "w1", [Turn("Go.", {FIRST: "Now.", SECOND: "Later."}, FIRST, FIRST, "Now!")])
    db.close()
    out = tmp_path / "pairs.zip"
    runner = CliRunner()
    args = ["--db", str(path), "preference-data", "exp", "--out", str(out), "--licence", "MIT"]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as z:
        assert json.loads(z.read("preference-data.jsonl"))["licence"] == "MIT"
    result = runner.invoke(cli, ["--db", str(path), "preference-data", "nope", "--out", "-"])
    assert result.exit_code == 1
    assert "There is no experiment 'nope' in this database: check the name." in result.output


def test_the_research_page_links_the_preference_data_with_the_licence_asked(app, researcher):
    db = store.connect(app.config["DATABASE"])
    make_experiment(db)
    add_writer(db, "w1", [Turn("Go.", {FIRST: "Now.", SECOND: "Later."}, FIRST, FIRST, "Now!")])
    db.close()
    page = researcher.get("/research/experiments/exp").get_data(as_text=True)
    assert "/research/experiments/exp/preference-data.zip" in page
    reply = researcher.get("/research/experiments/exp/preference-data.zip?licence=CC0-1.0")
    assert reply.status_code == 200
    with zipfile.ZipFile(io.BytesIO(reply.data)) as z:
        assert 'license: "CC0-1.0"' in z.read("README.md").decode()
