"""Opening an experiment whose models this server has not loaded: the models load in the
background (:meth:`cyoa.generation.pool.ModelPool.load`) and the experiment opens as soon as
they are ready, without a restart. Until then it stays paused, so no writer meets a model
that cannot answer; if a model fails to load, the experiment stays paused and the reason is
kept for its page. Pausing or closing it meanwhile cancels the opening.

The pending openings live in this process only: after a restart every stored experiment's
models load at start, and the researcher presses Open again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from cyoa.generation.pool import ModelPool


class Openings:
    """The experiments waiting for their models before they open, and why an opening
    failed."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[str, ...]] = {}
        self._failures: dict[str, str] = {}
        self._lock = threading.Lock()

    def request(
        self, exp_id: str, models: Sequence[str], pool: ModelPool, open_now: Callable[[], None]
    ) -> None:
        """Load ``models`` (all the experiment's: those ready settle at once) and call
        ``open_now`` once all are ready (on the loading thread), unless :meth:`cancel` came
        first. While it waits, none of them may be unloaded (:meth:`models_waited_for`)."""
        with self._lock:
            self._waiting[exp_id] = tuple(models)
            self._failures.pop(exp_id, None)

        def settled(errors: dict[str, str]) -> None:
            with self._lock:
                if self._waiting.get(exp_id) != tuple(models):
                    return  # cancelled, or asked again since
                del self._waiting[exp_id]
                if errors:
                    self._failures[exp_id] = "; ".join(
                        f"{name} could not be loaded ({error})" for name, error in errors.items()
                    )
                    return
            open_now()

        pool.load(models, then=settled)

    def models_waited_for(self) -> set[str]:
        """Every model some experiment waits for (none of them may be unloaded now)."""
        with self._lock:
            return {name for models in self._waiting.values() for name in models}

    def cancel(self, exp_id: str) -> None:
        """Forget a pending opening (the researcher paused or closed the experiment)."""
        with self._lock:
            self._waiting.pop(exp_id, None)
            self._failures.pop(exp_id, None)

    def waiting_for(self, exp_id: str) -> tuple[str, ...]:
        """The models the experiment waits for before it opens (empty: not waiting)."""
        with self._lock:
            return self._waiting.get(exp_id, ())

    def failure(self, exp_id: str) -> str:
        """Why the last opening failed ("" if it did not)."""
        with self._lock:
            return self._failures.get(exp_id, "")
