"""The prompts a model has already read, kept so that the next round of the same story reads
only what is new.

A writer's prompt in round r + 1 is the prompt of round r followed by the turns added since
(the kept suggestion and the writer's next line). Reading a prompt (the prefill) costs far
more than generating a sentence, since every token of the story goes through the layers;
while writers' prompts are read, every other row of the batch waits.
:class:`PrefixStore` keeps, per model, each prompt's KV cache (the attention keys and values
of every layer) and its last hidden state, so a new prompt that begins with a stored one (as
token ids) runs only its remaining tokens through the model.

The stored cache is exactly what the model computed for those tokens, so the continuation
is the same computation split in two; only floating-point rounding differs (the same few
units in the last place as between a row alone and in a batch, which can change a sampled
token only in a near-tie).

A stored text also serves a prompt that shares only its beginning: the keys and values of a
text's first n tokens depend on those tokens alone (attention looks only backwards), so the
first n columns of a stored cache are the cache of those n tokens (:meth:`Prefix.truncated`).
That is how a model reuses what it generated itself: when a row ends, its prompt and the
tokens it generated are stored (without a last hidden state), and if the writer keeps that
suggestion, the next round's prompt begins with the same tokens up to where the writer's
text and the model's part ways. And writers whose stories open alike share their opening.
A sliding-window layer keeps only its last ``window - 1`` columns, so a text longer than
that can serve only prompts that begin with the whole of it.

Memory: a stored token costs 37 KB for Gemma 3 270M (18 layers, one key-value head of 256)
and 46 KB for SmolLM2-135M (30 layers, three heads of 64). The store keeps at most
``max_tokens`` tokens per model. It drops a text as soon as a longer one that begins with it
is stored (when the longer one can be truncated to it), and a story's dead branches: a text
that a row generated is its prompt followed by its suggestion, and once a longer prompt
that begins with that prompt is stored (the same story's next round), the suggestion's
tokens can serve no prompt again (a writer never goes back), while the new prompt covers
the story before them. So each writer's story holds about one text per model.

When a new text does not fit, texts that no prompt has used whole for ``max_idle_s``
(writers who left or finished) make room, the least recently used first; if that is not
enough, the new text is not stored. Writers take turns: the text just stored is the one
whose writer needs it last (after reading, editing and writing a line), so when the
writers' stories outgrow the store, keeping the texts already stored serves some writers
every round, where dropping the least recently used would evict each story just before
its writer comes back and serve almost none (see bench/results/prompt-store.md).
"""

from __future__ import annotations

import copy
import functools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

# Tokens kept per model: 16 writers' stories of about 130 tokens (three rounds); about 75 MB
# for Gemma 3 270M and 94 MB for SmolLM2-135M.
DEFAULT_MAX_TOKENS = 2048
# A stored text that a prompt only shares the beginning of serves it from this many shared
# tokens on (every prompt shares at least the start-of-text token with every other).
MIN_SHARED_TOKENS = 8
# A text no prompt has used whole for this long (seconds) may make room for a new one: a
# writer's round (writing a line, waiting, reading and editing) takes a few minutes at most.
MAX_IDLE_SECONDS = 600.0


class Prefix:
    """A text's token ids, its KV cache (one row, no padding) and its last hidden state
    (None when it was not kept: a prompt must then read at least one token after it)."""

    def __init__(
        self,
        ids: tuple[int, ...],
        cache: Any,
        hidden: torch.Tensor | None,
        prompt_length: int | None = None,
    ) -> None:
        self.ids = ids
        self.cache = cache
        self.hidden = hidden
        # How many of ``ids`` were a prompt; the rest a row generated after it.
        self.prompt_length = len(ids) if prompt_length is None else prompt_length
        self.used_at = 0.0  # when a prompt last used it whole (or it was stored)

    def cache_copy(self) -> Any:
        """A cache that starts as this one and can be extended without changing it (a model's
        forward pass replaces a layer's tensors, it never writes into them)."""
        cache = copy.copy(self.cache)
        cache.layers = [copy.copy(layer) for layer in self.cache.layers]
        return cache

    @functools.cached_property
    def truncatable(self) -> bool:
        """Whether every layer holds every token (a sliding-window layer drops the oldest once
        the text is longer than its window), so that :meth:`truncated` is exact. A stored
        cache never changes, so this is worked out once."""
        return all(layer.keys.shape[-2] == len(self.ids) for layer in self.cache.layers)

    def truncated(self, n: int) -> Prefix:
        """The prefix of this text's first ``n`` tokens (its cache's first ``n`` columns; no
        hidden state). Only when :meth:`truncatable`."""
        if not 0 < n <= len(self.ids) or not self.truncatable:
            raise ValueError(f"Cannot truncate a stored text of {len(self.ids)} tokens to {n}.")
        cache = copy.copy(self.cache)
        cache.layers = []
        for layer in self.cache.layers:
            layer = copy.copy(layer)
            layer.keys, layer.values = layer.keys[:, :, :n], layer.values[:, :, :n]
            if hasattr(layer, "cumulative_length"):  # a sliding-window layer counts its tokens
                layer.cumulative_length = n
            cache.layers.append(layer)
        return Prefix(self.ids[:n], cache, None, min(n, self.prompt_length))


def shared_length(a: tuple[int, ...], b: list[int]) -> int:
    """How many tokens ``a`` and ``b`` have in common at their start."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PrefixStore:
    """The stored texts of one model, at most ``max_tokens`` tokens in all; a text that a
    prompt only shares the beginning of serves it from ``min_shared`` shared tokens on; a
    text unused for ``max_idle_s`` seconds (by ``clock``) may make room for a new one."""

    def __init__(
        self,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        min_shared: int = MIN_SHARED_TOKENS,
        max_idle_s: float = MAX_IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_tokens = max_tokens
        self.min_shared = min_shared
        self.max_idle_s = max_idle_s
        self.clock = clock
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

    def clear(self) -> None:
        """Forget every stored text (the counts of hits and reused tokens stay)."""
        with self._lock:
            self._prefixes.clear()
            self._tokens = 0

    def longest(self, ids: list[int]) -> Prefix | None:
        """The longest beginning of ``ids`` that a stored text has read, if any: a stored
        prompt that ``ids`` begin with (or equal), or the first tokens of a stored text that
        shares them (:meth:`Prefix.truncated`). The prefix returned leaves at least one token
        of ``ids`` to read unless it has the last hidden state."""
        with self._lock:
            best: Prefix | None = None
            usable = 0
            for prefix in self._prefixes.values():
                n = shared_length(prefix.ids, ids)
                if n == len(ids) and prefix.hidden is None or n == len(ids) < len(prefix.ids):
                    n -= 1  # the last token must be read for its hidden state
                whole = n == len(prefix.ids)
                if n > usable and (whole or n >= self.min_shared and prefix.truncatable):
                    best, usable = prefix, n
            if best is None:
                return None
            if usable == len(best.ids):
                # Only a text used whole counts as used. One used in part (a writer's last
                # round, a shared opening) is covered by the prompt about to be stored.
                best.used_at = self.clock()
                self._prefixes.move_to_end(best.ids)
            self.hits += 1
            self.tokens_reused += usable
            return best if usable == len(best.ids) else best.truncated(usable)

    def put(
        self,
        ids: list[int],
        cache: Any,
        hidden: torch.Tensor | None,
        prompt_length: int | None = None,
    ) -> None:
        """Store the text ``ids`` with its one-row ``cache`` (copied, so the caller may go on
        extending its own) and its last hidden state ``(hidden_size,)`` (None: not kept).
        ``prompt_length``: how many of ``ids`` were the prompt, when the rest is what a row
        generated after it (None: all of it was a prompt)."""
        key = tuple(ids)
        if len(key) > self.max_tokens:
            return
        prefix = Prefix(key, None, hidden, prompt_length)
        prefix.cache = Prefix(key, cache, hidden).cache_copy()
        with self._lock:
            # A truncatable text serves every prompt a shorter one that it begins with could.
            covered = self._covered_by(prefix) if prefix.truncatable else []
            if key in self._prefixes and key not in covered:
                covered.append(key)
            room = self.max_tokens - self._tokens + sum(len(k) for k in covered)
            prefix.used_at = self.clock()
            idle = []
            for stored in self._prefixes.values():  # in order of use: the idle ones first
                if room >= len(key) or prefix.used_at - stored.used_at < self.max_idle_s:
                    break
                if stored.ids not in covered:
                    idle.append(stored.ids)
                    room += len(stored.ids)
            if room < len(key):
                return  # every stored text is in use: the new one is not stored
            for stored_key in covered + idle:
                self._remove(stored_key)
            self._prefixes[key] = prefix
            self._tokens += len(key)

    def _covered_by(self, new: Prefix) -> list[tuple[int, ...]]:
        """The stored texts that ``new`` (a truncatable text about to be stored) makes
        useless: those it begins with, and the branches a row generated after a prompt that
        ``new``'s prompt extends (the same story's earlier round; see the module docstring).
        A branch generated after the same prompt (the other system of a same-model pair) is
        not covered: the writer may keep either suggestion. The caller holds the lock."""
        covered = []
        for key, stored in self._prefixes.items():
            begins_new = len(key) <= len(new.ids) and new.ids[: len(key)] == key
            dead_branch = (
                stored.prompt_length < len(key)
                and stored.prompt_length < new.prompt_length
                and new.ids[: stored.prompt_length] == key[: stored.prompt_length]
            )
            if begins_new or dead_branch:
                covered.append(key)
        return covered

    def _remove(self, key: tuple[int, ...]) -> None:
        del self._prefixes[key]
        self._tokens -= len(key)
