"""Stories of a set length, as TTCW made them (Chakrabarty et al., CHI 2024, §5.1 and
Table 11): the model writes from a plot, then is asked to lengthen its story until it is within
the tolerance of the target, or the rounds run out and the story is kept but flagged."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import write_setup

from cyoa.cli import cli
from cyoa.generation import load_model_cards
from cyoa.generation.fake import FakeBackend
from cyoa.generation.types import Sampling
from cyoa.rating.importing import stories_from_file
from cyoa.rating.stories.length import (
    LengthControl,
    LengthError,
    PlotPrompt,
    expansion_prompt,
    first_prompt,
    plot_prompts,
    stop_reason,
    word_count,
    write_to_length,
)

PLOT = "A lighthouse keeper finds a letter on the rocks, addressed to her dead brother."


def words(n: int) -> str:
    return " ".join(["word"] * n)


def growing_writer(per_call: int):
    """A writer that, asked to lengthen a story, gives it back with ``per_call`` more words."""

    def write(prompt: str, round_: int) -> str:
        current = prompt.rsplit("Current story: ", 1)[1] if "Current story: " in prompt else ""
        return (current + " " + words(per_call)).strip()

    return write


def test_a_story_is_within_tolerance_only_when_it_diverges_from_the_target_by_less():
    control = LengthControl(tolerance=200, max_rounds=5)
    assert stop_reason(1301, 1500, 1, control) == "within"
    assert stop_reason(1300, 1500, 1, control) is None  # 200 words off: not yet
    assert stop_reason(1699, 1500, 1, control) == "within"
    assert stop_reason(1700, 1500, 1, control) == "too_long"
    assert stop_reason(900, 1500, 5, control) == "max_rounds"
    assert stop_reason(900, 1500, 4, control) is None


def test_the_prompts_are_the_papers_table_11():
    first = first_prompt(PLOT, 1500)
    assert first.startswith(
        "Write a New Yorker-style story given the plot below. Make sure it is atleast 1500 words."
    )
    assert first.endswith(f"Plot: {PLOT}")
    again = expansion_prompt(1500, 980, "Once upon a time.")
    assert "I requested a story with 1500 words, but the story only has 980 words." in again
    assert "closer to the 1500 word target I gave you." in again
    assert again.endswith("Current story: Once upon a time.")


def test_words_are_counted_between_whitespace():
    assert word_count("  The keeper's   lantern —\nout. ") == 5  # the dash, alone, is one
    assert word_count("") == 0


def test_a_writer_adding_100_words_a_call_reaches_450_words_in_three_rounds():
    told = []

    def write(prompt: str, round_: int) -> str:
        told.append(prompt)
        return growing_writer(100)(prompt, round_)

    result = write_to_length(write, PLOT, 450, LengthControl(tolerance=200, max_rounds=5))
    assert result.rounds == 3 and result.words == 300 and result.round_words == [100, 200, 300]
    assert result.within_tolerance and result.stopped == "within"
    assert told[0] == first_prompt(PLOT, 450)
    assert told[2] == expansion_prompt(450, 200, words(200))


def test_a_writer_that_never_grows_is_kept_and_flagged_after_the_last_round():
    result = write_to_length(
        lambda prompt, round_: words(40), PLOT, 1000, LengthControl(tolerance=200, max_rounds=4)
    )
    assert result.rounds == 4 and result.story == words(40)
    assert not result.within_tolerance and result.stopped == "max_rounds"


def test_a_story_far_longer_than_its_target_is_flagged_not_asked_to_grow():
    result = write_to_length(lambda prompt, round_: words(900), PLOT, 400, LengthControl())
    assert result.rounds == 1 and result.stopped == "too_long" and not result.within_tolerance


def test_a_reference_story_sets_the_target_to_its_word_count():
    rows = [
        (1, {"prompt": PLOT, "reference": words(1234)}),
        (2, {"prompt": "B", "target_words": 800}),
    ]
    assert plot_prompts(rows, "plots.jsonl") == [
        PlotPrompt(PLOT, 1234, "reference"),
        PlotPrompt("B", 800, "target_words"),
    ]


def test_a_file_without_targets_has_no_plots():
    assert plot_prompts([(1, {"prompt": "An opening."})], "p.jsonl") is None


@pytest.mark.parametrize(
    ("row", "sentence"),
    [
        ({"target_words": -5}, "target_words must be a positive whole number of words (found -5)"),
        ({"target_words": 0}, "target_words must be a positive whole number of words (found 0)"),
        ({"target_words": "many"}, "target_words must be a positive whole number"),
        ({"target_words": 12.5}, "target_words must be a positive whole number"),
        ({"target_words": True}, "target_words must be a positive whole number"),
        ({"reference": "   "}, "no target: its reference is empty"),
        ({"reference": "A story.", "target_words": 9}, "gives both reference and target_words"),
        ({"reference": 7}, "reference must be the paired story's text"),
    ],
)
def test_a_bad_target_is_refused_with_a_sentence_naming_the_line(row, sentence):
    rows = [(1, {"prompt": PLOT, "target_words": 500}), (3, {"prompt": PLOT, **row})]
    with pytest.raises(LengthError) as error:
        plot_prompts(rows, "plots.jsonl")
    assert str(error.value).startswith("plots.jsonl, line 3: ") and sentence in str(error.value)


def test_a_row_without_a_prompt_is_refused():
    with pytest.raises(LengthError, match="line 2: give the plot in a prompt field"):
        plot_prompts([(2, {"target_words": 500})], "plots.jsonl")


def test_the_fake_model_asked_to_expand_gives_the_story_back_longer(tmp_path):
    write_setup(tmp_path, options_a="expand_words = 25")
    card = load_model_cards(tmp_path / "models")["fake-a"]
    backend = FakeBackend(card)
    sampling = Sampling(max_new_tokens=1000)
    first = "".join(backend.stream(first_prompt(PLOT, 100), sampling, 1)).strip()
    assert word_count(first) == 25
    again = "".join(backend.stream(expansion_prompt(100, 25, first), sampling, 2)).strip()
    assert again.startswith(first) and word_count(again) == 50


def run_command(tmp_path, config, prompts_name: str, *extra: str):
    env = {"CYOA_MODELS_DIR": config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    return CliRunner().invoke(
        cli,
        ["--db", config["DATABASE"], "generate-stories", str(tmp_path / prompts_name),
         "--model", "fake-a", "--model", "fake-b", "--out", str(tmp_path / "stories.jsonl"),
         *extra],
        env=env,
    )  # fmt: skip


def test_the_command_lengthens_stories_to_their_reference_and_flags_one_that_never_gets_there(
    tmp_path,
):
    config = write_setup(tmp_path, options_a="expand_words = 100")
    rows = [{"prompt": PLOT, "reference": words(450)}]
    (tmp_path / "plots.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = run_command(tmp_path, config, "plots.jsonl", "--max-rounds", "4", "--seed", "3")
    assert result.exit_code == 0, result.output
    assert "fake-a, prompt 1): 300 words in 3 rounds (target 450)" in result.output
    assert "1 story is not within 200 words of its target: fake-b-p1-1" in result.output
    out = tmp_path / "stories.jsonl"
    assert {s.story_id for s in stories_from_file(out.read_text(), out.name)} == {
        "fake-a-p1-1",
        "fake-b-p1-1",
    }
    by_id = {r["story_id"]: r["origin"] for r in map(json.loads, out.read_text().splitlines())}
    a, b = by_id["fake-a-p1-1"], by_id["fake-b-p1-1"]
    assert a["length_control"] == {
        "target_words": 450,
        "target_from": "reference",
        "tolerance": 200,
        "max_rounds": 4,
        "words": 300,
        "rounds": 3,
        "round_words": [100, 200, 300],
        "within_tolerance": True,
        "stopped": "within",
    }
    assert b["length_control"]["rounds"] == 4 and not b["length_control"]["within_tolerance"]
    assert a["seeds"] == b["seeds"][:3] and a["prompt"] == PLOT


@pytest.mark.parametrize(
    ("content", "sentence"),
    [
        ('{"prompt": "P", "target_words": -3}\n', "target_words must be a positive whole number"),
        ('{"prompt": "P", "reference": ""}\n', "no target: its reference is empty"),
    ],
)
def test_the_command_refuses_a_bad_target_with_a_sentence(tmp_path, content, sentence):
    config = write_setup(tmp_path)
    (tmp_path / "plots.jsonl").write_text(content)
    result = run_command(tmp_path, config, "plots.jsonl")
    assert result.exit_code == 1 and sentence in result.output
    assert "Traceback" not in result.output


def test_length_options_without_targets_are_refused(tmp_path):
    config = write_setup(tmp_path)
    (tmp_path / "prompts.txt").write_text("An opening.\n")
    result = run_command(tmp_path, config, "prompts.txt", "--tolerance", "50")
    assert result.exit_code == 1
    assert "--tolerance and --max-rounds need a prompt file whose rows give" in result.output


def test_sentences_are_refused_for_plots_written_to_a_length(tmp_path):
    config = write_setup(tmp_path)
    (tmp_path / "plots.csv").write_text(f'prompt,target_words\n"{PLOT}",300\n')
    result = run_command(tmp_path, config, "plots.csv", "--sentences", "3")
    assert result.exit_code == 1 and "--sentences is for openings" in result.output


def test_a_csv_with_a_reference_column_needs_a_reference_in_every_row(tmp_path):
    config = write_setup(tmp_path)
    (tmp_path / "plots.csv").write_text(f'prompt,reference\n"{PLOT}","A short story."\nB,\n')
    result = run_command(tmp_path, config, "plots.csv")
    assert result.exit_code == 1
    assert "plots.csv, line 3: no target: its reference is empty" in result.output


def test_a_model_that_writes_nothing_is_named_not_stored_as_an_empty_story(tmp_path):
    config = write_setup(tmp_path, options_b='fail = "empty"')
    (tmp_path / "plots.jsonl").write_text(json.dumps({"prompt": PLOT, "target_words": 300}))
    result = run_command(tmp_path, config, "plots.jsonl", "--max-rounds", "2")
    assert result.exit_code == 1
    assert "fake-b wrote nothing for prompt 1 in 2 round(s)" in result.output
