"""The llama.cpp engine's sampler (numpy): the same candidates and probabilities as the torch
engine's for the same logits, banned tokens never drawn, and a draw that depends on the seed
alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cyoa.generation.engine import sampling as torch_sampling
from cyoa.generation.llamacpp.sampling import candidates, generator, next_token
from cyoa.generation.types import Sampling

LOGITS = np.random.default_rng(5).standard_normal(5000).astype(np.float32) * 3
BANNED = np.array([int(np.argmax(LOGITS)), 17, 4000])
SAMPLINGS = [
    Sampling(top_k=40, top_p=1.0, temperature=1.0),
    Sampling(top_k=40, top_p=0.9, temperature=0.7),
    Sampling(top_k=0, top_p=0.8, temperature=1.3),
    Sampling(top_k=0, top_p=1.0, temperature=1.0),
]


def kept(ids, probs) -> dict[int, float]:
    return {int(i): float(p) for i, p in zip(ids, probs, strict=True) if p > 0}


@pytest.mark.parametrize("sampling", SAMPLINGS, ids=str)
def test_the_candidates_and_their_probabilities_are_the_torch_engine_s(sampling):
    ids, probs = candidates(LOGITS.copy(), sampling, BANNED)
    expected_ids, expected = torch_sampling.candidates(
        torch.from_numpy(LOGITS.copy()), sampling, torch.from_numpy(BANNED)
    )
    mine, theirs = kept(ids, probs), kept(expected_ids, expected)
    assert mine.keys() == theirs.keys()
    assert all(abs(mine[token] - theirs[token]) < 1e-5 for token in mine)
    if sampling.top_k or sampling.top_p < 1.0:
        assert list(mine) == sorted(mine, key=lambda token: -LOGITS[token])  # best first


def test_a_banned_token_is_never_drawn_even_when_it_is_the_most_likely():
    rng = generator(3)
    drawn = {next_token(LOGITS.copy(), SAMPLINGS[0], rng, BANNED) for _ in range(300)}
    assert not drawn & set(BANNED.tolist())
    assert len(drawn) > 5  # it samples, not argmax


def test_the_same_seed_draws_the_same_tokens_and_another_seed_others():
    def draws(seed: int) -> list[int]:
        rng = generator(seed)
        return [next_token(LOGITS.copy(), SAMPLINGS[2], rng, BANNED) for _ in range(50)]

    assert draws(11) == draws(11)
    assert draws(11) != draws(12)
