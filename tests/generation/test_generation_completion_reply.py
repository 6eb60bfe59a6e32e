"""A completions server's reply read as a completion, or named as what it is instead
(cyoa/generation/completion_reply.py, pure: bytes in, pieces or a sentence out)."""

from __future__ import annotations

import json

import pytest

from cyoa.generation.completion_reply import (
    Limits,
    ReplyProblem,
    Report,
    completion_pieces,
    lines,
)

STREAM = "text/event-stream"


def events(*data: object) -> list[bytes]:
    return [f"data: {d if isinstance(d, str) else json.dumps(d)}\n\n".encode() for d in data]


def piece(text: str, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "text": text, "finish_reason": finish}]}


def read(chunks: list[bytes], content_type: str = STREAM, tokens: int = 20) -> list[str]:
    return list(completion_pieces(chunks, content_type, Limits.for_tokens(tokens)))


def test_a_streamed_completion_gives_its_pieces_whatever_the_chunks_cut():
    body = b": ping\n\n" + b"".join(events(piece("Once"), piece(" upon"), piece("", "stop")))
    body += b"data: [DONE]\n\n"
    whole = read([body])
    assert whole == ["Once", " upon"]
    assert read([body[i : i + 1] for i in range(len(body))]) == whole  # one byte a chunk
    assert read([body.replace(b"\n", b"\r\n")]) == whole


def test_a_stream_ends_at_a_finish_reason_or_done_and_nowhere_else():
    assert read(events(piece("A"), "[DONE]")) == ["A"]
    assert read(events(piece("A", "length"), piece("never read"))) == ["A"]
    assert read(events(piece("A", ""), piece("B", "stop"))) == ["A", "B"]
    with pytest.raises(ReplyProblem, match="stopped streaming before the completion ended"):
        read(events(piece("A")))
    with pytest.raises(ReplyProblem, match="before sending any completion"):
        read(events("[DONE]"))


def test_the_reader_stops_at_max_tokens_pieces_and_refuses_text_no_model_writes():
    assert read(events(*[piece("w ") for _ in range(50)]), tokens=3) == ["w "] * 3
    # 3 tokens allow 3 × 32 characters.
    with pytest.raises(ReplyProblem, match="more than 96 characters for at most 3 tokens"):
        read(events(piece("x" * 97)), tokens=3)
    with pytest.raises(ReplyProblem, match="a line longer than 10 bytes"):
        list(lines([b"data: " + b"y" * 20], max_line_bytes=10))
    with pytest.raises(ReplyProblem, match="a line longer than 10 bytes"):
        list(lines([b"y" * 6, b"y" * 6], max_line_bytes=10))  # no newline ever comes


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ("[1, 2]", "an event that is not a JSON object ('[1, 2]')"),
        ("{oops", "an event that is not JSON ('{oops')"),
        ('{"choices": "no"}', "an event without a completion's choices"),
        ('{"choices": [{"text": 5}]}', "an event whose text is not a string"),
        ('{"error": {"message": "out of memory"}}', "failed: out of memory"),
    ],
)
def test_an_event_that_is_not_a_completion_s_is_named(data, problem):
    with pytest.raises(ReplyProblem) as raised:
        read(events(data))
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    ("body", "content_type", "problem"),
    [
        (b"<!doctype html><html>It works</html>", "text/html", "an HTML page"),
        (b"<html><body>hi</body></html>", "application/octet-stream", "an HTML page"),
        (b'{"status": "ok"}', "application/json", """JSON without choices ('{"status": "ok"}')"""),
        (b"", "application/json", "an empty reply"),
        (b"Bad gateway", "text/plain", "text ('Bad gateway')"),
    ],
)
def test_a_reply_that_is_not_a_completion_says_what_it_is(body, content_type, problem):
    with pytest.raises(ReplyProblem) as raised:
        read([body], content_type)
    assert str(raised.value) == f"answered with {problem}, not a completion"


def test_one_json_completion_that_was_not_streamed_is_read_and_its_settings_noted():
    reply = {"choices": [{"text": "Yes."}], "generation_settings": {"min_p": 0.05}}
    report = Report()
    pieces = completion_pieces([json.dumps(reply).encode()], "application/json",
                               Limits.for_tokens(5), report)  # fmt: skip
    assert list(pieces) == ["Yes."] and report.settings == {"min_p": 0.05}


def test_bytes_that_are_not_utf_8_are_named():
    with pytest.raises(ReplyProblem, match="not UTF-8"):
        read([b"data: \xff\xfe\n\n"])
