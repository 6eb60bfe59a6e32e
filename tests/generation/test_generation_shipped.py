"""Linear layers computed from a GGUF file's 4-bit blocks as shipped
(cyoa.generation.engine.shipped), checked against the gguf package's own de-quantisation."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType
from gguf.quants import dequantize
from tiny_checkpoint import torch_engine

from cyoa.generation.engine.shipped import (
    Int4Linear,
    _heads_order,
    int4_available,
    q4_1_groups,
    q4_k_groups,
)
from tests.paths import ROOT

needs_int4 = pytest.mark.skipif(not int4_available(), reason="torch has no CPU int4 kernel")


def _half_bytes(values: np.ndarray) -> np.ndarray:
    return values.astype(np.float16).view(np.uint8).reshape(*values.shape, 2)


def q4_1_blocks(rows: int, columns: int, seed: int = 0) -> np.ndarray:
    """Random Q4_1 bytes: per 32 values a float16 scale d, a float16 minimum m, 16 bytes."""
    rng = np.random.default_rng(seed)
    blocks = columns // 32
    d = _half_bytes(rng.uniform(0.001, 0.05, (rows, blocks)))
    m = _half_bytes(rng.uniform(-0.4, 0.0, (rows, blocks)))
    nibbles = rng.integers(0, 256, (rows, blocks, 16), dtype=np.uint8)
    return np.concatenate([d, m, nibbles], axis=-1).reshape(rows, -1)


def q4_k_blocks(rows: int, columns: int, seed: int = 0) -> np.ndarray:
    """Random Q4_K bytes: per 256 values float16 d and dmin, 12 bytes of 6-bit scales and
    minimums (every bit pattern valid), 128 bytes of nibbles."""
    rng = np.random.default_rng(seed)
    blocks = columns // 256
    d = _half_bytes(rng.uniform(0.0001, 0.002, (rows, blocks)))
    dmin = _half_bytes(rng.uniform(0.0001, 0.002, (rows, blocks)))
    rest = rng.integers(0, 256, (rows, blocks, 140), dtype=np.uint8)
    return np.concatenate([d, dmin, rest], axis=-1).reshape(rows, -1)


@pytest.mark.parametrize(
    ("kind", "blocks", "read"),
    [
        (GGMLQuantizationType.Q4_1, q4_1_blocks, q4_1_groups),
        (GGMLQuantizationType.Q4_K, q4_k_blocks, q4_k_groups),
    ],
)
def test_the_groups_read_from_4_bit_blocks_give_back_gguf_s_own_dequantisation_bit_for_bit(
    kind, blocks, read
):
    raw = blocks(48, 512)
    reference = torch.from_numpy(dequantize(raw, kind).astype(np.float32))
    groups = read(raw)
    assert groups.integers.shape == (48, 512)
    assert int(groups.integers.max()) <= 15
    assert torch.equal(groups.dequantized(), reference)


@needs_int4
@pytest.mark.parametrize(
    ("kind", "blocks", "read"),
    [
        (GGMLQuantizationType.Q4_1, q4_1_blocks, q4_1_groups),
        (GGMLQuantizationType.Q4_K, q4_k_blocks, q4_k_groups),
    ],
)
def test_the_int4_kernel_multiplies_the_file_s_weights_without_re_quantising(kind, blocks, read):
    raw = blocks(64, 768, seed=1)
    reference = torch.from_numpy(dequantize(raw, kind).astype(np.float32))
    layer = Int4Linear(read(raw))
    with torch.inference_mode():
        assert (layer.weight_as_multiplied() - reference).abs().max().item() <= 1e-6
        x = torch.randn(5, 768)
        torch.testing.assert_close(layer(x), x @ reference.T, atol=1e-4, rtol=1e-4)


@needs_int4
@pytest.mark.parametrize("compute", [torch.float32, torch.bfloat16])
def test_a_row_s_int4_product_is_the_same_alone_and_in_any_batch_on_any_thread_count(compute):
    layer = Int4Linear(q4_1_groups(q4_1_blocks(192, 576, seed=2)), compute=compute)
    x = torch.randn(16, 576)
    before = torch.get_num_threads()
    try:
        with torch.inference_mode():
            torch.set_num_threads(1)
            alone = torch.cat([layer(x[i : i + 1]) for i in range(16)])
            for threads in (1, 2):
                torch.set_num_threads(threads)
                for rows in (1, 3, 16):
                    batched = torch.cat([layer(x[i : i + rows]) for i in range(0, 16, rows)])
                    assert torch.equal(batched, alone), (rows, threads)
    finally:
        torch.set_num_threads(before)


def test_a_llama_query_matrix_s_rows_are_reordered_as_transformers_reorders_them():
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    rows, heads = 24, 3
    weights = np.arange(rows * 2, dtype=np.float32).reshape(rows, 2)
    expected = LlamaTensorProcessor._reverse_permute_weights(None, weights, heads)
    assert np.array_equal(weights[_heads_order(rows, heads).numpy()], expected)


TEXT = (
    "The lighthouse keeper found a letter on the rocks. It was addressed to him, in his dead "
    "wife's handwriting. He sat down on the wet stone and read it twice."
)


@pytest.mark.real_model
@needs_int4
def test_smollm2_with_weights_as_shipped_predicts_close_to_its_float32_expansion():
    import os
    from dataclasses import replace
    from pathlib import Path

    from cyoa.generation import load_model_cards
    from cyoa.generation.engine.shipped import Int4Linear
    from cyoa.generation.local import TransformersBackend
    from cyoa.generation.types import Sampling

    root = ROOT
    cache = Path(os.environ.get("CYOA_MODEL_CACHE", root / "instance" / "models"))
    card = torch_engine(load_model_cards(root / "models")["smollm2-135m-instruct"])
    shipped = replace(card, options={**card.options, "weights": "as_shipped"})
    expanded = TransformersBackend(card, cache, mode="naive").load(log=lambda _: None)
    naive = TransformersBackend(shipped, cache, mode="naive").load(log=lambda _: None)
    assert sum(isinstance(m, Int4Linear) for m in naive.model.modules()) == 30 * 7
    ids = naive.tokenizer(TEXT, return_tensors="pt").input_ids
    with torch.inference_mode():
        reference = torch.log_softmax(expanded.model(ids).logits[0], -1)
        logprobs = torch.log_softmax(naive.model(ids).logits[0], -1)
    kl = (reference.exp() * (reference - logprobs)).sum(-1)
    # Nats. The kernel's bfloat16 rounding of inputs, scales and zeros: measured 0.0003 mean
    # and 0.0013 at most on a longer text (docs/performance-log.md).
    assert kl.mean().item() < 0.002 and kl.max().item() < 0.01

    sampling, story = Sampling(max_new_tokens=20), "The robot woke up in a field of sunflowers."
    assert "".join(naive.stream(story, sampling, 3)).strip()
