"""Decoding several continuations of one model together: left padding, one forward pass for
the rows decoding and the prompts joining, and the KV-cache surgery that lets rows leave and
join a running batch.

A batch is a :class:`Batch`: one left-padded attention mask of shape ``(rows, columns)`` and
one ``DynamicCache`` whose layers hold ``(rows, heads, stored, head_dim)`` keys and values.
Every row's real tokens end at the last column; a row's padding is on its left and masked
out, and its positions count only its own tokens, so what a row attends to (and so its text)
is the same as if it were decoded alone, up to floating-point rounding of the batched
matrix products. A sliding-window layer stores only the last ``window - 1`` columns; that is
kept consistent when rows leave (:meth:`Batch.keep`) or join (:meth:`Batch.join`).

Prompts join in the same forward pass as the rows decoding (:meth:`Batch.advance`): the
decoding rows' one new token each and the joining prompts' tokens go through the layers as one
packed sequence, so the layers' weights are read from memory once for both. A decoding step
and a prompt read each cost about one pass over the weights plus a little per token, so a row
joining a running batch costs its tokens only, not a pass of its own. Only attention is
computed apart, part by part, in :func:`packed_attention`: the decoding rows against the
batch's cache, each joining prompt against its own (a stored beginning of it, or none), with
the mask that part's own pass would use. Each part's hidden states agree with those of a pass
of its own to float32 rounding (the layers' products see another number of rows).

Only :class:`Batch` runs the model's layers; it returns each row's last hidden state, and the
caller scores the vocabulary (:mod:`cyoa.generation.engine.vocabulary`), samples and decodes.
"""

from __future__ import annotations

import copy
import functools
import threading
from dataclasses import dataclass, field
from typing import Any

import torch

from cyoa.generation.engine.prefixes import PrefixStore

# The name under which :func:`packed_attention` is registered with transformers.
PACKED_ATTENTION = "cyoa_packed"
# Spare columns a batch's cache layer gets when it grows by copying (see _append).
ROOM = 32
# The parts of the packed pass running now on this thread (each scheduler thread runs its own).
_running = threading.local()


def leading_padding(mask: torch.Tensor) -> int:
    """How many columns on the left are padding in every row (and so can be dropped)."""
    empty = (mask.sum(0) == 0).long()
    return int(empty.cumprod(0).sum())


def _pad_stored(tensor: torch.Tensor, stored: int) -> torch.Tensor:
    """Keys or values ``(rows, heads, s, dim)`` padded on the left with zeros to ``stored``."""
    missing = stored - tensor.shape[-2]
    if missing <= 0:
        return tensor
    zeros = tensor.new_zeros((*tensor.shape[:2], missing, tensor.shape[-1]))
    return torch.cat([zeros, tensor], dim=-2)


def _row_cache(cache: Any, row: int, length: int) -> Any:
    """Row ``row`` of a left-padded batch ``cache`` as a one-row cache of its ``length`` real
    tokens, as if that row had been read alone (its own copy of the tensors)."""
    out = copy.copy(cache)
    out.layers = []
    for layer in cache.layers:
        layer = copy.copy(layer)
        keep = min(length, layer.keys.shape[-2])
        layer.keys = layer.keys[row : row + 1, :, layer.keys.shape[-2] - keep :].clone()
        layer.values = layer.values[row : row + 1, :, layer.values.shape[-2] - keep :].clone()
        if _sliding_window(layer) is not None:
            layer.cumulative_length = length
        out.layers.append(layer)
    return out


def _sliding_window(layer: Any) -> int | None:
    return getattr(layer, "sliding_window", None) if getattr(layer, "is_sliding", False) else None


@dataclass
class _Part:
    """A stretch of the packed sequence with a cache of its own: the decoding rows (one token
    each, ``rows`` of them, left-padded ``mask`` with the new column) or one joining prompt
    (``rows`` = 1, its ``tokens`` after the ``read`` tokens its cache holds). ``positions``:
    each token's position in its own row."""

    cache: Any
    tokens: list[int]
    positions: torch.Tensor
    rows: int = 1
    mask: torch.Tensor | None = None
    read: int = 0
    ids: list[int] = field(default_factory=list)
    # The decoding rows' spare room per layer (Batch._room) and their attention masks by
    # the number of columns a layer attends to.
    room: dict[int, tuple[torch.Tensor, torch.Tensor]] = field(default_factory=dict)
    masks: dict[int, torch.Tensor] = field(default_factory=dict)


def _append(
    layer: Any,
    keys: torch.Tensor,
    values: torch.Tensor,
    room: dict[int, tuple[torch.Tensor, torch.Tensor]],
    index: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``layer.update(keys, values)`` for the decoding rows' one new column each, written in
    place into spare columns after the layer's tensors (``room[index]``). Without room the
    layer is copied once into tensors with ``ROOM`` spare columns, so the next steps do not
    copy the whole layer (as ``torch.cat`` does at every step). A sliding-window layer whose
    window is full drops its oldest column instead: that is left to ``layer.update``."""
    stored = layer.keys.shape[-2]
    window = _sliding_window(layer)
    if window is not None and stored + 1 > window - 1:
        return layer.update(keys, values)
    spare = room.get(index)
    if (
        spare is None
        or spare[0].data_ptr() != layer.keys.data_ptr()
        or spare[0].shape[:2] != layer.keys.shape[:2]
        or spare[0].shape[-2] <= stored
    ):
        shape = (*layer.keys.shape[:2], stored + ROOM, layer.keys.shape[-1])
        spare = (layer.keys.new_empty(shape), layer.values.new_empty(shape))
        spare[0][:, :, :stored] = layer.keys
        spare[1][:, :, :stored] = layer.values
        room[index] = spare
    spare[0][:, :, stored] = keys[:, :, 0]
    spare[1][:, :, stored] = values[:, :, 0]
    layer.keys, layer.values = spare[0][:, :, : stored + 1], spare[1][:, :, : stored + 1]
    if window is not None:
        layer.cumulative_length += 1
    return layer.keys, layer.values


def packed_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Any,
    sliding_window: int | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention for a packed pass (:meth:`Batch.advance`), registered with transformers as
    ``PACKED_ATTENTION``. ``query``, ``key`` and ``value`` are ``(1, heads, tokens, dim)``
    for the whole packed sequence; each part's stretch is added to its own cache and
    attends to it alone, through transformers' own SDPA attention with the mask a pass of
    that part alone would get (``attention_mask``, the one transformers was handed, is not
    used: the parts' masks are made here). A sliding-window layer
    (``sliding_window``) sees only that many positions back."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    outputs = []
    start = 0
    for part in _running.parts:
        width = part.rows if part.mask is not None else len(part.tokens)
        stretch = slice(start, start + width)
        start += width
        layer = part.cache.layers[module.layer_idx]
        if part.mask is not None:
            # The decoding rows: a batch of one-token queries, as in Batch.step.
            keys, values = _append(
                layer,
                key[:, :, stretch].transpose(0, 2),
                value[:, :, stretch].transpose(0, 2),
                part.room,
                module.layer_idx,
            )
            mask = part.masks.get(keys.shape[-2])
            if mask is None:
                mask = part.masks[keys.shape[-2]] = part.mask[
                    :, None, None, -keys.shape[-2] :
                ].bool()
            out, _ = sdpa_attention_forward(
                module, query[:, :, stretch].transpose(0, 2), keys, values, mask, **kwargs
            )
            outputs.append(out.transpose(0, 1))
        else:
            keys, values = layer.update(key[:, :, stretch], value[:, :, stretch])
            end = part.read + width
            asked = torch.arange(part.read, end).unsqueeze(-1)
            seen = torch.arange(end - keys.shape[-2], end).unsqueeze(0)
            mask = seen <= asked
            if sliding_window is not None:
                mask &= seen > asked - sliding_window
            out, _ = sdpa_attention_forward(
                module, query[:, :, stretch], keys, values, mask[None, None], **kwargs
            )
            outputs.append(out)
    return torch.cat(outputs, dim=1), None


@functools.cache
def _packed_attention_name() -> str:
    """Register :func:`packed_attention` with transformers (once); the name to select it."""
    from transformers import AttentionInterface

    AttentionInterface.register(PACKED_ATTENTION, packed_attention)
    return PACKED_ATTENTION


class Batch:
    """Rows of one model decoding together (no rows yet: call :meth:`join`).

    ``model`` is a transformers causal LM; ``pad_id`` any token id (padding is masked). The
    caller keeps its own per-row state in the same order as the batch's rows.
    """

    def __init__(self, model: Any, pad_id: int) -> None:
        self.model = model
        self.decoder = model.get_decoder()
        self.pad_id = pad_id
        self.mask: torch.Tensor | None = None
        self.cache: Any = None
        # Per layer, the tensors with spare columns that the cache's keys and values are
        # the first columns of (written into in place; see _append).
        self._room: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    @property
    def rows(self) -> int:
        return 0 if self.mask is None else self.mask.shape[0]

    def join(self, prompts: list[list[int]], prefixes: PrefixStore | None = None) -> torch.Tensor:
        """Add rows for ``prompts`` (token id lists) at the end of the batch and return their
        last hidden states, ``(len(prompts), hidden_size)``; the rows already in the batch do
        not advance. See :meth:`advance`."""
        return self.advance([], prompts, prefixes)

    def advance(
        self,
        tokens: list[int],
        prompts: list[list[int]],
        prefixes: PrefixStore | None = None,
    ) -> torch.Tensor:
        """Feed one new token per row (``tokens``, in row order; or none, and the rows wait)
        and add rows for ``prompts`` (token id lists) at the end of the batch, in one forward
        pass; return the last hidden states of the rows fed and then of the prompts,
        ``(len(tokens) + len(prompts), hidden_size)``.

        With ``prefixes``, a prompt that begins with a stored one reads only its remaining
        tokens, from the stored cache, and every prompt read is stored. A prompt's cache
        is then merged into the batch's. The rows' new keys and values are written into
        spare room after the batch's cache where it has some (:func:`_append`)."""
        if tokens and len(tokens) != self.rows:
            raise ValueError(f"Expected one token for each of the {self.rows} rows.")
        parts = []
        if tokens:
            position = self.mask.sum(-1, keepdim=True)
            self.mask = torch.cat([self.mask, torch.ones_like(position)], dim=-1)
            parts.append(
                _Part(
                    self.cache,
                    tokens,
                    position[:, 0],
                    rows=len(tokens),
                    mask=self.mask,
                    room=self._room,
                )
            )
        hidden: list[torch.Tensor | None] = [None] * len(prompts)
        joining = []
        for i, ids in enumerate(prompts):
            if not ids:
                raise ValueError("Every row needs at least one token.")
            prefix = None if prefixes is None else prefixes.longest(ids)
            if prefix is not None and len(prefix.ids) == len(ids):
                hidden[i] = prefix.hidden  # read before, to its last token
                joining.append(_Part(prefix.cache_copy(), [], torch.empty(0), ids=ids))
                continue
            cache = self._empty_cache() if prefix is None else prefix.cache_copy()
            read = 0 if prefix is None else len(prefix.ids)
            where = torch.arange(read, len(ids))
            joining.append(_Part(cache, ids[read:], where, ids=ids, read=read))
            parts.append(joining[-1])
        output = self._packed_pass(parts)
        start = len(tokens)
        for i, part in enumerate(joining):
            if part.tokens:
                start += len(part.tokens)
                hidden[i] = output[start - 1].clone()
                if prefixes is not None:
                    prefixes.put(part.ids, part.cache, hidden[i])
            self._add(torch.ones((1, len(part.ids)), dtype=torch.long), part.cache)
        if not prompts:
            return output[: len(tokens)]
        return torch.cat([output[: len(tokens)], torch.stack(hidden)])

    def _empty_cache(self) -> Any:
        from transformers import DynamicCache

        return DynamicCache(config=self.model.config)

    def _packed_pass(self, parts: list[_Part]) -> torch.Tensor:
        """Run ``parts`` through the layers as one sequence (:func:`packed_attention`); the
        last hidden state of each of its tokens, ``(tokens, hidden_size)``."""
        if not parts:
            return torch.empty((0, self.model.config.hidden_size))
        ids = [token for part in parts for token in part.tokens]
        config = self.model.config
        before = config._attn_implementation
        _running.parts = parts
        config._attn_implementation = _packed_attention_name()
        try:
            with torch.inference_mode():
                output = self.decoder(
                    input_ids=torch.tensor([ids], dtype=torch.long),
                    # Each part's masks are made by packed_attention; transformers passes an
                    # already made (four-dimensional) mask through to it untouched.
                    attention_mask=torch.ones((1, 1, len(ids), 1), dtype=torch.bool),
                    position_ids=torch.cat([part.positions for part in parts]).unsqueeze(0),
                    use_cache=False,
                )
        finally:
            config._attn_implementation = before
            _running.parts = []
        return output.last_hidden_state[0]

    def _add(self, mask: torch.Tensor, cache: Any) -> None:
        if self.mask is None:
            self.mask, self.cache = mask, cache
        else:
            self._merge(mask, cache)

    def step(self, tokens: list[int]) -> torch.Tensor:
        """Feed one new token per row (in row order); returns each row's last hidden state,
        ``(rows, hidden_size)``."""
        if self.mask is None or len(tokens) != self.rows:
            raise ValueError(f"Expected one token for each of the {self.rows} rows.")
        position = self.mask.sum(-1, keepdim=True)
        self.mask = torch.cat([self.mask, torch.ones_like(position)], dim=-1)
        with torch.inference_mode():
            output = self.decoder(
                input_ids=torch.tensor(tokens, dtype=torch.long).unsqueeze(-1),
                attention_mask=self.mask,
                position_ids=position,
                past_key_values=self.cache,
                use_cache=True,
            )
        self.cache = output.past_key_values
        return output.last_hidden_state[:, -1]

    def row_cache(self, row: int) -> tuple[int, Any]:
        """How many tokens row ``row`` has read (its prompt and the tokens fed since), and
        its own one-row cache of them, as if it had read them alone."""
        length = int(self.mask[row].sum())
        return length, _row_cache(self.cache, row, length)

    def keep(self, rows: list[int]) -> None:
        """Keep only ``rows`` (indices, in the order given); the others leave the batch. The
        columns that are padding in every remaining row are dropped."""
        if self.mask is None:
            return
        if not rows:
            self.mask, self.cache = None, None
            self._room.clear()
            return
        if rows == list(range(self.rows)):
            return
        index = torch.tensor(rows, dtype=torch.long)
        self.mask = self.mask[index]
        self._room.clear()
        for layer in self.cache.layers:
            layer.keys = layer.keys[index]
            layer.values = layer.values[index]
        self._drop_leading(leading_padding(self.mask))

    def _drop_leading(self, columns: int) -> None:
        if columns <= 0:
            return
        width = self.mask.shape[1]
        for layer in self.cache.layers:
            if _sliding_window(layer) is not None:
                # Stored keys cover the last `stored` columns; drop only those among them.
                first_stored = width - layer.keys.shape[-2]
                drop = max(0, columns - first_stored)
                layer.cumulative_length = width - columns
            else:
                drop = columns
            layer.keys = layer.keys[:, :, drop:]
            layer.values = layer.values[:, :, drop:]
        self.mask = self.mask[:, columns:]

    def _merge(self, mask: torch.Tensor, cache: Any) -> None:
        """Append rows (their mask and cache) to the batch, right-aligning both sides' columns
        by padding the shorter on the left."""
        width = max(self.mask.shape[1], mask.shape[1])
        self._room.clear()
        for mine, theirs in zip(self.cache.layers, cache.layers, strict=True):
            window = _sliding_window(mine)
            stored = width if window is None else min(width, window - 1)
            mine.keys = torch.cat(
                [_pad_stored(mine.keys, stored), _pad_stored(theirs.keys, stored)]
            )
            mine.values = torch.cat(
                [_pad_stored(mine.values, stored), _pad_stored(theirs.values, stored)]
            )
            if window is not None:
                mine.cumulative_length = width
        self.mask = torch.cat(
            [
                torch.nn.functional.pad(self.mask, (width - self.mask.shape[1], 0)),
                torch.nn.functional.pad(mask, (width - mask.shape[1], 0)),
            ]
        )
