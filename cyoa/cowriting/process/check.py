"""The record check: does the keystroke record give what the writer submitted? (pure)

When a line, a draft or a turn arrives, the server replays the record of that box up to the
row the page had numbered when it sent it (``record_seq``) and compares the result with the
submitted text, as it is stored: a line or a turn normalised like every stored turn
(:func:`cyoa.cowriting.flow.normalize_text`: NFC, blanks around it stripped), a draft with
half-characters left out (:func:`cyoa.cowriting.flow.without_unpaired_surrogates`). The
outcome goes into the event's payload as ``record`` (docs/data-dictionary.md, events) and
onto the replay page; a mismatch never refuses or changes the writer's action: the record
is evidence about the record, not about the writer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cyoa.cowriting.flow import normalize_text, without_unpaired_surrogates
from cyoa.cowriting.process.operations import RecordMismatch, apply_operations

# The events whose text is checked, and how their text is stored.
CHECKED = {
    "line_submitted": normalize_text,
    "turn_submitted": normalize_text,
    "draft_saved": without_unpaired_surrogates,
}
PREVIEW_CHARS = 60


def record_outcome(
    event_type: str,
    ops: Sequence[Mapping[str, Any]],
    *,
    through: int,
    stored: int,
    slot: int | None,
    start: str,
    submitted: str,
) -> dict[str, Any]:
    """The check of one submitted text against the record: ``{"through", "box", "slot",
    "matches"}``, and when it does not match, ``"problem"``, a sentence saying what differs.

    ``ops``: the round's record up to row ``through`` (the page's count when it sent the
    text), of which ``stored`` rows of the session's 1 … ``through`` have arrived; ``slot``
    None for the writer's line, else the edit box's slot, whose text starts as ``start``
    (its suggestion); ``submitted``: the text as the event stores it."""
    box = "line" if event_type == "line_submitted" else "edit"
    outcome: dict[str, Any] = {"through": through, "box": box, "slot": slot}
    mine = [
        op
        for op in ops
        if op["kind"] == "text" and op["box"] == box and (box == "line" or op["slot"] == slot)
    ]
    if stored < through:
        missing = through - stored
        return {
            **outcome,
            "matches": False,
            "problem": f"{missing} of the record's first {through} rows had not arrived.",
        }
    try:
        replayed = CHECKED[event_type](apply_operations(start, mine))
    except RecordMismatch as broken:
        return {**outcome, "matches": False, "problem": str(broken)}
    if replayed != submitted:
        where = "the writer's line" if box == "line" else f"the edit box of suggestion {slot}"
        return {
            **outcome,
            "matches": False,
            "problem": (
                f"The record of {where} gives {_preview(replayed)} but "
                f"{_preview(submitted)} was submitted."
            ),
        }
    return {**outcome, "matches": True}


def _preview(text: str) -> str:
    short = text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
    return f"“{short}”"
