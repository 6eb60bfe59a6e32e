"""The plan verb: from typed assumptions, a power table, a chosen design and its cost."""

import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa.cli import cli
from tests.paths import DATA


def test_planning_a_rating_study_from_assumptions_prints_the_chosen_design_and_cost():
    result = CliRunner().invoke(cli, [
        "plan", "--kind", "rating",
        "--assume", "difference=0.4,story_sd=0.5,rater_sd=0.4,residual_sd=0.8,minutes=10",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Chosen design: 60 stories per source × 2 raters per story" in result.output
    assert "Cost: recruit 120" in result.output
    # 120 raters × 10 min at £12.00/h, and a third on top for the platform (GBP by default).
    assert "× £12.00/h = £240.00, + 33% fee £79.20 = £319.20." in result.output


def test_the_plan_verb_costs_in_the_currency_the_setting_names():
    result = CliRunner().invoke(cli, [
        "plan", "--kind", "rating",
        "--assume", "difference=0.4,story_sd=0.5,rater_sd=0.4,residual_sd=0.8,minutes=10",
    ], env={"CYOA_CURRENCY": "USD"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "× $12.00/h = $240.00" in result.output


def test_an_unknown_assumption_is_named_in_a_sentence_not_a_traceback():
    result = CliRunner().invoke(cli, ["plan", "--kind", "cowriting", "--assume", "q=1"])
    assert result.exit_code == 2
    assert "'q' is not an assumption of this kind" in result.output


def small_pilot(path: Path) -> Path:
    """Six stories, three per source, each rated by the same four raters on the crowd scale,
    with story, rater and residual variation (seeded)."""
    rng = random.Random(3)
    lines = ["story_id,source,rater_id,item,value"]
    for source, level in (("gpt2", 2.0), ("human", 3.0)):
        for n in range(3):
            story = level + rng.gauss(0, 0.4)
            for rater, offset in (("w1", -0.3), ("w2", 0.0), ("w3", 0.2), ("w4", 0.4)):
                for item in ("fluent", "coherent", "interesting"):
                    value = round(story + offset + rng.gauss(0, 0.5))
                    lines.append(f"{source}{n},{source},{rater},{item},{min(4, max(1, value))}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def one_source_pilot(path: Path) -> Path:
    """Twelve stories from one source (as a study of one co-writing experiment's stories),
    each rated by the same four raters on the crowd scale (seeded)."""
    rng = random.Random(5)
    lines = ["story_id,source,rater_id,item,value"]
    for n in range(12):
        story = 2.5 + rng.gauss(0, 0.5)
        for rater, offset in (("w1", -0.3), ("w2", 0.0), ("w3", 0.2), ("w4", 0.4)):
            for item in ("fluent", "coherent", "interesting"):
                value = round(story + offset + rng.gauss(0, 0.5))
                lines.append(f"s{n},short-story-1,{rater},{item},{min(4, max(1, value))}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def import_pilot(db: Path, csv: Path, name: str = "pilot") -> None:
    scales = DATA / "scales"
    imported = CliRunner().invoke(cli, [
        "--db", str(db), "import-ratings", str(csv), "--format", "long",
        "--instrument", str(scales / "crowd-1-4.toml"), "--name", name,
    ])  # fmt: skip
    assert imported.exit_code == 0, imported.output


def test_a_one_source_pilot_gets_alpha_s_precision_and_a_sentence_for_the_comparison(tmp_path):
    db = tmp_path / "cyoa.sqlite"
    import_pilot(db, one_source_pilot(tmp_path / "one.csv"))
    result = CliRunner().invoke(cli, ["--db", str(db), "plan", "pilot"])
    assert result.exit_code == 0, result.output
    assert "The pilot's stories come from one source" in result.output
    assert "give the difference to detect" in result.output
    assert re.search(
        r"Smallest design for α ± 0\.10: \d+ stories in all × \d raters", result.output
    )
    assert "Chosen design" not in result.output
    assert result.exception is None


def test_a_one_source_pilot_with_a_difference_to_detect_plans_the_comparison_at_its_variances(
    tmp_path,
):
    db = tmp_path / "cyoa.sqlite"
    import_pilot(db, one_source_pilot(tmp_path / "one.csv"))
    result = CliRunner().invoke(cli, ["--db", str(db), "plan", "pilot", "--effect", "0.3"])
    assert result.exit_code == 0, result.output
    assert "Rating plan: difference 0.300" in result.output
    assert "Chosen design:" in result.output
    assert "The pilot's stories come from one source" not in result.output


def test_a_plan_from_a_small_pilot_says_its_estimates_are_rough(tmp_path):
    scales = DATA / "scales"
    db = ["--db", str(tmp_path / "cyoa.sqlite")]
    imported = CliRunner().invoke(cli, [
        *db, "import-ratings", str(small_pilot(tmp_path / "pilot.csv")), "--format", "long",
        "--instrument", str(scales / "crowd-1-4.toml"), "--name", "pilot",
    ])  # fmt: skip
    assert imported.exit_code == 0, imported.output
    result = CliRunner().invoke(cli, [*db, "plan", "pilot"])
    assert result.exit_code == 0, result.output
    assert "Caution: the pilot has 6 stories and 4 raters" in result.output
    assert "| nan |" not in result.output


def test_a_pilot_the_model_cannot_be_fitted_to_is_refused_with_a_sentence(tmp_path):
    scales = DATA / "scales"
    db = ["--db", str(tmp_path / "cyoa.sqlite")]
    imported = CliRunner().invoke(cli, [
        *db, "import-ratings", str(scales / "crowd-1-4.csv"), "--format", "long",
        "--instrument", str(scales / "crowd-1-4.toml"), "--name", "crowd",
    ])  # fmt: skip
    assert imported.exit_code == 0, imported.output
    result = CliRunner().invoke(cli, [*db, "plan", "crowd"])
    assert result.exit_code == 1
    assert "Plan from assumptions instead" in result.output
    assert "Traceback" not in result.output


RATING = "difference=0.4,story_sd=0.5,rater_sd=0.4,residual_sd=0.8,minutes=10"


@pytest.mark.parametrize(
    ("assume", "options", "sentence"),
    [
        ("story_sd=1e308,rater_sd=0.4,residual_sd=0.8", [],
         "story_sd, the story SD (score units), is a number from 0 to 1000, not 1e+308"),
        (f"{RATING},rater_source_sd=1e200", [],
         "rater_source_sd, the rater × source SD (score units), is a number from 0 to 1000"),
        (RATING, ["--hourly-rate", "inf"], "The hourly rate is a number from 0 to 10000, not inf"),
        (RATING, ["--hourly-rate", "1e308"], "The hourly rate is a number from 0 to 10000"),
        (RATING, ["--fee", "nan"], "The platform fee (a fraction of the pay) is a number from 0"),
        (RATING, ["--fee", "inf"], "not inf"),
        (RATING, ["--effect", "-inf"], "The difference between two sources (score units)"),
        (RATING, ["--target-power", "1"], "The target power is a number from 0.01 to 0.99"),
    ],
)  # fmt: skip
def test_a_value_outside_the_planner_s_bounds_is_refused_before_it_plans(assume, options, sentence):
    result = CliRunner().invoke(cli, ["plan", "--kind", "rating", "--assume", assume, *options])
    assert result.exit_code == 2, result.output
    assert sentence in result.output
    assert "Cost:" not in result.output and "simulating" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
