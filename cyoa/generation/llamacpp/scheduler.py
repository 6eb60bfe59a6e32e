"""Continuous batching on one llama.cpp context: one thread owns a model's context and decodes
every suggestion asked of the model in one batch, each in its own KV stream.

Every step, the decoding rows feed their last tokens in ``llama_decode`` calls of a few rows
and each joining row its whole prompt in a call of its own (see :meth:`LlamaScheduler._step`); then
every row samples its next token from its own logits with CYOA's sampling
(:mod:`cyoa.generation.llamacpp.sampling`) and its own seeded generator. A row leaves as
soon as it ends (an end-of-generation token, ``max_new_tokens``) or its reader stops reading;
its stream is freed for the next joining row.

llama.cpp decodes the sequences of a batch together only when their ids are consecutive, so
the rows always hold streams ``0 … n-1``: when rows leave, the rows above the gap are moved
down into it (``llama_memory_seq_cp`` copies a whole stream, cells in the same places, so a
moved row goes on exactly as it would have). With the settings of
:mod:`cyoa.generation.llamacpp.settings`, a row's logits are then the same bits alone, in any
batch and on any number of threads.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from cyoa.generation.engine.cores import CoreShare
from cyoa.generation.engine.rows import SHUTDOWN, WINDOW_SECONDS, Row, RowServer
from cyoa.generation.llamacpp.sampling import generator, next_token
from cyoa.generation.llamacpp.settings import CONTEXT_STEP, DECODE_CALL_ROWS
from cyoa.generation.llamacpp.vocabulary import Vocabulary

log = logging.getLogger(__name__)


class PromptTooLong(ValueError):
    """A prompt and its continuation do not fit in one row's KV stream."""


class LlamaScheduler(RowServer):
    """Continuous batching of the rows asked of one llama.cpp ``context`` (made by
    :func:`cyoa.generation.llamacpp.model.new_context` for ``rows`` rows of
    ``context_tokens`` tokens), whose model's vocabulary is ``vocabulary``. With ``cores``,
    each step uses this model's share of the cores (:mod:`cyoa.generation.engine.cores`);
    without, ``threads``. The context belongs to the thread once :meth:`start` is called
    and is freed when it ends."""

    def __init__(
        self,
        lib: Any,
        context: Any,
        vocabulary: Vocabulary,
        name: str,
        rows: int,
        context_tokens: int,
        threads: int = 1,
        cores: CoreShare | None = None,
        window_seconds: float = WINDOW_SECONDS,
        card_file: str = "",
    ) -> None:
        self._lib = lib
        self._context = context
        self._memory = lib.llama_get_memory(context)
        self.vocabulary = vocabulary
        self.name = name
        self.max_rows = rows
        self.context_tokens = context_tokens
        self.cores = cores
        self.window_seconds = window_seconds
        self.card_file = card_file
        self._threads = threads
        self._capacity = context_tokens + rows
        self._batch = lib.llama_batch_init(self._capacity, 0, 1)
        self._banned = np.array(vocabulary.banned_ids, dtype=np.int64)
        # Rows decoding now (written by the scheduler thread only).
        self.rows = 0
        super().__init__(f"cyoa-llama-{name}")

    def _generator(self, seed: int) -> np.random.Generator:
        return generator(seed)

    def _run(self) -> None:
        active: list[Row] = []
        waiting: list[Row] = []
        try:
            while True:
                idle = not active and not waiting
                if idle and self.cores is not None:
                    self.cores.idle(self)
                waiting = self._collect(waiting, idle, self.window_seconds)
                if SHUTDOWN in waiting:
                    for row in active + [r for r in waiting if r is not SHUTDOWN]:
                        row.finish(RuntimeError(f"The {self.name} scheduler shut down."))
                    return
                waiting = [row for row in waiting if not row.stopped.is_set()]
                active = self._compact(active)
                joining, waiting = self._admit(len(active), waiting)
                if not active and not joining:
                    self.rows = 0
                    continue
                try:
                    self._step(active, joining)
                except Exception as exc:  # noqa: BLE001 - every reader of the batch gets it
                    log.exception("Batch of %s failed; its rows fail", self.name)
                    for row in active + joining:
                        row.finish(exc)
                    self._lib.llama_memory_clear(self._memory, True)
                    active = []
                    continue
                active += joining
                self.rows = len(active)
        finally:
            self.rows = 0
            if self.cores is not None:
                self.cores.idle(self)
            self._lib.llama_batch_free(self._batch)
            self._lib.llama_free(self._context)

    def _admit(self, decoding: int, waiting: list[Row]) -> tuple[list[Row], list[Row]]:
        """The waiting rows that join this step (free streams, and their prompts within one
        step's budget of ``context_tokens + rows`` tokens, so the decoding rows wait for
        about one stream's worth of prompt a step), and those still waiting. A prompt that
        cannot fit a stream fails its reader with what to change."""
        joining: list[Row] = []
        tokens = decoding
        left: list[Row] = []
        for index, row in enumerate(waiting):
            if decoding + len(joining) >= self.max_rows:
                left = waiting[index:]
                break
            if not row.ids:
                row.ids = self.vocabulary(row.prompt).input_ids
            problem = self._too_long(row)
            if problem:
                row.finish(PromptTooLong(problem))
                continue
            if joining and tokens + len(row.ids) > self._capacity:
                left = waiting[index:]
                break
            joining.append(row)
            tokens += len(row.ids)
        return joining, left

    def _too_long(self, row: Row) -> str:
        needed = len(row.ids) + row.sampling.max_new_tokens
        if not row.ids:
            return f"The prompt for {self.name} is empty: give the model some text to continue."
        if needed <= self.context_tokens:
            return ""
        step = CONTEXT_STEP
        at_least = -(-needed // step) * step
        where = f" in {self.card_file}" if self.card_file else ""
        return (
            f"The prompt for {self.name} is {len(row.ids)} tokens; with max_new_tokens "
            f"{row.sampling.max_new_tokens} it needs {needed} of the {self.context_tokens} tokens "
            f"each suggestion may hold: set options.context_tokens = {at_least} (a multiple of "
            f"{step}){where}, or shorten the prompt."
        )

    def _compact(self, active: list[Row]) -> list[Row]:
        """The rows still decoding, in streams ``0 … n-1``: rows above a gap left by a
        finished row are copied down into it; the streams above are emptied."""
        alive = [not row.done and not row.stopped.is_set() for row in active]
        size = sum(alive)
        if size == len(active):
            return active
        kept: list[Row | None] = [row if alive[s] else None for s, row in enumerate(active[:size])]
        movers = [s for s in range(size, len(active)) if alive[s]]
        holes = [s for s in range(size) if kept[s] is None]
        for source, hole in zip(movers, holes, strict=True):
            self._lib.llama_memory_seq_cp(self._memory, source, hole, -1, -1)
            kept[hole] = active[source]
        for stream in range(size, len(active)):
            self._lib.llama_memory_seq_rm(self._memory, stream, -1, -1)
        return [row for row in kept if row is not None]

    def _step(self, active: list[Row], joining: list[Row]) -> None:
        """The decoding rows' last tokens in ``llama_decode`` calls of at most
        :data:`~cyoa.generation.llamacpp.settings.DECODE_CALL_ROWS` rows, then each joining
        row's prompt in a call of its own; every row's next token is drawn from the logits
        of its call.

        From eight tokens a call, llama.cpp multiplies some of Gemma's layers with another
        kernel than for one token, which rounds otherwise: a row decoding beside seven or
        more others got other logits than alone (bench/results/llamacpp-probe.md). In calls
        of a few rows, a row's token gives the same bits as alone.

        A prompt is decoded alone so that llama.cpp cuts it into passes the same way
        whatever else joins: it splits a call's sequences into passes of equal length each
        (one KV stream per sequence), and a token's logits depend on which tokens of its own
        sequence share its pass (Gemma's prompt logits beside a 13- or 16-token prompt
        differed by up to 0.9: bench/results/peer.md). Alone, a prompt's passes are its
        first ``n_ubatch`` tokens, the next ``n_ubatch``, …; a decoding row's one token
        gives the same bits alone or beside the others' (the guarantee tests)."""
        self._take_share()
        for start in range(0, len(active), DECODE_CALL_ROWS):
            rows = active[start : start + DECODE_CALL_ROWS]
            self._decode(
                [[(row.generated[-1], len(row.ids) + len(row.generated) - 1)] for row in rows],
                rows,
                first_stream=start,
            )
        for offset, row in enumerate(joining):
            stream = len(active) + offset
            self._lib.llama_memory_seq_rm(self._memory, stream, -1, -1)
            self._decode([list(zip(row.ids, range(len(row.ids)), strict=True))], [row], stream)

    def _decode(
        self, tokens: list[list[tuple[int, int]]], rows: list[Row], first_stream: int
    ) -> None:
        """One ``llama_decode`` call: ``tokens[i]`` (token id, position) pairs of
        ``rows[i]`` in stream ``first_stream + i``, its last token scored; then each row's
        next token."""
        batch, count, outputs = self._batch, 0, []
        for offset, (row, pairs) in enumerate(zip(rows, tokens, strict=True)):
            for token, position in pairs:
                batch.token[count] = token
                batch.pos[count] = position
                batch.n_seq_id[count] = 1
                batch.seq_id[count][0] = first_stream + offset
                batch.logits[count] = False
                count += 1
            batch.logits[count - 1] = True
            outputs.append((row, count - 1))
        batch.n_tokens = count
        status = self._lib.llama_decode(self._context, batch)
        if status != 0:
            raise RuntimeError(f"llama.cpp could not decode a batch of {self.name} ({status}).")
        size = self.vocabulary.size
        for row, index in outputs:
            pointer = self._lib.llama_get_logits_ith(self._context, index)
            # A view of llama.cpp's buffer, which the sampler may overwrite: the next
            # llama_decode call writes it anew.
            logits = np.ctypeslib.as_array(pointer, shape=(size,))
            token = next_token(logits, row.sampling, row.generator, self._banned)
            if token in self.vocabulary.stop_ids:
                row.finish()
            else:
                row.take(token, self.vocabulary)

    def _take_share(self) -> None:
        """Use this model's share of the cores for the next step."""
        if self.cores is None:
            return
        threads = self.cores.working(self)
        if threads != self._threads:
            self._lib.llama_set_n_threads(self._context, threads, threads)
            self._threads = threads
