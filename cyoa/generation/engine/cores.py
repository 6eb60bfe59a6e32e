"""The CPU cores of the process, shared by the models that are generating right now.

In batched mode each local model decodes on its own scheduler thread. With a fixed number of
torch threads per model (half the cores each), a model that has work while the other has
none leaves half the machine idle: with one writer, the faster model finishes its suggestion
first and the slower one goes on alone on one core; with many writers, the same happens at
the tail of every round. A :class:`CoreShare` gives every working model an equal share of the
cores instead, decided again before each decoding step, so a model alone gets them all.

torch's thread count is per calling thread (each scheduler thread sets its own OpenMP team
size), so the models do not disturb each other's setting. When a second model starts
working during the first's step, that step finishes with its old share (for one step, one
thread more than cores). A row's hidden state on another number of threads differs at most
by float32 rounding, so sharing can change a sampled token only where two candidates nearly
tie.
"""

from __future__ import annotations

import threading


def threads_each(cores: int, working: int) -> int:
    """The torch threads each of ``working`` models gets from ``cores`` cores: an equal
    whole share, at least 1."""
    return max(1, cores // max(1, working))


class CoreShare:
    """``cores`` CPU cores divided among the workers (scheduler threads) that are working."""

    def __init__(self, cores: int) -> None:
        if cores < 1:
            raise ValueError("cores must be at least 1.")
        self.cores = cores
        self._working: set[int] = set()
        self._lock = threading.Lock()

    def working(self, worker: object) -> int:
        """Mark ``worker`` as working; the number of threads it may use for its next step."""
        with self._lock:
            self._working.add(id(worker))
            return threads_each(self.cores, len(self._working))

    def idle(self, worker: object) -> None:
        """Mark ``worker`` as having nothing to do (its share goes to the others)."""
        with self._lock:
            self._working.discard(id(worker))

    @property
    def workers(self) -> int:
        """How many workers are working now."""
        with self._lock:
            return len(self._working)
