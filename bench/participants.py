"""Simulated participants, as the server sees them: a writer (a cookie jar and a Socket.IO
connection, websocket only) and a rater (a cookie jar and JSON posts), each speaking its page's
protocol and recording every action it sent in a :class:`Ledger`.

Like the pages (static/js/write.js, static/js/rate.js), each action carries a client action
id; an action not acknowledged because the connection was lost is sent again, with the same
id, on the next of the deployment's processes (the writer joins its story there first), and
one answered ``retry: true`` (the server busy or the participant too fast) is sent again a
moment later. The acknowledgement latency of an action runs from its first sending to the
acknowledgement that it was stored.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests
import socketio

RETRY_PAUSE_SECONDS = 0.2
ACK_TIMEOUT_SECONDS = 30.0


@dataclass(frozen=True)
class Sent:
    """One action: its kind (``writer/line_submitted``, ``rater/answer_given``, …), client
    action id, latency to its acknowledgement (seconds; None: never acknowledged), how many
    times it was sent, and when it was first sent (time.monotonic())."""

    kind: str
    action_id: str
    latency: float | None
    sends: int
    sent_at: float


@dataclass
class Ledger:
    """Every action some participants sent, thread-safe."""

    sent: list[Sent] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, item: Sent) -> None:
        with self.lock:
            self.sent.append(item)

    def acknowledged(self, prefix: str) -> list[str]:
        """The client action ids acknowledged for kinds starting with ``prefix``."""
        with self.lock:
            return [
                s.action_id
                for s in self.sent
                if s.latency is not None and s.kind.startswith(prefix)
            ]


class ParticipantError(RuntimeError):
    """The server refused an action, or never acknowledged it."""


def until_acknowledged(
    ledger: Ledger,
    kind: str,
    message: dict[str, Any],
    send: Callable[[dict[str, Any]], dict[str, Any] | None],
    failover: Callable[[], None],
) -> dict[str, Any]:
    """Send ``message`` (which carries its client action id) until it is acknowledged as
    stored, as the pages do: ``send`` returns the reply, or None when the process is gone
    (then ``failover()`` and the same message again); a ``retry`` reply is sent again after a
    pause; a refusal raises :class:`ParticipantError`. The sends and the latency from the
    first send go in ``ledger`` (a latency of None: never acknowledged)."""
    start, sends = time.monotonic(), 0
    try:
        while True:
            sends += 1
            reply = send(message)
            if reply is None:
                failover()
            elif reply.get("retry"):
                time.sleep(RETRY_PAUSE_SECONDS)
            elif not reply.get("ok"):
                raise ParticipantError(f"{kind} refused: {reply.get('error')}")
            else:
                latency = time.monotonic() - start
                ledger.add(Sent(kind, message["action_id"], latency, sends, start))
                return reply
    except Exception:
        ledger.add(Sent(kind, message["action_id"], None, sends, start))
        raise


def consent(http: requests.Session, url: str, path: str, fields: dict[str, str]) -> str:
    """Open the participant link at ``url + path`` and agree; returns the page it leads to."""
    page = http.get(f"{url}{path}", params=fields, timeout=30)
    page.raise_for_status()
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    hidden = dict(re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', page.text))
    form = {**hidden, **fields, "consent": "yes", "csrf_token": token.group(1) if token else ""}
    reply = http.post(f"{url}{path}/start", data=form, timeout=30)
    reply.raise_for_status()
    return reply.text


class Writer:
    """A writer of ``experiment``, started on ``urls[0]``; when the connection is lost it
    goes on with the next URL."""

    def __init__(self, urls: list[str], experiment: str, pid: str, ledger: Ledger):
        self.urls, self.experiment, self.ledger = urls, experiment, ledger
        self.at = 0
        self.http = requests.Session()
        consent(self.http, urls[0], f"/s/{experiment}", {"pid": pid})
        self.changed = threading.Condition()
        self.state: dict[str, Any] | None = None
        self.io: socketio.Client | None = None
        self._connect()

    def _connect(self) -> None:
        """Connect to the current URL and join the story (the ack carries its state)."""
        self.io = socketio.Client(http_session=self.http, reconnection=False)
        self.io.on("state", self._on_state)
        self.io.on("disconnect", self._wake)
        self.io.connect(self.urls[self.at], transports=["websocket"], wait_timeout=10)
        joined = self.io.call("join", {"experiment": self.experiment}, timeout=ACK_TIMEOUT_SECONDS)
        if not joined.get("ok"):
            raise ParticipantError(f"join refused: {joined.get('error')}")
        self.record_setting = joined.get("record") or {"on": False}
        self._on_state(joined["state"])

    def _on_state(self, view: dict[str, Any]) -> None:
        with self.changed:
            self.state = view
            self.changed.notify_all()

    def _wake(self, *_: Any) -> None:
        with self.changed:
            self.changed.notify_all()

    def failover(self) -> None:
        """Give up this connection and join the story on the next process."""
        old, self.at = self.io, (self.at + 1) % len(self.urls)
        _quietly_disconnect(old)
        self._connect()

    def act(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one action until it is acknowledged as stored; returns the ack."""
        data = {"type": kind, "payload": payload, "action_id": uuid.uuid4().hex}
        ack = until_acknowledged(self.ledger, f"writer/{kind}", data, self._send, self.failover)
        self._on_state(ack["state"])
        return ack

    def record(self, rows: list[list[Any]]) -> dict[str, Any]:
        """Send one batch of the keystroke record (``record``, rows as the page's wire rows:
        bench/typist.py) until it is acknowledged as stored; returns the ack."""
        data = {"operations": rows, "action_id": uuid.uuid4().hex}
        return until_acknowledged(
            self.ledger, "writer/record", data, lambda d: self._send(d, "record"), self.failover
        )

    def _send(self, data: dict[str, Any], event: str = "action") -> dict[str, Any] | None:
        """The ack of one sending, or None when the connection was lost before it came."""
        reply: dict[str, Any] = {}
        arrived = threading.Event()

        def on_ack(ack: dict[str, Any]) -> None:
            reply["ack"] = ack
            arrived.set()
            self._wake()

        try:
            self.io.emit(event, data, callback=on_ack)
        except socketio.exceptions.SocketIOError:
            return None
        deadline = time.monotonic() + ACK_TIMEOUT_SECONDS
        with self.changed:
            while not arrived.is_set() and self.io.connected:
                left = deadline - time.monotonic()
                if left <= 0:
                    what = data.get("type", event)
                    raise ParticipantError(f"no ack for {what} in {ACK_TIMEOUT_SECONDS} s")
                self.changed.wait(left)
        return reply.get("ack")

    def wait_for(self, phase: str, round_number: int, timeout: float = 60.0) -> dict[str, Any]:
        """The first state of round ``round_number`` in ``phase``; if the connection is lost
        meanwhile, the story is joined on the next process."""
        deadline = time.monotonic() + timeout
        while True:
            with self.changed:
                view = self.state
                if view and view["phase"] == phase and view["round"] == round_number:
                    return view
                if self.io.connected:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise ParticipantError(f"phase {phase!r} not reached; state {self.state}")
                    self.changed.wait(min(left, 1.0))
                    continue
            self.failover()

    def close(self) -> None:
        _quietly_disconnect(self.io)


def _quietly_disconnect(client: socketio.Client | None) -> None:
    if client is not None:
        # A connection to a process that was killed may fail to close.
        with contextlib.suppress(Exception):
            client.disconnect()


class Rater:
    """A rater of ``experiment``, started on ``urls[0]``; when a process cannot be reached
    the rater goes on with the next URL, with the same cookie."""

    def __init__(self, urls: list[str], experiment: str, pid: str, ledger: Ledger):
        self.urls, self.experiment, self.ledger = urls, experiment, ledger
        self.at = 0
        self.http = requests.Session()
        self.page = consent(self.http, urls[0], f"/r/{experiment}", {"PROLIFIC_PID": pid})

    @property
    def url(self) -> str:
        return self.urls[self.at]

    def load_page(self) -> str:
        while True:
            try:
                reply = self.http.get(f"{self.url}/r/{self.experiment}/rate", timeout=30)
            except requests.ConnectionError:
                self.at = (self.at + 1) % len(self.urls)
                continue
            self.page = reply.text
            return self.page

    def task(self) -> tuple[str, list[tuple[str, str]]]:
        """The shown story's alias and its questions: (shown item id, an answer to give)."""
        story = re.search(r'id="story" data-story="([^"]+)"', self.page)
        if story is None:
            raise ParticipantError("the rating page shows no story")
        items = []
        for chunk in self.page.split('<fieldset class="question"')[1:]:
            item = re.search(r'data-item="([^"]+)"', chunk).group(1)
            values = re.findall(r'type="radio" name="answer-\d+" value="([^"]+)"', chunk)
            items.append((item, values[len(values) // 2] if values else "A fine story."))
        return story.group(1), items

    def act(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Post one action until it is acknowledged as stored; returns the reply."""
        body = {"action_id": uuid.uuid4().hex, "type": kind, "payload": payload}
        return until_acknowledged(self.ledger, f"rater/{kind}", body, self._post, self._next)

    def _next(self) -> None:
        """Go on with the next process (the same cookie: the rater's work is in the database)."""
        self.at = (self.at + 1) % len(self.urls)

    def _post(self, body: dict[str, Any]) -> dict[str, Any] | None:
        try:
            reply = self.http.post(
                f"{self.url}/r/{self.experiment}/action",
                json=body,
                headers={"X-CYOA-Action": "1"},
                timeout=ACK_TIMEOUT_SECONDS,
            )
        except requests.ConnectionError:
            return None
        return reply.json()
