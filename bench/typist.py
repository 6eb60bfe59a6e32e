"""A writer's keystrokes as the page records them (static/js/record.js), for benchmarks.

A :class:`Typist` numbers its rows from 1 within the session, as the page does, and types a
text key by key at a human pace: about 200 ms a key (a log-normal spread around it, as
keystroke logs of fluent typists show: Dhakal et al., "Observations on typing from 136
million keystrokes", CHI 2018, report 52 words a minute on average, about 230 ms a key), a
typo now and then taken back with Backspace, and a pause before each text. Its rows are the
page's wire rows (cyoa/cowriting/process/batches.py's WIRE), batched as the page batches them:
a batch every ten seconds of the writer's clock or every 100 rows.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from cyoa.cowriting.process.operations import operation_between

KEY_MS = 200
TYPO_RATE = 0.03
BATCH_MS = 10000
BATCH_ROWS = 100


@dataclass
class Typist:
    """One writer's page: its running row number and clock (ms since the epoch)."""

    rng: random.Random
    clock_ms: int
    seq: int = 0
    rows: list[list[Any]] = field(default_factory=list)

    def _row(self, round_number, kind, box, slot, position, deleted, inserted, source) -> None:
        self.seq += 1
        at = self.clock_ms
        self.rows.append(
            [self.seq, round_number, at, kind, box, slot, position, deleted, inserted, source]
        )

    def _key(self) -> None:
        self.clock_ms += int(self.rng.lognormvariate(0, 0.4) * KEY_MS)

    def change(
        self,
        round_number: int,
        box: str,
        slot: int | None,
        before: str,
        after: str,
        source: str = "typed",
    ) -> None:
        """One change of a box, as one row."""
        position, deleted, inserted = operation_between(before, after)
        self._row(round_number, "text", box, slot, position, deleted, inserted, source)

    def type_text(
        self,
        round_number: int,
        box: str,
        slot: int | None,
        before: str,
        text: str,
        pause_ms: int = 1500,
    ) -> str:
        """Type ``text`` at the end of ``before`` key by key (now and then a wrong key and
        Backspace); returns the box's text."""
        self.clock_ms += pause_ms
        current = before
        for char in text:
            if char.isalpha() and self.rng.random() < TYPO_RATE:
                self._key()
                self.change(round_number, box, slot, current, current + "x")
                self._key()
                self.change(round_number, box, slot, current + "x", current)
            self._key()
            self.change(round_number, box, slot, current, current + char)
            current += char
        return current

    def view(self, round_number: int, slot: int, source: str) -> None:
        """A suggestion seen, hidden, focused or left."""
        self.clock_ms += int(self.rng.uniform(200, 1500))
        self._row(round_number, "view", None, slot, None, None, None, source)

    def batches(self) -> list[list[list[Any]]]:
        """The rows made since the last call, in the page's batches."""
        out: list[list[list[Any]]] = []
        for row in self.rows:
            if not out or len(out[-1]) >= BATCH_ROWS or row[2] - out[-1][0][2] >= BATCH_MS:
                out.append([])
            out[-1].append(row)
        self.rows = []
        return out
