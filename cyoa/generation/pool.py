"""The loaded models of one process: one backend per model card, shared by every system (and
every writer) that uses that model, loaded in the background at start-up."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cyoa.generation.engine import BATCHED, DEFAULT_PROMPT_STORE_TOKENS, CoreShare
from cyoa.generation.fake import FakeBackend
from cyoa.generation.local import TransformersBackend
from cyoa.generation.openai_backend import OpenAIBackend
from cyoa.generation.types import Backend, ModelCard
from cyoa.generation.weights import ensure_converted

log = logging.getLogger(__name__)

PENDING, LOADING, READY, FAILED = "pending", "loading", "ready", "failed"


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
    """One backend per model, loaded one after another on a background thread.

    :meth:`status` reports each model as ``pending`` (loading not started), ``loading``,
    ``ready`` or ``failed`` (with the error). :meth:`get` waits for a model to be ready.
    ``generation_mode`` (``batched`` or ``naive``) is passed to every local model, and so is
    ``cores``: the cores they share in batched mode (None: each uses the process's torch
    thread setting), and ``prompt_store_tokens``: the tokens of prompts read before that each
    keeps (:mod:`cyoa.generation.engine`).
    """

    def __init__(
        self,
        cards: dict[str, ModelCard],
        cache_dir: Path,
        generation_mode: str = BATCHED,
        cores: CoreShare | None = None,
        prompt_store_tokens: int = DEFAULT_PROMPT_STORE_TOKENS,
    ) -> None:
        self.cache_dir = Path(cache_dir)
        self.prompt_store_tokens = prompt_store_tokens
        self._backends = {
            name: make_backend(card, self.cache_dir, generation_mode, cores, prompt_store_tokens)
            for name, card in cards.items()
        }
        self._state = {name: PENDING for name in cards}
        self._errors: dict[str, str] = {}
        self._done = {name: threading.Event() for name in cards}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start_loading(self) -> None:
        """Start loading every model in the background (converting any that the cache lacks
        first). Calling it again does nothing."""
        with self._lock:
            if self._thread is not None:
                return
            for name in self._state:
                self._state[name] = LOADING
            self._thread = threading.Thread(
                target=self._load_all, name="cyoa-model-loading", daemon=True
            )
            self._thread.start()

    def _load_all(self) -> None:
        for name, backend in self._backends.items():
            started = time.perf_counter()
            log.info("Loading model %s…", name)
            try:
                backend.load(log=log.info)
            except Exception as exc:  # noqa: BLE001 - any failure is reported per model
                log.exception("Model %s failed to load", name)
                with self._lock:
                    self._state[name] = FAILED
                    self._errors[name] = f"{type(exc).__name__}: {exc}"
            else:
                log.info("Model %s ready after %.1f s", name, time.perf_counter() - started)
                with self._lock:
                    self._state[name] = READY
            self._done[name].set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: no limit) for every model to finish loading,
        starting the loading if needed. True when all are ready; False when any failed or
        the time ran out."""
        self.start_loading()
        deadline = None if timeout is None else time.monotonic() + timeout
        for event in self._done.values():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not event.wait(left):
                return False
        return self.is_ready()

    def is_ready(self) -> bool:
        """Whether every model is loaded and ready to generate."""
        with self._lock:
            return all(state == READY for state in self._state.values())

    def status(self) -> dict[str, dict[str, Any]]:
        """Per model name: ``{"state": "pending"|"loading"|"ready"|"failed", "error": str}``
        (the error is empty unless the model failed)."""
        with self._lock:
            return {
                name: {"state": state, "error": self._errors.get(name, "")}
                for name, state in self._state.items()
            }

    def get(self, name: str, timeout: float | None = None) -> Backend:
        """The backend for model ``name``, waiting up to ``timeout`` seconds (None: no limit)
        for it to load. Raises :class:`ModelNotAvailable` if the model is unknown, failed to
        load, or is not ready in time."""
        if name not in self._backends:
            known = ", ".join(sorted(self._backends)) or "none"
            raise ModelNotAvailable(f"No model named {name!r} in this pool (loaded: {known}).")
        self.start_loading()
        if not self._done[name].wait(timeout):
            raise ModelNotAvailable(f"Model {name!r} is still loading after {timeout} s.")
        with self._lock:
            if self._state[name] == FAILED:
                raise ModelNotAvailable(
                    f"Model {name!r} could not be loaded ({self._errors[name]}); "
                    "see the server log, fix the cause and restart the app."
                )
        return self._backends[name]


def prepare_models(
    cards: dict[str, ModelCard], cache_dir: Path, log: Callable[[str], None] = print
) -> dict[str, Path]:
    """Convert every packaged model among ``cards`` into ``cache_dir`` now (the slow, one-time
    step), so that starting the app only loads them. Returns each converted folder by model
    name; models that need no conversion (the fake backend) are skipped."""
    folders = {}
    for name, card in cards.items():
        if card.backend != "transformers":
            continue
        folder = ensure_converted(card, Path(cache_dir), log=log)
        log(f"{name}: ready in {folder}")
        folders[name] = folder
    return folders
