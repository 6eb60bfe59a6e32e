"""Loading llama.cpp once per process, with its log kept to its errors.

CYOA builds llama-cpp-python for any x86-64 CPU with AVX2 (Intel since 2013, AMD since 2015),
with or without AVX-512 or AMX: no ``-march=native`` (see the Makefile). llama.cpp writes its
progress to stderr; only its errors are kept, in the ``llama.cpp`` logger.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

log = logging.getLogger("llama.cpp")

_GGML_LOG_ERROR = 4
_lock = threading.Lock()
_loaded: Any = None
# The log callback must outlive every call llama.cpp makes to it.
_log_callback: Any = None


class LlamaCppMissing(RuntimeError):
    """llama-cpp-python is not installed (or its library cannot be loaded)."""


def llama() -> Any:
    """The ``llama_cpp`` low-level module, initialised and quiet. Raises
    :class:`LlamaCppMissing` with what to do when it cannot be loaded."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def cpu_features() -> str:
    """The instruction sets llama.cpp's CPU kernels use here, as llama.cpp reports them
    (e.g. ``AVX = 1 | AVX2 = 1 | FMA = 1 | …``)."""
    info = llama().llama_print_system_info().decode("utf-8", errors="replace")
    return " | ".join(part.strip() for part in info.split("|") if part.strip().endswith("= 1"))


def _load() -> Any:
    try:
        import llama_cpp.llama_cpp as lib
    except (ImportError, OSError) as exc:
        raise LlamaCppMissing(
            f"llama-cpp-python cannot be loaded ({exc}); run `make models` (it installs the "
            "pinned llama-cpp-python) and try again."
        ) from exc
    _quiet(lib)
    lib.llama_backend_init()
    return lib


def _quiet(lib: Any) -> None:
    global _log_callback

    def keep_errors(level: int, text: bytes, _data: Any) -> None:
        if level == _GGML_LOG_ERROR and text:
            log.error(text.decode("utf-8", errors="replace").rstrip())

    _log_callback = lib.llama_log_callback(keep_errors)
    lib.llama_log_set(_log_callback, ctypes.c_void_p(0))
