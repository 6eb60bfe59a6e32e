"""How fast one writer's session may send: a token bucket per session.

Every message from a session's tabs takes a token; tokens come back at ``rate`` per second,
up to ``burst``. The writing page sends a few messages a second at most (a draft 0.6 s after
the writer stops typing, a click), well inside the defaults (docs/deployment.md); a session
that sends more is answered at once with "send it again in a moment", which costs the server
neither a database write nor a thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# Sessions whose buckets are kept before the full ones (which hold no information) are
# dropped.
BUCKETS_KEPT = 10_000


@dataclass(frozen=True)
class Bucket:
    tokens: float
    at: float  # when it was last filled up, in seconds of the limiter's clock


def take(bucket: Bucket | None, now: float, rate: float, burst: float) -> tuple[bool, Bucket]:
    """Whether a message at ``now`` is within the rate, and the bucket after it. A session
    with no bucket yet has a full one."""
    tokens = burst if bucket is None else min(burst, bucket.tokens + (now - bucket.at) * rate)
    if tokens >= 1:
        return True, Bucket(tokens - 1, now)
    return False, Bucket(tokens, now)


class RateLimiter:
    """A bucket per key (a writer's session id), shared by the threads of one process."""

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not rate > 0 or not burst >= 1:
            raise ValueError(
                f"A rate limit needs a rate above 0 per second and a burst of at least 1 "
                f"(found {rate!r} and {burst!r})."
            )
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._buckets: dict[str, Bucket] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        """Take a token for ``key``: False when it has none left."""
        with self._lock:
            now = self.clock()
            allowed, self._buckets[key] = take(self._buckets.get(key), now, self.rate, self.burst)
            if len(self._buckets) > BUCKETS_KEPT:
                self._buckets = {
                    k: b
                    for k, b in self._buckets.items()
                    if b.tokens + (now - b.at) * self.rate < self.burst
                }
        return allowed
