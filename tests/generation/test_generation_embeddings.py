"""A tied embedding matrix kept in exact 8-bit blocks (llama.cpp's Q8_0): the same numbers, a
quarter of the memory.

The fast tests build Q8_0-valued matrices by hand and a tiny Gemma-3-layout model (it scales
its embeddings); the ``real_model`` tests check the packaged Gemma 3 (the blocks its conversion
saved give its float32 matrix back bit for bit, and the app's model gives the same hidden states
and logits as the float32 checkpoint) and SmolLM2 (embeddings from its blocks, its output layer
packed: a row's logits the same alone and in a batch).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from tiny_checkpoint import torch_engine

from cyoa.generation.engine.embeddings import (
    FILE_NAME,
    BlockEmbedding,
    BlockLinear,
    BlockMatrix,
    save_blocks,
    use_blocks,
)
from cyoa.generation.engine.packing import PackedLinear, packing_available
from cyoa.generation.engine.vocabulary import Vocabulary
from tests.paths import ROOT


def q8_0(weight: torch.Tensor) -> torch.Tensor:
    """``weight`` rounded as llama.cpp writes Q8_0: per block of 32, ``d = max|x| / 127``
    stored in float16, ``q = round(x / d)``; de-quantized ``d × q``."""
    blocks = weight.reshape(weight.shape[0], -1, 32)
    d = blocks.abs().amax(dim=-1, keepdim=True) / 127
    q = torch.round(blocks / torch.where(d > 0, d, 1.0)).clamp(-127, 127)  # a zero block: 0
    return (d.half().float() * q).reshape(weight.shape)


def tiny_gemma(tied_matrix: torch.Tensor | None = None) -> torch.nn.Module:
    """A tiny random Gemma 3 (hidden size 64, 300 tokens, embeddings scaled by √64), its tied
    matrix made of Q8_0 values."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=64,
        layer_types=["sliding_attention", "full_attention"],
        sliding_window=4,
    )
    model = Gemma3ForCausalLM(config).eval()
    with torch.no_grad():
        weight = model.get_input_embeddings().weight
        weight.copy_(q8_0(weight) if tied_matrix is None else tied_matrix)
    return model


def test_a_q8_0_block_gives_back_its_scale_and_integers():
    # One row of two blocks, worked by hand: block 1 is 0.25 × (-127, -119, ..., 121, 127),
    # block 2 is 0.5 × 127 in its first place and zeros (0.5 × 0) elsewhere.
    integers = torch.cat([torch.arange(-127, 129, 8), torch.tensor([127] + [0] * 31)])
    integers[31] = 127  # the block's largest magnitude is 127 × its scale
    scales = torch.tensor([0.25] * 32 + [0.5] * 32)
    weight = (integers.float() * scales).reshape(1, 64)
    matrix = BlockMatrix.exactly(weight)
    assert matrix is not None
    assert matrix.scales.tolist() == [[0.25, 0.5]]
    assert matrix.integers.tolist() == [integers.tolist()]
    assert torch.equal(matrix.rows(torch.tensor([0])), weight)


def test_blocks_of_q8_0_values_give_the_matrix_back_bit_for_bit():
    weight = q8_0(torch.randn(5000, 96, generator=torch.Generator().manual_seed(0)))
    matrix = BlockMatrix.exactly(weight)
    assert matrix is not None
    assert matrix.integers.dtype == torch.int8 and matrix.scales.shape == (5000, 3)
    assert torch.equal(torch.cat([rows for _, rows in matrix.chunks()]), weight)
    ids = torch.tensor([[4999, 0, 17], [4096, 4095, 3]])
    assert torch.equal(matrix.rows(ids), weight[ids])
    x = torch.randn(3, 96, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(matrix.product(x), x @ weight.T, atol=1e-5, rtol=1e-6)
    # A quarter of the memory, and a little more for the scales.
    held = matrix.integers.nbytes + matrix.scales.nbytes
    assert held / weight.nbytes == pytest.approx(0.25 + 1 / 32)


def test_a_matrix_that_is_not_made_of_q8_0_blocks_has_none():
    generator = torch.Generator().manual_seed(0)
    assert BlockMatrix.exactly(torch.randn(100, 64, generator=generator)) is None
    assert BlockMatrix.exactly(q8_0(torch.randn(100, 64)).double()) is None  # not float32
    assert BlockMatrix.exactly(torch.zeros(100, 48)) is None  # rows not in blocks of 32
    nearly = q8_0(torch.randn(100, 64, generator=generator))
    nearly[50, 3] = torch.nextafter(nearly[50, 3], torch.tensor(10.0))
    assert BlockMatrix.exactly(nearly) is None  # one value off by one unit in the last place


def test_a_model_reading_its_blocks_computes_what_its_float32_matrix_did(tmp_path):
    model = tiny_gemma()
    ids = torch.tensor([[5, 9, 2, 33, 17, 8, 250, 299]])
    with torch.inference_mode():
        before = model(input_ids=ids)
        embedded = model.get_input_embeddings()(ids)
    assert save_blocks(model, tmp_path)
    assert use_blocks(model, tmp_path)
    assert isinstance(model.get_input_embeddings(), BlockEmbedding)
    assert isinstance(model.get_output_embeddings(), BlockLinear)
    assert model.get_output_embeddings().matrix is model.get_input_embeddings().matrix  # tied
    with torch.inference_mode():
        after = model(input_ids=ids)
        # Gemma's √64 embedding scale applied, the rows exactly as before.
        assert torch.equal(model.get_input_embeddings()(ids), embedded)
    torch.testing.assert_close(after.logits, before.logits, atol=1e-5, rtol=1e-6)


def test_the_vocabulary_screens_from_the_blocks_and_finds_the_float32_top_k(tmp_path):
    model = tiny_gemma()
    plain = Vocabulary(model, screen=False)
    hidden = torch.randn(6, 64, generator=torch.Generator().manual_seed(2)) * 30
    expected_top, expected_ids = torch.topk(plain.logits(hidden), 10, dim=-1)
    save_blocks(model, tmp_path)
    use_blocks(model, tmp_path)
    screened = Vocabulary(model, screen=True)
    assert screened.weight is None  # no float32 matrix kept beside the blocks
    ids, top = screened.top_logits(hidden, 10)
    torch.testing.assert_close(top, expected_top, atol=1e-5, rtol=1e-6)
    assert [set(r) for r in ids.tolist()] == [set(r) for r in expected_ids.tolist()]
    torch.testing.assert_close(screened.logits(hidden), plain.logits(hidden))


@pytest.mark.skipif(not packing_available(), reason="this torch has no oneDNN packing")
def test_a_packed_output_layer_beside_the_blocks_gives_each_row_its_logits_alone(tmp_path):
    """SmolLM2's way: embeddings from the blocks, the output layer the float32 matrix packed
    for oneDNN; logits as the float32 model's (up to rounding), a row's the same bit for bit
    alone and among others."""
    model = tiny_gemma()
    hidden = torch.randn(5, 64, generator=torch.Generator().manual_seed(3)) * 30
    ids = torch.tensor([[5, 9, 2, 33, 17, 8, 250, 299]])
    with torch.inference_mode():
        before, embedded = model.lm_head(hidden), model.get_input_embeddings()(ids)
    save_blocks(model, tmp_path)
    assert use_blocks(model, tmp_path, packed_output=True)
    assert isinstance(model.get_input_embeddings(), BlockEmbedding)
    assert isinstance(model.get_output_embeddings(), PackedLinear)
    vocabulary = Vocabulary(model)
    assert not vocabulary.screen and vocabulary.size == 300
    with torch.inference_mode():
        assert torch.equal(model.get_input_embeddings()(ids), embedded)
        together = vocabulary.logits(hidden)
        torch.testing.assert_close(together, before, atol=1e-4, rtol=1e-5)
        for row in range(5):
            assert torch.equal(vocabulary.logits(hidden[row : row + 1])[0], together[row])


def test_blocks_are_used_only_where_saved_tied_and_large_enough(tmp_path):
    model = tiny_gemma()
    assert not use_blocks(model, tmp_path)  # nothing saved
    save_blocks(model, tmp_path)
    assert not use_blocks(model, tmp_path, min_entries=300 * 64 + 1)
    assert type(model.get_output_embeddings()) is torch.nn.Linear
    assert use_blocks(model, tmp_path, min_entries=300 * 64)


def test_no_blocks_are_saved_for_a_matrix_they_cannot_give_back(tmp_path):
    model = tiny_gemma(tied_matrix=torch.randn(300, 64))
    assert not save_blocks(model, tmp_path)
    assert not (tmp_path / FILE_NAME).exists()


MODEL_CACHE = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))


# oneDNN's bfloat16 products need AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT; without them the
# app does not screen Gemma's vocabulary (see the test after next).
needs_bfloat16_products = pytest.mark.skipif(
    not packing_available(torch.bfloat16),
    reason="this CPU has no oneDNN bfloat16 products, so Gemma's vocabulary is not screened",
)


@pytest.mark.real_model
@needs_bfloat16_products
def test_gemma_reads_its_blocks_and_gives_the_float32_checkpoint_s_states_and_logits():
    from transformers import AutoModelForCausalLM

    from cyoa.generation import load_model_cards
    from cyoa.generation.engine.packing import pack_model
    from cyoa.generation.local import TransformersBackend
    from cyoa.generation.weights import ensure_converted

    card = torch_engine(load_model_cards(ROOT / "models")["gemma-3-270m"])
    folder = ensure_converted(card, MODEL_CACHE)
    backend = TransformersBackend(card, MODEL_CACHE, mode="naive")
    local = backend.load(log=lambda _: None)
    model = local.model
    assert isinstance(model.get_input_embeddings(), BlockEmbedding)
    assert local.vocabulary.screen and local.vocabulary.weight is None

    plain = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    weight = plain.get_input_embeddings().weight.detach()
    matrix = model.get_input_embeddings().matrix
    assert torch.equal(torch.cat([rows for _, rows in matrix.chunks()]), weight)
    pack_model(plain)
    ids = local.tokenizer(
        "The lighthouse keeper found a letter on the rocks. It was addressed to him.",
        return_tensors="pt",
    ).input_ids
    with torch.inference_mode():
        hidden = model.get_decoder()(input_ids=ids).last_hidden_state
        expected = plain.get_decoder()(input_ids=ids).last_hidden_state
        assert torch.equal(hidden, expected)
        torch.testing.assert_close(
            model.lm_head(hidden[0]), plain.lm_head(hidden[0]), atol=1e-4, rtol=1e-5
        )


@pytest.mark.real_model
def test_without_bfloat16_products_gemma_multiplies_its_whole_packed_output_layer(monkeypatch):
    """On a CPU without oneDNN's bfloat16 products (AVX2 only) the screen would cost more
    than the whole float32 product, so Gemma is loaded as SmolLM2 is: the output layer
    packed in float32, the embeddings from the blocks, no screen."""
    from cyoa.generation import load_model_cards
    from cyoa.generation.engine import model as engine_model
    from cyoa.generation.local import TransformersBackend

    monkeypatch.setattr(
        engine_model, "packing_available", lambda dtype=torch.float32: dtype == torch.float32
    )
    card = torch_engine(load_model_cards(ROOT / "models")["gemma-3-270m"])
    local = TransformersBackend(card, MODEL_CACHE, mode="naive").load(log=lambda _: None)
    assert isinstance(local.model.get_input_embeddings(), BlockEmbedding)
    assert isinstance(local.model.get_output_embeddings(), PackedLinear)
    assert not local.vocabulary.screen


@pytest.mark.real_model
def test_smollm2_multiplies_a_packed_output_layer_and_a_row_s_logits_do_not_depend_on_its_batch():
    """SmolLM2's vocabulary is not screened: its whole output layer is multiplied at every
    step, packed for oneDNN, with the embeddings from its blocks. A row's logits are the same
    bit for bit alone and among 16 (MKL's product, used before, differed by about 2e-5)."""
    from cyoa.generation import load_model_cards
    from cyoa.generation.local import TransformersBackend

    card = torch_engine(load_model_cards(ROOT / "models")["smollm2-135m-instruct"])
    backend = TransformersBackend(card, MODEL_CACHE, mode="naive")
    local = backend.load(log=lambda _: None)
    model, vocabulary = local.model, local.vocabulary
    assert isinstance(model.get_input_embeddings(), BlockEmbedding)
    assert isinstance(model.get_output_embeddings(), PackedLinear)
    assert not vocabulary.screen
    ids = local.tokenizer(
        "The lighthouse keeper found a letter on the rocks. It was addressed to him, in his "
        "dead wife's handwriting, and the wind was getting stronger.",
        return_tensors="pt",
    ).input_ids
    assert ids.shape[1] >= 16
    with torch.inference_mode():
        hidden = model.get_decoder()(input_ids=ids).last_hidden_state[0, :16]
        together = vocabulary.logits(hidden)
        for row in range(16):
            assert torch.equal(vocabulary.logits(hidden[row : row + 1])[0], together[row])
