"""``python -m cyoa try-model CARD.toml``: a researcher's model tried before an experiment, for
each card form (a checkpoint folder, a GGUF file, a packaged model), and a wrong card's
message. The models are tiny random ones built here (tests/tiny_checkpoint.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from tiny_checkpoint import MODEL_CACHE, save_tiny_checkpoint, save_tiny_gguf, smollm2_tokenizer

from cyoa.cli import cli
from tests.paths import ROOT

CARD = """
backend = "transformers"
{source}

[sampling]
top_k = 40
max_new_tokens = 30

[options]
{options}
"""


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    tokenizer = smollm2_tokenizer(tmp_path_factory.mktemp("tokenizer"))
    return save_tiny_checkpoint(tmp_path_factory.mktemp("checkpoint") / "tiny", tokenizer)


def write_card(tmp_path: Path, source: str, options: str = "") -> Path:
    path = tmp_path / "mine.toml"
    path.write_text(CARD.format(source=source, options=options))
    return path


def try_model(tmp_path: Path, *args: str, cache: Path | None = None):
    env = {"CYOA_MODEL_CACHE": str(cache or tmp_path / "cache")}
    db = str(tmp_path / "cyoa.sqlite")
    return CliRunner().invoke(cli, ["--db", db, "try-model", *args], env=env)


def suggestion_lines(output: str) -> list[str]:
    return re.findall(r"^\d+\. seed \d+ · first token [\d.]+ s · end [\d.]+ s · \d+ tokens$",
                      output, flags=re.MULTILINE)  # fmt: skip


def test_try_model_prints_n_suggestions_for_a_checkpoint_card_with_times_and_memory(
    tmp_path, checkpoint
):
    # The CPU engine's figures (resident memory); `auto` is tested on its own below.
    card = write_card(tmp_path, f'path = "{checkpoint}"', 'device = "cpu"')
    result = try_model(tmp_path, str(card), "--n", "2", "--story", "A fox sat on the hill.")
    assert result.exit_code == 0, result.output
    lines = suggestion_lines(result.output)
    assert [line.split(" ·")[0] for line in lines] == ["1. seed 1", "2. seed 2"]
    assert "mine on cpu, version checkpoint:" in result.output
    assert "Story: A fox sat on the hill." in result.output
    assert re.search(r"Memory: [\d.]+ [GM]B resident after loading", result.output)
    assert "Memory after generating:" in result.output


def test_try_model_prints_suggestions_for_a_gguf_card(tmp_path):
    save_tiny_gguf(tmp_path / "tiny.gguf")
    card = write_card(tmp_path, 'gguf = "tiny.gguf"', 'device = "cpu"')
    result = try_model(tmp_path, str(card), "--n", "1")
    assert result.exit_code == 0, result.output
    assert len(suggestion_lines(result.output)) == 1
    assert "mine on cpu, version sha256:" in result.output


def test_a_card_without_a_device_runs_on_the_first_gpu_where_there_is_one_else_the_cpu(
    tmp_path, checkpoint
):
    result = try_model(tmp_path, str(write_card(tmp_path, f'path = "{checkpoint}"')), "--n", "1")
    assert result.exit_code == 0, result.output
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert f"mine on {expected}, version checkpoint:" in result.output
    assert len(suggestion_lines(result.output)) == 1


@pytest.mark.parametrize(
    ("source", "options", "message"),
    [
        ('path = "nowhere"', "", "field 'path' names the folder"),
        ('path = "nowhere"\ngguf = "x.gguf"', "", "field 'gguf' cannot be given with 'path'"),
        ('gguf = "missing.gguf"', "", "field 'gguf' names"),
        ('path = "nowhere"', 'device = "tpu"', "field 'options.device' must be"),
    ],
)
def test_try_model_with_a_wrong_card_says_what_to_fix_and_fails(tmp_path, source, options, message):
    card = write_card(tmp_path, source, options)
    result = try_model(tmp_path, str(card))
    assert result.exit_code == 1
    assert f"Error: {card}: {message}" in result.output


@pytest.mark.real_model
def test_try_model_prints_suggestions_for_a_packaged_model(tmp_path):
    card = ROOT / "models" / "smollm2-135m-instruct.toml"
    result = try_model(tmp_path, str(card), "--n", "3", cache=MODEL_CACHE)
    assert result.exit_code == 0, result.output
    # Three draws, each a suggestion or the reason there is none (too short for a turn).
    assert len(re.findall(r"^\d\. seed \d+", result.output, flags=re.MULTILINE)) == 3
    assert suggestion_lines(result.output)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_try_model_runs_a_checkpoint_card_on_cuda(tmp_path, checkpoint):
    card = write_card(tmp_path, f'path = "{checkpoint}"', 'device = "cuda"')
    result = try_model(tmp_path, str(card), "--n", "2")
    assert result.exit_code == 0, result.output
    assert "mine on cuda:0" in result.output and "cuda:0: " in result.output
    assert len(suggestion_lines(result.output)) == 2
