"""Sharing the CPU cores among the models that are working, and packing their layers.

The scheduler tests decode with a tiny random Llama-layout model and a one-character-per-token
test tokenizer (``CharTokenizer``, below), and read the thread count torch uses inside each
forward pass; the ``real_model`` test checks on Gemma 3 that packed layers give a row the
same hidden state whatever the batch and the thread count.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import torch

from cyoa.generation.engine.cores import CoreShare, threads_each
from cyoa.generation.engine.packing import (
    PackedLinear,
    pack_linear_layers,
    pack_model,
    packing_available,
)
from cyoa.generation.engine.scheduler import BatchScheduler
from cyoa.generation.engine.vocabulary import Vocabulary
from cyoa.generation.types import Sampling
from tests.generation.test_generation_batching import TINY_SHAPE
from tests.paths import ROOT

needs_packing = pytest.mark.skipif(not packing_available(), reason="torch built without oneDNN")


@pytest.mark.parametrize(
    ("cores", "working", "threads"),
    [(2, 1, 2), (2, 2, 1), (2, 3, 1), (8, 3, 2), (8, 1, 8), (1, 2, 1), (4, 0, 4)],
)
def test_working_models_get_equal_whole_shares_of_the_cores_and_at_least_one(
    cores, working, threads
):
    assert threads_each(cores, working) == threads


def test_a_model_alone_gets_every_core_and_its_share_returns_when_the_other_is_idle():
    share = CoreShare(2)
    gemma, smollm = object(), object()
    assert share.working(gemma) == 2
    assert share.working(smollm) == 1
    assert share.working(gemma) == 1  # asking again does not count twice
    share.idle(smollm)
    assert share.working(gemma) == 2
    share.idle(gemma)
    share.idle(gemma)
    assert share.workers == 0
    with pytest.raises(ValueError, match="at least 1"):
        CoreShare(0)


class CharTokenizer:
    """Test tokenizer: one token per character (its code point modulo 50, never 0)."""

    pad_token_id = 0

    class Encoded:
        def __init__(self, ids: list[int]) -> None:
            self.input_ids = ids

    def __call__(self, text: str) -> CharTokenizer.Encoded:
        return self.Encoded([1 + ord(c) % 49 for c in text])

    def decode(self, ids: list[int], **_: object) -> str:
        return "".join(chr(96 + i % 26) for i in ids)


def tiny_llama(**config: object) -> torch.nn.Module:
    """A tiny random model in SmolLM2's (Llama) layout; ``config`` adds to its configuration."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(num_hidden_layers=2, **TINY_SHAPE, **config)).eval()


def threads_seen(model: torch.nn.Module) -> list[int]:
    """The torch thread count of every forward pass of ``model``'s decoder, as it runs."""
    seen: list[int] = []
    model.get_decoder().register_forward_pre_hook(lambda *_: seen.append(torch.get_num_threads()))
    return seen


def scheduler_for(model: torch.nn.Module, share: CoreShare | None) -> BatchScheduler:
    scheduler = BatchScheduler(
        model, CharTokenizer(), frozenset(), Vocabulary(model), name="tiny", cores=share
    )
    scheduler.start()
    return scheduler


def test_a_scheduler_decodes_with_its_share_and_gives_it_back_when_done():
    model = tiny_llama()
    seen = threads_seen(model)
    share = CoreShare(2)
    scheduler = scheduler_for(model, share)
    try:
        pieces = list(scheduler.stream("Once upon a time", Sampling(max_new_tokens=6), 1))
        assert len(pieces) == 6
        assert seen and set(seen) == {2}  # alone: both cores
        other_model = object()
        share.working(other_model)
        seen.clear()
        assert list(scheduler.stream("Once upon a time", Sampling(max_new_tokens=6), 1)) == pieces
        assert seen and set(seen) == {1}  # another model working: one core each
        share.idle(other_model)
        deadline = threading.Event()
        for _ in range(100):
            if share.workers == 0:
                break
            deadline.wait(0.01)
        assert share.workers == 0  # idle again: nothing held
    finally:
        scheduler.close()


def test_a_scheduler_closed_while_working_gives_its_share_back():
    share = CoreShare(2)
    scheduler = scheduler_for(tiny_llama(), share)
    stream = scheduler.stream("Once upon a time", Sampling(max_new_tokens=60), 1)
    next(stream)
    scheduler.close()
    assert share.workers == 0


def test_without_a_share_a_scheduler_keeps_the_process_setting():
    model = tiny_llama()
    seen = threads_seen(model)
    torch.set_num_threads(1)
    scheduler = scheduler_for(model, None)
    try:
        list(scheduler.stream("Once upon a time", Sampling(max_new_tokens=3), 1))
        assert seen and set(seen) == {1}
    finally:
        scheduler.close()


@needs_packing
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 64), (3, 7, 64), (1, 1, 64)])
def test_a_packed_linear_layer_computes_the_same_product(bias, shape):
    torch.manual_seed(2)
    linear = torch.nn.Linear(64, 96, bias=bias)
    packed = PackedLinear(linear)
    x = torch.randn(*shape)
    with torch.inference_mode():
        torch.testing.assert_close(packed(x), linear(x), atol=1e-5, rtol=1e-5)
    assert packed(x).shape == (*shape[:-1], 96)


@needs_packing
def test_packing_replaces_every_float32_linear_layer_and_no_other():
    model = tiny_llama()
    decoder = model.get_decoder()
    decoder.layers[1].mlp.down_proj.to(torch.bfloat16)
    float32_linears = sum(
        type(m) is torch.nn.Linear and m.weight.dtype == torch.float32 for m in decoder.modules()
    )
    assert pack_linear_layers(decoder) == float32_linears == 13
    assert not any(
        type(m) is torch.nn.Linear and m.weight.dtype == torch.float32 for m in decoder.modules()
    )
    assert type(decoder.layers[1].mlp.down_proj) is torch.nn.Linear  # bfloat16: left as it is
    assert type(model.lm_head) is torch.nn.Linear  # only what it was given


@needs_packing
def test_a_packed_model_continues_text_as_before_up_to_float32_rounding():
    plain, packed = tiny_llama(), tiny_llama()
    pack_linear_layers(packed.get_decoder())
    ids = torch.tensor([[5, 9, 2, 33, 17, 8]])
    with torch.inference_mode():
        torch.testing.assert_close(
            packed(input_ids=ids).logits, plain(input_ids=ids).logits, atol=1e-5, rtol=1e-4
        )


@needs_packing
def test_packing_a_model_keeps_its_tied_output_layer_and_owns_every_other_weight():
    model = tiny_llama(tie_word_embeddings=True)
    embeddings = model.get_input_embeddings().weight
    storage_before = embeddings.data_ptr()
    ids = torch.tensor([[5, 9, 2, 33]])
    with torch.inference_mode():
        before = model(input_ids=ids).logits
    assert pack_model(model) == 14
    assert model.lm_head.weight is model.get_input_embeddings().weight  # still tied
    assert model.get_input_embeddings().weight.data_ptr() != storage_before  # a copy
    assert type(model.lm_head) is torch.nn.Linear  # the output layer is not packed
    with torch.inference_mode():
        torch.testing.assert_close(model(input_ids=ids).logits, before, atol=1e-5, rtol=1e-4)


@pytest.mark.real_model
@needs_packing
def test_gemma_s_packed_layers_give_a_row_the_same_state_whatever_its_batch_and_threads():
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cyoa.generation import load_model_cards
    from cyoa.generation.weights import ensure_converted

    card = load_model_cards(ROOT / "models")["gemma-3-270m"]
    cache = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
    folder = ensure_converted(card, cache)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True).eval()
    assert pack_linear_layers(model.get_decoder()) == 18 * 7
    texts = [
        "The lighthouse keeper found a letter on the rocks. It was addressed to him.",
        "Nobody in the town had seen the sun for three days, and the baker was worried.",
        "The robot woke up in a field of sunflowers with no memory of how it got there.",
    ]
    ids = torch.tensor([tokenizer(text).input_ids[:14] for text in texts])
    decoder = model.get_decoder()
    before = torch.get_num_threads()
    states = {}
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            with torch.inference_mode():
                states[threads, "batch"] = decoder(input_ids=ids).last_hidden_state
                states[threads, "alone"] = torch.cat(
                    [decoder(input_ids=ids[i : i + 1]).last_hidden_state for i in range(3)]
                )
    finally:
        torch.set_num_threads(before)
    reference = states[1, "alone"]
    for key, state in states.items():
        assert torch.equal(state, reference), key
