"""The llama.cpp engine: GGUF files run in this process by llama.cpp (llama-cpp-python's
low-level API), many writers' continuations decoded together, each reproducible from its
prompt, sampling and seed alone (see README.md beside this file).

The app uses this package through the names below only. llama-cpp-python is imported when a
model is loaded, not when this package is imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cyoa.generation.llamacpp.settings import CONTEXT_STEP, DEFAULT_CONTEXT_TOKENS, DEFAULT_ROWS

if TYPE_CHECKING:
    from cyoa.generation.llamacpp.model import LlamaModel


def load_llama_model(gguf: Path, **options: Any) -> LlamaModel:
    """The GGUF file ``gguf`` loaded and ready to stream (:class:`LlamaModel` takes the
    options: ``name``, ``rows``, ``context_tokens``, ``threads``, ``cores``,
    ``parse_special``, ``card_file``)."""
    from cyoa.generation.llamacpp.model import LlamaModel

    return LlamaModel(gguf, **options)


__all__ = ["CONTEXT_STEP", "DEFAULT_CONTEXT_TOKENS", "DEFAULT_ROWS", "load_llama_model"]
