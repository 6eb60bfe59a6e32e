"""Key-value caches that grow in place (cyoa/generation/kv_cache.py): the same keys and values
as transformers' concatenating layers, written into a buffer with room, never into tensors a
copy of the cache (a stored prompt) can see."""

from __future__ import annotations

import copy

import pytest
import torch
from test_generation_batching import tiny_models
from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

from cyoa.generation import kv_cache
from cyoa.generation.batching import Batch
from cyoa.generation.kv_cache import (
    GrowingLayer,
    GrowingSlidingWindowLayer,
    grow_in_place,
    own_rows,
    select_rows,
)


def states(tokens: int, seed: int, rows: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    """Random keys and values ``(rows, heads=1, tokens, dim=4)``."""
    generator = torch.Generator().manual_seed(seed)
    return (
        torch.randn(rows, 1, tokens, 4, generator=generator),
        torch.randn(rows, 1, tokens, 4, generator=generator),
    )


def growing(layer):
    cache = DynamicCache()
    cache.layers = [layer]
    grow_in_place(cache)
    return layer


@pytest.mark.parametrize("window", [None, 4])
def test_a_growing_layer_returns_and_keeps_what_the_concatenating_layer_does(window):
    def make():
        return DynamicLayer() if window is None else DynamicSlidingWindowLayer(window)

    plain, grown = make(), growing(make())
    assert type(grown) is (GrowingLayer if window is None else GrowingSlidingWindowLayer)
    # A prompt of 3 tokens, then single tokens well past the window and the buffer's room.
    for step, tokens in enumerate([3] + [1] * (kv_cache.ROOM_TOKENS + 5) + [2]):
        new = states(tokens, seed=step)
        expected, got = plain.update(*new), grown.update(*new)
        kept, got_kept = [plain.keys, plain.values], [grown.keys, grown.values]
        for e, g in zip([*expected, *kept], [*got, *got_kept], strict=True):
            assert torch.equal(e, g)
        assert grown.get_seq_length() == plain.get_seq_length()


def test_steps_write_into_the_buffer_until_its_room_is_used():
    layer = growing(DynamicLayer())
    layer.update(*states(3, seed=0))
    buffer = layer._key_buffer
    assert buffer.shape[-2] == 3 + kv_cache.ROOM_TOKENS
    for step in range(kv_cache.ROOM_TOKENS):
        layer.update(*states(1, seed=1 + step))
        assert layer._key_buffer is buffer  # no copy
        assert layer.keys.data_ptr() == buffer.data_ptr()
    layer.update(*states(1, seed=99))
    assert layer._key_buffer is not buffer  # full: moved once, with room again
    assert layer._key_buffer.shape[-2] == 3 + kv_cache.ROOM_TOKENS + 1 + kv_cache.ROOM_TOKENS


def test_a_copy_owns_nothing_and_neither_side_changes_what_the_other_sees():
    original = growing(DynamicLayer())
    original.update(*states(3, seed=0))
    stored = copy.copy(original)  # what a stored prompt keeps
    seen = stored.keys.clone()
    assert stored._key_buffer is None

    original.update(*states(1, seed=1))  # the batch goes on in place
    branch = copy.copy(stored)  # another prompt goes on from the stored one
    branch.update(*states(2, seed=2))
    assert torch.equal(stored.keys, seen)
    assert torch.equal(original.keys[:, :, :3], seen)
    assert torch.equal(branch.keys[:, :, :3], seen)
    assert branch._key_buffer.data_ptr() != original._key_buffer.data_ptr()
    assert not torch.equal(original.keys[:, :, 3:], branch.keys[:, :, 3:4])


def test_rows_kept_and_rows_stacked_keep_their_room_and_their_padding():
    layer = growing(DynamicLayer())
    layer.update(*states(3, seed=0, rows=3))
    before = layer.keys.clone()
    select_rows(layer, torch.tensor([2, 0]))
    assert torch.equal(layer.keys, before[[2, 0]])
    buffer = layer._key_buffer
    layer.update(*states(1, seed=1))
    assert layer._key_buffer is buffer

    other_keys, other_values = states(2, seed=3, rows=1)
    own_rows(layer, [layer.keys, other_keys], [layer.values, other_values], tokens=5)
    assert layer.keys.shape == (3, 1, 5, 4)
    assert torch.equal(
        layer.keys[:2, :, 1:], torch.cat([before[[2, 0]], states(1, seed=1)[0]], -2)[:, :, :4]
    )
    assert torch.equal(layer.keys[2:, :, :3], torch.zeros(1, 1, 3, 4))  # padding on the left
    assert torch.equal(layer.keys[2:, :, 3:], other_keys)
    assert layer._key_buffer.shape[-2] == 5 + kv_cache.ROOM_TOKENS


@pytest.mark.parametrize("layout", ["gemma3", "llama"])
@pytest.mark.parametrize("room", [1, 64])
def test_a_batch_decodes_the_same_hidden_states_with_growing_and_concatenating_caches(
    layout, room, monkeypatch
):
    """Rows joining (fresh, exactly a stored prompt, and going on from one that the batch is
    itself extending in place) and leaving, with the buffers' room used up at once (1) or
    not (64): bit for bit what the concatenating cache gives."""
    from cyoa.generation import batching
    from cyoa.generation.prefixes import PrefixStore

    model = tiny_models()[layout]
    monkeypatch.setattr(kv_cache, "ROOM_TOKENS", room)
    story = [5, 6, 7, 8]

    def run(grow: bool) -> list[torch.Tensor]:
        monkeypatch.setattr(batching, "grow_in_place", grow_in_place if grow else (lambda c: c))
        prefixes = PrefixStore()
        batch = Batch(model, pad_id=0)
        hidden = [batch.join([story, [9, 10]], prefixes)]
        hidden += [batch.step([11 + step] * batch.rows) for step in range(6)]
        batch.keep([])
        # Alone in the batch, this row's cache is the stored prompt's buffer, extended in place.
        hidden.append(batch.join([story + [12, 13]], prefixes))
        hidden += [batch.step([20 + step]) for step in range(3)]
        # These go on from the stored prompt the batch's row extended: they must not see (or
        # overwrite) the tokens the batch wrote after it.
        hidden.append(batch.join([story + [12, 13, 14], story + [12, 13]], prefixes))
        batch.keep([2, 0])
        hidden += [batch.step([30 + step] * batch.rows) for step in range(5)]
        return hidden

    with torch.inference_mode():
        for grown, plain in zip(run(True), run(False), strict=True):
            assert torch.equal(grown, plain)
