"""The per-model scheduler: one thread owns a loaded model and decodes every request for it in
one dynamic batch, so that many writers (and both systems of a same-model pair) share each
forward pass.

:meth:`BatchScheduler.stream` has the :class:`~cyoa.generation.types.Backend` shape: it
queues a request and yields its pieces as the scheduler thread produces them. The thread
loops: every row in the batch feeds its last token through the model and requests that
arrived join the batch (their prompts' tokens packed into the same forward pass), and then
all rows, old and new, sample their next token in one pass over the vocabulary. A row leaves
as soon as it ends (an end-of-text token or its ``max_new_tokens``) or its reader stops
reading (a sentence is complete, a timeout, a cancellation), so the batch is only ever as
wide as the work in progress. Each row samples with its own settings and its own seeded
:class:`torch.Generator`, so its text does not depend on which other rows share the batch
(up to floating-point rounding of the batched products; see :mod:`cyoa.generation.engine.batching`).
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from cyoa.generation.engine.batching import Batch
from cyoa.generation.engine.cores import CoreShare
from cyoa.generation.engine.prefixes import PrefixStore
from cyoa.generation.engine.rows import (
    MAX_ROWS,
    SHUTDOWN,
    WINDOW_SECONDS,
    Row,
    RowServer,
)
from cyoa.generation.engine.sampling import sample_rows_from_hidden
from cyoa.generation.engine.vocabulary import Vocabulary

log = logging.getLogger(__name__)


class BatchScheduler(RowServer):
    """Dynamic batching for one loaded model (``model``, ``tokenizer``); ``stop_ids`` end a
    row; ``vocabulary`` scores the next token (and never a banned one). With ``cores``, the
    thread uses its share of the cores for each step (:mod:`cyoa.generation.engine.cores`);
    without, the process's torch thread setting. With ``prefixes``, a prompt that begins
    with one read before reads only the rest (:mod:`cyoa.generation.engine.prefixes`). Call
    :meth:`start` once before streaming."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        stop_ids: frozenset[int],
        vocabulary: Vocabulary,
        name: str,
        max_rows: int = MAX_ROWS,
        window_seconds: float = WINDOW_SECONDS,
        cores: CoreShare | None = None,
        prefixes: PrefixStore | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.stop_ids = stop_ids
        self.vocabulary = vocabulary
        self.name = name
        self.max_rows = max_rows
        self.window_seconds = window_seconds
        self.cores = cores
        self.prefixes = prefixes
        self._threads = 0
        pad = tokenizer.pad_token_id
        self.pad_id = pad if pad is not None else min(stop_ids, default=0)
        # Rows decoding now (written by the scheduler thread only).
        self.rows = 0
        super().__init__(f"cyoa-batch-{name}")

    def _generator(self, seed: int) -> torch.Generator:
        return torch.Generator().manual_seed(seed)

    def _run(self) -> None:
        # torch sets a thread's own thread count from the process-wide one on its first
        # parallel operation; done now, so that a later share is not overwritten by it.
        self._threads = torch.get_num_threads()
        batch = Batch(self.model, self.pad_id)
        rows: list[Row] = []
        waiting: list[Row] = []
        while True:
            idle = not rows and not waiting
            if idle and self.cores is not None:
                self.cores.idle(self)
            waiting = self._collect(waiting, idle, self.window_seconds)
            if SHUTDOWN in waiting:
                for row in rows + [r for r in waiting if r is not SHUTDOWN]:
                    row.finish(RuntimeError(f"The {self.name} scheduler shut down."))
                if self.cores is not None:
                    self.cores.idle(self)
                return
            waiting = [row for row in waiting if not row.stopped.is_set()]
            joining = waiting[: max(0, self.max_rows - len(rows))]
            waiting = waiting[len(joining) :]
            try:
                self._take_share()
                rows = self._drop_finished(batch, rows)
                # The rows in the batch advance by one token and the joining rows read their
                # prompts (appended at the end of the batch), in one pass through the layers;
                # then all of them sample their next token together: one pass over the
                # vocabulary per iteration.
                for row in joining:
                    row.ids = self.tokenizer(row.prompt).input_ids
                if rows or joining:
                    hidden = batch.advance(
                        [row.generated[-1] for row in rows],
                        [row.ids for row in joining],
                        self.prefixes,
                    )
                    rows += joining
                    joining = []
                    self.rows = len(rows)
                    self._advance(rows, hidden)
                    rows = self._drop_finished(batch, rows)
                self.rows = len(rows)
            except Exception as exc:  # noqa: BLE001 - every reader of the batch gets the error
                log.exception("Batch of %s failed; its %d rows fail", self.name, len(rows))
                for row in rows + joining:
                    if not row.done:
                        row.finish(exc)
                batch = Batch(self.model, self.pad_id)
                rows = []
                self.rows = 0

    def _take_share(self) -> None:
        """Use this model's share of the cores for the next step."""
        if self.cores is None:
            return
        threads = self.cores.working(self)
        if threads != self._threads:
            torch.set_num_threads(threads)
            self._threads = threads

    def _drop_finished(self, batch: Batch, rows: list[Row]) -> list[Row]:
        keep = [i for i, row in enumerate(rows) if not row.done and not row.stopped.is_set()]
        if len(keep) != len(rows):
            if self.prefixes is not None:
                for i, row in enumerate(rows):
                    if i not in keep:
                        self._store(batch, i, row)
            batch.keep(keep)
            rows = [rows[i] for i in keep]
        return rows

    def _store(self, batch: Batch, index: int, row: Row) -> None:
        """Keep what a leaving row has read, its prompt and the tokens it generated (fed to
        the model so far), so that a next prompt with the suggestion kept reads only what
        follows it (:mod:`cyoa.generation.engine.prefixes`)."""
        length, cache = batch.row_cache(index)
        if length > len(row.ids):
            self.prefixes.put((row.ids + row.generated)[:length], cache, None, len(row.ids))

    def _advance(self, rows: list[Row], hidden: torch.Tensor) -> None:
        """Sample each row's next token from its last hidden state and hand its reader the
        new text."""
        tokens = sample_rows_from_hidden(
            hidden,
            [row.sampling for row in rows],
            [row.generator for row in rows],
            self.vocabulary,
        )
        for row, token_id in zip(rows, tokens, strict=True):
            if token_id in self.stop_ids:
                row.finish()
            else:
                row.take(token_id, self.tokenizer)
