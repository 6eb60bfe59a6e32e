"""Stopping a model call that is in flight, from outside it: a judge run's Stop, a writer's
suggestion whose time is up.

A caller wraps the calls it may want to stop in :func:`stop_when`; a backend that can end
a call in the middle (the ``openai`` backend closes its connection, even while it waits
for a server that sends nothing) asks :func:`stop_requested` and raises
:class:`GenerationStopped`. The wish travels in a context variable, so the
:class:`~cyoa.generation.types.Backend` interface stays ``stream(prompt, sampling,
seed)``; each thread has its own, so one judge's Stop does not touch another caller of the
same model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class GenerationStopped(RuntimeError):
    """The caller asked the call to stop (:func:`stop_when`); what it produced is dropped."""


def _never() -> bool:
    return False


_STOP: ContextVar[Callable[[], bool]] = ContextVar("cyoa_generation_stop", default=_never)


@contextmanager
def stop_when(stop: Callable[[], bool]) -> Iterator[None]:
    """Within the block, model calls of this thread end as soon as ``stop()`` is true (or
    an enclosing block's is), as far as their backend can end them."""
    outer = _STOP.get()
    token = _STOP.set(lambda: stop() or outer())
    try:
        yield
    finally:
        _STOP.reset(token)


def stop_requested() -> Callable[[], bool]:
    """The predicate that says whether this thread's current calls should stop (always
    false outside :func:`stop_when`)."""
    return _STOP.get()


def until_stopped(pieces: Iterable[str]) -> Iterator[str]:
    """``pieces`` as they come, ending in :class:`GenerationStopped` as soon as this
    thread's stop is true between two of them (for a backend that cannot end a call in the
    middle: a model run in this process stops at its next token)."""
    stop = stop_requested()
    for piece in pieces:
        if stop():
            raise GenerationStopped("The caller asked the model to stop.")
        yield piece
