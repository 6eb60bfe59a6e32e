"""Rating experiments from the command line: ``import-ratings``, then ``analyze`` and
``experiment list`` on them, and clear errors that store nothing."""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from tests.paths import DATA

pytestmark = pytest.mark.both_databases

TTCW_DATA = DATA / "ttcw"
ANNOTATIONS = TTCW_DATA / "ttcw_annotations_gpt.json"
STORIES = TTCW_DATA / "ttcw_short_stories.json"


@pytest.fixture
def db_path(database) -> str:
    return database


def run(db_path: str, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db_path), *args])


def experiment_ids(db_path: str) -> list[str]:
    db = store.connect(db_path)
    try:
        return [row[0] for row in db.execute("SELECT id FROM experiments ORDER BY id")]
    finally:
        db.close()


def write_csv(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def aiss_rows(story: str, source: str, rater: str, answer: int) -> list[dict]:
    """One rater's 22 AISS answers to one story, all ``answer``."""
    return [
        {"story_id": story, "source": source, "rater_id": rater, "item": n, "value": answer}
        for n in range(1, 23)
    ]


def test_the_released_ttcw_judgements_become_a_rating_experiment_with_table_5(db_path):
    result = run(
        db_path,
        "import-ratings",
        str(ANNOTATIONS),
        "--format",
        "ttcw",
        "--name",
        "ttcw-gpt",
        "--stories",
        str(STORIES),
    )
    assert result.exit_code == 0, result.output
    assert "Imported 1,008 judgements of 24 stories by 11 raters" in result.output
    analysis = run(db_path, "analyze", "ttcw-gpt", "--format", "json")
    assert analysis.exit_code == 0, analysis.output
    data = json.loads(analysis.output)
    pass_rates = data["all_raters"]["tests"]["pass_rates"]
    rates = {(rate["test_id"], rate["source"]): rate["rate"] for rate in pass_rates}
    # Table 5 of Chakrabarty et al. (CHI 2024): Narrative Ending 8.3% (GPT3.5), 19.4% (GPT4);
    # Originality in Theme and Content 0% and 19.4%.
    assert rates["1", "GPT3.5"] == pytest.approx(3 / 36)
    assert rates["1", "GPT4"] == pytest.approx(7 / 36)
    assert rates["11", "GPT3.5"] == 0
    assert rates["11", "GPT4"] == pytest.approx(7 / 36)
    listing = run(db_path, "experiment", "list")
    assert "ttcw-gpt\tclosed\trating" in listing.output


def test_stories_keep_their_text_or_their_link(db_path):
    run(db_path, "import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "t",
        "--stories", str(STORIES))  # fmt: skip
    db = store.connect(db_path)
    rows = {r["story_id"]: r for r in db.query("SELECT * FROM stories WHERE experiment_id = 't'")}
    assert len(rows) == 24 and all(row["source"] in ("GPT3.5", "GPT4") for row in rows.values())
    assert all(len(row["text"].split()) > 500 and row["title"] for row in rows.values())


def test_an_aiss_study_in_long_csv_is_imported_and_analysed_per_source(db_path, tmp_path):
    rows = []
    for story, source, answer in (("s1", "human", 4), ("s2", "human", 5), ("s3", "model", 2)):
        for rater in ("r1", "r2"):
            rows += aiss_rows(story, source, rater, answer)
    path = write_csv(tmp_path / "aiss.csv", rows)
    result = run(
        db_path, "import-ratings", str(path), "--format", "long", "--instrument", "aiss-v1",
        "--name", "aiss",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Imported 132 judgements of 3 stories by 2 raters" in result.output
    analysis = run(db_path, "analyze", "aiss")
    assert analysis.exit_code == 0, analysis.output
    assert "Coherence" in analysis.output and "human" in analysis.output


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"item": 23}, "aiss.csv, line 3, field 'item'"),
        ({"value": 6}, "aiss.csv, line 3, field 'value'"),
        ({"value": "often"}, "aiss.csv, line 3, field 'value'"),
        ({"value": "²"}, "aiss.csv, line 3, field 'value'"),
        ({"value": "①"}, "aiss.csv, line 3, field 'value'"),
        ({"value": "9" * 5000}, "aiss.csv, line 3, field 'value'"),
        ({"item": 1}, "judged item '1' of story 's1' already on line 2"),
        ({"story_id": ""}, "aiss.csv, line 3: the field 'story_id' is missing or empty"),
    ],
)
def test_a_bad_row_names_its_file_line_and_field_and_nothing_is_stored(
    db_path, tmp_path, row, expected
):
    store.init_db(store.connect(db_path))
    rows = aiss_rows("s1", "human", "r1", 3)
    rows[1] = {**rows[1], **row}
    path = write_csv(tmp_path / "aiss.csv", rows)
    result = run(
        db_path, "import-ratings", str(path), "--format", "long", "--instrument", "aiss-v1",
        "--name", "bad",
    )  # fmt: skip
    assert result.exit_code != 0
    assert expected in result.output
    assert "bad" not in experiment_ids(db_path)


def test_a_story_with_two_sources_is_refused(db_path, tmp_path):
    rows = aiss_rows("s1", "human", "r1", 3) + aiss_rows("s1", "model", "r2", 3)
    path = write_csv(tmp_path / "aiss.csv", rows)
    result = run(db_path, "import-ratings", str(path), "--format", "long", "--instrument",
                 "aiss-v1", "--name", "x")  # fmt: skip
    assert result.exit_code != 0 and "two sources, 'human' and 'model'" in result.output


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_an_fei_study_needs_its_questions_and_each_question_its_kind(db_path, tmp_path):
    questions = [
        {"story_id": "s1", "question_id": "q1", "kind": "transitional", "text": "A then B?"},
        {"story_id": "s1", "question_id": "q2", "kind": "world", "text": "Is it winter?"},
        {"story_id": "s2", "question_id": "q3", "kind": "world", "text": "Is it night?"},
    ]
    answers = [
        {"story_id": story, "source": source, "rater_id": rater, "item": q, "value": value}
        for story, source, q, values in (
            ("s1", "orig", "q1", ("true", "true", "true")),
            ("s1", "orig", "q2", ("yes", "no", "1")),
            ("s2", "corrupt", "q3", ("false", "true", "0")),
        )
        for rater, value in zip(("a", "b", "c"), values, strict=True)
    ]
    answers_path = write_jsonl(tmp_path / "answers.jsonl", answers)
    missing = run(db_path, "import-ratings", str(answers_path), "--format", "long",
                  "--instrument", "fei", "--name", "fei")  # fmt: skip
    assert missing.exit_code != 0 and "needs --questions" in missing.output

    kindless = write_jsonl(tmp_path / "q.jsonl", [{**questions[0], "kind": "plot"}])
    bad = run(db_path, "import-ratings", str(answers_path), "--format", "long", "--instrument",
              "fei", "--questions", str(kindless), "--name", "fei")  # fmt: skip
    assert bad.exit_code != 0 and "q.jsonl, line 1, field 'kind'" in bad.output

    good = write_jsonl(tmp_path / "questions.jsonl", questions)
    result = run(db_path, "import-ratings", str(answers_path), "--format", "long",
                 "--instrument", "fei", "--questions", str(good), "--name", "fei")  # fmt: skip
    assert result.exit_code == 0, result.output
    analysis = json.loads(run(db_path, "analyze", "fei", "--format", "json").output)
    assert analysis["all_raters"]["fei"] is not None


def test_an_answer_to_another_story_s_question_is_refused(db_path, tmp_path):
    questions = write_jsonl(
        tmp_path / "questions.jsonl",
        [{"story_id": "s1", "question_id": "q1", "kind": "world", "text": "Winter?"}],
    )
    answers = write_jsonl(
        tmp_path / "answers.jsonl",
        [{"story_id": "s2", "source": "x", "rater_id": "a", "item": "q1", "value": "true"}],
    )
    result = run(db_path, "import-ratings", str(answers), "--format", "long", "--instrument",
                 "fei", "--questions", str(questions), "--name", "fei")  # fmt: skip
    assert result.exit_code != 0
    assert "answers.jsonl, line 1, field 'item': question 'q1' is about story 's1'" in result.output


def test_a_taken_name_is_refused_and_the_first_experiment_kept(db_path):
    args = ["import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "t"]
    assert run(db_path, *args).exit_code == 0
    again = run(db_path, *args)
    assert again.exit_code != 0 and "exists already" in again.output
    db = store.connect(db_path)
    assert db.execute("SELECT count(*) FROM judgements").fetchone()[0] == 1008


def test_the_name_new_is_refused_because_it_names_the_rating_form(db_path):
    result = run(db_path, "import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "new")
    assert result.exit_code != 0 and "not 'new'" in result.output


def test_co_writing_options_are_refused_for_a_rating_experiment(db_path):
    run(db_path, "import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "t")
    result = run(db_path, "analyze", "t", "--compat", "cyoa-2021")
    assert result.exit_code != 0 and "rating experiment" in result.output


def read_csv(text: str) -> list[dict]:
    return list(csv.DictReader(text.splitlines()))


def test_a_rating_experiment_exports_judgements_stories_and_raters(db_path, tmp_path):
    # Rater r1 answers 4 to every AISS item of story s1: item 2 is reverse-keyed (6 − 4 = 2),
    # item 9 too (v1 does not mark it; it must be coded as the other repetition items).
    path = write_csv(tmp_path / "aiss.csv", aiss_rows("s1", "human", "r1", 4))
    run(db_path, "import-ratings", str(path), "--format", "long", "--instrument", "aiss-v1",
        "--name", "aiss")  # fmt: skip
    judgements = read_csv(run(db_path, "export", "aiss", "--format", "csv", "--out", "-").output)
    by_item = {row["item_id"]: row for row in judgements}
    assert len(judgements) == 22
    assert (by_item["1"]["value"], by_item["1"]["value_coded"]) == ("4.0", "4.0")
    assert (by_item["2"]["value_coded"], by_item["2"]["reverse"]) == ("2.0", "true")
    assert by_item["9"]["value_coded"] == "2.0"

    stories = read_csv(
        run(db_path, "export", "aiss", "--format", "csv", "--table", "stories", "--out", "-").output
    )
    measures = {row["measure"]: float(row["value"]) for row in stories}
    # Coherence: items 1–7, item 2 reversed: (4 + 2 + 4 × 5) / 7.
    assert measures["factor:Coherence"] == pytest.approx(26 / 7)
    assert {row["raters"] for row in stories} == {"1"}

    raters = read_csv(
        run(db_path, "export", "aiss", "--format", "csv", "--table", "raters", "--out", "-").output
    )
    assert [(r["rater_id"], r["stories"], r["judgements"]) for r in raters] == [("r1", "1", "22")]

    bundle = tmp_path / "aiss.zip"
    assert run(db_path, "export", "aiss", "--format", "bundle", "--out", str(bundle)).exit_code == 0
    names = set(zipfile.ZipFile(bundle).namelist())
    assert {"judgements.parquet", "stories.csv", "raters.csv", "data-dictionary.md"} <= names

    tsv = run(db_path, "export", "aiss", "--format", "cyoa-tsv", "--out", "-")
    assert tsv.exit_code != 0 and "rating experiment" in tsv.output
    wrong = run(db_path, "export", "aiss", "--format", "csv", "--table", "preference", "--out", "-")
    assert wrong.exit_code != 0 and "its tables are judgements, stories, raters" in wrong.output
