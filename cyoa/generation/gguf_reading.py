"""Reading a GGUF file's header quickly, and once per conversion.

gguf's ``GGUFReader`` (the reader transformers uses) turns every metadata value into numpy
views of a memory map: for Gemma 3's vocabulary of 262,144 tokens that is over a million
views, each paying the memory map's own slicing and finalising, and a new empty array to
learn an item size. Converting one file builds four readers of it (the tokenizer, the config,
the weights, and the count of numbers checked against free memory). :class:`FastReader`
parses the same fields from plain views of the same map, and :func:`one_reader_per_file`
hands every reader asked for meanwhile the one already parsed.

The fields and tensors are the same as ``GGUFReader``'s (``tests/generation/
test_gguf_reading.py`` compares them); the overridden ``_get`` is that of gguf 0.19.0, the
version pinned in requirements.txt.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gguf
import numpy as np


class FastReader(gguf.GGUFReader):
    """``GGUFReader`` over plain ndarray views of the file's memory map (the map itself is
    kept alive by them), with each field's item size read from its dtype."""

    @property
    def data(self) -> np.ndarray:
        return self._plain

    @data.setter
    def data(self, mapped: np.memmap) -> None:
        self._plain = np.asarray(mapped)  # the same bytes, without the memmap subclass

    def _get(
        self, offset: int, dtype: Any, count: int = 1, override_order: str | None = None
    ) -> np.ndarray:
        count = int(count)
        dtype = np.dtype(dtype)
        arr = self._plain[offset : offset + dtype.itemsize * count].view(dtype=dtype)[:count]
        order = self.byte_order if override_order is None else override_order
        return arr.view(arr.dtype.newbyteorder(order))


_lock = threading.Lock()


@contextmanager
def one_reader_per_file() -> Iterator[None]:
    """Within the block, ``gguf.GGUFReader(path)`` (read-only) returns one
    :class:`FastReader` per file, parsed at its first request; other modes are untouched.
    Blocks do not nest, and one runs at a time (a conversion holds it)."""
    with _lock:
        original = gguf.GGUFReader
        readers: dict[str, FastReader] = {}

        def reader(path: os.PathLike[str] | str, mode: str = "r") -> gguf.GGUFReader:
            if mode != "r":
                return original(path, mode)
            key = os.path.realpath(path)
            if key not in readers:
                readers[key] = FastReader(path)
            return readers[key]

        gguf.GGUFReader = reader
        try:
            yield
        finally:
            gguf.GGUFReader = original
