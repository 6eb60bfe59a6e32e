"""Fixtures of the generation tests: the packaged Gemma, loaded once per test worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.paths import ROOT


@pytest.fixture(scope="session")
def shared_gemma() -> Iterator[Callable[..., object]]:
    """``shared_gemma(mode, emptied=False, **options)``: the packaged Gemma run by the torch
    engine in ``mode`` (a :class:`~cyoa.generation.local.TransformersBackend` with the
    ``options`` given, such as ``prefix_tokens``), loaded the first time a test of this worker
    asks for that mode and those options and shared by every test after it (a load takes 10
    to 30 s and a gigabyte).

    Safe to share because its users only read it: they stream from it, and every stream
    leaves the batch when it ends. The one thing streams change is its store of texts read;
    ``emptied=True`` gives it back with that store empty and its counts of hits and reused
    tokens at zero, as a new load's (less the warm-up's text), for a test that counts on
    them. A test that changes the backend otherwise (closes it, patches how it loads) loads
    its own."""
    from cyoa.generation import load_model_cards
    from cyoa.generation.local import TransformersBackend
    from tests.tiny_checkpoint import MODEL_CACHE, torch_engine

    card = torch_engine(load_model_cards(ROOT / "models")["gemma-3-270m"])
    loaded: dict[tuple, TransformersBackend] = {}

    def backend(mode: str, emptied: bool = False, **options) -> TransformersBackend:
        key = (mode, *sorted(options.items()))
        if key not in loaded:
            loaded[key] = TransformersBackend(card, MODEL_CACHE, mode=mode, **options)
            loaded[key].load(log=lambda _: None)
        if emptied:
            store = loaded[key].prefixes
            store.clear()
            store.hits = store.tokens_reused = 0
        return loaded[key]

    yield backend
    for each in loaded.values():
        each.close()
