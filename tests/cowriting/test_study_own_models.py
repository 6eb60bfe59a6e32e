"""A whole co-writing story in which one system is the researcher's own model: a checkpoint
folder (``path``: a tiny random model, fast) or the packaged SmolLM2 GGUF file named directly
(``gguf``: real weights, converted once per test run). The writer's side is the real Socket.IO
journey; the suggestions are stored with the card's content version."""

from __future__ import annotations

import pytest
from conftest import Writer, db_rows, write_setup
from tiny_checkpoint import SMOL, save_tiny_checkpoint, smollm2_tokenizer

from cyoa import create_app
from cyoa.generation.weights import locate_gguf
from cyoa.web.parts import shared as shared_parts

ROUNDS = 2
EXPERIMENT = """
id = "own-model"
title = "My model against a fake one"
consent = "You agree to write a short story."
instructions = "Write with the machine."
rounds = {rounds}
min_chars = 20
max_chars = 260
suggestion_timeout_seconds = 600

[[systems]]
name = "baseline"
model = "fake-a"

[[systems]]
name = "mine"
model = "mine"
"""
CARD = """
name = "mine"
display_name = "My own model"
backend = "transformers"
{source}

[sampling]
top_k = 40
max_new_tokens = 30
"""


def app_with_my_model(root, source: str, cache=None):
    """The app with the card ``mine`` of ``source``; its models converted into ``cache``
    (default: the test's own)."""
    config = write_setup(root, rounds=ROUNDS)
    if cache is not None:
        config["MODEL_CACHE"] = str(cache)
    (root / "models" / "mine.toml").write_text(CARD.format(source=source))
    (root / "experiments" / "own-model.toml").write_text(EXPERIMENT.format(rounds=ROUNDS))
    return create_app({**config, "DEFAULT_EXPERIMENT": "own-model"})


def write_whole_story(app) -> list[dict]:
    assert shared_parts(app).pool.wait_ready(timeout=600), shared_parts(app).pool.status()
    writer = Writer(app, "?pid=own-model-writer", experiment="own-model")
    writer.connect()
    for n in range(1, ROUNDS + 1):
        state = writer.write_round(n)
    assert state["phase"] in ("survey", "done")
    return db_rows(
        app.config["DATABASE"],
        "SELECT s.model, s.model_version, s.text FROM suggestions s"
        " JOIN sessions x ON x.id = s.session_id WHERE x.experiment_id = 'own-model'",
    )


def test_a_whole_story_with_a_checkpoint_folder_as_one_system(tmp_path):
    tokenizer = smollm2_tokenizer(tmp_path / "tokenizer")
    checkpoint = save_tiny_checkpoint(tmp_path / "my-checkpoint", tokenizer)
    app = app_with_my_model(tmp_path, f'path = "{checkpoint}"')
    card = shared_parts(app).cards["mine"]
    assert card.version.startswith("checkpoint:")
    suggestions = write_whole_story(app)
    mine = [s for s in suggestions if s["model"] == "mine"]
    assert len(mine) == ROUNDS and all(s["model_version"] == card.version for s in mine)
    assert all(len(s["text"]) >= 20 for s in mine)


@pytest.mark.real_model
def test_a_whole_story_with_the_packaged_gguf_file_as_one_system(tmp_path, packaged_gguf_cache):
    weights = locate_gguf(SMOL, tmp_path)
    app = app_with_my_model(tmp_path, f'gguf = "{weights}"', packaged_gguf_cache)
    card = shared_parts(app).cards["mine"]
    assert card.version.startswith("sha256:")
    suggestions = write_whole_story(app)
    mine = [s for s in suggestions if s["model"] == "mine"]
    assert len(mine) == ROUNDS and all(s["model_version"] == card.version for s in mine)
