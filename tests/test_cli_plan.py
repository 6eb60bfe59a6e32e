"""The plan verb: from typed assumptions, a power table, a chosen design and its cost."""

import random
from pathlib import Path

from click.testing import CliRunner

from cyoa.cli import cli


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


def test_a_plan_from_a_small_pilot_says_its_estimates_are_rough(tmp_path):
    scales = Path(__file__).parent / "data" / "scales"
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
    scales = Path(__file__).parent / "data" / "scales"
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
