"""The plan verb: from typed assumptions, a power table, a chosen design and its cost."""

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


def test_an_unknown_assumption_is_named_in_a_sentence_not_a_traceback():
    result = CliRunner().invoke(cli, ["plan", "--kind", "cowriting", "--assume", "q=1"])
    assert result.exit_code == 2
    assert "'q' is not an assumption of this kind" in result.output
