"""Tiny random models for the model card tests: a two-layer Llama (SmolLM2's layout) with
SmolLM2's own tokenizer and chat template, saved with ``save_pretrained`` (a few megabytes,
loaded in about a second), and the same model written as a GGUF file."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from cyoa.generation import load_model_cards
from cyoa.generation.gguf_reading import FastReader, one_reader_per_file
from cyoa.generation.weights import locate_gguf

ROOT = Path(__file__).resolve().parent.parent
MODEL_CACHE = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
SMOL = load_model_cards(ROOT / "models")["smollm2-135m-instruct"]


def torch_engine(card):
    """``card`` run by the torch engine (a GGUF card converted to float32), not llama.cpp."""
    return replace(card, options={**card.options, "engine": "torch"})


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")
# SmolLM2's vocabulary, in a model small enough to build in a test.
TINY_CONFIG = dict(
    vocab_size=49152,
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=8,
    max_position_embeddings=1024,
    rms_norm_eps=1e-5,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=2,
    tie_word_embeddings=True,
)


def smollm2_tokenizer(folder: Path) -> Path:
    """SmolLM2's tokenizer files, with its chat template, written into ``folder``: copied
    from the converted model cache after ``make models``, otherwise read from the packaged
    GGUF file (a few seconds)."""
    folder.mkdir(parents=True, exist_ok=True)
    converted = MODEL_CACHE / SMOL.name
    if all((converted / name).is_file() for name in TOKENIZER_FILES):
        for name in TOKENIZER_FILES:
            shutil.copy(converted / name, folder / name)
    else:
        from transformers import AutoTokenizer

        gguf = locate_gguf(SMOL, folder)
        options = {"gguf_file": gguf.name, "local_files_only": True}
        with one_reader_per_file():
            AutoTokenizer.from_pretrained(gguf.parent, **options).save_pretrained(folder)
    return folder


def tiny_model(seed: int = 0) -> torch.nn.Module:
    """A tiny random Llama with SmolLM2's vocabulary (``seed`` draws its weights)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(LlamaConfig(**TINY_CONFIG)).eval()


def save_tiny_checkpoint(folder: Path, tokenizer: Path, seed: int = 0) -> Path:
    """A checkpoint folder as ``save_pretrained`` writes it: config, safetensors weights and
    the tokenizer files from the folder ``tokenizer``."""
    tiny_model(seed).save_pretrained(folder)
    for name in TOKENIZER_FILES:
        shutil.copy(tokenizer / name, folder / name)
    return folder


# The GGUF files written so far in this test process, by seed: each is built once (tens of
# seconds: SmolLM2's packaged file is assembled and its 49,152-token vocabulary copied entry by
# entry) and copied afterwards. Removed when the process ends.
_BUILT_GGUF = tempfile.TemporaryDirectory(prefix="cyoa-tiny-gguf-")


def save_tiny_gguf(path: Path, seed: int = 0) -> Path:
    """The tiny model as a float32 GGUF file at ``path`` (llama architecture), with SmolLM2's
    tokenizer: the tokenizer entries of the packaged GGUF file, copied. The same bytes for
    the same ``seed``."""
    built = Path(_BUILT_GGUF.name) / f"seed-{seed}" / "tiny.gguf"
    if not built.is_file():
        built.parent.mkdir()
        _write_tiny_gguf(built, seed)
    shutil.copyfile(built, path)
    return path


def _write_tiny_gguf(path: Path, seed: int) -> None:
    from gguf import GGUFWriter

    source = FastReader(os.fspath(locate_gguf(SMOL, path.parent)))
    writer = GGUFWriter(os.fspath(path), "llama")
    c = TINY_CONFIG
    writer.add_context_length(c["max_position_embeddings"])
    writer.add_embedding_length(c["hidden_size"])
    writer.add_feed_forward_length(c["intermediate_size"])
    writer.add_block_count(c["num_hidden_layers"])
    writer.add_head_count(c["num_attention_heads"])
    writer.add_head_count_kv(c["num_key_value_heads"])
    writer.add_layer_norm_rms_eps(c["rms_norm_eps"])
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(c["vocab_size"])
    for field in source.fields.values():
        if field.name.startswith("tokenizer."):
            _copy_field(writer, field)
    names = {
        "model.embed_tokens.weight": "token_embd.weight",
        "model.norm.weight": "output_norm.weight",
    }
    parts = {
        "input_layernorm": "attn_norm",
        "post_attention_layernorm": "ffn_norm",
        "self_attn.q_proj": "attn_q",
        "self_attn.k_proj": "attn_k",
        "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output",
        "mlp.gate_proj": "ffn_gate",
        "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down",
    }
    for i in range(c["num_hidden_layers"]):
        for part, short in parts.items():
            names[f"model.layers.{i}.{part}.weight"] = f"blk.{i}.{short}.weight"
    state = tiny_model(seed).state_dict()
    for name, short in names.items():
        writer.add_tensor(short, state[name].numpy().astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def _copy_field(writer, field) -> None:
    """Copy one key–value entry of a GGUF file read by ``GGUFReader`` into ``writer``."""
    from gguf import GGUFValueType

    kind = field.types[0]
    if kind == GGUFValueType.ARRAY:
        values = field.contents()
        writer.add_array(field.name, values)
    elif kind == GGUFValueType.STRING:
        writer.add_string(field.name, field.contents())
    else:
        writer.add_key_value(field.name, field.contents(), kind)
