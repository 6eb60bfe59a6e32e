"""The in-process generation engine: continuous batching of local models on the CPU, and
transformers' batched ``generate`` on a GPU.

The app uses this package through the names below only (see README.md beside this file);
everything else here is the engine's own. torch and transformers are imported when a model
is loaded or converted, not when this package is imported: the web pages, the command line
and the other backends do not need them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cyoa.generation.engine.cores import CoreShare
from cyoa.generation.engine.options import (
    BATCHED,
    DTYPES,
    GENERATION_MODES,
    NAIVE,
    QUANTIZE_OPTIONS,
)
from cyoa.generation.engine.prefixes import DEFAULT_MAX_TOKENS as DEFAULT_PROMPT_STORE_TOKENS
from cyoa.generation.engine.prefixes import PrefixStore

if TYPE_CHECKING:
    from cyoa.generation.engine.generate import GenerateModel
    from cyoa.generation.engine.model import LocalModel


def load_local_model(folder: Path, tokenizer: Any, **options: Any) -> LocalModel:
    """The converted model in ``folder`` loaded and ready to stream (:class:`LocalModel`
    takes the options: ``name``, ``dtype``, ``quantize``, ``mode``, ``cores``, ``prefixes``)."""
    from cyoa.generation.engine.model import LocalModel

    return LocalModel(folder, tokenizer, **options)


def load_generate_model(folder: Path, tokenizer: Any, **options: Any) -> GenerateModel:
    """The checkpoint in ``folder`` on a GPU, generating with transformers' batched
    ``generate`` (:class:`GenerateModel` takes the options: ``name``, ``device``, ``dtype``);
    the same ``stream``, ``rows`` and ``close`` as a :class:`LocalModel`."""
    from cyoa.generation.engine.generate import GenerateModel

    return GenerateModel(folder, tokenizer, **options)


def save_exact_blocks(model: Any, folder: Path) -> bool:
    """Save ``model``'s tied embedding matrix beside its checkpoint in ``folder`` as exact
    8-bit blocks, when it came from such blocks; returns whether it was saved."""
    from cyoa.generation.engine.embeddings import save_blocks

    return save_blocks(model, folder)


__all__ = [
    "BATCHED",
    "DEFAULT_PROMPT_STORE_TOKENS",
    "DTYPES",
    "GENERATION_MODES",
    "NAIVE",
    "QUANTIZE_OPTIONS",
    "CoreShare",
    "PrefixStore",
    "load_generate_model",
    "load_local_model",
    "save_exact_blocks",
]
