"""What a completions server sent back, read as a completion or named as what it is
instead (pure: bytes in, text pieces or :class:`ReplyProblem` out).

A streamed reply is server-sent events, ``data: {...}`` lines up to ``data: [DONE]``
(the OpenAI completions protocol); a reply of one JSON object with ``choices`` is taken as
a completion that was not streamed. Anything else (an HTML page, JSON without ``choices``,
an empty body, an event that is not JSON or holds no choices, an event stream that ends
before the completion does) is not a model's answer, and says so. The reader stops at the
caps of :class:`Limits`: ``max_tokens`` pieces (a server that writes on past the
``max_tokens`` it was sent is cut there), and it refuses more than ``max_chars`` characters
in all or a line longer than ``max_line_bytes`` (no model writes either).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

# No tokenizer's token is longer than this many characters (the cap on the text of a
# reply is max_tokens times this).
MAX_CHARS_PER_TOKEN = 32
# A completion event of any server named in docs/deployment.md is far shorter.
MAX_LINE_BYTES = 65536
_SHOWN = 120


class ReplyProblem(ValueError):
    """The reply is not a model's answer; the message is a clause that follows "The model
    server at URL", e.g. "answered with an HTML page, not a completion"."""


@dataclass(frozen=True)
class Limits:
    """The caps on one reply: pieces (tokens), characters of text, bytes in one line."""

    max_tokens: int
    max_chars: int
    max_line_bytes: int = MAX_LINE_BYTES

    @classmethod
    def for_tokens(cls, max_tokens: int) -> Limits:
        return cls(max_tokens, max_tokens * MAX_CHARS_PER_TOKEN)


@dataclass
class Report:
    """What the reply said about itself besides its text: the sampling settings the
    server says it used (llama.cpp's ``generation_settings``), when it says."""

    settings: dict[str, Any] = field(default_factory=dict)


def completion_pieces(
    chunks: Iterable[bytes], content_type: str, limits: Limits, report: Report | None = None
) -> Iterator[str]:
    """The text of the completion in ``chunks`` (the reply's body), piece by piece."""
    report = report if report is not None else Report()
    chunks = iter(chunks)
    first = next((chunk for chunk in chunks if chunk), b"")
    streamed = content_type.lower().startswith("text/event-stream") or first.lstrip().startswith(
        (b"data:", b":", b"event:")
    )
    body = _prepend(first, chunks)
    if streamed:
        yield from _capped(_event_pieces(body, limits, report), limits)
    else:
        yield from _capped(_whole_reply(b"".join(body), content_type, report), limits)


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


def _capped(pieces: Iterator[str], limits: Limits) -> Iterator[str]:
    chars = 0
    for count, piece in enumerate(pieces, start=1):
        chars += len(piece)
        if chars > limits.max_chars:
            raise ReplyProblem(
                f"sent more than {limits.max_chars} characters for at most "
                f"{limits.max_tokens} tokens, which is not a model's answer"
            )
        yield piece
        if count >= limits.max_tokens:
            return


def lines(chunks: Iterable[bytes], max_line_bytes: int) -> Iterator[str]:
    """The lines of an event stream (ended by LF or CRLF), each decoded as UTF-8; a line
    longer than ``max_line_bytes`` or not UTF-8 is a :class:`ReplyProblem`."""
    buffer = b""
    for chunk in chunks:
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        for line in complete:
            yield _decoded(line.removesuffix(b"\r"), max_line_bytes)
        if len(buffer) > max_line_bytes:
            raise ReplyProblem(
                f"sent a line longer than {max_line_bytes} bytes, which is no completion's event"
            )
    if buffer:
        yield _decoded(buffer.removesuffix(b"\r"), max_line_bytes)


def _decoded(line: bytes, max_line_bytes: int) -> str:
    if len(line) > max_line_bytes:
        raise ReplyProblem(
            f"sent a line longer than {max_line_bytes} bytes, which is no completion's event"
        )
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        raise ReplyProblem(f"sent bytes that are not UTF-8 text ({line[:_SHOWN]!r})") from None


def _event_pieces(chunks: Iterable[bytes], limits: Limits, report: Report) -> Iterator[str]:
    """The text of each ``data:`` event; comment lines (``: ping``), other fields and blank
    lines are skipped."""
    completion_events = 0
    for line in lines(chunks, limits.max_line_bytes):
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            if completion_events:
                return
            raise ReplyProblem("ended its event stream before sending any completion")
        text, finished = _event(data, report)
        completion_events += 1
        if text:
            yield text
        if finished:
            return
    if completion_events:
        raise ReplyProblem(
            "stopped streaming before the completion ended (no finish_reason, no [DONE])"
        )
    raise ReplyProblem("sent an event stream without a completion in it")


def _event(data: str, report: Report) -> tuple[str, bool]:
    """One event's text and whether it ends the completion (a ``finish_reason``)."""
    try:
        event = json.loads(data)
    except json.JSONDecodeError:
        raise ReplyProblem(f"sent an event that is not JSON ({data[:_SHOWN]!r})") from None
    if not isinstance(event, dict):
        raise ReplyProblem(f"sent an event that is not a JSON object ({data[:_SHOWN]!r})")
    if "error" in event:
        raise ReplyProblem(f"failed: {_error_text(event['error'])}")
    _note_settings(event, report)
    choices = event.get("choices")
    if choices == []:
        return "", False
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ReplyProblem(f"sent an event without a completion's choices ({data[:_SHOWN]!r})")
    text = choices[0].get("text")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise ReplyProblem(f"sent an event whose text is not a string ({data[:_SHOWN]!r})")
    # Some servers send an empty finish_reason on the pieces before the last.
    return text, bool(choices[0].get("finish_reason"))


def _note_settings(event: dict[str, Any], report: Report) -> None:
    settings = event.get("generation_settings")
    if isinstance(settings, dict):
        report.settings.update(settings)


def _whole_reply(body: bytes, content_type: str, report: Report) -> Iterator[str]:
    """The text of a reply that is not an event stream: one JSON completion, else a
    :class:`ReplyProblem` saying what it is."""
    try:
        reply = json.loads(body)
    except ValueError:
        reply = None
    if isinstance(reply, dict) and "error" in reply:
        raise ReplyProblem(f"failed: {_error_text(reply['error'])}")
    choices = reply.get("choices") if isinstance(reply, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        text = choices[0].get("text")
        if isinstance(text, str):
            _note_settings(reply, report)
            if text:
                yield text
            return
    raise ReplyProblem(f"answered with {describe(body, content_type, reply)}, not a completion")


def describe(body: bytes, content_type: str, parsed: Any = None) -> str:
    """What a body that is no completion is, as a noun phrase: "an HTML page", "an empty
    reply", "JSON without choices ({...})", "text (...)"."""
    text = body.decode("utf-8", errors="replace").strip()
    if not text:
        return "an empty reply"
    if "html" in content_type.lower() or re.match(r"<(!doctype html|html)\b", text, re.I):
        return "an HTML page"
    if parsed is not None:
        return f"JSON without choices ({text[:_SHOWN]!r})"
    return f"text ({text[:_SHOWN]!r})"


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:300]
