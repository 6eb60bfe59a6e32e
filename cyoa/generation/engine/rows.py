"""What the engine's two generating threads share (the CPU batch scheduler and the GPU
``generate`` loop): a request row and the queue of pieces its reader takes from, the stream
that reads it, collecting the requests that arrive together, and ending the thread before the
interpreter exits."""

from __future__ import annotations

import atexit
import queue
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

from cyoa.generation.types import Sampling

# Decoding a token list that ends inside a multi-byte character gives this replacement
# character; the piece is held back until the next token completes the character.
INCOMPLETE = "\ufffd"
# At most this many rows generate together; later requests wait for a place.
MAX_ROWS = 32
# When idle, the first request waits this long (seconds) for others to arrive with it (the
# two systems of a same-model pair are asked for at almost the same moment).
WINDOW_SECONDS = 0.01
# How long closing (and interpreter exit) waits for the current step (seconds).
SHUTDOWN_WAIT_SECONDS = 30.0
END = object()
# Asks a generating thread to finish its current step and end.
SHUTDOWN = object()
_servers: weakref.WeakSet[RowServer] = weakref.WeakSet()


@atexit.register
def _shutdown_all() -> None:
    """Stop every generating thread before the interpreter finalizes. A daemon thread still
    inside torch when Python finalizes is killed mid-C++ and aborts the whole process
    ("terminate called without an active exception"), so each thread is asked to end and
    is waited for."""
    for server in list(_servers):
        server.close()


class Row:
    """One request: its settings, its decoding state (generating thread only), the random
    generator its tokens are drawn from (seeded by its server: a ``torch.Generator`` for the
    torch engine, a numpy one for llama.cpp's), and the queue of pieces its reader takes
    from."""

    def __init__(self, prompt: str, sampling: Sampling, generator: Any) -> None:
        self.prompt = prompt
        self.sampling = sampling
        self.generator = generator
        self.pieces: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.stopped = threading.Event()
        self.ids: list[int] = []
        self.generated: list[int] = []
        self.shown = ""
        self.done = False

    def take(self, token_id: int, tokenizer: Any) -> None:
        """Add a generated token and hand the reader the new text: the whole generated text
        is decoded each time (sentencepiece spaces and multi-byte characters depend on
        neighbouring tokens) and only the new part sent, or an empty piece while the text
        ends inside a character. The row ends at its ``max_new_tokens``."""
        self.generated.append(token_id)
        text = tokenizer.decode(
            self.generated, skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        if text.endswith(INCOMPLETE):
            self.pieces.put("")
        else:
            self.pieces.put(text[len(self.shown) :])
            self.shown = text
        if len(self.generated) >= self.sampling.max_new_tokens:
            self.finish()

    def finish(self, item: Any = END) -> None:
        """End the row for its reader: ``END``, or an exception the reader raises."""
        if not self.done:
            self.done = True
            self.pieces.put(item)


class RowServer(ABC):
    """A thread, named ``thread_name``, that generates the rows :meth:`stream` hands it
    (its subclass's ``_run``); :meth:`start` once, :meth:`close` to end it."""

    def __init__(self, thread_name: str) -> None:
        self._incoming: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        # Set by close(); a request after it fails at once instead of waiting for a thread
        # that has ended.
        self._closed = False
        self._closing = threading.Lock()
        _servers.add(self)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """End the thread after its current step (waiting for it); the rows it holds and
        those waiting fail with an error their readers raise."""
        with self._closing:
            self._closed = True
            self._incoming.put(SHUTDOWN)
        if self._thread.is_alive():
            self._thread.join(SHUTDOWN_WAIT_SECONDS)

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation of ``prompt``, exactly one piece per generated token (empty
        while a token only starts a multi-byte character), until an end-of-text token or
        ``sampling.max_new_tokens`` tokens. Closing the iterator takes the row out of its
        batch before the next token."""
        row = Row(prompt, sampling, self._generator(seed))
        with self._closing:
            if self._closed:
                raise RuntimeError(f"{self._thread.name} was shut down.")
            self._incoming.put(row)
        try:
            while True:
                item = row.pieces.get()
                if item is END:
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            row.stopped.set()

    def _collect(self, waiting: list[Any], idle: bool, window_seconds: float) -> list[Any]:
        """``waiting`` with every request that has arrived; when ``idle``, first wait for one
        and then ``window_seconds`` for others to arrive with it. May hold ``SHUTDOWN``."""
        if idle:
            waiting.append(self._incoming.get())
            time.sleep(window_seconds)
        while True:
            try:
                waiting.append(self._incoming.get_nowait())
            except queue.Empty:
                return waiting

    @abstractmethod
    def _generator(self, seed: int) -> Any:
        """A fresh random generator seeded with ``seed``, the only source of a row's draws."""

    @abstractmethod
    def _run(self) -> None:
        """Generate the rows that arrive until ``SHUTDOWN`` does (the thread's body)."""
