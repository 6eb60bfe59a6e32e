"""From a model's last hidden state to next-token scores, without the whole vocabulary when
top-k sampling needs only the k best.

The projection onto the vocabulary is the costliest product of a small model with a large
vocabulary: Gemma 3 270M's output matrix has 262,144 rows of 640, 168 M multiply-adds per
token, more than its 18 layers together. Top-k sampling needs the k largest logits only, so
:meth:`Vocabulary.top_logits` finds them in two stages and proves it found them:

1. **Screen.** Every score is computed in bfloat16 (the output matrix and the hidden state
   rounded to bfloat16, products summed in float32, the result rounded to bfloat16), with the
   bfloat16 matrix laid out once for oneDNN
   (:class:`~cyoa.generation.engine.packing.PackedMatrix`): for Gemma a fraction of the
   float32 product's cost, which grows little with the batch's rows. The ``k + margin`` best
   screened tokens are the candidates.
2. **Score exactly.** The candidates' logits are computed in float32 from the float32 matrix
   rows (read from its exact 8-bit blocks where the model keeps them, see
   :mod:`cyoa.generation.engine.embeddings`), as the full product would, and the k best are kept.
3. **Prove.** For every token ``j``, ``|z_j - s_j| ≤ B`` where ``z_j`` is its float32 logit,
   ``s_j`` its screened score and ``B`` the bound of :func:`screening_bound`. A token left out
   of the candidates has ``s_j ≤ c`` (``c`` the lowest candidate's screened score), so
   ``z_j ≤ c + B``. If the k-th exact logit exceeds ``c + B``, no token left out can be among
   the k best: the k tokens are exactly the float32 top k. Otherwise (rare with the default
   margin, but possible) that row's whole float32 product is computed, as without screening.

So the tokens a row can draw and their probabilities are those of the full float32 product, up
to float32 rounding (the same few units in the last place that separate a batched product
from a single row's). The rows that needed the full product are counted in
:attr:`Vocabulary.fallbacks`.

Nucleus sampling without top-k needs the whole distribution (its normaliser); those rows,
and models whose output layer is not a plain float32 linear layer (the ``int8`` and
``bfloat16`` card options), use the full product.

References: Higham, N. J. (2002). *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
§3.1 (the ``γ_n`` bound of a float32 dot product); Kalamkar, D. et al. (2019). A Study of
BFLOAT16 for Deep Learning Training (the format: 8 significant bits).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import torch

from cyoa.generation.engine.embeddings import BlockLinear
from cyoa.generation.engine.packing import PackedMatrix, packing_available

# bfloat16 keeps 8 significant bits: rounding to it changes a number by at most 2^-8 of it.
BFLOAT16_UNIT_ROUNDOFF = 2.0**-8
# float32: 24 significant bits.
FLOAT32_UNIT_ROUNDOFF = 2.0**-24
# Candidates screened beyond the k needed. A row the bound cannot prove costs the whole float32
# product; a margin of about k leaves many rows of real text unproven, a margin of a few times
# k almost none, for a few hundred exact rows read per row.
DEFAULT_MARGIN = 160
# Below this many output-matrix entries the full float32 product is cheap enough.
SCREEN_FROM_ENTRIES = 50_000_000


class Vocabulary:
    """The output layer of ``model`` (a transformers causal LM), with the ids in ``banned``
    never scored above ``-inf``.

    ``screen`` says whether :meth:`top_logits` may screen in bfloat16 (by default: when the
    output layer is a float32 linear layer, or the exact 8-bit blocks of one
    (:class:`~cyoa.generation.engine.embeddings.BlockLinear`), with at least
    ``SCREEN_FROM_ENTRIES`` entries, and the CPU has oneDNN's bfloat16 products: without them
    the screen costs more than the whole float32 product).
    """

    def __init__(
        self,
        model: Any,
        banned: torch.Tensor | None = None,
        screen: bool | None = None,
        margin: int = DEFAULT_MARGIN,
    ) -> None:
        self.head = model.get_output_embeddings()
        self.softcap = getattr(model.config, "final_logit_softcapping", None)
        self.banned = banned if banned is not None else torch.empty(0, dtype=torch.long)
        weight = getattr(self.head, "weight", None)
        blocks = self.head.matrix if isinstance(self.head, BlockLinear) else None
        screenable = blocks is not None or (
            isinstance(self.head, torch.nn.Linear)
            and isinstance(weight, torch.Tensor)
            and weight.dtype == torch.float32
            and self.head.bias is None
        )
        if screen is None:
            matrix = blocks.integers if blocks is not None else weight
            screen = (
                screenable
                and matrix.numel() >= SCREEN_FROM_ENTRIES
                and packing_available(torch.bfloat16)
            )
        if screen and not screenable:
            raise ValueError("Only a float32 linear output layer without bias can be screened.")
        self.screen = screen
        self.margin = margin
        self.size = int(getattr(self.head, "out_features", model.config.vocab_size))
        self.fallbacks = 0
        self.rows_scored = 0
        if screen:
            with torch.no_grad():
                if blocks is not None:
                    self.weight, self._rows = None, blocks.rows
                    shape, chunks = blocks.shape, blocks.chunks()
                else:
                    self.weight = weight.detach()
                    self._rows = self.weight.__getitem__
                    shape, chunks = self.weight.shape, _slices(self.weight)
                weight_bf16, self.max_row_norm, self.max_rounding_norm = _screening_copy(
                    shape, chunks
                )
                # oneDNN's layout of the bfloat16 copy, where torch has it: faster, and within
                # the same bound (cyoa/generation/engine/packing.py, PackedMatrix).
                self.screened_scores: Callable[[torch.Tensor], torch.Tensor] = (
                    PackedMatrix(weight_bf16)
                    if packing_available(torch.bfloat16)
                    else partial(torch.nn.functional.linear, weight=weight_bf16)
                )

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Every token's float32 logit for each row of ``hidden`` ``(rows, hidden_size)``:
        ``(rows, vocabulary)``, the banned ids at ``-inf``."""
        return self._capped(self._uncapped_logits(hidden))

    def _uncapped_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            logits = self.head(hidden).float()
            if self.banned.numel():
                logits = logits.index_fill(-1, self.banned, float("-inf"))
        return logits

    def top_logits(self, hidden: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The ``k`` largest float32 logits of each row and their token ids, best first:
        ``(ids, logits)``, both ``(rows, k)``. Banned ids are never among them (unless fewer
        than ``k`` tokens are allowed, when they come last at ``-inf``)."""
        with torch.inference_mode():
            self.rows_scored += hidden.shape[0]
            if not self.screen or k + self.margin >= self.size:
                top, ids = torch.topk(self.logits(hidden), k, dim=-1)
                return ids, top
            return self._screened_top(hidden.float(), k)

    def _screened_top(self, hidden: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        hidden_bf16 = hidden.to(torch.bfloat16)
        screened = self.screened_scores(hidden_bf16)
        if self.banned.numel():
            screened = screened.index_fill(-1, self.banned, float("-inf"))
        lowest, candidates = torch.topk(screened, k + self.margin, dim=-1)
        # Exact float32 logits of the candidates: each row's hidden state against the rows of
        # the float32 matrix it picked.
        exact = torch.einsum("rd,rcd->rc", hidden, self._rows(candidates))
        exact = exact.masked_fill(lowest == float("-inf"), float("-inf"))
        top, picked = torch.topk(exact, k, dim=-1)
        ids = candidates.gather(-1, picked)
        bound = screening_bound(
            hidden, hidden_bf16, lowest[:, -1].float(), self.max_row_norm, self.max_rounding_norm
        )
        proven = top[:, -1] > lowest[:, -1].float() + bound
        # A row whose k-th logit is -inf has fewer than k allowed tokens: nothing was left out.
        proven |= top[:, -1] == float("-inf")
        for row in (~proven).nonzero().flatten().tolist():
            self.fallbacks += 1
            full = self._uncapped_logits(hidden[row : row + 1])
            row_top, row_ids = torch.topk(full, k, dim=-1)
            top[row], ids[row] = row_top[0], row_ids[0]
        return ids, self._capped(top)

    def _capped(self, logits: torch.Tensor) -> torch.Tensor:
        """Gemma-2-style final soft-capping when the model asks for it (a monotone map, so the
        top k are the same tokens)."""
        if not self.softcap:
            return logits
        return torch.tanh(logits / self.softcap) * self.softcap


def _slices(weight: torch.Tensor, size: int = 16384) -> Iterator[tuple[int, torch.Tensor]]:
    """``weight`` a slice of rows at a time: ``(first row, rows)``."""
    for start in range(0, weight.shape[0], size):
        yield start, weight[start : start + size]


def _screening_copy(
    shape: torch.Size, chunks: Iterator[tuple[int, torch.Tensor]]
) -> tuple[torch.Tensor, float, float]:
    """The bfloat16 rounding of the float32 matrix of ``shape`` given as ``chunks``
    (``(first row, rows)``), the largest row norm of the matrix and that of its rounding
    error. In float32: the differences are exact (Sterbenz), and the norms' own rounding, a
    few units in the 24th bit, is far inside the bound's factor of 2."""
    rounded = torch.empty(shape, dtype=torch.bfloat16)
    largest, largest_rounding = 0.0, 0.0
    for start, rows in chunks:
        rounded[start : start + rows.shape[0]] = rows
        largest = max(largest, float(rows.norm(dim=1).max()))
        rounding = rows - rounded[start : start + rows.shape[0]].float()
        largest_rounding = max(largest_rounding, float(rounding.norm(dim=1).max()))
    return rounded, largest, largest_rounding


def screening_bound(
    hidden: torch.Tensor,
    hidden_bf16: torch.Tensor,
    screened: torch.Tensor,
    max_row_norm: float,
    max_rounding_norm: float,
) -> torch.Tensor:
    """Per row, a bound ``B`` such that every token ``j`` whose screened score ``s_j`` is at
    most ``screened`` (the row's lowest candidate, ``c``) has ``z_j ≤ c + B``, and such that
    the computed float32 logits of the candidates are within the float32 share of ``B`` of
    their exact values (``z_j = h · w_j`` in exact arithmetic; ``s_j`` the bfloat16 screening
    of :class:`Vocabulary`).

    - Rounding the inputs: with ``ĥ``, ``ŵ_j`` the bfloat16 roundings,
      ``h·w_j - ĥ·ŵ_j = (h - ĥ)·w_j + ĥ·(w_j - ŵ_j)``, so by Cauchy–Schwarz
      ``|h·w_j - ĥ·ŵ_j| ≤ ‖h - ĥ‖ max‖w_j‖ + ‖ĥ‖ max‖w_j - ŵ_j‖``.
    - Summing in float32: a dot product of length ``n`` is off by at most
      ``γ_n ‖h‖ ‖w_j‖``, ``γ_n = n u / (1 - n u)`` (Higham 2002, §3.1); counted twice, for
      the screening and for the candidates' float32 logits.
    - Rounding the screened score to bfloat16: ``s_j`` is within ``2^-8 |s*_j|`` of the
      float32 sum ``s*_j``; since ``s + 2^-8|s| / (1 - 2^-8)`` grows with ``s``, every
      ``s_j ≤ c`` gives ``s*_j ≤ c + 2^-8 |c| / (1 - 2^-8)``.

    The sum of the three is doubled: the bound only decides whether the cheap result is
    proven, so a loose bound costs time (a full product), never accuracy.
    """
    n = hidden.shape[-1]
    gamma = n * FLOAT32_UNIT_ROUNDOFF / (1 - n * FLOAT32_UNIT_ROUNDOFF)
    rounding_of_hidden = (hidden - hidden_bf16.float()).norm(dim=-1)
    norm_hidden = torch.maximum(hidden.norm(dim=-1), hidden_bf16.float().norm(dim=-1))
    inputs = rounding_of_hidden * max_row_norm + norm_hidden * max_rounding_norm
    sums = 2 * gamma * norm_hidden * max_row_norm
    output = screened.abs() * BFLOAT16_UNIT_ROUNDOFF / (1 - BFLOAT16_UNIT_ROUNDOFF)
    return 2 * (inputs + sums + output)
