"""The app's Socket.IO server, created once and bound to the app in the factory."""

import json
import re
from typing import Any

import socketio as socketio_lib
from engineio import json as engineio_json
from flask_socketio import SocketIO

# A writer's largest message is a draft of a few thousand characters. A larger one (a long
# paste) still reaches the handlers, whose rules refuse it with a sentence the page shows;
# only a message over this limit is dropped by the transport, which closes the connection.
MAX_MESSAGE_BYTES = 1024 * 1024
_EVENT_NAME = re.compile(r'\s*\[\s*("(?:[^"\\]|\\.)*")')


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
