"""Loading llama.cpp once per process: its CPU backend and its log.

CYOA builds llama-cpp-python with runtime CPU dispatch (``GGML_BACKEND_DL`` and
``GGML_CPU_ALL_VARIANTS``, see the Makefile): the CPU kernels come as one library per
instruction set (x86-64, SSE4.2, AVX, AVX2, AVX-512, AMX, …) beside ``libllama.so``, and the
best one this CPU runs is loaded here, so one build runs on any x86-64 machine. llama.cpp
looks for them next to the Python executable and in the working folder only, so they are
loaded from the package's own folder. A build with the kernels linked in (a prebuilt wheel)
has its backend already and is left as it is.

llama.cpp writes its progress to stderr; only its errors are kept, in the ``llama.cpp``
logger.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger("llama.cpp")

_GGML_LOG_ERROR = 3
_lock = threading.Lock()
_loaded: Any = None
# The log callback must outlive every call llama.cpp makes to it.
_log_callback: Any = None


class LlamaCppMissing(RuntimeError):
    """llama-cpp-python is not installed (or its library cannot be loaded)."""


def llama() -> Any:
    """The ``llama_cpp`` low-level module, with a CPU backend loaded and the log quiet.
    Raises :class:`LlamaCppMissing` with what to do when it cannot be loaded."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _load()
        return _loaded


def cpu_variant() -> str:
    """The name of the CPU kernel library in use (e.g. ``zen4``, ``haswell``), or ``built in``
    for a build with the kernels linked into llama.cpp itself."""
    return _variant_name(llama())


def _load() -> Any:
    try:
        import llama_cpp.llama_cpp as lib
    except (ImportError, OSError) as exc:
        raise LlamaCppMissing(
            f"llama-cpp-python cannot be loaded ({exc}); run `make models` (it installs the "
            "pinned llama-cpp-python from requirements.txt) and try again."
        ) from exc
    _quiet(lib)
    ggml = _ggml(lib)
    if ggml.ggml_backend_dev_count() == 0:
        ggml.ggml_backend_load_all_from_path(str(_lib_dir(lib)).encode())
    if ggml.ggml_backend_dev_count() == 0:
        raise LlamaCppMissing(
            f"llama.cpp found no CPU backend in {_lib_dir(lib)}; reinstall llama-cpp-python "
            "with `make models`."
        )
    lib.llama_backend_init()
    return lib


def _lib_dir(lib: Any) -> Path:
    return Path(lib.__file__).parent / "lib"


def _ggml(lib: Any) -> Any:
    """ggml's registry functions (not all bound by llama-cpp-python)."""
    ggml = ctypes.CDLL(str(_lib_dir(lib) / "libggml.so"))
    ggml.ggml_backend_dev_count.restype = ctypes.c_size_t
    ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    return ggml


def _variant_name(lib: Any) -> str:
    variants = sorted(_lib_dir(lib).glob("libggml-cpu-*.so"))
    if not variants:
        return "built in"
    maps = Path("/proc/self/maps")
    mapped = maps.read_text() if maps.exists() else ""
    for path in variants:
        if str(path) in mapped:
            return path.stem.removeprefix("libggml-cpu-")
    return "unknown"


def _quiet(lib: Any) -> None:
    global _log_callback

    def keep_errors(level: int, text: bytes, _data: Any) -> None:
        if level == _GGML_LOG_ERROR and text:
            log.error(text.decode("utf-8", errors="replace").rstrip())

    _log_callback = lib.llama_log_callback(keep_errors)
    lib.llama_log_set(_log_callback, ctypes.c_void_p(0))
