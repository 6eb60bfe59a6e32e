"""The keystroke record's text operations applied to texts (pure).

An operation changes one text: at ``position`` (an offset in Unicode code points, which is
what a Python ``str`` indexes) it removes ``deleted`` and puts in ``inserted``. Each
``(round, box, slot)`` of a session is one text: a round's ``line`` starts as '' and the
``edit`` box of slot s starts as suggestion s's text when the writer first chooses it that
round (a switch away and back resumes the same draft). The same shape as CoAuthor's text
operations (Lee, Liang & Yang, "CoAuthor", CHI 2022, §3.2: each ``text-insert`` and
``text-delete`` with its position and text), with the deletion's text kept so a record can
be checked, not only replayed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

KINDS = ("text", "view", "page")
BOXES = ("line", "edit")
# What each kind's ``source`` may say (docs/data-dictionary.md, text_operations).
SOURCES = {
    "text": ("typed", "pasted", "dropped", "cut", "undo", "redo", "other"),
    "view": ("visible", "hidden", "focus", "blur"),
    "page": ("hidden", "visible", "offline", "online"),
}

TextKey = tuple[int, str, int | None]


class RecordMismatch(ValueError):
    """The record cannot be applied: an operation removes text that is not where it says.
    The message says which operation and what it found; a broken record is never guessed
    at."""


def apply_operation(text: str, op: Mapping[str, Any]) -> str:
    """``text`` after one text operation; RecordMismatch when ``op``'s ``deleted`` is not
    the text at its ``position`` (or the position lies outside the text)."""
    position, deleted = op["position"], op["deleted"] or ""
    if not 0 <= position <= len(text):
        raise RecordMismatch(
            f"Operation {op.get('seq', '?')} starts at character {position}, outside the "
            f"text, which is {len(text)} characters long."
        )
    found = text[position : position + len(deleted)]
    if found != deleted:
        raise RecordMismatch(
            f"Operation {op.get('seq', '?')} removes {deleted!r} at character {position}, "
            f"but the text there is {found!r}."
        )
    return text[:position] + (op["inserted"] or "") + text[position + len(deleted) :]


def apply_operations(start: str, ops: Iterable[Mapping[str, Any]]) -> str:
    """``start`` after ``ops`` applied in the order given (each a ``text`` operation of the
    same box); RecordMismatch at the first that does not fit."""
    text = start
    for op in ops:
        text = apply_operation(text, op)
    return text


def text_key(op: Mapping[str, Any]) -> TextKey:
    """The text a ``text`` operation changes: ``(round, box, slot)``, slot None for a line."""
    return op["round"], op["box"], op["slot"] if op["box"] == "edit" else None


def reconstruct(
    ops: Iterable[Mapping[str, Any]], suggestions: Mapping[Any, str]
) -> dict[TextKey, str]:
    """Every text of a session as its ``text`` operations leave it: ``(round, box, slot) →
    text``, ops applied in ``seq`` order (other kinds skipped). An edit box starts as its
    suggestion's text: ``suggestions`` maps ``(round, slot)`` to it, or a slot alone for the
    operations of one round. RecordMismatch when an operation does not fit its text, or an
    edit box's suggestion is not given."""
    texts: dict[TextKey, str] = {}
    for op in sorted(ops, key=lambda op: op["seq"]):
        if op["kind"] != "text":
            continue
        key = text_key(op)
        if key not in texts:
            texts[key] = "" if key[1] == "line" else _suggestion(suggestions, key)
        texts[key] = apply_operation(texts[key], op)
    return texts


def _suggestion(suggestions: Mapping[Any, str], key: TextKey) -> str:
    round_number, _, slot = key
    text = suggestions.get((round_number, slot), suggestions.get(slot))
    if text is None:
        raise RecordMismatch(
            f"The record edits suggestion {slot} of round {round_number}, which was not given."
        )
    return text


def operation_between(before: str, after: str) -> tuple[int, str, str]:
    """The one operation that turns ``before`` into ``after``: ``(position, deleted,
    inserted)`` with the longest common prefix and then suffix left alone, offsets in code
    points. What the page's recorder computes (static/js/record.js), so that an input
    method or autocorrect that replaces a word is recorded as what it did."""
    limit = min(len(before), len(after))
    start = 0
    while start < limit and before[start] == after[start]:
        start += 1
    end = 0
    while end < limit - start and before[-1 - end] == after[-1 - end]:
        end += 1
    return start, before[start : len(before) - end], after[start : len(after) - end]
