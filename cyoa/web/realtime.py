"""The app's Socket.IO server, created once and bound to the app in the factory."""

import json
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import socketio as socketio_lib
from engineio import json as engineio_json
from flask import Flask
from flask_socketio import SocketIO

# A writer's largest message is a draft of a few thousand characters. A larger one (a long
# paste) still reaches the handlers, whose rules refuse it with a sentence the page shows;
# only a message over this limit is dropped by the transport, which closes the connection.
MAX_MESSAGE_BYTES = 1024 * 1024
_EVENT_NAME = re.compile(r'\s*\[\s*("(?:[^"\\]|\\.)*")')
# At most one log line per this many seconds about packets that could not be read.
DROPPED_LOG_SECONDS = 60.0
# The errors python-socketio raises on a packet it cannot read: bad JSON, an unknown packet
# type, an event without a name, an id too long, a binary placeholder naming no attachment.
_MALFORMED = (ValueError, TypeError, IndexError, KeyError, AttributeError, RecursionError)
log = logging.getLogger(__name__)


class PacketJSON:
    """The JSON of Socket.IO packets: Engine.IO's own (which refuses integers of more than
    100 digits), except that an event nested too deeply for Python to decode (thousands of
    brackets: hostile, the page never sends one) reads as its name with one argument, None,
    so its handler refuses it like any malformed message, where the server would otherwise
    log an error and never answer."""

    dumps = staticmethod(engineio_json.dumps)

    @staticmethod
    def loads(text: str, **kwargs: Any) -> Any:
        try:
            return engineio_json.loads(text, **kwargs)
        except RecursionError:
            return [_event_name(text), None]


def _event_name(text: str) -> str:
    """The name at the start of an encoded event (``["name", …``), or "" if none."""
    match = _EVENT_NAME.match(text)
    try:
        return json.loads(match.group(1)) if match else ""
    except ValueError:
        return ""


class DroppedPackets:
    """Counts the packets dropped as unreadable and logs them in one line at most every
    ``every`` seconds (the first at once), so a client sending malformed packets by the
    thousand cannot fill the log."""

    def __init__(
        self, every: float = DROPPED_LOG_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.every = every
        self.clock = clock
        self._count = 0
        self._logged_at: float | None = None
        self._lock = threading.Lock()

    def drop(self, error: Exception) -> None:
        """Count one dropped packet, and log the count and this one's error when due."""
        with self._lock:
            self._count += 1
            now = self.clock()
            if self._logged_at is not None and now - self._logged_at < self.every:
                return
            count, self._count, self._logged_at = self._count, 0, now
        log.warning(
            "Dropped %d unreadable Socket.IO packet(s) since the last such line; the latest: "
            "%s: %.200s",
            count,
            type(error).__name__,
            error,
        )


def drop_malformed_packets(server: socketio_lib.Server) -> None:
    """Make ``server`` drop a packet it cannot read (the page never sends one), counted in
    one throttled log line (:class:`DroppedPackets`), where python-socketio would log a
    traceback for each; and forget a binary event whose attachment failed, which would
    otherwise read every later packet of the connection as an attachment and break it for
    good. The connection stays open and its next packets are read as usual."""
    dropped = DroppedPackets()
    handle = server._handle_eio_message

    def guarded(eio_sid: str, data: Any) -> None:
        try:
            handle(eio_sid, data)
        except _MALFORMED as error:
            server._binary_packet.pop(eio_sid, None)
            dropped.drop(error)

    # Engine.IO calls the handler it was given at start; the test client calls the attribute.
    server._handle_eio_message = guarded
    server.eio.on("message", guarded)


# Threads, not eventlet/gevent: model generation is CPU-bound torch code that releases the
# GIL, and simple-websocket gives real WebSocket transport under the threading mode.
# async_handlers=False: a connection's events are handled one after another on that
# connection's own thread, so a page that floods the server costs it one thread (and waits
# for its answers), not a thread per event.
socketio = SocketIO(
    async_mode="threading",
    max_http_buffer_size=MAX_MESSAGE_BYTES,
    async_handlers=False,
    json=PacketJSON,
)


def client_manager(message_queue: str | None) -> socketio_lib.RedisManager | None:
    """What keeps track of rooms: None for this process alone, or a Redis message queue
    (``redis://host:port/db``) shared by several worker processes, so that an event emitted
    to a writer's room reaches their tabs whichever worker holds each connection.

    The manager is handed to ``init_app`` on every call (rather than ``message_queue=``)
    because the module-level server keeps its options from one ``create_app`` to the next.
    """
    if not message_queue:
        return None
    if not message_queue.startswith(("redis://", "rediss://")):
        raise ValueError(
            f"CYOA_MESSAGE_QUEUE must be a Redis URL such as redis://127.0.0.1:6379/0 "
            f"(found {message_queue!r})."
        )
    return socketio_lib.RedisManager(message_queue, channel="cyoa")


def init_app(app: Flask) -> None:
    """Bind the module-level server to ``app`` (with the message queue of
    ``CYOA_MESSAGE_QUEUE``, if any) and drop the packets it cannot read."""
    socketio.init_app(app, client_manager=client_manager(app.config["MESSAGE_QUEUE"]))
    drop_malformed_packets(socketio.server)
