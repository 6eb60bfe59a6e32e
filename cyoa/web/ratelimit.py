"""How fast one writer's session may send: a token bucket per session.

Every message from a session's tabs takes a token; tokens come back at ``rate`` per second,
up to ``burst``. The writing page sends a few messages a second at most (a draft 0.6 s after
the writer stops typing, a click), well inside the defaults (docs/deployment.md); a session
that sends more is answered "send it again in a moment", which costs the server neither a
database write nor a thread, and is answered only when its next token is due
(:mod:`cyoa.cowriting.sockets` waits that long, at most a second, on the connection's own
thread), so a page that floods the server slows itself down rather than the server.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# Sessions whose buckets are kept before the full ones (which hold no information) are
# dropped.
BUCKETS_KEPT = 10_000


# One IPv6 subscriber usually holds a whole /64 and may use any address in it.
IPV6_CLIENT_PREFIX = 64


def client_key(address: str) -> str:
    """The key a client address is limited by: an IPv4 address itself (also written as an
    IPv6-mapped one), an IPv6 address's /64 network, so a client cannot get a fresh bucket by
    moving to another of its 2**64 addresses; anything else as it is."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_PREFIX}", strict=False))


@dataclass(frozen=True)
class Bucket:
    tokens: float
    at: float  # when it was last filled up, in seconds of the limiter's clock


def take(bucket: Bucket | None, now: float, rate: float, burst: float) -> tuple[float, Bucket]:
    """For a message at ``now``: 0 when it is within the rate, else the seconds until it
    would be; and the bucket after it. A session with no bucket yet has a full one."""
    tokens = burst if bucket is None else min(burst, bucket.tokens + (now - bucket.at) * rate)
    if tokens >= 1:
        return 0.0, Bucket(tokens - 1, now)
    return (1 - tokens) / rate, Bucket(tokens, now)


class RateLimiter:
    """A bucket per key (a writer's session id; also a rater, or a client address for
    starts: :func:`cyoa.create_app`), shared by the threads of one process."""

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

    def take(self, key: str) -> float:
        """Take a token for ``key``: 0 when it had one, else the seconds until it will."""
        with self._lock:
            now = self.clock()
            wait, self._buckets[key] = take(self._buckets.get(key), now, self.rate, self.burst)
            if len(self._buckets) > BUCKETS_KEPT:
                self._buckets = {
                    k: b
                    for k, b in self._buckets.items()
                    if b.tokens + (now - b.at) * self.rate < self.burst
                }
        return wait
