"""CoAuthor's session logs, out and in (pure): a CYOA writing session as CoAuthor-style events,
and a CoAuthor log read back as rounds.

CoAuthor (Lee, Liang & Yang, CHI 2022; github.com/minalee-research/coauthor-interface,
``frontend/js/logging.js`` and ``config.js``) logs one JSON object per event, one file per
session (``<session_id>.jsonl``), each with ``eventName``, ``eventSource`` (``user`` or
``api``), ``eventTimestamp`` (ms since the epoch), ``textDelta`` (a Quill delta, ``{"ops":
[{"retain": n}, {"insert": text}, {"delete": n}]}``, offsets in UTF-16 code units, or ``''``),
``cursorRange``, ``currentDoc`` (only on ``system-initialize``), ``currentCursor``,
``currentSuggestions`` and ``originalSuggestions`` (only on ``suggestion-open``: ``index``,
``original``, ``trimmed``, ``probability``, ``source``), ``currentSuggestionIndex``,
``currentHoverIndex``, and the sampling controls ``currentN``, ``currentMaxToken``,
``currentTemperature``, ``currentTopP``, ``currentPresencePenalty``,
``currentFrequencyPenalty``. ``eventNum`` (the event's running number from 0) is added, as in
the released CoAuthor dataset; the interface's own ``logEvent`` does not write it.

CoAuthor's document is one text; CYOA's story is its turns joined by one space, so the export
writes the story as that document: each round's line typed at its end (one space before it
from the system), the suggestions opened, the choice, the chosen suggestion inserted by the
system, the writer's edits of it. The mapping is in docs/data-dictionary.md, "CoAuthor logs".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cyoa.cowriting.process.operations import apply_operation

USER, API = "user", "api"


def utf16(text: str) -> int:
    """The length of ``text`` in UTF-16 code units, which Quill's offsets count."""
    return len(text.encode("utf-16-le")) // 2


def code_points(text: str, units: int) -> int:
    """The code-point offset in ``text`` of the UTF-16 offset ``units``."""
    count = 0
    for index, char in enumerate(text):
        if count >= units:
            return index
        count += 2 if ord(char) > 0xFFFF else 1
    return len(text)


@dataclass(frozen=True)
class RoundLog:
    """What the export needs of one submitted round: the writer's line and turn as stored,
    the suggestions by slot with their systems, the slot the writer added, the server's
    times in ms (for a round without a record) and the round's record rows (``seq`` order)."""

    number: int
    writer_line: str
    final_text: str
    suggestions: Mapping[int, str]
    systems: Mapping[int, str]
    chosen_slot: int
    line_ms: int
    ready_ms: int
    choice_ms: int
    turn_ms: int
    ops: Sequence[Mapping[str, Any]] = ()


class _Log:
    """The document and the events written so far."""

    def __init__(self) -> None:
        self.doc = ""
        self.events: list[dict[str, Any]] = []

    def event(self, name: str, source: str, at_ms: int, **fields: Any) -> None:
        base = {
            "eventName": name,
            "eventSource": source,
            "eventTimestamp": int(at_ms),
            "textDelta": "",
            "cursorRange": "",
            "currentDoc": "",
            "currentCursor": utf16(self.doc),
            "currentSuggestions": [],
            "currentSuggestionIndex": 0,
            "currentHoverIndex": "",
            "currentN": "",
            "currentMaxToken": "",
            "currentTemperature": "",
            "currentTopP": "",
            "currentPresencePenalty": "",
            "currentFrequencyPenalty": "",
            "originalSuggestions": [],
            "eventNum": len(self.events),
        }
        self.events.append(base | fields)

    def change(self, at: int, deleted: str, inserted: str, source: str, at_ms: int) -> None:
        """Replace ``deleted`` at code point ``at`` of the document by ``inserted``."""
        if not deleted and not inserted:
            return
        op = {"position": at, "deleted": deleted, "inserted": inserted}
        self.doc = apply_operation(self.doc, op)
        ops: list[dict[str, Any]] = [{"retain": utf16(self.doc[:at])}] if at else []
        ops += [{"insert": inserted}] if inserted else []
        ops += [{"delete": utf16(deleted)}] if deleted else []
        name = "text-insert" if inserted else "text-delete"
        cursor = utf16(self.doc[: at + len(inserted)])
        self.event(name, source, at_ms, textDelta={"ops": ops}, currentCursor=cursor)

    def replace_tail(self, start: int, text: str, source: str, at_ms: int) -> None:
        """Make the document from ``start`` on read ``text``, changing only the part between
        what the two have in common at either end (so what stays keeps who wrote it)."""
        old = self.doc[start:]
        head = 0
        while head < min(len(old), len(text)) and old[head] == text[head]:
            head += 1
        tail = 0
        while tail < min(len(old), len(text)) - head and old[-1 - tail] == text[-1 - tail]:
            tail += 1
        self.change(
            start + head, old[head : len(old) - tail], text[head : len(text) - tail], source, at_ms
        )


def _open_suggestions(log: _Log, r: RoundLog, at_ms: int) -> None:
    shown = [
        {
            "index": slot - 1,
            "original": r.suggestions[slot],
            "trimmed": r.suggestions[slot],
            "probability": None,
            "source": r.systems.get(slot, ""),
        }
        for slot in sorted(r.suggestions)
    ]
    log.event("suggestion-get", USER, r.line_ms)
    log.event("suggestion-open", API, at_ms, currentSuggestions=shown, originalSuggestions=shown)


def _choose(log: _Log, r: RoundLog, slot: int, start: int, draft: str, at_ms: int) -> None:
    log.event("suggestion-select", USER, at_ms, currentSuggestionIndex=slot - 1)
    log.event("suggestion-close", API, at_ms, currentSuggestionIndex=slot - 1)
    # The whole draft in place of the other one: no character of it is the other's.
    log.change(start, log.doc[start:], draft, API, at_ms)


def _round(log: _Log, r: RoundLog) -> None:
    if log.doc:
        log.change(len(log.doc), "", " ", API, r.ops[0]["at_ms"] if r.ops else r.line_ms)
    line_start = len(log.doc)
    for op in (o for o in r.ops if o["kind"] == "text" and o["box"] == "line"):
        log.change(line_start + op["position"], op["deleted"], op["inserted"], USER, op["at_ms"])
    # The stored line (blanks around it stripped), as the writer's; without a record, the
    # whole line typed at once.
    log.replace_tail(line_start, r.writer_line, USER, r.line_ms)
    views = [o for o in r.ops if o["kind"] == "view"]
    _open_suggestions(log, r, views[0]["at_ms"] if views else r.ready_ms)
    log.change(len(log.doc), "", " ", API, r.ready_ms)
    start = len(log.doc)
    drafts = dict(r.suggestions)
    current = None
    for op in r.ops:
        if op["kind"] == "view" and op["source"] == "focus":
            log.event("suggestion-hover", USER, op["at_ms"], currentHoverIndex=op["slot"] - 1)
        if op["kind"] != "text" or op["box"] != "edit":
            continue
        if op["slot"] != current:
            current = op["slot"]
            _choose(log, r, current, start, drafts[current], op["at_ms"])
        drafts[current] = apply_operation(drafts[current], op)
        log.change(start + op["position"], op["deleted"], op["inserted"], USER, op["at_ms"])
    end_ms = r.ops[-1]["at_ms"] if r.ops else r.choice_ms
    if current != r.chosen_slot:
        _choose(log, r, r.chosen_slot, start, drafts[r.chosen_slot], end_ms)
    log.replace_tail(start, r.final_text, USER, r.turn_ms)


def session_events(rounds: Sequence[RoundLog], started_ms: int, prompt: str = "") -> list[dict]:
    """A CYOA session's submitted ``rounds`` as CoAuthor events: ``system-initialize`` with
    ``prompt`` as the document's start (the study's writing prompt is not part of the
    story, so it is given in ``currentDoc`` only when asked for), then each round. Rounds
    with a keystroke record are written at its grain (times from the writer's clock; the
    choice at the first edit of the chosen suggestion, since the record has no time of its
    own for it, else at the round's last row); rounds without one at turn grain (the line
    typed at once, times from the server's events). What CoAuthor has no event for (the
    page hidden or offline, a suggestion scrolled into view) is not carried."""
    log = _Log()
    log.event("system-initialize", API, started_ms, currentDoc=prompt)
    log.doc = prompt
    for r in rounds:
        _round(log, r)
    return log.events


@dataclass
class ImportedRound:
    """A round read from a CoAuthor log: the writer's text before the chosen suggestion,
    the suggestions offered (slot order), their sources, the slot chosen, the final text of
    the chosen suggestion after the writer's edits, and which ``suggestion-select`` of the
    log (counted from 1) put in the chosen text."""

    writer_line: str
    suggestions: list[str]
    sources: list[str]
    chosen_slot: int
    final_text: str
    select: int = 0


@dataclass
class ImportedSession:
    """A CoAuthor log read as CYOA rounds: its prompt (the document it started with), the
    rounds, and how many stretches of text after the last round were left out (0 or 1)."""

    prompt: str
    rounds: list[ImportedRound] = field(default_factory=list)
    left_out: int = 0


class CoAuthorError(ValueError):
    """A log that is not CoAuthor's; the message says what is wrong."""


def _apply_delta(doc: list[tuple[str, Any]], delta: Any, tag: Any) -> list[tuple[str, Any]]:
    """``doc`` (characters with their tags) after a Quill delta; inserted text takes ``tag``."""
    if not isinstance(delta, Mapping) or not isinstance(delta.get("ops"), list):
        return doc
    text = "".join(c for c, _ in doc)
    out: list[tuple[str, Any]] = []
    at = 0
    for op in delta["ops"]:
        if not isinstance(op, Mapping):
            raise CoAuthorError(f"A textDelta operation is not an object: {op!r}.")
        if "retain" in op:
            end = code_points(text, utf16(text[:at]) + int(op["retain"]))
            out += doc[at:end]
            at = end
        elif "insert" in op and isinstance(op["insert"], str):
            out += [(c, tag) for c in op["insert"]]
        elif "delete" in op:
            at = code_points(text, utf16(text[:at]) + int(op["delete"]))
    return out + doc[at:]


def read_session(events: Iterable[Mapping[str, Any]]) -> ImportedSession:
    """The rounds of a CoAuthor session log: the document replayed, each character tagged
    with who put it there (the prompt, the writer, the system, or the suggestion chosen at
    the k-th ``suggestion-select``); a round is a chosen suggestion of which something
    survives: its text from its first to its last surviving character (the writer's edits
    inside included), its writer's line what stands between it and the previous round. What
    follows the last round (text without a suggestion) is left out and counted."""
    events = list(events)
    if not events or any("eventName" not in e for e in events):
        raise CoAuthorError(
            "This is not a CoAuthor session log: each line must be an event with an eventName."
        )
    start = next((e for e in events if e["eventName"] == "system-initialize"), events[0])
    prompt = (start.get("currentDoc") or "").rstrip("\n")
    doc: list[tuple[str, Any]] = [(c, "prompt") for c in prompt]
    offered: list[dict[str, Any]] = []
    chosen: dict[int, tuple[list[dict[str, Any]], int]] = {}
    inserted: dict[int, str] = {}
    selects, after_select = 0, False
    for event in events:
        name = event["eventName"]
        if name == "suggestion-open" and event.get("currentSuggestions"):
            offered = list(event["currentSuggestions"])
        elif name == "suggestion-select":
            selects += 1
            chosen[selects] = (offered, int(event.get("currentSuggestionIndex") or 0))
            after_select = True
        elif name in ("text-insert", "text-delete"):
            api = event.get("eventSource") == API
            tag = ("chosen", selects) if api and after_select else (API if api else USER)
            doc = _apply_delta(doc, event.get("textDelta"), tag)
            if isinstance(tag, tuple):
                inserted.setdefault(selects, _inserted_text(event.get("textDelta")))
            after_select = after_select and api and name != "text-insert"
    return _rounds(prompt, doc, chosen, inserted)


def _inserted_text(delta: Any) -> str:
    ops = delta.get("ops", []) if isinstance(delta, Mapping) else []
    return "".join(op["insert"] for op in ops if isinstance(op.get("insert"), str))


def _rounds(
    prompt: str,
    doc: list[tuple[str, Any]],
    chosen: Mapping[int, tuple[list[dict[str, Any]], int]],
    inserted: Mapping[int, str],
) -> ImportedSession:
    session = ImportedSession(prompt)
    spans: dict[int, tuple[int, int]] = {}
    for index, (_, tag) in enumerate(doc):
        if isinstance(tag, tuple):
            first, _ = spans.get(tag[1], (index, index))
            spans[tag[1]] = (first, index)
    previous_end = len(prompt)
    for k, (first, last) in sorted(spans.items(), key=lambda item: item[1]):
        if first < previous_end:
            continue  # a suggestion put inside another round's text: part of that round
        offered, picked = chosen[k]
        texts = [str(s.get("original") or s.get("trimmed") or "") for s in offered]
        sources = [str(s.get("source") or "") for s in offered]
        # CoAuthor's index is the suggestion's own (its order before sorting by probability).
        index = next((i for i, s in enumerate(offered) if s.get("index") == picked), picked)
        if not 0 <= index < len(texts):
            texts, sources, index = [inserted.get(k, "")], [""], 0
        slots = [index] + [i for i in range(len(texts)) if i != index][:1]
        slots.sort()
        # The turn runs to the next character the system put in (CYOA's space between turns;
        # the last turn, to the end), else to the suggestion's last character (a log whose
        # system puts in nothing else cannot say where the writer's edit of it ends).
        end = next(
            (
                i
                for i in range(last + 1, len(doc))
                if doc[i][1] == API or isinstance(doc[i][1], tuple)
            ),
            None,
        )
        if end is None:
            separated = any(tag == API for _, tag in doc)
            end = len(doc) if separated else last + 1
        elif isinstance(doc[end][1], tuple):
            end = last + 1
        session.rounds.append(
            ImportedRound(
                writer_line="".join(c for c, _ in doc[previous_end:first]).strip(),
                suggestions=[texts[i].strip() for i in slots],
                sources=[sources[i] for i in slots],
                chosen_slot=slots.index(index) + 1,
                final_text="".join(c for c, _ in doc[first:end]).strip(),
                select=k,
            )
        )
        previous_end = end
    session.left_out = int(bool("".join(c for c, _ in doc[previous_end:]).strip()))
    return session


def ms(stamp: str | None, default: int = 0) -> int:
    """An ISO 8601 server time as milliseconds since the epoch (``default`` for none)."""
    if not stamp:
        return default
    return math.floor(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
