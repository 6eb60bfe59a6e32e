"""The prompts a model has already read, kept so that the next round of the same story reads
only what is new.

A writer's prompt in round r + 1 is the prompt of round r followed by the turns added since
(the kept suggestion and the writer's next line). Reading a prompt (the prefill) costs far
more than generating a sentence: on one thread, Gemma 3 270M reads 120 tokens in about
230 ms, and 16 writers' prompts take 3.6 s, during which every other row of the batch waits.
:class:`PrefixStore` keeps, per model, each prompt's KV cache (the attention keys and values
of every layer) and its last hidden state, so a new prompt that begins with a stored one (as
token ids) runs only its remaining tokens through the model.

The stored cache is exactly what the model computed for those tokens, so the continuation
is the same computation split in two; only floating-point rounding differs (the same few
units in the last place as between a row alone and in a batch, which can change a sampled
token only in a near-tie).

Memory: a stored token costs 37 KB for Gemma 3 270M (18 layers, one key-value head of 256)
and 46 KB for SmolLM2-135M (30 layers, three heads of 64). The store keeps at most
``max_tokens`` tokens per model, dropping the least recently used prompts first, and drops a
prompt as soon as a longer prompt that begins with it is stored.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# Tokens kept per model: 16 writers' stories of about 130 tokens (three rounds); about 75 MB
# for Gemma 3 270M and 94 MB for SmolLM2-135M.
DEFAULT_MAX_TOKENS = 2048


class Prefix:
    """A prompt's token ids, its KV cache (one row, no padding) and its last hidden state."""

    def __init__(self, ids: tuple[int, ...], cache: Any, hidden: torch.Tensor) -> None:
        self.ids = ids
        self.cache = cache
        self.hidden = hidden

    def cache_copy(self) -> Any:
        """A cache that starts as this one and can be extended without changing it (a model's
        forward pass replaces a layer's tensors, it never writes into them)."""
        cache = copy.copy(self.cache)
        cache.layers = [copy.copy(layer) for layer in self.cache.layers]
        return cache


class PrefixStore:
    """The stored prompts of one model, at most ``max_tokens`` tokens in all."""

    def __init__(self, max_tokens: int = DEFAULT_MAX_TOKENS) -> None:
        self.max_tokens = max_tokens
        self._prefixes: OrderedDict[tuple[int, ...], Prefix] = OrderedDict()
        self._tokens = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.tokens_reused = 0

    @property
    def tokens(self) -> int:
        """How many tokens are stored now."""
        return self._tokens

    def __len__(self) -> int:
        return len(self._prefixes)

    def longest(self, ids: list[int]) -> Prefix | None:
        """The longest stored prompt whose ids begin ``ids`` (or equal them), if any."""
        with self._lock:
            best: Prefix | None = None
            for prefix in self._prefixes.values():
                n = len(prefix.ids)
                longer = best is None or n > len(best.ids)
                if n <= len(ids) and longer and tuple(ids[:n]) == prefix.ids:
                    best = prefix
            if best is not None:
                self._prefixes.move_to_end(best.ids)
                self.hits += 1
                self.tokens_reused += len(best.ids)
            return best

    def put(self, ids: list[int], cache: Any, hidden: torch.Tensor) -> None:
        """Store the prompt ``ids`` with its one-row ``cache`` (copied, so the caller may go
        on extending its own) and last hidden state ``(hidden_size,)``."""
        key = tuple(ids)
        if len(key) > self.max_tokens:
            return
        prefix = Prefix(key, None, hidden)
        prefix.cache = Prefix(key, cache, hidden).cache_copy()
        with self._lock:
            for stored in list(self._prefixes):
                if len(stored) <= len(key) and key[: len(stored)] == stored:
                    self._remove(stored)
            self._prefixes[key] = prefix
            self._tokens += len(key)
            while self._tokens > self.max_tokens:
                self._remove(next(iter(self._prefixes)))

    def _remove(self, key: tuple[int, ...]) -> None:
        del self._prefixes[key]
        self._tokens -= len(key)
