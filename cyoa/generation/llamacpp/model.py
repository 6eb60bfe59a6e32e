"""A GGUF file loaded by llama.cpp in this process, streaming continuations: the llama.cpp
engine's face, with the same ``stream``, ``rows`` and ``close`` as the torch engine's
:class:`~cyoa.generation.engine.model.LocalModel`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cyoa.generation.engine.cores import CoreShare
from cyoa.generation.llamacpp.library import llama
from cyoa.generation.llamacpp.scheduler import LlamaScheduler
from cyoa.generation.llamacpp.settings import (
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_ROWS,
    MODEL,
    context_settings,
)
from cyoa.generation.llamacpp.vocabulary import Vocabulary
from cyoa.generation.types import Sampling


class LlamaModelError(ValueError):
    """llama.cpp cannot load a GGUF file, or cannot make a context for it."""


def context_params(lib: Any, rows: int, context_tokens: int, threads: int) -> Any:
    """llama.cpp's default ``llama_context_params`` with every field of
    :func:`~cyoa.generation.llamacpp.settings.context_settings` set."""
    params = lib.llama_context_default_params()
    for key, value in context_settings(rows, context_tokens, threads).items():
        setattr(params, key, value)
    return params


def new_context(lib: Any, model: Any, rows: int, context_tokens: int, threads: int) -> Any:
    """A fresh llama.cpp context for ``model``: ``rows`` KV streams of ``context_tokens``
    tokens each, set as :mod:`cyoa.generation.llamacpp.settings` fixes."""
    context = lib.llama_init_from_model(model, context_params(lib, rows, context_tokens, threads))
    if not context:
        raise LlamaModelError(
            f"llama.cpp could not make a context of {rows} rows × {context_tokens} tokens "
            "(too little memory?): lower options.rows or options.context_tokens."
        )
    if lib.llama_n_seq_max(context) != rows or lib.llama_n_ctx_seq(context) != context_tokens:
        lib.llama_free(context)
        raise LlamaModelError("llama.cpp changed the context's size; its settings are not kept.")
    return context


def load_gguf(lib: Any, gguf: Path) -> Any:
    """The GGUF file ``gguf`` loaded by llama.cpp as :data:`~cyoa.generation.llamacpp.
    settings.MODEL` says (every layer on the CPU, the file mapped into memory); free it with
    ``llama_model_free``."""
    params = lib.llama_model_default_params()
    for key, value in MODEL.items():
        setattr(params, key, value)
    model = lib.llama_model_load_from_file(str(gguf).encode(), params)
    if not model:
        raise LlamaModelError(f"llama.cpp cannot read {gguf} as a GGUF model.")
    return model


class LlamaModel:
    """The GGUF file ``gguf`` loaded by llama.cpp (every layer on the CPU, the file mapped
    into memory), decoding up to ``rows`` continuations of up to ``context_tokens`` tokens
    each in one batch (:class:`~cyoa.generation.llamacpp.scheduler.LlamaScheduler`), on
    its share of ``cores`` (or ``threads`` threads without). ``parse_special``: prompts may
    hold special tokens' text (a chat template's). ``card_file`` is named in errors."""

    def __init__(
        self,
        gguf: Path,
        *,
        name: str,
        rows: int = DEFAULT_ROWS,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        threads: int = 1,
        cores: CoreShare | None = None,
        parse_special: bool = False,
        card_file: str = "",
    ) -> None:
        lib = llama()
        model = load_gguf(lib, gguf)
        self._lib = lib
        self._model = model
        try:
            self.vocabulary = Vocabulary(lib, model, parse_special)
            context = new_context(lib, model, rows, context_tokens, threads)
        except BaseException:
            lib.llama_model_free(model)
            raise
        self._scheduler = LlamaScheduler(
            lib,
            context,
            self.vocabulary,
            name=name,
            rows=rows,
            context_tokens=context_tokens,
            threads=threads,
            cores=cores,
            card_file=card_file,
        )
        self._scheduler.start()

    @property
    def tokenizer(self) -> Vocabulary:
        """The model's vocabulary, which serves as its tokenizer."""
        return self.vocabulary

    @property
    def rows(self) -> int:
        """How many continuations are decoding together now."""
        return self._scheduler.rows

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation of ``prompt``, exactly one piece per generated token (a
        piece is empty while a token only starts a multi-byte character), until an
        end-of-generation token or ``sampling.max_new_tokens`` tokens. Closing the iterator
        early takes the row out of the batch before its next token."""
        return self._scheduler.stream(prompt, sampling, seed)

    def close(self) -> None:
        """End the decoding thread after its current step (it frees the context), then free
        the model; the rows in progress fail with an error."""
        self._scheduler.close()
        if self._model is not None and not self._scheduler._thread.is_alive():
            self._lib.llama_model_free(self._model)
            self._model = None
