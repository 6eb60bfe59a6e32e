"""Key-value caches that grow in place, so that a decoding step writes its new token's keys and
values instead of copying every stored one.

transformers' ``DynamicCache`` appends a step's keys and values with ``torch.cat``: every step
copies a layer's whole cache, ``rows × heads × tokens × head_dim`` numbers, twice (keys and
values). For one row that is cheap; for a batch it is not. Measured on Gemma 3 270M, one
thread, 16 rows of about 110 tokens (bench/results/load.md, step 17): ``aten::cat`` took
16% of a decoding step with its sampling, about 27 ms of 150.

:func:`grow_in_place` gives a cache's layers an ``update`` that writes into a buffer with room
for :data:`ROOM_TOKENS` more tokens; a layer's ``keys`` and ``values`` are views of its buffer
(the tokens stored so far), so the rest of transformers reads them as before. Only when the
room is used up (or the layer's tensors were replaced, say by rows leaving a batch) is the
layer copied, once, into a new buffer with room again.

Ownership: a layer writes into its buffer only while it is the buffer's owner and its tensors
end where the buffer's written part ends. A copy of a layer (``copy.copy``, as
:meth:`~cyoa.generation.prefixes.Prefix.cache_copy` makes) owns nothing, so the first token
it appends moves it into a buffer of its own; and an owner only ever writes past the end of
its own tokens, which no copy taken earlier can see. So a stored prompt's cache is never
changed by the rows that go on from it.

The keys and values are the same numbers either way; only where they lie in memory differs
(the attention reads a view with the buffer's strides), which does not change the
arithmetic: the tests compare hidden states with ``DynamicCache``'s bit for bit.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

# Tokens of room a layer's buffer gets beyond what it holds: one continuation of a
# sentence (at most 60 tokens with the packaged cards) seldom needs a second copy.
ROOM_TOKENS = 64


def _span(tensor: torch.Tensor, buffer: torch.Tensor | None) -> tuple[int, int] | None:
    """``(start, end)`` if ``tensor`` is ``buffer[:, :, start:end]``, else None."""
    if (
        buffer is None
        or tensor.dim() != 4
        or tensor.untyped_storage().data_ptr() != buffer.untyped_storage().data_ptr()
        or tensor.stride() != buffer.stride()
        or tensor.shape[:2] != buffer.shape[:2]
        or tensor.shape[-1] != buffer.shape[-1]
    ):
        return None
    start, within = divmod(tensor.storage_offset() - buffer.storage_offset(), buffer.stride(-2))
    if within:
        return None
    return start, start + tensor.shape[-2]


def own(layer: Any, keys: torch.Tensor, values: torch.Tensor, room: int | None = None) -> None:
    """Copy ``keys`` and ``values`` ``(rows, heads, tokens, dim)`` into new buffers owned by
    ``layer`` with room for ``room`` more tokens (:data:`ROOM_TOKENS` if not given), and make
    them the layer's tensors."""
    tokens = keys.shape[-2]
    room = ROOM_TOKENS if room is None else room
    buffers = []
    for tensor in (keys, values):
        buffer = tensor.new_empty((*tensor.shape[:2], tokens + room, tensor.shape[-1]))
        buffer[:, :, :tokens] = tensor
        buffers.append(buffer)
    layer._key_buffer, layer._value_buffer = buffers
    layer._owner = layer
    layer.keys, layer.values = buffers[0][:, :, :tokens], buffers[1][:, :, :tokens]


def own_rows(layer: Any, keys: list[torch.Tensor], values: list[torch.Tensor], tokens: int) -> None:
    """Stack the rows of ``keys`` and ``values`` (parts of ``(rows, heads, n, dim)``, ``n`` at
    most ``tokens``) into new buffers owned by ``layer``, each part right-aligned at
    ``tokens`` and padded on the left with zeros, with room for :data:`ROOM_TOKENS` more."""
    rows = sum(part.shape[0] for part in keys)
    buffers = []
    for parts in (keys, values):
        first = parts[0]
        buffer = first.new_zeros((rows, first.shape[1], tokens + ROOM_TOKENS, first.shape[-1]))
        row = 0
        for part in parts:
            buffer[row : row + part.shape[0], :, tokens - part.shape[-2] : tokens] = part
            row += part.shape[0]
        buffers.append(buffer)
    layer._key_buffer, layer._value_buffer = buffers
    layer._owner = layer
    layer.keys, layer.values = buffers[0][:, :, :tokens], buffers[1][:, :, :tokens]


def select_rows(layer: Any, index: torch.Tensor) -> None:
    """Keep the rows ``index`` of ``layer``'s keys and values (in that order), copying them
    once, with their room, into buffers the layer owns."""
    span = _owned_span(layer)
    if span is None:
        own(layer, layer.keys[index], layer.values[index])
        return
    start, end = span
    layer._key_buffer = layer._key_buffer.index_select(0, index)
    layer._value_buffer = layer._value_buffer.index_select(0, index)
    layer.keys = layer._key_buffer[:, :, start:end]
    layer.values = layer._value_buffer[:, :, start:end]


def _owned_span(layer: Any) -> tuple[int, int] | None:
    """Where the layer's keys and values lie in its buffers, if it owns them."""
    if getattr(layer, "_owner", None) is not layer:
        return None
    span = _span(layer.keys, layer._key_buffer)
    if span is None or _span(layer.values, layer._value_buffer) != span:
        return None
    return span


class _Growing:
    """What both growing layer classes add to transformers' dynamic layers. It comes after
    transformers' class among their bases and has no slots, so that a layer's class can be
    changed to a growing one (Python refuses the change otherwise: "layout differs")."""

    __slots__ = ()
    _key_buffer: torch.Tensor | None = None
    _value_buffer: torch.Tensor | None = None
    _owner: Any = None

    def __copy__(self) -> Any:
        # A copy shares the tensors but owns no buffer (see the module's docstring).
        clone = self.__class__.__new__(self.__class__)
        clone.__dict__.update(self.__dict__)
        clone._key_buffer = clone._value_buffer = clone._owner = None
        return clone

    def _append(
        self, key_states: torch.Tensor, value_states: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new keys and values after the stored ones; all of them, as views."""
        new = key_states.shape[-2]
        if not self.is_initialized or self.keys.dim() != 4:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            own(self, key_states[:, :, :0], value_states[:, :, :0], new + ROOM_TOKENS)
        span = _owned_span(self)
        if span is None or span[1] + new > self._key_buffer.shape[-2]:
            own(self, self.keys, self.values, new + ROOM_TOKENS)
            span = (0, self.keys.shape[-2])
        start, end = span
        self._key_buffer[:, :, end : end + new] = key_states
        self._value_buffer[:, :, end : end + new] = value_states
        return self._key_buffer[:, :, start : end + new], self._value_buffer[
            :, :, start : end + new
        ]


class GrowingLayer(DynamicLayer, _Growing):
    """A ``DynamicLayer`` that appends in place."""

    __slots__ = ()

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        self.keys, self.values = self._append(key_states, value_states)
        return self.keys, self.values


class GrowingSlidingWindowLayer(DynamicSlidingWindowLayer, _Growing):
    """A ``DynamicSlidingWindowLayer`` that appends in place: it returns the stored tokens
    and the new ones, and keeps the last ``sliding_window - 1`` of them, as transformers'
    layer does (without its ``record_past`` mode, which generation here never turns on)."""

    __slots__ = ()

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.record_past:
            return super().update(key_states, value_states, *args, **kwargs)
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        self.cumulative_length += key_states.shape[-2]
        keys, values = self._append(key_states, value_states)
        self.keys = keys[:, :, -self.sliding_window + 1 :]
        self.values = values[:, :, -self.sliding_window + 1 :]
        return keys, values


_GROWING = {DynamicLayer: GrowingLayer, DynamicSlidingWindowLayer: GrowingSlidingWindowLayer}


def grow_in_place(cache: Any) -> Any:
    """Make every layer of ``cache`` (a transformers ``DynamicCache``) append in place from
    now on; returns the cache. Layers of other kinds are left as they are."""
    for layer in cache.layers:
        growing = _GROWING.get(type(layer))
        if growing is not None:
            layer.__class__ = growing
    return cache
