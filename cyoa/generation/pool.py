"""The models of one process: one backend per model card, shared by every system (and every
writer) that uses that model; the ones stored experiments use are loaded in the background at
start-up, any other when an experiment or the researcher asks for it, without a restart."""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

import psutil

from cyoa.generation.engine import BATCHED, DEFAULT_PROMPT_STORE_TOKENS, CoreShare
from cyoa.generation.fake import FakeBackend
from cyoa.generation.local import LLAMA_CPP, TransformersBackend, engine_for, resolve_device
from cyoa.generation.openai_backend import OpenAIBackend
from cyoa.generation.types import Backend, ModelCard
from cyoa.generation.weights import ensure_converted, locate_gguf

log = logging.getLogger(__name__)

NOT_LOADED, PENDING, LOADING, READY, FAILED = "not_loaded", "pending", "loading", "ready", "failed"


class ModelNotAvailable(RuntimeError):
    """A model was asked for that is unknown, failed to load, or was not ready in time."""


def make_backend(
    card: ModelCard,
    cache_dir: Path,
    generation_mode: str = BATCHED,
    cores: CoreShare | None = None,
    prompt_store_tokens: int = DEFAULT_PROMPT_STORE_TOKENS,
) -> TransformersBackend | FakeBackend | OpenAIBackend:
    """The backend the card names: ``transformers`` (packaged weights, converted into
    ``cache_dir``), ``openai`` (a remote OpenAI-compatible server) or ``fake`` (tests only).
    Nothing is loaded yet. ``generation_mode`` is how a local model generates, ``cores``
    the cores local models share in batched mode and ``prompt_store_tokens`` how many tokens
    of prompts read before a local model keeps (see :class:`TransformersBackend`)."""
    if card.backend == "transformers":
        return TransformersBackend(
            card, cache_dir, mode=generation_mode, cores=cores, prefix_tokens=prompt_store_tokens
        )
    if card.backend == "openai":
        return OpenAIBackend(card)
    if card.backend == "fake":
        return FakeBackend(card)
    raise ValueError(
        f"Model card {card.name!r} names backend {card.backend!r}; "
        "use one of: transformers, openai, fake."
    )


class ModelPool:
    """One backend per model card, loaded one model at a time on a background thread, while
    the app runs.

    The pool knows every card; those in ``load_at_start`` (default: all) are loaded by
    :meth:`start_loading`, any other when :meth:`load` asks for it (an experiment being
    opened, the researcher's Models page), and a loaded one can be :meth:`unload`-ed.
    :meth:`status` reports each model as ``not_loaded``, ``pending`` (waiting its turn),
    ``loading``, ``ready`` or ``failed`` (with the error), with the seconds its loading
    took and the memory the process grew by while loading it. :meth:`get` waits for a model
    to be ready. ``generation_mode`` (``batched`` or ``naive``) is passed to every local
    model, and so is ``cores``: the cores they share in batched mode (None: each uses the
    process's torch thread setting), and ``prompt_store_tokens``: the tokens of prompts read
    before that each keeps (:mod:`cyoa.generation.engine`).
    """

    def __init__(
        self,
        cards: dict[str, ModelCard],
        cache_dir: Path,
        generation_mode: str = BATCHED,
        cores: CoreShare | None = None,
        prompt_store_tokens: int = DEFAULT_PROMPT_STORE_TOKENS,
        load_at_start: Collection[str] | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.prompt_store_tokens = prompt_store_tokens
        self.cards = dict(cards)
        self._make = lambda card: make_backend(
            card, self.cache_dir, generation_mode, cores, prompt_store_tokens
        )
        at_start = list(cards) if load_at_start is None else list(load_at_start)
        unknown = [name for name in at_start if name not in cards]
        if unknown:
            raise ValueError(f"No model card named {', '.join(unknown)}.")
        self._at_start = at_start
        self._state = {name: PENDING if name in at_start else NOT_LOADED for name in cards}
        self._errors: dict[str, str] = {}
        # Built now, so that a card the pool cannot run is refused at start if a stored
        # experiment needs it, and reported as failed on the Models page if not.
        self._backends: dict[str, Any] = {}
        for name, card in cards.items():
            try:
                self._backends[name] = self._make(card)
            except ValueError as exc:
                if name in at_start:
                    raise
                self._backends[name] = None
                self._state[name], self._errors[name] = FAILED, str(exc)
        self._seconds: dict[str, float] = {}
        self._memory: dict[str, int] = {}
        self._done = {name: threading.Event() for name in cards}
        for name, state in self._state.items():
            if state == FAILED:
                self._done[name].set()  # nothing to wait for: get() reports the error
        self._queue: list[str] = []
        self._waiters: list[tuple[tuple[str, ...], Callable[[dict[str, str]], None]]] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started = False

    def add(self, cards: dict[str, ModelCard]) -> None:
        """Know the new ``cards`` too (card files added while the app runs), not loaded; a
        card the pool cannot run is ``failed`` with the reason. Names it knows are left as
        they are."""
        with self._lock:
            for name, card in cards.items():
                if name in self.cards:
                    continue
                self.cards[name] = card
                self._done[name] = threading.Event()
                try:
                    self._backends[name] = self._make(card)
                except ValueError as exc:
                    self._backends[name] = None
                    self._state[name], self._errors[name] = FAILED, str(exc)
                    self._done[name].set()
                else:
                    self._state[name] = NOT_LOADED

    def start_loading(self) -> None:
        """Start loading the ``load_at_start`` models in the background (converting any that
        the cache lacks first). Calling it again does nothing."""
        with self._lock:
            if self._started:
                return
            self._started = True
        self.load(self._at_start)

    def load(
        self, names: Iterable[str], then: Callable[[dict[str, str]], None] | None = None
    ) -> None:
        """Load the models ``names`` in the background, one after another, unless they are
        loaded or on their way. ``then`` is called (on the loading thread, or at once if
        nothing is left to load) with ``{name: error}`` for those that failed, empty when
        all are ready. Raises :class:`ModelNotAvailable` for a name without a card."""
        names = tuple(dict.fromkeys(names))
        self._check_known(names)
        with self._lock:
            for name in names:
                if self._state[name] in (NOT_LOADED, FAILED) or (
                    self._state[name] == PENDING and name not in self._queue
                ):
                    if self._state[name] == FAILED:
                        try:
                            self._backends[name] = self._make(self.cards[name])
                        except ValueError:
                            continue  # the card itself is wrong: it stays failed
                        self._errors.pop(name, None)
                    self._state[name] = PENDING
                    self._done[name].clear()
                    self._queue.append(name)
            if then is not None:
                self._waiters.append((names, then))
            if self._queue and self._thread is None:
                self._thread = threading.Thread(
                    target=self._load_queued, name="cyoa-model-loading", daemon=True
                )
                self._thread.start()
            ready = self._settled_waiters()
        for callback, errors in ready:
            callback(errors)

    def _check_known(self, names: Iterable[str]) -> None:
        unknown = [name for name in names if name not in self._backends]
        if unknown:
            known = ", ".join(sorted(self._backends)) or "none"
            raise ModelNotAvailable(
                f"No model named {', '.join(map(repr, unknown))} in this pool (cards: {known})."
            )

    def _settled_waiters(self) -> list[tuple[Callable[[dict[str, str]], None], dict[str, str]]]:
        """Pop the waiters whose models have all finished loading (call with the lock)."""
        settled, waiting = [], []
        for names, callback in self._waiters:
            if all(self._state[name] in (READY, FAILED) for name in names):
                errors = {n: self._errors[n] for n in names if self._state[n] == FAILED}
                settled.append((callback, errors))
            else:
                waiting.append((names, callback))
        self._waiters = waiting
        return settled

    def _load_queued(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._thread = None  # the next load() starts a new thread
                    return
                name = self._queue.pop(0)
                self._state[name] = LOADING
                backend = self._backends[name]
            started, rss = time.perf_counter(), _rss_bytes()
            log.info("Loading model %s…", name)
            try:
                backend.load(log=log.info)
            except Exception as exc:  # noqa: BLE001 - any failure is reported per model
                log.exception("Model %s failed to load", name)
                state, error = FAILED, f"{type(exc).__name__}: {exc}"
            else:
                log.info("Model %s ready after %.1f s", name, time.perf_counter() - started)
                state, error = READY, ""
            with self._lock:
                self._state[name] = state
                if error:
                    self._errors[name] = error
                self._seconds[name] = time.perf_counter() - started
                self._memory[name] = max(0, _rss_bytes() - rss)
                self._done[name].set()
                ready = self._settled_waiters()
            for callback, errors in ready:
                try:
                    callback(errors)
                except Exception:  # noqa: BLE001 - a caller's failure must not stop loading
                    log.exception("A callback after loading %s failed", name)

    def unload(self, name: str) -> None:
        """Let go of a loaded (or failed) model: its memory is freed once no generation
        uses it, and it is ``not_loaded`` until asked for again. Raises
        :class:`ModelNotAvailable` for an unknown model or one still loading."""
        self._check_known([name])
        with self._lock:
            if self._state[name] in (PENDING, LOADING):
                raise ModelNotAvailable(f"Model {name!r} is loading; unload it once it is ready.")
            if self._backends[name] is None:
                raise ModelNotAvailable(f"Model {name!r} was never loaded: {self._errors[name]}")
            old = self._backends[name]
            self._backends[name] = self._make(self.cards[name])
            self._state[name] = NOT_LOADED
            self._errors.pop(name, None)
            self._memory.pop(name, None)
            self._done[name].clear()
        close = getattr(old, "close", None)
        if close is not None:
            close()
        gc.collect()
        _release_gpu_cache()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: no limit) for the ``load_at_start`` models
        to finish loading, starting the loading if needed. True when all are ready; False
        when any failed or the time ran out."""
        self.start_loading()
        deadline = None if timeout is None else time.monotonic() + timeout
        for name in self._at_start:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not self._done[name].wait(left):
                return False
        return self.is_ready(self._at_start)

    def is_ready(self, names: Iterable[str] | None = None) -> bool:
        """Whether the models ``names`` (default: the ``load_at_start`` ones) are loaded and
        ready to generate."""
        names = self._at_start if names is None else list(names)
        with self._lock:
            return all(self._state.get(name) == READY for name in names)

    def status(self) -> dict[str, dict[str, Any]]:
        """Per model name: ``state`` (``not_loaded``, ``pending``, ``loading``, ``ready``
        or ``failed``), ``error`` (empty unless it failed), ``seconds`` (how long its last
        loading took, or None) and ``memory_bytes`` (how much the process grew while loading
        it, or None; a rough figure: other threads allocate meanwhile too)."""
        with self._lock:
            return {
                name: {
                    "state": state,
                    "error": self._errors.get(name, ""),
                    "seconds": self._seconds.get(name),
                    "memory_bytes": self._memory.get(name),
                }
                for name, state in self._state.items()
            }

    def get(self, name: str, timeout: float | None = None) -> Backend:
        """The backend for model ``name``, waiting up to ``timeout`` seconds (None: no limit)
        for it to load; a model not loaded yet starts loading (an experiment opened from the
        command line while the app runs). Raises :class:`ModelNotAvailable` if the model is
        unknown, failed to load, or is not ready in time."""
        self._check_known([name])
        if name in self._at_start:
            self.start_loading()
        with self._lock:
            not_loaded = self._state[name] == NOT_LOADED
        if not_loaded:
            self.load([name])
        with self._lock:
            done = self._done[name]
        if not done.wait(timeout):
            raise ModelNotAvailable(f"Model {name!r} is still loading after {timeout} s.")
        with self._lock:
            if self._state[name] == FAILED:
                raise ModelNotAvailable(
                    f"Model {name!r} could not be loaded ({self._errors[name]}); "
                    "see the server log, fix the cause and load it again."
                )
            return self._backends[name]


def _release_gpu_cache() -> None:
    """Give the GPU memory torch keeps cached back to the device, so that the next model's
    memory check sees it free (only if torch is loaded and has used CUDA)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _rss_bytes() -> int:
    return psutil.Process().memory_info().rss


def prepare_models(
    cards: dict[str, ModelCard], cache_dir: Path, log: Callable[[str], None] = print
) -> dict[str, Path]:
    """Make every local model among ``cards`` ready in ``cache_dir`` now (the slow, one-time
    step), so that starting the app only loads them: a GGUF card that llama.cpp runs here
    has its file found (a packaged file shipped in parts is assembled once into
    ``cache_dir/gguf``); a card the torch engine runs here (a checkpoint folder, a GPU, or
    ``engine = "torch"``) is converted for it. Returns each model's file or folder by name;
    models that need neither (the fake backend) are skipped."""
    ready = {}
    for name, card in cards.items():
        if card.backend != "transformers":
            continue
        if engine_for(card, resolve_device(card)) == LLAMA_CPP:
            ready[name] = locate_gguf(card, Path(cache_dir) / "gguf")
        else:
            ready[name] = ensure_converted(card, Path(cache_dir), log=log)
        log(f"{name}: ready in {ready[name]}")
    return ready
