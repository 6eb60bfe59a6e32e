"""Published rating data on its own scale: a 0–10 expert rubric and a 1–4 crowd rating,
imported with ``import-ratings`` as a researcher would, give means, counts and intervals on
0–10 and 1–4, never shifted and never past the scale's ends.

The files in tests/data/scales are small copies of the shapes such datasets are released in
(long format: one row per rater × story × criterion), with their instrument specs."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from tests.paths import DATA

SCALES = DATA / "scales"


def run(db_path: Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db_path), *args])


def imported_analysis(db_path: Path, name: str) -> dict:
    """The ``analyze --format json`` analysis (every rater) of tests/data/scales/NAME.csv
    imported with its spec NAME.toml."""
    result = run(
        db_path, "import-ratings", str(SCALES / f"{name}.csv"), "--format", "long",
        "--instrument", str(SCALES / f"{name}.toml"), "--name", name,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    analysis = run(db_path, "analyze", name, "--format", "json")
    assert analysis.exit_code == 0, analysis.output
    return json.loads(analysis.output)["all_raters"]


def item_means(analysis: dict) -> dict[tuple[str, str], dict]:
    return {(row["item_id"], row["source"]): row for row in analysis["scales"]["items"]}


def test_a_0_to_10_rubric_is_imported_and_analysed_on_0_to_10(tmp_path):
    analysis = imported_analysis(tmp_path / "cyoa.sqlite", "rubric-0-10")
    items = item_means(analysis)
    # plot, model: stories m1 (0, 1), m2 (2, 2), m3 (0, 0) → story means 0.5, 2, 0 → 5/6.
    # Shifted onto 1–11 it would read 11/6.
    plot = items[("plot", "model")]
    assert plot["mean"]["mean"] == pytest.approx(5 / 6)
    assert plot["counts"] == {str(point): n for point, n in enumerate([3, 1, 2] + [0] * 8)}
    # sd of (0.5, 2, 0) = 1.0408; t(0.975, 2) · sd / √3 = 2.586: the lower end is cut at 0.
    assert (plot["mean"]["ci_low"], plot["mean"]["clipped"]) == (0, True)
    # plot, human: (9, 10), (8, 7), (10, 10) → 9.5, 7.5, 10 → 9.0, the upper end cut at 10.
    human = items[("plot", "human")]
    assert human["mean"]["mean"] == pytest.approx(9.0)
    assert (human["mean"]["ci_high"], human["mean"]["clipped"]) == (10, True)
    assert items[("language", "human")]["mean"]["mean"] == pytest.approx(8.5)
    for row in items.values():
        assert 0 <= row["mean"]["ci_low"] <= row["mean"]["ci_high"] <= 10
    # No factors: the three criteria are one scale, on 0–10 too. model: story means
    # 19/6, 11/3, 7/3 → 55/18; human: 8.5, 22/3, 29/3 → 8.5.
    scale = {row["source"]: row["mean"] for row in analysis["scales"]["factors"]}
    assert scale["model"]["mean"] == pytest.approx(55 / 18)
    assert scale["human"]["mean"] == pytest.approx(8.5)


def test_a_1_to_4_crowd_rating_is_imported_and_analysed_on_1_to_4(tmp_path):
    analysis = imported_analysis(tmp_path / "cyoa.sqlite", "crowd-1-4")
    items = item_means(analysis)
    # fluent, gpt2: g1 (3, 4), g2 (2, 3) → 3.5, 2.5 → 3.0; human: (4, 4), (4, 3) → 3.75.
    assert items[("fluent", "gpt2")]["mean"]["mean"] == pytest.approx(3.0)
    assert items[("fluent", "human")]["mean"]["mean"] == pytest.approx(3.75)
    # coherent, gpt2: (2, 2), (1, 2) → 2, 1.5 → 1.75.
    coherent = items[("coherent", "gpt2")]
    assert coherent["mean"]["mean"] == pytest.approx(1.75)
    assert coherent["counts"] == {"1": 1, "2": 3, "3": 0, "4": 0}
    for row in items.values():
        assert 1 <= row["mean"]["ci_low"] <= row["mean"]["ci_high"] <= 4
    assert {row["factor"] for row in analysis["scales"]["factors"]} == {"all items"}
    (test,) = analysis["scales"]["tests"]
    assert test["sources"] == ["gpt2", "human"] and test["p_value"] is not None


def test_an_answer_off_the_declared_range_names_the_range(tmp_path):
    bad = tmp_path / "rubric.csv"
    bad.write_text("story_id,source,rater_id,item,value\ns1,model,e1,plot,11\n", encoding="utf-8")
    result = run(
        tmp_path / "cyoa.sqlite", "import-ratings", str(bad), "--format", "long",
        "--instrument", str(SCALES / "rubric-0-10.toml"), "--name", "bad",
    )  # fmt: skip
    assert result.exit_code != 0
    assert "rubric.csv, line 2, field 'value'" in result.output
    assert "takes a whole number from 0 to 10; got '11'" in result.output


def test_the_export_reverse_codes_a_0_to_10_item_on_its_own_ends_and_stores_its_range(tmp_path):
    spec = tmp_path / "flat.toml"
    spec.write_text(
        'id = "flat"\nname = "Flat"\n[[items]]\nid = "flat"\ntext = "Flat characters."\n'
        'kind = "likert"\nlow = 0\npoints = 11\nreverse = true\n',
        encoding="utf-8",
    )
    answers = tmp_path / "flat.csv"
    answers.write_text(
        "story_id,source,rater_id,item,value\ns1,model,e1,flat,3\ns2,model,e1,flat,0\n",
        encoding="utf-8",
    )
    db_path = tmp_path / "cyoa.sqlite"
    imported = run(db_path, "import-ratings", str(answers), "--format", "long",
                   "--instrument", str(spec), "--name", "flat")  # fmt: skip
    assert imported.exit_code == 0, imported.output
    exported = run(db_path, "export", "flat", "--format", "csv", "--out", "-")
    rows = list(csv.DictReader(io.StringIO(exported.output)))
    # Reverse-keyed on 0–10: 0 + 10 − 3 = 7 and 0 + 10 − 0 = 10.
    assert [(row["value"], row["value_coded"]) for row in rows] == [("3.0", "7.0"), ("0.0", "10.0")]
    db = store.connect(db_path)
    try:
        stored = db.execute("SELECT low, points FROM instrument_items").fetchall()
    finally:
        db.close()
    assert stored == [(0, 11)]


def test_a_rubric_without_factors_reports_one_scale_with_its_test_and_reliability(tmp_path):
    db_path = tmp_path / "cyoa.sqlite"
    imported_analysis(db_path, "rubric-0-10")
    text = run(db_path, "analyze", "rubric-0-10").output
    factors = text.split("## Factors", 1)[1].split("## Reliability", 1)[0]
    reliability = text.split("## Reliability", 1)[1].split("## Items", 1)[0]
    assert "| all items | 8.50 [" in factors and "Mann–Whitney" in factors  # human, model
    assert "| all items | all | 3 | 12 |" in reliability
    assert "declares no factors: its Likert items are analysed as one scale" in text
