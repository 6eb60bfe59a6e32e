"""Choosing a row's next token from llama.cpp's logits with numpy: temperature, top-k and
nucleus (top-p), as :func:`cyoa.generation.engine.sampling.candidates` defines them.

numpy, not torch: the llama.cpp engine then never imports torch, whose libraries alone hold
about 200 MB of the process's memory (bench/results/peer.md), and a draw over Gemma's 262,144
logits takes about half torch's 1.1 ms of CPU (the copy, the mask and the multinomial
draw of a 1-row tensor). Draws come from the row's own :class:`numpy.random.Generator`
(PCG64, seeded with the suggestion's seed), so on one machine the same logits and seed give
the same token whatever other rows do.
"""

from __future__ import annotations

import numpy as np

from cyoa.generation.types import Sampling

# PCG64 takes a seed in [0, 2**64); a negative seed wraps around, as torch's manual_seed does.
_SEED_RANGE = 2**64


def generator(seed: int) -> np.random.Generator:
    """A fresh generator whose draws depend only on ``seed``."""
    return np.random.Generator(np.random.PCG64(seed % _SEED_RANGE))


def candidates(
    logits: np.ndarray, sampling: Sampling, banned: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The tokens the next one is drawn from (best first where top-k or top-p filters them)
    and their probabilities (float64, summing to 1). ``logits`` (one float32 score per
    vocabulary entry) is overwritten: the ``banned`` ids become ``-inf``. Then only the
    ``top_k`` best are kept (0 = all), divided by the temperature and turned into
    probabilities (softmax), and of those the smallest set, best first, whose mass reaches
    ``top_p`` (nucleus sampling, Holtzman et al. 2020, "The Curious Case of Neural Text
    Degeneration"; 1.0 = all). The best token always stays."""
    logits[banned] = -np.inf
    size = logits.shape[0]
    if 0 < sampling.top_k < size:
        ids = np.argpartition(logits, size - sampling.top_k)[size - sampling.top_k :]
        ids = ids[np.argsort(-logits[ids], kind="stable")]
    elif sampling.top_p < 1.0:
        ids = np.argsort(-logits, kind="stable")
    else:
        ids = np.arange(size)
    scores = logits[ids].astype(np.float64) / sampling.temperature
    probs = np.exp(scores - scores.max())
    probs /= probs.sum()
    if sampling.top_p < 1.0:
        # A token is dropped when the better tokens before it already hold top_p of the mass;
        # the token that crosses top_p stays, so the nucleus is never empty.
        kept = max(1, int(np.count_nonzero(np.cumsum(probs) - probs < sampling.top_p)))
        ids, probs = ids[:kept], probs[:kept] / probs[:kept].sum()
    return ids, probs


def next_token(
    logits: np.ndarray, sampling: Sampling, rng: np.random.Generator, banned: np.ndarray
) -> int:
    """One token id drawn from :func:`candidates` (which overwrites ``logits``), with one
    uniform number from ``rng``."""
    ids, probs = candidates(logits, sampling, banned)
    cumulative = np.cumsum(probs)
    chosen = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    return int(ids[min(chosen, len(ids) - 1)])
