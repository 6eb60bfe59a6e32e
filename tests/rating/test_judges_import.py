"""Judges' verdicts from the command line: ``import-ratings --format ttcw-llm --into EXPERIMENT
--judge NAME`` adds a judge panel to an imported TTCW experiment, the human analysis stays the
humans', and ``analyze`` reports each judge's calibration. On the part of the TTCW release
vendored in tests/data/ttcw (the GPT-3.5 and GPT-4 stories: the experts' judgements and the
seven judges' verdicts), the release notebook's table and per-test Cohen's κ against the
expert majority are reproduced."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from statsmodels.stats.inter_rater import cohens_kappa

from cyoa import store
from cyoa.cli import cli
from cyoa.rating.analysis.data import load_ratings
from cyoa.rating.judges.calibration import calibrate
from tests.paths import DATA

TTCW_DATA = DATA / "ttcw"
ANNOTATIONS = TTCW_DATA / "ttcw_annotations_gpt.json"
VERDICTS = TTCW_DATA / "llm_verdicts"
JUDGES = ("cgpt", "claude3-opus", "claudev13", "claudev2", "claudev21", "gemini-pro", "gpt4")

# The release notebook's table (salesforce/creativity_eval, Art_or_Artifice/
# Evaluating_LLM.ipynb, §3.1) computed by its code on the vendored part: the label of a
# story × test is the majority of its three experts, a verdict is Yes iff the response
# starts with "yes" (any case), anything else No; balanced accuracy, precision, recall,
# F1, correlation (numpy corrcoef). The notebook's printed table covers all 48 stories
# (New Yorker and Claude stories too), which are not vendored; the same code gives that
# printed table exactly on the full release.
NOTEBOOK = {
    "cgpt": (0.48, 0.10, 0.67, 0.17, -0.03),
    "claude3-opus": (0.54, 0.12, 0.75, 0.20, 0.05),
    "claudev13": (0.50, 0.11, 0.67, 0.18, 0.00),
    "claudev2": (0.55, 0.12, 0.92, 0.21, 0.08),
    "claudev21": (0.51, 0.11, 0.89, 0.19, 0.01),
    "gemini-pro": (0.49, 0.11, 0.92, 0.19, -0.03),
    "gpt4": (0.55, 0.12, 0.89, 0.21, 0.08),
}


def run(db_path: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db_path), *args])


@pytest.fixture(scope="module")
def judged(tmp_path_factory) -> Path:
    """The vendored expert judgements imported as 'ttcw', and all seven judges into it."""
    db_path = tmp_path_factory.mktemp("judges") / "cyoa.sqlite"
    result = run(db_path, "import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "ttcw")
    assert result.exit_code == 0, result.output
    for judge in JUDGES:
        result = run(
            db_path, "import-ratings", str(VERDICTS / f"annotations_{judge}.jsonl"),
            "--format", "ttcw-llm", "--into", "ttcw", "--judge", judge,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
    return db_path


@pytest.fixture(scope="module")
def analyzed_json(judged) -> dict:
    """``analyze ttcw --format json`` on the judged study, run once for the tests that read
    it: analysing the seven judges takes tens of seconds, and ``analyze`` writes nothing, so
    every test reads what a fresh run prints."""
    result = run(judged, "analyze", "ttcw", "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.fixture(scope="module")
def analyzed_markdown(judged) -> str:
    """``analyze ttcw`` (Markdown) on the judged study, run once like :func:`analyzed_json`."""
    result = run(judged, "analyze", "ttcw")
    assert result.exit_code == 0, result.output
    return result.output


def test_a_judge_s_verdicts_are_added_as_its_own_panel_with_unparsed_ones_counted(judged):
    db = store.connect(judged)
    try:
        panels = dict(
            db.execute(
                "SELECT panel, count(*) FROM judgements j JOIN raters r USING"
                " (experiment_id, rater_id) WHERE experiment_id = 'ttcw' GROUP BY panel"
            ).fetchall()
        )
        gemini = list(
            db.query(
                "SELECT value, rationale FROM judgements WHERE experiment_id = 'ttcw'"
                " AND rater_id = 'gemini-pro' AND value IS NULL"
            )
        )
    finally:
        db.close()
    assert panels["human"] == 1008 and all(panels[judge] == 336 for judge in JUDGES)
    assert len(gemini) == 16 and gemini[0]["rationale"] == "Content Blocked"


def test_the_message_says_how_many_verdicts_could_not_be_read(tmp_path):
    db_path = tmp_path / "cyoa.sqlite"
    run(db_path, "import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "ttcw")
    result = run(
        db_path, "import-ratings", str(VERDICTS / "annotations_gemini-pro.jsonl"),
        "--format", "ttcw-llm", "--into", "ttcw", "--judge", "gemini-pro",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "336 verdicts" in result.output
    assert "16 could not be read as Yes or No" in result.output


def test_the_human_analysis_reads_the_human_panel_only(judged):
    db = store.connect(judged)
    try:
        data = load_ratings(db, "ttcw")
    finally:
        db.close()
    assert len(data.judgements) == 1008
    assert not set(data.judgements["rater_id"]) & set(JUDGES)


def test_the_release_notebook_s_table_is_reproduced_for_every_judge(judged):
    db = store.connect(judged)
    try:
        humans = load_ratings(db, "ttcw")
        for judge in JUDGES:
            verdicts = load_ratings(db, "ttcw", panel=judge).judgements
            result = calibrate(
                humans.instrument, humans.judgements, verdicts, judge=judge, as_no=True
            )
            scores = result.overall.scores
            found = (
                scores.balanced_accuracy,
                scores.precision,
                scores.recall,
                scores.f1,
                scores.correlation,
            )
            assert result.overall.kappa.units == 336
            # To two decimals: within half a unit of the last place shown.
            assert found == pytest.approx(NOTEBOOK[judge], abs=0.005 + 1e-9), judge
    finally:
        db.close()


def majority_and_verdicts(judge: str) -> pd.DataFrame:
    """Straight from the files: each story × test's expert majority and the judge's verdict
    by the release's rule."""
    experts = pd.DataFrame(json.loads(ANNOTATIONS.read_text(encoding="utf-8")))
    experts["yes"] = (experts["binary_verdict"] == "Yes").astype(int)
    majority = experts.groupby(["story_id", "ttcw_idx"])["yes"].sum().ge(2).astype(int)
    lines = (VERDICTS / f"annotations_{judge}.jsonl").read_text(encoding="utf-8").splitlines()
    verdicts = {}
    for record in map(json.loads, lines):
        _, n, source, test = record["id"].split("_")
        key = (f"{n}_{source}", int(test.removeprefix("test")))
        verdicts[key] = int(record["response"].lower().startswith("yes"))
    frame = majority.rename("majority").reset_index()
    keys = zip(frame["story_id"], frame["ttcw_idx"], strict=True)
    frame["verdict"] = [verdicts[key] for key in keys]
    return frame


def test_per_test_kappa_against_the_expert_majority_is_statsmodels_on_the_files(judged):
    db = store.connect(judged)
    try:
        humans = load_ratings(db, "ttcw")
        verdicts = load_ratings(db, "ttcw", panel="gpt4").judgements
    finally:
        db.close()
    result = calibrate(humans.instrument, humans.judgements, verdicts, judge="gpt4", as_no=True)
    frame = majority_and_verdicts("gpt4")
    for item in result.items:
        part = frame[frame["ttcw_idx"] == int(item.item)]
        table = pd.crosstab(part["verdict"], part["majority"]).reindex(
            index=[0, 1], columns=[0, 1], fill_value=0
        )
        expected = cohens_kappa(table.to_numpy(), return_results=False)
        if pd.isna(expected):
            assert item.kappa.kappa is None
        else:
            assert item.kappa.kappa == pytest.approx(expected), item.item


def test_analyze_json_reports_each_judge_s_calibration_beside_the_human_ceiling(analyzed_json):
    data = analyzed_json
    judges = {entry["judge"]: entry for entry in data["judges"]}
    assert set(judges) == set(JUDGES)
    gpt4 = judges["gpt4"]
    assert gpt4["reference"] == "human"
    overall = gpt4["overall"]
    assert overall["scores"]["balanced_accuracy"] == pytest.approx(0.5544, abs=1e-4)
    assert overall["ceiling"]["human"] > overall["ceiling"]["judge"]
    assert overall["alt_test"]["epsilon"] == 0.2
    assert len(gpt4["items"]) == 14 and gpt4["disagreements"]
    assert judges["gemini-pro"]["overall"]["unparsed"] == 16
    assert data["all_raters"]["judgements"] == 1008


def test_analyze_shows_the_notebook_s_table_with_unread_verdicts_as_no_in_every_figure(
    analyzed_json, analyzed_markdown
):
    # analyze leaves unparsed verdicts out of its own figures; the notebook's table beside
    # them counts them as No in all five, the correlation too (gemini-pro: 16 unparsed).
    judges = {entry["judge"]: entry for entry in analyzed_json["judges"]}
    for judge in JUDGES:
        notebook = judges[judge]["notebook"]
        found = tuple(
            notebook[k] for k in ("balanced_accuracy", "precision", "recall", "f1", "correlation")
        )
        assert notebook["units"] == 336
        assert found == pytest.approx(NOTEBOOK[judge], abs=0.005 + 1e-9), judge
    left_out = judges["gemini-pro"]["overall"]["scores"]
    assert left_out["units"] == 320 and left_out["correlation"] == pytest.approx(-0.10, abs=0.005)
    markdown = analyzed_markdown
    assert "| gemini-pro | 336 | 0.49 | 0.11 | 0.92 | 0.19 | -0.03 | -0.10 |" in markdown


def test_analyze_markdown_shows_a_calibration_table_with_the_human_ceiling(analyzed_markdown):
    assert "# Judges" in analyzed_markdown
    assert "human ceiling" in analyzed_markdown
    assert "| gpt4 |" in analyzed_markdown


def write_lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--into", "nowhere", "--judge", "g"), "There is no rating experiment 'nowhere'"),
        (("--judge", "g"), "--format ttcw-llm adds a judge to an experiment: give --into"),
        (("--into", "ttcw"), "give --judge NAME"),
        (("--into", "ttcw", "--judge", "human"), "'human' names the study's raters"),
        (("--into", "ttcw", "--judge", "expert-9"), "already has a rater 'expert-9'"),
    ],
)
def test_bad_judge_imports_are_refused_with_a_sentence(tmp_path, args, expected):
    db_path = tmp_path / "cyoa.sqlite"
    run(db_path, "import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "ttcw")
    verdicts = str(VERDICTS / "annotations_gpt4.jsonl")
    result = run(db_path, "import-ratings", verdicts, "--format", "ttcw-llm", *args)
    assert result.exit_code != 0
    assert expected in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"id": "story_99_GPT4_test1", "response": "Yes"}, "story '99_GPT4' is not in 'ttcw'"),
        ({"id": "story_0_GPT4_test15", "response": "Yes"}, "test15 is not a TTCW test"),
        ({"id": "0_GPT4_1", "response": "Yes"}, "is not 'story_<n>_<source>_test<k>'"),
        ({"id": "story_0_GPT4_test1"}, "the field 'response' is missing"),
        ({"id": "story_0_Claude_test1", "response": "No"}, "story '0_Claude' is not in"),
    ],
)
def test_a_bad_verdict_line_names_its_line_and_nothing_is_stored(tmp_path, record, expected):
    db_path = tmp_path / "cyoa.sqlite"
    run(db_path, "import-ratings", str(ANNOTATIONS), "--format", "ttcw", "--name", "ttcw")
    good = {"id": "story_1_GPT4_test1", "response": "No."}
    path = write_lines(tmp_path / "bad.jsonl", [good, record])
    result = run(
        db_path, "import-ratings", str(path), "--format", "ttcw-llm", "--into", "ttcw",
        "--judge", "bad",
    )  # fmt: skip
    assert result.exit_code != 0
    assert "bad.jsonl, line 2" in result.output and expected in result.output
    db = store.connect(db_path)
    try:
        assert db.execute("SELECT count(*) FROM raters WHERE rater_id = 'bad'").fetchone()[0] == 0
    finally:
        db.close()


def test_a_judge_in_the_long_format_joins_an_aiss_study_as_its_own_panel(tmp_path):
    db_path = tmp_path / "cyoa.sqlite"
    humans = [
        {"story_id": s, "source": src, "rater_id": r, "item": n, "value": v}
        for s, src, v in (("s1", "human", 4), ("s2", "model", 2))
        for r in ("r1", "r2")
        for n in range(1, 23)
    ]
    path = write_lines(tmp_path / "humans.jsonl", humans)
    result = run(
        db_path, "import-ratings", str(path), "--format", "long", "--instrument", "aiss-v1",
        "--name", "aiss",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    judge = [{**row, "rater_id": "llama"} for row in humans if row["rater_id"] == "r1"]
    path = write_lines(tmp_path / "judge.jsonl", judge)
    result = run(
        db_path, "import-ratings", str(path), "--format", "long", "--into", "aiss",
        "--judge", "llama",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    analysis = json.loads(run(db_path, "analyze", "aiss", "--format", "json").output)
    assert analysis["all_raters"]["judgements"] == 88
    [entry] = analysis["judges"]
    assert entry["judge"] == "llama" and entry["items"][0]["kind"] == "likert"


def test_raters_stored_before_panels_existed_become_the_human_panel(tmp_path):
    db = store.connect(tmp_path / "old.sqlite")
    with store.write_transaction(db):
        store.migrate(db, store.MIGRATIONS[: store.MIGRATIONS.index(store._panels)])
    assert "panel" not in {c.name for c in db.table("raters").columns}
    db.forget_tables()
    db.insert(
        "experiments",
        {"id": "old", "title": "old", "status": "closed", "spec": "{}", "kind": "rating"},
    )
    db.insert("raters", {"experiment_id": "old", "rater_id": "r1", "created_at": "2024"})
    with store.write_transaction(db):
        store.migrate(db)
    assert db.execute("SELECT panel FROM raters").fetchall() == [("human",)]
    db.close()


def test_the_judgements_export_names_each_judgement_s_panel(judged, tmp_path):
    out = tmp_path / "judgements.csv"
    result = run(judged, "export", "ttcw", "--format", "csv", "--out", str(out))
    assert result.exit_code == 0, result.output
    frame = pd.read_csv(out)
    assert (frame["panel"] == "human").sum() == 1008
    assert (frame.loc[frame["rater_id"] == "gpt4", "panel"] == "gpt4").all()


def test_a_plan_from_a_pilot_with_judges_says_how_many_stories_pin_each_judge_s_kappa(judged):
    result = run(judged, "plan", "ttcw", "--alpha-width", "0.3")
    assert result.exit_code == 0, result.output
    section = result.output.split("Judges: human-rated stories needed")[1]
    assert "interval 0.3 wide" in section
    rows = [line for line in section.splitlines() if line.startswith("| ") and "%" in line]
    assert sorted(row.split(" | ")[0].lstrip("| ") for row in rows) == sorted(JUDGES)
    assert all(int(row.rstrip(" |").rsplit("| ", 1)[1]) > 30 for row in rows)
