"""Choosing the next token: temperature, top-k, nucleus, banned tokens, reproducible seeds."""

from __future__ import annotations

import math

import pytest
import torch

from cyoa.generation.engine.sampling import candidates, sample_next_token
from cyoa.generation.types import Sampling

# Probabilities 0.5, 0.25, 0.125, 0.0625, 0.0625 for tokens 0..4.
LOGITS = torch.log(torch.tensor([0.5, 0.25, 0.125, 0.0625, 0.0625]))


def as_dict(ids: torch.Tensor, probs: torch.Tensor) -> dict[int, float]:
    return {int(i): round(float(p), 4) for i, p in zip(ids, probs, strict=True) if p > 0}


def test_no_filter_keeps_the_model_distribution():
    ids, probs = candidates(LOGITS, Sampling(top_k=0, top_p=1.0))
    assert as_dict(ids, probs) == {0: 0.5, 1: 0.25, 2: 0.125, 3: 0.0625, 4: 0.0625}


def test_top_k_keeps_the_k_most_likely_tokens_renormalised():
    ids, probs = candidates(LOGITS, Sampling(top_k=2, top_p=1.0))
    assert as_dict(ids, probs) == {0: round(2 / 3, 4), 1: round(1 / 3, 4)}


def test_top_p_keeps_the_smallest_set_reaching_the_mass():
    # 0.5 + 0.25 = 0.75 reaches 0.7, so tokens 0 and 1 are the nucleus.
    ids, probs = candidates(LOGITS, Sampling(top_k=0, top_p=0.7))
    assert as_dict(ids, probs) == {0: round(2 / 3, 4), 1: round(1 / 3, 4)}
    # The most likely token alone already holds 0.5 >= 0.3.
    ids, probs = candidates(LOGITS, Sampling(top_k=0, top_p=0.3))
    assert as_dict(ids, probs) == {0: 1.0}


def test_top_k_and_top_p_combine():
    ids, probs = candidates(LOGITS, Sampling(top_k=3, top_p=0.9))
    # Of 0.5, 0.25, 0.125 (renormalised: 4/7, 2/7, 1/7) the first two hold 6/7 < 0.9.
    assert as_dict(ids, probs) == {0: round(4 / 7, 4), 1: round(2 / 7, 4), 2: round(1 / 7, 4)}


def test_temperature_sharpens_or_flattens():
    _, cold = candidates(LOGITS, Sampling(top_k=0, temperature=0.5))
    _, hot = candidates(LOGITS, Sampling(top_k=0, temperature=2.0))
    assert float(cold[0]) == pytest.approx(0.25 / (0.25 + 0.0625 + 0.015625 + 2 * 0.00390625))
    assert float(hot[0]) == pytest.approx(
        math.sqrt(0.5) / sum(math.sqrt(p) for p in [0.5, 0.25, 0.125, 0.0625, 0.0625])
    )


def test_banned_tokens_are_never_candidates():
    ids, probs = candidates(LOGITS, Sampling(top_k=0), banned=torch.tensor([0, 3]))
    assert as_dict(ids, probs) == {
        1: round(0.25 / 0.4375, 4),
        2: round(0.125 / 0.4375, 4),
        4: round(0.0625 / 0.4375, 4),
    }


def test_the_same_seed_draws_the_same_tokens_whatever_the_global_random_state():
    sampling = Sampling(top_k=0)

    def draws(seed: int) -> list[int]:
        generator = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed + 1000)  # the global RNG must not matter
        return [sample_next_token(LOGITS, sampling, generator) for _ in range(30)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)
    assert set(draws(7)) <= {0, 1, 2, 3, 4}


def test_top_k_one_is_greedy():
    generator = torch.Generator().manual_seed(0)
    assert {sample_next_token(LOGITS, Sampling(top_k=1), generator) for _ in range(20)} == {0}
