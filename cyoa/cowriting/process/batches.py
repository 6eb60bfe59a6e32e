"""A batch of the keystroke record as the page sends it, read at the edge (pure).

The page sends ``record`` with one argument, ``{"operations": [row, …], "action_id": id}``,
each row a list in the order of :data:`WIRE` (the column names of ``text_operations``, with
``None`` where a kind has no value), which keeps a round's record small on the wire
(bench/results/keystrokes.md). A batch that is not of this shape, or names a round the
story has not reached, is refused whole with a sentence; nothing of it is stored.
"""

from __future__ import annotations

import re
from typing import Any

from cyoa.cowriting.flow import DRAFT_MAX_CHARS, RuleError
from cyoa.cowriting.process.operations import BOXES, SOURCES
from cyoa.cowriting.process.store import COLUMNS
from cyoa.web.language import sentence

WIRE = COLUMNS
# A batch holds what the page recorded in about ten seconds (or 100 rows); a page that has
# been offline sends one batch per ten seconds it was away, so no batch need be larger.
MAX_ROWS = 200
# The largest text one operation can carry: a box's whole text (a paste into a full box).
MAX_TEXT = DRAFT_MAX_CHARS
# The page sends a batch in one action of at most 64 KiB of JSON (MAX_ACTION_BYTES in
# static/js/write.js), so its texts hold at most that many characters (a character is at
# least a byte); a larger batch comes from no page of ours.
MAX_BATCH_CHARS = 64 * 1024
MAX_SEQ = 2**31
# Milliseconds since the epoch: any date before the year 10,000.
MAX_AT_MS = 253_402_300_800_000
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MALFORMED = sentence(
    "The keystroke record was malformed; the page will go on without this part of it."
)
AHEAD = sentence(
    "The keystroke record names a round the story has not reached. Please reload the page."
)
TOO_LARGE = sentence(
    "This part of the keystroke record is too large to store; the page will go on without it."
)
OFF = sentence("This study does not record keystrokes; the page sends none.")


def read_batch(args: tuple[Any, ...], current_round: int) -> list[dict[str, Any]]:
    """The rows of a ``record`` message, each a dict by column; RuleError (a sentence) when
    the message is not one, a row is not of its kind's shape, holds a character no database
    stores (NUL, half a character), or belongs to a round after ``current_round``, or when
    its texts together pass :data:`MAX_BATCH_CHARS`."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise RuleError(MALFORMED)
    rows = args[0].get("operations")
    if not isinstance(rows, list) or not 1 <= len(rows) <= MAX_ROWS:
        raise RuleError(MALFORMED)
    read = [_row(row) for row in rows]
    if (
        sum(len(row["deleted"] or "") + len(row["inserted"] or "") for row in read)
        > MAX_BATCH_CHARS
    ):
        raise RuleError(TOO_LARGE)
    if any(row["round"] > current_round for row in read):
        raise RuleError(AHEAD)
    return read


def _row(values: Any) -> dict[str, Any]:
    if not isinstance(values, list) or len(values) != len(WIRE):
        raise RuleError(MALFORMED)
    row = dict(zip(WIRE, values, strict=True))
    whole = (("seq", 1, MAX_SEQ), ("round", 1, MAX_SEQ), ("at_ms", 0, MAX_AT_MS))
    if not all(_int(row[name], low, high) for name, low, high in whole):
        raise RuleError(MALFORMED)
    kind = row["kind"]
    if kind not in SOURCES or row["source"] not in SOURCES[kind]:
        raise RuleError(MALFORMED)
    text = (row["position"], row["deleted"], row["inserted"])
    if kind == "text":
        shaped = (
            row["box"] in BOXES
            and (row["slot"] is None if row["box"] == "line" else row["slot"] in (1, 2))
            and _int(row["position"], 0, MAX_TEXT)
            and all(_text(t) for t in text[1:])
        )
    else:
        slot_ok = row["slot"] in (1, 2) if kind == "view" else row["slot"] is None
        shaped = row["box"] is None and slot_ok and text == (None, None, None)
    if not shaped or type(row["slot"]) not in (int, type(None)):
        raise RuleError(MALFORMED)
    return row


def _int(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _text(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= MAX_TEXT and not _UNSTORABLE.search(value)
