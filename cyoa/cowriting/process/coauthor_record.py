"""A CoAuthor log's text events as the keystroke record (pure): the inverse of the export's
mapping in :mod:`cyoa.cowriting.process.coauthor`, so that an imported log plays on the
replay page keystroke by keystroke.

Each ``text-insert`` / ``text-delete`` of CoAuthor (Lee, Liang & Yang, CHI 2022) carries a
Quill delta whose offsets count UTF-16 code units; the record's positions count code points,
relative to the box the change falls in. The log's one document is cut into CYOA's boxes as
:func:`~cyoa.cowriting.process.coauthor.read_session` cut it into rounds:

- a round's ``line`` box is the writer's text after the previous round's turn (after the
  system's space, when the log has such spaces, as CYOA's export writes them);
- the ``edit`` box of the chosen slot starts where the system put the suggestion in after a
  ``suggestion-select`` (its blanks around it left outside, as the stored suggestion is
  stripped) and runs to the suggestion's end; a later select in the same round switches
  slot, resuming that slot's draft when it had one;
- in a log without the system's spaces, text the writer adds right after the turn starts the
  next round's line.

``eventTimestamp`` gives ``at_ms``; every user change is ``typed`` and the system's insertion
of a suggestion is not a row (it is the edit box's start text): CoAuthor's logs do not say
whether the writer pasted. A round whose rows do not replay to its stored line and turn gets
none, and the problems name it; so does any event that falls outside the boxes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cyoa.cowriting.flow import normalize_text
from cyoa.cowriting.process.coauthor import API, ImportedSession, code_points, utf16
from cyoa.cowriting.process.operations import RecordMismatch, reconstruct

TEXT_EVENTS = ("text-insert", "text-delete")


@dataclass(frozen=True)
class Change:
    """One change of the document: at code point ``position``, ``deleted`` out, ``inserted``
    in."""

    position: int
    deleted: str
    inserted: str


def delta_changes(doc: str, delta: Any) -> list[Change]:
    """A Quill delta on ``doc`` as changes applied one after another (an insertion next to a
    deletion at the same place is one change, a replacement); offsets turned from UTF-16
    units into code points."""
    if not isinstance(delta, Mapping) or not isinstance(delta.get("ops"), list):
        return []
    changes: list[Change] = []
    at = 0
    for op in delta["ops"]:
        if "retain" in op:
            at = code_points(doc, utf16(doc[:at]) + int(op["retain"]))
            continue
        if "insert" in op and isinstance(op["insert"], str):
            change = Change(at, "", op["insert"])
        elif "delete" in op:
            end = code_points(doc, utf16(doc[:at]) + int(op["delete"]))
            change = Change(at, doc[at:end], "")
        else:
            continue
        last = changes[-1] if changes else None
        if (
            last
            and last.position + len(last.inserted) == at
            and not (last.deleted and change.deleted)
        ):
            # an insertion then a deletion right after it (or the reverse): one replacement
            changes[-1] = Change(
                last.position, last.deleted + change.deleted, last.inserted + change.inserted
            )
        else:
            changes.append(change)
        doc = doc[:at] + change.inserted + doc[at + len(change.deleted) :]
        at += len(change.inserted)
    return changes


@dataclass
class _Box:
    round_index: int
    box: str
    slot: int | None
    start: int
    text: str
    open_end: bool = True  # text added at its end belongs to it


@dataclass
class LogRecord:
    """What a log's text events give: the record rows (the stored format, without
    ``session_id`` and ``received_at``) and the problems, each a sentence naming the
    event or round that could not be carried."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _picked(offered: Sequence[Mapping[str, Any]], index: int) -> str:
    found = next((s for s in offered if s.get("index") == index), None)
    if found is None and 0 <= index < len(offered):
        found = offered[index]
    return str((found or {}).get("original") or (found or {}).get("trimmed") or "").strip()


class _Reader:
    def __init__(self, session: ImportedSession, separated: bool) -> None:
        self.session = session
        self.separated = separated
        self.round_of_select = {}
        previous = 0
        for index, r in enumerate(session.rounds):
            for k in range(previous + 1, r.select + 1):
                self.round_of_select[k] = index
            previous = r.select
        self.box: _Box | None = _Box(0, "line", None, len(session.prompt), "")
        self.drafts: dict[tuple[int, int], str] = {}
        self.rows: list[dict[str, Any]] = []
        self.problems: list[str] = []
        self.at_ms = 0
        self.untimed = 0
        self.outside: list[int] = []  # events that change text outside every box
        self.past_end = False  # after the last round's turn: text the import leaves out

    def row(self, change: Change, box: _Box) -> None:
        self.rows.append(
            {
                "seq": len(self.rows) + 1,
                "round": box.round_index + 1,
                "at_ms": self.at_ms,
                "kind": "text",
                "box": box.box,
                "slot": box.slot,
                "position": change.position - box.start,
                "deleted": change.deleted,
                "inserted": change.inserted,
                "source": "typed",
            }
        )

    def elsewhere(self, number: int, change: Change) -> None:
        """A change outside the current box: named, and the box moved with the text before
        it (a typo fixed in an earlier turn shifts where the writer is writing now)."""
        self.outside.append(number)
        box = self.box
        if box and change.position + len(change.deleted) <= box.start:
            box.start += len(change.inserted) - len(change.deleted)

    def user(self, number: int, change: Change) -> None:
        box = self.box
        end = box.start + len(box.text) if box else 0
        if box and box.box == "edit" and not box.open_end and change.position == end:
            if box.round_index + 1 >= len(self.session.rounds):
                self.box, self.past_end = None, True  # text after the last turn: left out
                return
            if change.deleted:
                box = None
            else:
                box = self.box = _Box(box.round_index + 1, "line", None, end, "")
                end = box.start
        closed = box is not None and not box.open_end and change.position == end
        inside = (
            box is not None
            and box.start <= change.position
            and change.position + len(change.deleted) <= end
            and not (closed and change.inserted)
        )
        if not inside:
            if not self.past_end:
                self.elsewhere(number, change)
            return
        offset = change.position - box.start
        box.text = box.text[:offset] + change.inserted + box.text[offset + len(change.deleted) :]
        if box.box == "edit":
            self.drafts[(box.round_index, box.slot)] = box.text
        self.row(change, box)

    def system(self, number: int, change: Change, select: int | None, offered, picked) -> None:
        if select is None:
            box = self.box
            if box and change.position < box.start + len(box.text):
                self.elsewhere(number, change)  # the system changed the writer's text
            elif box and not change.deleted:
                if box.box == "line":
                    box.open_end = False  # the system's space after the line closes it
                elif change.inserted.isspace() and box.round_index + 1 < len(self.session.rounds):
                    after = change.position + len(change.inserted)
                    self.box = _Box(box.round_index + 1, "line", None, after, "")
                else:
                    self.box, self.past_end = None, True
            return
        index = self.round_of_select.get(select)
        if index is None:
            self.box = None  # a suggestion of which nothing is left in the story
            return
        r = self.session.rounds[index]
        text = _picked(offered, picked) if select != r.select else r.suggestions[r.chosen_slot - 1]
        if text not in r.suggestions:
            self.problems.append(
                f"Event {number} puts in a suggestion that round {index + 1} did not offer; "
                "the round's later edits are not in the record."
            )
            self.box = None
            return
        slot = r.suggestions.index(text) + 1
        expected = self.drafts.get((index, slot), text)
        lead = len(change.inserted) - len(change.inserted.lstrip())
        if change.inserted == expected:
            start = change.position
        elif change.inserted.strip() == expected:
            start = change.position + lead
        else:
            self.problems.append(
                f"Event {number} puts in {change.inserted!r} for suggestion {slot} of round "
                f"{index + 1}, which is neither it nor the writer's draft of it; the round's "
                "later edits are not in the record."
            )
            self.box = None
            return
        self.box = _Box(index, "edit", slot, start, expected, open_end=self.separated)


def log_record(events: Iterable[Mapping[str, Any]], session: ImportedSession) -> LogRecord:
    """The keystroke record of one CoAuthor log (``events`` in order) read as ``session`` by
    :func:`~cyoa.cowriting.process.coauthor.read_session`: see the module for the mapping.
    Rounds whose rows do not replay exactly to their stored line and turn keep none."""
    events = list(events)
    separated = _separated(events)
    reader = _Reader(session, separated)
    doc = session.prompt
    start = next((e for e in events if e["eventName"] == "system-initialize"), None)
    if start is not None:
        doc = (start.get("currentDoc") or "").rstrip("\n")
    offered: list[Mapping[str, Any]] = []
    selects, pending = 0, None
    for number, event in enumerate(events):
        name = event["eventName"]
        if isinstance(event.get("eventTimestamp"), int):
            reader.at_ms = event["eventTimestamp"]
        elif name in TEXT_EVENTS:
            reader.untimed += 1
        if name == "suggestion-open" and event.get("currentSuggestions"):
            offered = list(event["currentSuggestions"])
        elif name == "suggestion-select":
            selects += 1
            pending = (selects, offered, int(event.get("currentSuggestionIndex") or 0))
        if name not in TEXT_EVENTS:
            continue
        for change in delta_changes(doc, event.get("textDelta")):
            if event.get("eventSource") == API:
                select = pending if pending and change.inserted else None
                reader.system(number, change, *(select or (None, None, None)))
                pending = None if select else pending
            else:
                pending = None
                reader.user(number, change)
            doc = (
                doc[: change.position]
                + change.inserted
                + doc[change.position + len(change.deleted) :]
            )
    return _checked(reader, session)


def _separated(events: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the system puts text in other than suggestions (CYOA's spaces between turns),
    as :func:`~cyoa.cowriting.process.coauthor.read_session` judges where a turn ends."""
    after_select = False
    for event in events:
        name = event["eventName"]
        if name == "suggestion-select":
            after_select = True
        elif name in TEXT_EVENTS:
            if event.get("eventSource") == API and not after_select:
                return True
            after_select = after_select and event.get("eventSource") == API
            after_select = after_select and name != "text-insert"
    return False


def _checked(reader: _Reader, session: ImportedSession) -> LogRecord:
    record = LogRecord(problems=list(reader.problems))
    if reader.outside:
        numbers = ", ".join(str(n) for n in reader.outside)
        many = len(reader.outside) > 1
        record.problems.append(
            f"{'Events' if many else 'Event'} {numbers} (counted from 0) "
            f"{'change' if many else 'changes'} the document outside the writer's line and the "
            "chosen suggestion of the round; not in the record, so a round whose text it "
            "changed is left out of the record too."
        )
    if reader.untimed:
        record.problems.append(
            f"{reader.untimed} text events have no eventTimestamp; each is given the time of "
            "the event before it."
        )
    by_round: dict[int, list[dict[str, Any]]] = {}
    for row in reader.rows:
        by_round.setdefault(row["round"], []).append(row)
    for number, r in enumerate(session.rounds, start=1):
        rows = by_round.get(number, [])
        suggestions = dict(enumerate(r.suggestions, start=1))
        try:
            texts = reconstruct(rows, suggestions)
        except RecordMismatch as broken:
            record.problems.append(f"Round {number} is left out of the record: {broken}")
            continue
        line = normalize_text(texts.get((number, "line", None), ""))
        turn = texts.get((number, "edit", r.chosen_slot), suggestions[r.chosen_slot])
        if line != normalize_text(r.writer_line) or normalize_text(turn) != normalize_text(
            r.final_text
        ):
            record.problems.append(
                f"Round {number} is left out of the record: its text events give the line "
                f"{line!r} and the turn {normalize_text(turn)!r}, not what the log's document "
                "keeps of it."
            )
            continue
        record.rows += rows
    return record
