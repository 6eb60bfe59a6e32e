"""The plan verb's precision sections: α's interval width, FEI readers, a judge's κ."""

import pytest
from click.testing import CliRunner

from cyoa.cli import cli


def plan(*args: str):
    return CliRunner().invoke(cli, ["plan", *args])


def test_a_judge_plan_from_assumptions_gives_the_stories_that_pin_kappa():
    result = plan("--kind", "judge", "--assume", "kappa=0.4,prevalence=0.3,width=0.2")
    assert result.exit_code == 0, result.output
    assert "Human-rated stories for a 95% interval 0.2 wide: 379." in result.output


def test_an_fei_plan_from_assumptions_recommends_readers_per_question():
    result = plan("--kind", "fei", "--assume", "share_a=0.1,share_b=0.3,stories=20,questions=5")
    assert result.exit_code == 0, result.output
    assert "Readers per question: 9 (bias within 0.1 bits" in result.output


def test_a_rating_plan_from_an_assumed_alpha_gives_the_width_of_its_interval():
    result = plan(
        "--kind", "rating", "--assume", "alpha_agreement=0.4,prevalence=0.3", "--alpha-width", "0.3"
    )
    assert result.exit_code == 0, result.output
    assert "Precision of agreement: α ≈ 0.400 (yes/no, 30% yes)" in result.output
    assert "Smallest design for α ± 0.15:" in result.output


def test_a_rating_plan_with_variance_components_also_gives_alpha_s_width():
    result = plan(
        "--kind", "rating", "--assume", "difference=0.4,story_sd=0.5,rater_sd=0.4,residual_sd=0.8"
    )
    assert result.exit_code == 0, result.output
    assert "Chosen design: 60 stories per source" in result.output
    assert "Precision of agreement: α ≈ 0.238 (interval scores)" in result.output


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["--kind", "judge", "--assume", "kappa=0.4,prevalence=1.3"], "from 0.01 to 0.99, not 1.3"),
        (["--kind", "judge", "--assume", "prevalence=0.3"], "needs kappa="),
        (["--kind", "fei", "--assume", "share_a=0.1"], "needs share_b="),
        (["--kind", "rating", "--assume", "alpha_agreement=1.5"], "from 0 to 0.99, not 1.5"),
        (["--kind", "fei", "--assume", "share_a=0.1,share_b=0.3,stories=1"], "from 2 to 200"),
        (["--kind", "judge", "--assume", "kappa=0.4,prevalence=0.3,width=1e-300"],
         "width, the width of κ's 95% interval, is a number at least 0.01 and below 2"),
        (["--kind", "fei", "--assume", "share_a=0.1,share_b=0.3,stories=1e9"],
         "stories, FEI stories per source, is a whole number from 2 to 200, not 1e+09"),
        (["--kind", "fei", "--assume", "share_a=0.1,share_b=0.3,questions=1e9"],
         "questions, FEI questions per story, is a whole number from 1 to 20, not 1e+09"),
        (["--kind", "fei", "--assume", "share_a=0.1,share_b=0.3", "--alpha", "1e-60"],
         "The significance level α is a number from 0.0001 to 0.5, not 1e-60"),
    ],
)  # fmt: skip
def test_bad_assumptions_get_a_sentence_not_a_traceback(args, sentence):
    result = plan(*args)
    assert result.exit_code == 2
    assert sentence in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
