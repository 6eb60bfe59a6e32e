"""Choosing the next token from a model's logits: temperature, top-k and nucleus (top-p).

Sampling draws from a caller-owned :class:`torch.Generator`, so the draws depend only on the
seed, never on the global random state or on what other threads are doing: on one machine,
the same probabilities and seed give the same token.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from cyoa.generation.types import Sampling

if TYPE_CHECKING:
    from cyoa.generation.engine.vocabulary import Vocabulary


def candidates(
    logits: torch.Tensor, sampling: Sampling, banned: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """The tokens the next one is drawn from, and their probabilities (summing to 1).

    ``logits`` has one score per vocabulary entry in its last dimension (1-D for one row,
    2-D for several rows sampled alike). They are divided by the temperature; ``banned``
    token ids are excluded; then only the ``top_k`` most likely tokens are kept (0 = all),
    and of those the smallest set, most likely first, whose probability mass reaches
    ``top_p`` (nucleus sampling, Holtzman et al. 2020, "The Curious Case of Neural Text
    Degeneration"; 1.0 = all). The most likely token always stays. Returns
    ``(token_ids, probabilities)``, shaped like ``logits`` in all but the last dimension.
    """
    scores = logits.float()
    vocabulary = scores.shape[-1]
    if banned is not None and banned.numel():
        scores = scores.index_fill(-1, banned, float("-inf"))
    if 0 < sampling.top_k < vocabulary:
        # topk returns the best first, so the nucleus below needs no separate sort.
        scores, ids = torch.topk(scores, sampling.top_k, dim=-1)
    elif sampling.top_p < 1.0:
        scores, ids = torch.sort(scores, dim=-1, descending=True)
    else:
        ids = torch.arange(vocabulary).expand(scores.shape)
    return distribution(ids, scores, sampling)


def distribution(
    ids: torch.Tensor, logits: torch.Tensor, sampling: Sampling
) -> tuple[torch.Tensor, torch.Tensor]:
    """The probabilities of candidate tokens ``ids`` given their ``logits``, sorted best
    first (rows × candidates; ``-inf`` for a token that may not be drawn): divided by the
    temperature, softmax, then the nucleus of ``sampling.top_p`` as in :func:`candidates`
    (dividing by a positive temperature does not change which tokens are best)."""
    probs = torch.softmax(logits.float() / sampling.temperature, dim=-1)
    if sampling.top_p < 1.0:
        # A token is dropped when the better tokens before it already hold top_p of the mass;
        # the token that crosses top_p stays, so the nucleus is never empty.
        mass_before = torch.cumsum(probs, dim=-1) - probs
        probs = probs.masked_fill(mass_before >= sampling.top_p, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return ids, probs


def sample_next_token(
    logits: torch.Tensor,
    sampling: Sampling,
    generator: torch.Generator,
    banned: torch.Tensor | None = None,
) -> int:
    """One token id drawn from :func:`candidates`, using ``generator`` as the only source of
    randomness."""
    return sample_rows(logits.unsqueeze(0), [sampling], [generator], banned)[0]


def sample_rows(
    logits: torch.Tensor,
    samplings: list[Sampling],
    generators: list[torch.Generator],
    banned: torch.Tensor | None = None,
) -> list[int]:
    """One token id per row of ``logits`` (rows × vocabulary), row ``i`` drawn with
    ``samplings[i]`` from ``generators[i]`` alone. Rows with the same sampling share one
    :func:`candidates` call; each row's draw is the one :func:`sample_next_token` makes for
    that row alone."""
    return _draw(samplings, generators, lambda rows, s: candidates(logits[rows], s, banned))


def sample_rows_from_hidden(
    hidden: torch.Tensor,
    samplings: list[Sampling],
    generators: list[torch.Generator],
    vocabulary: Vocabulary,
) -> list[int]:
    """As :func:`sample_rows`, from each row's last hidden state (rows × hidden size):
    top-k rows score only their k best tokens (:meth:`Vocabulary.top_logits`), the others
    the whole vocabulary; the candidates and probabilities are those of :func:`candidates`
    on the row's full logits."""

    def pick(rows: list[int], sampling: Sampling) -> tuple[torch.Tensor, torch.Tensor]:
        if 0 < sampling.top_k < vocabulary.size:
            ids, top = vocabulary.top_logits(hidden[rows], sampling.top_k)
            return distribution(ids, top, sampling)
        return candidates(vocabulary.logits(hidden[rows]), sampling)

    return _draw(samplings, generators, pick)


def _draw(
    samplings: list[Sampling],
    generators: list[torch.Generator],
    pick: Callable[[list[int], Sampling], tuple[torch.Tensor, torch.Tensor]],
) -> list[int]:
    """One token per row: rows with the same sampling get their candidates from one ``pick``
    call, then each row draws from its own generator."""
    chosen = [0] * len(samplings)
    groups: dict[Sampling, list[int]] = {}
    for row, sampling in enumerate(samplings):
        groups.setdefault(sampling, []).append(row)
    for sampling, rows in groups.items():
        ids, probs = pick(rows, sampling)
        for i, row in enumerate(rows):
            choice = torch.multinomial(probs[i], num_samples=1, generator=generators[row])
            chosen[row] = int(ids[i, choice].item())
    return chosen
