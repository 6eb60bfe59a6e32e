"""Decoding several continuations of one model together: left padding, per-row positions, and
the KV-cache surgery that lets rows leave and join a running batch.

A batch is a :class:`Batch`: one left-padded attention mask of shape ``(rows, columns)`` and
one ``DynamicCache`` whose layers hold ``(rows, heads, stored, head_dim)`` keys and values.
Every row's real tokens end at the last column; a row's padding is on its left and masked
out, and its positions count only its own tokens, so what a row attends to (and so its text)
is the same as if it were decoded alone, up to floating-point rounding of the batched
matrix products. A sliding-window layer stores only the last ``window - 1`` columns; that is
kept consistent when rows leave (:meth:`Batch.keep`) or join (:meth:`Batch.join`).

Only :class:`Batch` runs the model's layers; it returns each row's last hidden state, and the
caller scores the vocabulary (:mod:`cyoa.generation.vocabulary`), samples and decodes.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from cyoa.generation.prefixes import Prefix, PrefixStore


def left_pad(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Token id lists as one ``(rows, longest)`` tensor padded on the left with ``pad_id``,
    and the attention mask (1 for a real token, 0 for padding)."""
    if not sequences or any(not s for s in sequences):
        raise ValueError("Every row needs at least one token.")
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, tokens in enumerate(sequences):
        ids[row, width - len(tokens) :] = torch.tensor(tokens, dtype=torch.long)
        mask[row, width - len(tokens) :] = 1
    return ids, mask


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Each column's position within its own row: how many real tokens come before it
    (padding columns get 0; they are masked out and never attended to)."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


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

    @property
    def rows(self) -> int:
        return 0 if self.mask is None else self.mask.shape[0]

    def join(self, prompts: list[list[int]], prefixes: PrefixStore | None = None) -> torch.Tensor:
        """Add rows for ``prompts`` (token id lists) at the end of the batch and return their
        last hidden states, ``(len(prompts), hidden_size)``.

        With ``prefixes``, a prompt that begins with a stored one reads only its remaining
        tokens, from the stored cache, and every prompt read is stored. The other prompts
        are read together in one forward pass (left-padded). Either way their caches are
        merged into the batch's."""
        found = [None if prefixes is None else prefixes.longest(ids) for ids in prompts]
        hidden: list[torch.Tensor | None] = [None] * len(prompts)
        fresh = [i for i, prefix in enumerate(found) if prefix is None]
        if fresh:
            ids, mask = left_pad([prompts[i] for i in fresh], self.pad_id)
            with torch.inference_mode():
                output = self.decoder(
                    input_ids=ids,
                    attention_mask=mask,
                    position_ids=positions(mask),
                    use_cache=True,
                )
            self._add(mask, output.past_key_values)
            for row, i in enumerate(fresh):
                hidden[i] = output.last_hidden_state[row, -1]
                if prefixes is not None:
                    cache = _row_cache(output.past_key_values, row, len(prompts[i]))
                    prefixes.put(prompts[i], cache, hidden[i].clone())
        before = self.rows - len(fresh)
        added = fresh + [i for i, prefix in enumerate(found) if prefix is not None]
        for i in added[len(fresh) :]:
            hidden[i], cache = self._continue(prompts[i], found[i], prefixes)
            self._add(torch.ones((1, len(prompts[i])), dtype=torch.long), cache)
        # The rows were added fresh ones first; put them in the order of ``prompts``.
        self.keep(list(range(before)) + [before + added.index(i) for i in range(len(prompts))])
        return torch.stack(hidden)

    def _continue(
        self, ids: list[int], prefix: Prefix, prefixes: PrefixStore | None
    ) -> tuple[torch.Tensor, Any]:
        """Read the tokens of ``ids`` after the stored ``prefix`` (alone, from its cache):
        the last hidden state and the one-row cache of the whole prompt."""
        if len(prefix.ids) == len(ids):
            return prefix.hidden, prefix.cache_copy()
        with torch.inference_mode():
            output = self.decoder(
                input_ids=torch.tensor([ids[len(prefix.ids) :]], dtype=torch.long),
                past_key_values=prefix.cache_copy(),
                use_cache=True,
            )
        hidden = output.last_hidden_state[0, -1].clone()
        if prefixes is not None:
            prefixes.put(ids, output.past_key_values, hidden)
        return hidden, output.past_key_values

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
            return
        if rows == list(range(self.rows)):
            return
        index = torch.tensor(rows, dtype=torch.long)
        self.mask = self.mask[index]
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
