"""The local backend: a model run in this process by the CPU engine (:mod:`cyoa.generation.engine`).

This module holds what the app knows of a local model: its card's options, where its
converted weights live, loading in the background and the warm-up. How continuations are
computed (batching, caches, kernels) is the engine's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from cyoa.generation.engine import (
    BATCHED,
    DEFAULT_PROMPT_STORE_TOKENS,
    DTYPES,
    GENERATION_MODES,
    QUANTIZE_OPTIONS,
    CoreShare,
    PrefixStore,
    load_local_model,
)
from cyoa.generation.types import ModelCard, Sampling
from cyoa.generation.weights import ensure_converted, force_offline, load_tokenizer

if TYPE_CHECKING:
    from cyoa.generation.engine import LocalModel

# Warm-up at load: two tokens of a short continuation, so that the first writer does not pay
# for the one-time set-up of the kernels.
_WARM_UP_PROMPT = "The lighthouse keeper found a letter on the rocks."
_WARM_UP_TOKENS = 2


def configure_torch_threads(threads: int) -> None:
    """Set how many CPU threads one torch operation may use (process-wide).

    Each model generates on its own Python thread, so with two models working at once the
    process uses about ``2 × threads`` cores; on a 2-core machine ``threads=1`` avoids the
    two models fighting over the same cores.
    """
    if threads < 1:
        raise ValueError("threads must be at least 1.")
    import torch

    torch.set_num_threads(threads)


class TransformersBackend:
    """A packaged model loaded from the model cache (converted from its GGUF file on first
    use) and run by the engine in ``mode`` (``batched``, the default, or ``naive``: see
    :class:`cyoa.generation.engine.model.LocalModel`), with ``cores`` shared between the
    batched models. A prompt that begins with a text read before reads only the rest (at
    most ``prefix_tokens`` tokens of texts kept).

    Card options: ``dtype = "bfloat16"`` loads the weights in bfloat16 (default
    ``"float32"``; faster in batches, but a row's rounding, and so its text, then depends on
    its batch); ``quantize = "int8"`` quantizes every linear layer to 8-bit integers at load.
    Their speed and their effect on the text are on bench/results/model-options.md.
    """

    def __init__(
        self,
        card: ModelCard,
        cache_dir: Path,
        mode: str = BATCHED,
        cores: CoreShare | None = None,
        prefix_tokens: int = DEFAULT_PROMPT_STORE_TOKENS,
    ) -> None:
        if mode not in GENERATION_MODES:
            raise ValueError(
                f"Generation mode {mode!r} is unknown; use one of: {', '.join(GENERATION_MODES)}."
            )
        self.quantize = card.options.get("quantize", "")
        if self.quantize not in QUANTIZE_OPTIONS:
            raise ValueError(
                f'Model card {card.name!r}: options.quantize must be "int8" or left out '
                f"(found {self.quantize!r})."
            )
        self.dtype = card.options.get("dtype", "float32")
        if self.dtype not in DTYPES:
            raise ValueError(
                f'Model card {card.name!r}: options.dtype must be "float32" or "bfloat16" '
                f"(found {self.dtype!r})."
            )
        self.card = card
        self.cache_dir = Path(cache_dir)
        self.mode = mode
        self.cores = cores
        self._lock = threading.Lock()
        self.local_model: LocalModel | None = None
        self.prefixes = PrefixStore(prefix_tokens)

    @property
    def loaded(self) -> bool:
        return self.local_model is not None

    def batch_rows(self) -> int:
        """How many continuations this model is decoding together now (0 in naive mode)."""
        return 0 if self.local_model is None else self.local_model.rows

    def load(self, log: Callable[[str], None] = print) -> LocalModel:
        """Load the model into memory (converting it first if the cache lacks it) and warm it
        up with a short continuation; returns the loaded model. Idempotent."""
        with self._lock:
            if self.local_model is not None:
                return self.local_model
            folder = ensure_converted(self.card, self.cache_dir, log=log)
            started = time.perf_counter()
            force_offline()
            local_model = load_local_model(
                folder,
                load_tokenizer(folder),
                name=self.card.name,
                dtype=self.dtype,
                quantize=self.quantize,
                mode=self.mode,
                cores=self.cores,
                prefixes=self.prefixes,
            )
            loaded = time.perf_counter()
            for _ in local_model.stream(
                _WARM_UP_PROMPT, Sampling(max_new_tokens=_WARM_UP_TOKENS), 0
            ):
                pass
            self.local_model = local_model
            log(
                f"Loaded {self.card.name} in {loaded - started:.1f} s "
                f"(warm-up {time.perf_counter() - loaded:.1f} s, {self.mode} mode)"
            )
            return local_model

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation of ``prompt``, exactly one piece per generated token (a
        piece is empty while a token only starts a multi-byte character), until an
        end-of-text token or ``sampling.max_new_tokens`` tokens. The same ``prompt``,
        ``sampling`` and ``seed`` give the same pieces on the same machine. Closing the
        iterator early stops the generation (in batched mode the row leaves the batch)."""
        return self.load().stream(prompt, sampling, seed)
