"""Scoring the vocabulary: the screened top k are exactly the float32 top k.

The fast tests use a random output matrix large enough for bfloat16 rounding to matter; the
``real_model`` test checks Gemma 3's real output layer on hidden states of real text.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from tiny_checkpoint import torch_engine

from cyoa.generation.engine.packing import packing_available
from cyoa.generation.engine.sampling import candidates, sample_rows, sample_rows_from_hidden
from cyoa.generation.engine.vocabulary import Vocabulary, screening_bound
from cyoa.generation.types import Sampling
from tests.paths import ROOT


class TinyConfig:
    vocab_size = 4000
    final_logit_softcapping = None


class TinyModel(torch.nn.Module):
    """Just an output layer: 4,000 tokens of 64 dimensions, rows of norm about 1 (as
    Gemma's), some rows near-duplicates so that near-ties exist."""

    def __init__(self, seed: int = 0, softcap: float | None = None) -> None:
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.config = TinyConfig()
        self.config.final_logit_softcapping = softcap
        self.lm_head = torch.nn.Linear(64, 4000, bias=False)
        weight = torch.randn(4000, 64, generator=generator) / 8
        weight[2000:2100] = weight[:100] + 1e-4 * torch.randn(100, 64, generator=generator)
        with torch.no_grad():
            self.lm_head.weight.copy_(weight)

    def get_output_embeddings(self) -> torch.nn.Module:
        return self.lm_head


def hidden_states(rows: int, seed: int = 1, scale: float = 30.0) -> torch.Tensor:
    return torch.randn(rows, 64, generator=torch.Generator().manual_seed(seed)) * scale


def test_float32_logits_are_the_output_layer_s_with_banned_ids_at_minus_infinity():
    model = TinyModel()
    vocabulary = Vocabulary(model, banned=torch.tensor([3, 7]), screen=False)
    hidden = hidden_states(3)
    logits = vocabulary.logits(hidden)
    expected = hidden @ model.lm_head.weight.T
    assert torch.isinf(logits[:, [3, 7]]).all()
    keep = [i for i in range(4000) if i not in (3, 7)]
    torch.testing.assert_close(logits[:, keep], expected[:, keep])


@pytest.mark.parametrize("margin", [0, 5, 40])
@pytest.mark.parametrize("k", [1, 10, 40])
def test_screened_top_k_are_the_float32_top_k_whatever_the_margin(k, margin):
    # With a small margin the bound often cannot prove the screened candidates, and the row
    # falls back to the full product: either way the answer is the float32 top k.
    model = TinyModel()
    banned = torch.arange(0, 4000, 97)
    screened = Vocabulary(model, banned=banned, screen=True, margin=margin)
    full = Vocabulary(model, banned=banned, screen=False)
    hidden = hidden_states(12)
    ids, top = screened.top_logits(hidden, k)
    expected_top, expected_ids = torch.topk(full.logits(hidden), k, dim=-1)
    assert ids.shape == top.shape == (12, k)
    torch.testing.assert_close(top, expected_top, atol=1e-5, rtol=1e-6)
    assert [set(row) for row in ids.tolist()] == [set(row) for row in expected_ids.tolist()]
    assert not set(ids.flatten().tolist()) & set(banned.tolist())
    assert (top[:, :-1] >= top[:, 1:]).all(), "best first"


@pytest.mark.parametrize("margin", [0, 40])
def test_soft_capped_logits_are_capped_once_screened_or_not(margin):
    model = TinyModel(softcap=50.0)
    screened = Vocabulary(model, screen=True, margin=margin)
    hidden = hidden_states(8)
    ids, top = screened.top_logits(hidden, 10)
    raw = hidden @ model.lm_head.weight.T
    expected_top, expected_ids = torch.topk(torch.tanh(raw / 50.0) * 50.0, 10, dim=-1)
    torch.testing.assert_close(top, expected_top, atol=1e-5, rtol=1e-6)
    assert [set(r) for r in ids.tolist()] == [set(r) for r in expected_ids.tolist()]
    assert top.abs().max() <= 50.0
    # Margin 0 leaves rows unproven: the full product's rows are capped once too.
    assert (screened.fallbacks > 0) == (margin == 0)


def test_rows_the_bound_cannot_prove_fall_back_to_the_full_product():
    model = TinyModel()
    tight = Vocabulary(model, screen=True, margin=0)
    wide = Vocabulary(model, screen=True, margin=400)
    hidden = hidden_states(20)
    tight.top_logits(hidden, 40)
    wide.top_logits(hidden, 40)
    assert tight.rows_scored == wide.rows_scored == 20
    assert tight.fallbacks > 0
    assert wide.fallbacks == 0


def test_screening_bound_covers_every_token_s_error():
    """The screened score of every token is within the bound of its float32 logit (the bound
    is checked without its safety factor of 2, for every token, on many rows)."""
    model = TinyModel()
    vocabulary = Vocabulary(model, screen=True)
    for scale in (1.0, 30.0, 300.0):
        hidden = hidden_states(50, seed=int(scale), scale=scale)
        hidden_bf16 = hidden.to(torch.bfloat16)
        screened = vocabulary.screened_scores(hidden_bf16).float()
        exact = (hidden.double() @ vocabulary.weight.double().T).float()
        plain = torch.nn.functional.linear(hidden_bf16, vocabulary.weight.to(torch.bfloat16))
        assert torch.equal(screened, plain.float()), "oneDNN's layout: the same scores"
        for row in range(50):
            order = torch.argsort(screened[row])
            # Every token at or below a cut c satisfies z_j <= c + B(c)/2.
            for cut in (order[100], order[2000], order[-1]):
                c = screened[row, cut]
                bound = screening_bound(
                    hidden[row : row + 1],
                    hidden_bf16[row : row + 1],
                    c.reshape(1),
                    vocabulary.max_row_norm,
                    vocabulary.max_rounding_norm,
                )
                below = screened[row] <= c
                assert (exact[row][below] <= c + bound / 2).all()
        assert (exact - screened).abs().max() > 0, "bfloat16 rounding is visible"


def test_an_output_layer_that_is_not_float32_is_never_screened():
    model = TinyModel().to(torch.bfloat16)
    assert not Vocabulary(model).screen
    with pytest.raises(ValueError, match="float32"):
        Vocabulary(model, screen=True)
    # Small float32 vocabularies are not screened by default (the full product is cheap).
    assert not Vocabulary(TinyModel()).screen


def test_sampling_from_hidden_states_draws_what_full_logits_draw():
    model = TinyModel()
    banned = torch.tensor([5, 6])
    vocabulary = Vocabulary(model, banned=banned, screen=True)
    hidden = hidden_states(6, scale=20.0)
    logits = Vocabulary(model, screen=False).logits(hidden)
    samplings = [
        Sampling(top_k=40),
        Sampling(top_k=0, top_p=0.9),
        Sampling(top_k=40),
        Sampling(top_k=5, temperature=0.7),
        Sampling(top_k=40, top_p=0.8),
        Sampling(top_k=0, top_p=1.0),
    ]
    for seed in range(25):
        generators = [torch.Generator().manual_seed(seed * 10 + i) for i in range(6)]
        from_hidden = sample_rows_from_hidden(hidden, samplings, generators, vocabulary)
        generators = [torch.Generator().manual_seed(seed * 10 + i) for i in range(6)]
        from_logits = sample_rows(logits, samplings, generators, banned)
        assert from_hidden == from_logits
        assert not set(from_hidden) & {5, 6}


def test_candidate_probabilities_match_the_full_distribution_restricted_to_top_k():
    model = TinyModel()
    vocabulary = Vocabulary(model, screen=True)
    hidden = hidden_states(1, scale=20.0)
    logits = vocabulary.logits(hidden)
    ids, probs = candidates(logits, Sampling(top_k=40, temperature=0.8))
    expected = torch.softmax(logits[0, ids[0]] / 0.8, dim=-1)
    torch.testing.assert_close(probs[0], expected)


MODEL_CACHE = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))


@pytest.mark.real_model
@pytest.mark.skipif(
    not packing_available(torch.bfloat16),
    reason="this CPU has no oneDNN bfloat16 products, so Gemma's vocabulary is not screened",
)
def test_gemma_s_screened_top_40_are_its_float32_top_40_on_real_text():
    from cyoa.generation import load_model_cards
    from cyoa.generation.local import TransformersBackend

    card = torch_engine(load_model_cards(ROOT / "models")["gemma-3-270m"])
    backend = TransformersBackend(card, MODEL_CACHE, mode="naive")
    local = backend.load(log=lambda _: None)
    vocabulary = local.vocabulary
    assert vocabulary.screen
    full = Vocabulary(local.model, banned=vocabulary.banned, screen=False)
    text = (
        "The lighthouse keeper found a letter on the rocks. It was addressed to him, in his "
        "dead wife's handwriting. He sat down on the wet stone and read it twice."
    )
    ids = local.tokenizer(text, return_tensors="pt").input_ids
    with torch.inference_mode():
        hidden = local.model.get_decoder()(input_ids=ids).last_hidden_state[0]
    top_ids, top = vocabulary.top_logits(hidden, 40)
    expected_top, expected_ids = torch.topk(full.logits(hidden), 40, dim=-1)
    assert vocabulary.fallbacks == 0
    torch.testing.assert_close(top, expected_top, atol=1e-4, rtol=1e-5)
    assert [set(r) for r in top_ids.tolist()] == [set(r) for r in expected_ids.tolist()]
