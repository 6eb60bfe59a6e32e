"""A hostile or broken model server, FOR TESTS: a small threaded HTTP server on 127.0.0.1
(a free port, in this process) that answers ``POST /MODE/v1/completions`` the way
``MODE`` says, so a card whose ``base_url`` is ``http://127.0.0.1:PORT/MODE`` meets it.
``GET /MODE/v1/models`` lists the model ``judge`` for every mode.

Modes: ``ok`` (a well-formed streamed answer, "Yes, ..."), ``drip`` (a keep-alive comment
every 0.1 s, forever), ``huge-line`` (one 10 MB streamed line), ``many-events`` (1,000
events of 10 KB text each), ``over-long`` (300 one-word events, past any small
``max_tokens``), ``html`` (a 200 HTML page), ``json`` (a 200 JSON object without choices),
``empty`` (a 200 with no body), ``garbage`` (events that are JSON lists and not JSON),
``hang`` (reads the request, then sends nothing), ``rejects-top-k`` (HTTP 400 naming
``top_k``, as OpenAI's own API does), ``drops-min-p`` (an ``ok`` answer whose last event
reports llama.cpp's ``generation_settings`` with its default ``min_p`` 0.05, not what was
sent). ``ok-then-MODE`` answers its first completion as ``ok`` and every later one as
``MODE`` (a judge run's warm-up passes, its prompts meet the hostile mode). A mode may end in
``~TAG`` (``ok-then-hang~page``): the same behaviour, counted apart from the untagged mode.

The server records each completion request (its mode, body, and when the client hung up,
for the modes that wait) in :attr:`HostileServer.requests`.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = ["Yes", ",", " the", " ending", " is", " earned", "."]


class HostileServer:
    """The server, serving from a daemon thread until :meth:`stop`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def base_url(self, mode: str) -> str:
        return f"{self.url}/{mode}"

    def of_mode(self, mode: str) -> list[dict[str, Any]]:
        with self.lock:
            return [entry for entry in self.requests if entry["mode"] == mode]

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def _handler(owner: HostileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            pass

        def do_GET(self) -> None:
            if self.path.endswith("/v1/models"):
                self.send_body(200, "application/json", {"data": [{"id": "judge"}]})
            else:
                self.send_body(404, "application/json", {"error": {"message": "no route"}})

        def do_POST(self) -> None:
            mode, _, rest = self.path.strip("/").partition("/")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            entry = {
                "mode": mode,
                "body": body,
                "received_at": time.monotonic(),
                "hung_up_at": None,
            }
            with owner.lock:
                owner.requests.append(entry)
                earlier = sum(e["mode"] == mode for e in owner.requests) - 1
            if rest != "v1/completions":
                self.send_body(404, "application/json", {"error": {"message": "no route"}})
                return
            mode = mode.split("~")[0]
            if mode.startswith("ok-then-"):
                mode = "ok" if earlier == 0 else mode.removeprefix("ok-then-")
            try:
                getattr(self, "mode_" + mode.replace("-", "_"))(entry)
            except (BrokenPipeError, ConnectionResetError):
                entry["hung_up_at"] = time.monotonic()

        # --- helpers ---

        def send_body(self, status: int, content_type: str, body: Any) -> None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def start_stream(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True

        def event(self, data: Any) -> None:
            text = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write(f"data: {text}\n\n".encode())
            self.wfile.flush()

        def piece(self, text: str, finish: str | None = None, **extra: Any) -> None:
            self.event({"choices": [{"index": 0, "text": text, "finish_reason": finish}], **extra})

        def wait_for_hang_up(self, entry: dict[str, Any], every: float, send: bytes = b"") -> None:
            """Until the client closes the connection (or the server stops), sending
            ``send`` every ``every`` seconds."""
            sock = self.connection
            while not owner.stopping.is_set():
                readable, _, _ = select.select([sock], [], [], every)
                if readable and not sock.recv(1, socket.MSG_PEEK):
                    entry["hung_up_at"] = time.monotonic()
                    return
                if send:
                    self.wfile.write(send)
                    self.wfile.flush()

        # --- the modes ---

        def mode_ok(self, entry: dict[str, Any], **extra: Any) -> None:
            self.start_stream()
            self.wfile.write(b": ping\n\n")
            for text in ANSWER:
                self.piece(text)
            self.piece("", "stop", **extra)
            self.event("[DONE]")

        def mode_drops_min_p(self, entry: dict[str, Any]) -> None:
            sent = entry["body"]
            settings = {"temperature": sent["temperature"], "top_k": sent["top_k"],
                        "top_p": sent["top_p"], "min_p": 0.05, "repeat_penalty": 1.1,
                        "n_predict": sent["max_tokens"], "seed": sent["seed"]}  # fmt: skip
            self.mode_ok(entry, generation_settings=settings)

        def mode_drip(self, entry: dict[str, Any]) -> None:
            self.start_stream()
            self.wait_for_hang_up(entry, 0.1, b": keep-alive\n")

        def mode_huge_line(self, entry: dict[str, Any]) -> None:
            self.start_stream()
            self.wfile.write(b'data: {"choices": [{"text": "')
            for _ in range(10 * 16):
                self.wfile.write(b"x" * 65536)
            self.wfile.write(b'"}]}\n\n')

        def mode_many_events(self, entry: dict[str, Any]) -> None:
            self.start_stream()
            for _ in range(1000):
                self.piece("y" * 10240)
            self.piece("", "stop")
            self.event("[DONE]")

        def mode_over_long(self, entry: dict[str, Any]) -> None:
            self.start_stream()
            for n in range(300):
                self.piece("Yes" if n == 0 else " word")
            self.piece("", "length")
            self.event("[DONE]")

        def mode_html(self, entry: dict[str, Any]) -> None:
            page = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
            self.send_body(200, "text/html", page)

        def mode_json(self, entry: dict[str, Any]) -> None:
            self.send_body(200, "application/json", {"status": "ok", "model": "judge"})

        def mode_empty(self, entry: dict[str, Any]) -> None:
            self.send_body(200, "application/json", b"")

        def mode_garbage(self, entry: dict[str, Any]) -> None:
            self.start_stream()
            self.event("[1, 2, 3]")
            self.event("{not json")

        def mode_hang(self, entry: dict[str, Any]) -> None:
            self.wait_for_hang_up(entry, 0.05)

        def mode_rejects_top_k(self, entry: dict[str, Any]) -> None:
            message = "Unrecognized request argument supplied: top_k"
            self.send_body(400, "application/json", {"error": {"message": message}})

    return Handler
