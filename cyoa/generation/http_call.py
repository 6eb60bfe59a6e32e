"""One HTTP request to a model server, bounded on every side: a connect timeout, a read
timeout (the longest silence), a deadline for the whole call, a cap on the bytes read, and
a stop that ends it from another thread (:mod:`cyoa.generation.stopping`).

Built on :mod:`http.client` because the app must own the socket: a watcher thread shuts it
down when the deadline passes or the caller asks to stop, which wakes a read that is
blocked on a server sending nothing (a hang, a keep-alive drip that never ends). The body
is read in chunks of at most :data:`CHUNK_BYTES`, never a line at a time.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlsplit

CHUNK_BYTES = 16384
# How often the watcher looks at the deadline and the stop, in seconds.
WATCH_SECONDS = 0.05


class CallFailed(Exception):
    """The call did not get an answer; ``reason`` says which bound ended it:
    ``unreachable``, ``silent`` (the read timeout), ``deadline``, ``too_big`` or
    ``stopped``; ``detail`` the low-level cause."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True)
class Bounds:
    """The bounds of one call, in seconds and bytes."""

    connect_seconds: float
    read_seconds: float
    deadline_seconds: float
    max_bytes: int


class _Watch:
    """Shuts ``sock`` down once the deadline passes or ``stop()`` is true; ``fired`` says
    which ("" while neither)."""

    def __init__(self, deadline: float, stop: Callable[[], bool]) -> None:
        self.deadline = deadline
        self.stop = stop
        self.fired = ""
        self.sock: socket.socket | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="cyoa-http-watch")
        self._thread.start()

    def _watch(self) -> None:
        while not self._done.wait(WATCH_SECONDS):
            if self.stop():
                self._fire("stopped")
            elif time.monotonic() >= self.deadline:
                self._fire("deadline")
            if self.fired:
                return

    def _fire(self, reason: str) -> None:
        self.fired = reason
        sock = self.sock
        if sock is not None:
            # An error here means it is closed already: nothing left to wake.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def check(self) -> None:
        """Raise :class:`CallFailed` if the watch has fired (or would now)."""
        if not self.fired and self.stop():
            self.fired = "stopped"
        if not self.fired and time.monotonic() >= self.deadline:
            self.fired = "deadline"
        if self.fired:
            raise CallFailed(self.fired)

    def close(self) -> None:
        self._done.set()


@dataclass
class Reply:
    """The server's answer: status, reason, content type and the body as chunks of bytes
    (at most the bounds' ``max_bytes`` in all; past them :class:`CallFailed` ``too_big``)."""

    status: int
    reason: str
    content_type: str
    chunks: Iterator[bytes]

    def read(self) -> bytes:
        """The whole body (within the bounds)."""
        return b"".join(self.chunks)


@contextmanager
def request(
    method: str,
    url: str,
    body: bytes | None,
    headers: dict[str, str],
    bounds: Bounds,
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[Reply]:
    """Send one request and give its reply; the connection is closed when the block ends.
    Every way the call can fail inside its bounds raises :class:`CallFailed`, while the
    request is sent and while its body is read."""
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    watch = _Watch(time.monotonic() + bounds.deadline_seconds, stop)
    connection = kind(parts.hostname or "", parts.port, timeout=bounds.connect_seconds)
    try:
        try:
            connection.connect()
            watch.sock = connection.sock
            watch.check()
            connection.sock.settimeout(bounds.read_seconds)
            connection.request(method, path or "/", body=body, headers=headers)
            response = connection.getresponse()
        except CallFailed:
            raise
        except TimeoutError as exc:
            watch.check()
            reason = "silent" if watch.sock is not None else "unreachable"
            raise CallFailed(reason, type(exc).__name__) from exc
        except (OSError, http.client.HTTPException) as exc:
            watch.check()
            reason = "unreachable" if watch.sock is None else "broken"
            raise CallFailed(reason, f"{type(exc).__name__}: {exc}") from exc
        watch.check()
        yield Reply(
            response.status,
            response.reason,
            response.getheader("Content-Type", "") or "",
            _chunks(response, watch, bounds.max_bytes),
        )
    finally:
        watch.close()
        connection.close()


def _chunks(response: http.client.HTTPResponse, watch: _Watch, max_bytes: int) -> Iterator[bytes]:
    """The body in chunks of at most :data:`CHUNK_BYTES`; :class:`CallFailed` when a bound
    ends it."""
    received = 0
    while True:
        try:
            chunk = response.read1(CHUNK_BYTES)
        except TimeoutError as exc:
            watch.check()
            raise CallFailed("silent", type(exc).__name__) from exc
        except (OSError, http.client.HTTPException, ValueError) as exc:
            watch.check()
            raise CallFailed("broken", f"{type(exc).__name__}: {exc}") from exc
        watch.check()
        if not chunk:
            return
        received += len(chunk)
        if received > max_bytes:
            raise CallFailed("too_big", f"more than {max_bytes} bytes")
        yield chunk
