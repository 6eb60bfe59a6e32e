"""Dynamic batching: rows of one model decoded together give what each would alone.

The fast tests run the batch bookkeeping (left padding, rows joining and leaving a running KV
cache, prompts read in the same pass as the rows decoding, sliding-window layers) on tiny
randomly initialised models built here; the ``real_model`` tests run the scheduler with the
packaged models.
"""

from __future__ import annotations

import threading
import time

import pytest
import torch

from cyoa.generation.engine import batching
from cyoa.generation.engine.batching import Batch, leading_padding
from cyoa.generation.types import Sampling


def test_leading_padding_counts_columns_empty_in_every_row():
    assert leading_padding(torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]])) == 1
    assert leading_padding(torch.tensor([[1, 1], [0, 1]])) == 0


# The shape of the tiny random models (both layouts).
TINY_SHAPE = dict(
    vocab_size=50,
    hidden_size=16,
    intermediate_size=32,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=8,
    max_position_embeddings=64,
)


def tiny_models() -> dict[str, torch.nn.Module]:
    """Two tiny random models: Gemma-3 layout (sliding window of 3 tokens beside full
    attention, so a few steps cross the window) and Llama layout (SmolLM2's)."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    shape = TINY_SHAPE
    gemma = Gemma3TextConfig(
        num_hidden_layers=3,
        sliding_window=3,
        layer_types=["sliding_attention", "full_attention", "sliding_attention"],
        **shape,
    )
    llama = LlamaConfig(num_hidden_layers=2, **shape)
    return {"gemma3": Gemma3ForCausalLM(gemma).eval(), "llama": LlamaForCausalLM(llama).eval()}


@pytest.mark.parametrize("layout", ["gemma3", "llama"])
@pytest.mark.parametrize("together", [False, True], ids=["join-then-step", "one-pass"])
def test_rows_joining_and_leaving_see_exactly_what_they_would_alone(layout, together, monkeypatch):
    """Rows join a running batch either on their own (``Batch.join``, then the batch steps)
    or packed into the same forward pass as the rows decoding (``Batch.advance``, whose
    rows write their keys into spare room, here two columns, so it runs out); either way
    every row's logits are those of its tokens run alone."""
    monkeypatch.setattr(batching, "ROOM", 2)
    model = tiny_models()[layout]
    generator = torch.Generator().manual_seed(1)

    def tokens(n: int) -> list[int]:
        return torch.randint(3, 50, (n,), generator=generator).tolist()

    # Each row: its prompt, the tokens it is then fed, and the step at which it joins.
    rows = {
        "a": (tokens(6), tokens(5), 0),
        "b": (tokens(2), tokens(7), 2),
        "c": (tokens(9), tokens(6), 2),
        "d": (tokens(1), tokens(3), 6),
    }
    with torch.inference_mode():
        alone = {
            name: model(input_ids=torch.tensor([prompt + fed])).logits[0, len(prompt) - 1 :]
            for name, (prompt, fed, _) in rows.items()
        }
    batch = Batch(model, pad_id=0)

    def head(hidden: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            return model.lm_head(hidden)

    order: list[str] = []
    done = {name: 0 for name in rows}  # tokens fed so far
    compared = 0

    def check_fed(names: list[str], logits: torch.Tensor) -> None:
        nonlocal compared
        for name, row_logits in zip(names, logits, strict=True):
            done[name] += 1
            torch.testing.assert_close(row_logits, alone[name][done[name]], atol=1e-5, rtol=1e-4)
            compared += 1

    def check_joined(names: list[str], logits: torch.Tensor) -> None:
        for name, row_logits in zip(names, logits, strict=True):
            torch.testing.assert_close(row_logits, alone[name][0], atol=1e-5, rtol=1e-4)

    for step in range(12):
        joining = [name for name, (_, _, at) in rows.items() if at == step]
        if joining and not together:
            check_joined(joining, head(batch.join([rows[name][0] for name in joining])))
            order += joining
        # A row leaves once it has been fed all its tokens.
        staying = [i for i, name in enumerate(order) if done[name] < len(rows[name][1])]
        batch.keep(staying)
        order = [order[i] for i in staying]
        fed = [rows[name][1][done[name]] for name in order]
        if joining and together:
            logits = head(batch.advance(fed, [rows[name][0] for name in joining]))
            check_fed(order, logits[: len(order)])
            check_joined(joining, logits[len(order) :])
            order += joining
        elif order:
            check_fed(order, head(batch.advance(fed, []) if together else batch.step(fed)))
    assert done == {name: len(fed) for name, (_, fed, _) in rows.items()}
    assert compared == sum(len(fed) for _, fed, _ in rows.values())
    batch.keep([])
    assert batch.rows == 0


# Float32 rounding: a packed pass and a step multiply the same rows in differently shaped
# products, and whether the CPU's kernels (oneDNN, MKL) then sum in the same order depends on
# the instruction set they pick (AMX, AVX-512, AVX2). The states agree to rounding everywhere.
FLOAT32_ROUNDING = dict(atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("layout", ["gemma3", "llama"])
def test_the_decoding_rows_of_a_packed_pass_get_a_step_s_hidden_states(layout, monkeypatch):
    """Packing the decoding rows' tokens into one sequence changes nothing for them but
    float32 rounding. A prompt read before to its last token joins without reading anything,
    so the pass that adds it runs only the decoding rows; they get what a step gives them,
    and the joining row gets its stored state exactly (nothing is computed for it)."""
    from cyoa.generation.engine.prefixes import PrefixStore

    model = tiny_models()[layout]
    prompts = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15]]
    store = PrefixStore()
    stored = Batch(model, pad_id=0).join([[30, 31, 32]], store)
    stepped, packed = Batch(model, pad_id=0), Batch(model, pad_id=0)
    stepped.join(prompts)
    packed.join(prompts)
    expected = stepped.step([20, 21, 22])
    got = packed.advance([20, 21, 22], [[30, 31, 32]], store)
    torch.testing.assert_close(got[:3], expected, **FLOAT32_ROUNDING)
    assert torch.equal(got[3], stored[0])
    assert packed.rows == 4 and store.hits == 1
    # The next steps of the packed batch go on for all four rows, their keys written into
    # spare room (two columns, then a copy with more) or, in a full sliding window, not.
    monkeypatch.setattr(batching, "ROOM", 2)
    for fed in ([23, 24, 25], [26, 27, 28], [29, 30, 31], [32, 33, 34]):
        torch.testing.assert_close(
            packed.advance([*fed, 40], [])[:3], stepped.step(fed), **FLOAT32_ROUNDING
        )


def test_columns_that_are_padding_everywhere_are_dropped_when_rows_leave():
    model = tiny_models()["gemma3"]
    batch = Batch(model, pad_id=0)
    batch.join([[4, 5, 6, 7, 8, 9], [4, 5]])
    batch.step([10, 11])
    assert batch.mask.shape == (2, 7)
    batch.keep([1])
    # The short row had 4 padding columns on its left; they go with the long row.
    assert batch.mask.tolist() == [[1, 1, 1]]
    full = [layer for layer in batch.cache.layers if not layer.is_sliding]
    assert all(layer.keys.shape[-2] == 3 for layer in full)
    assert batch.cache.get_seq_length() == 3


# The packaged models, through the backend's scheduler.

STORY = "The lighthouse keeper found a letter on the rocks. It was addressed to him."


@pytest.fixture(scope="module")
def gemma(shared_gemma):
    """Gemma-3-270M twice: batched (the app's default) and naive (each request alone), the
    worker's shared loads with nothing kept from the tests before this file's."""
    return {mode: shared_gemma(mode, emptied=True) for mode in ("batched", "naive")}


def together(backend, requests: list[tuple[Sampling, int]]) -> list[list[str]]:
    """Every request streamed at once, each read by its own thread; the pieces of each."""
    results: list[list[str]] = [[] for _ in requests]
    start = threading.Barrier(len(requests))

    def read(index: int, sampling: Sampling, seed: int) -> None:
        start.wait()
        results[index] = list(backend.stream(STORY, sampling, seed))

    threads = [
        threading.Thread(target=read, args=(i, *request)) for i, request in enumerate(requests)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


@pytest.mark.real_model
def test_three_rows_in_one_batch_each_give_their_text_alone(gemma):
    requests = [(Sampling(max_new_tokens=24), seed) for seed in (1, 2, 3)]
    alone = [list(gemma["naive"].stream(STORY, s, seed)) for s, seed in requests]
    assert together(gemma["batched"], requests) == alone
    assert len({"".join(pieces) for pieces in alone}) == 3


@pytest.mark.real_model
def test_top_k_and_nucleus_rows_share_a_batch_with_their_own_sampling(gemma):
    requests = [
        (Sampling(top_k=40, max_new_tokens=20), 7),
        (Sampling(top_k=0, top_p=0.9, max_new_tokens=20), 7),
    ]
    alone = [list(gemma["naive"].stream(STORY, s, seed)) for s, seed in requests]
    assert together(gemma["batched"], requests) == alone


def rows_settle(backend, rows: int, timeout: float = 5.0) -> bool:
    """Whether the backend's batch comes down to ``rows`` rows within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while backend.batch_rows() != rows and time.monotonic() < deadline:
        time.sleep(0.005)
    return backend.batch_rows() == rows


@pytest.mark.real_model
def test_a_reader_that_stops_takes_its_row_out_and_the_others_go_on(gemma):
    backend = gemma["batched"]
    long = Sampling(max_new_tokens=40)
    stopped = backend.stream(STORY, long, 11)
    kept = backend.stream(STORY, long, 12)
    kept_pieces = [next(kept)]
    next(stopped)
    assert backend.batch_rows() == 2
    stopped.close()
    # Within a step or two the batch holds only the row still read.
    assert rows_settle(backend, 1)
    kept_pieces += list(kept)
    assert rows_settle(backend, 0)
    assert len(kept_pieces) > 10
    assert kept_pieces == list(gemma["naive"].stream(STORY, long, 12))


@pytest.mark.real_model
def test_a_joining_row_samples_its_first_token_with_the_rows_already_decoding(gemma, monkeypatch):
    """One pass over the vocabulary per scheduler iteration: the rows that step and the rows
    that join sample together, and the joining row still gets its text alone."""
    from cyoa.generation.engine import scheduler

    calls: list[tuple[int, ...]] = []  # the rows (their generators) of each sampling pass
    original = scheduler.sample_rows_from_hidden

    def recording(hidden, samplings, generators, vocabulary):
        calls.append(tuple(id(generator) for generator in generators))
        return original(hidden, samplings, generators, vocabulary)

    monkeypatch.setattr(scheduler, "sample_rows_from_hidden", recording)
    backend = gemma["batched"]
    long = Sampling(max_new_tokens=40)
    first = backend.stream(STORY, long, 21)
    first_pieces = [next(first) for _ in range(3)]
    second = backend.stream(STORY, long, 22)
    second_pieces = list(second)
    first_pieces += list(first)
    (first_row,) = calls[0]
    # The second row's first token comes from a pass that also samples the first row's.
    joined = next(call for call in calls if call != (first_row,))
    assert len(joined) == 2 and first_row in joined
    assert second_pieces == list(gemma["naive"].stream(STORY, long, 22))
    assert first_pieces == list(gemma["naive"].stream(STORY, long, 21))


def test_sampling_rows_together_draws_what_each_row_draws_alone():
    from cyoa.generation.engine.sampling import sample_next_token, sample_rows

    logits = torch.randn(5, 300, generator=torch.Generator().manual_seed(3)) * 3
    samplings = [
        Sampling(top_k=40),
        Sampling(top_k=0, top_p=0.9),
        Sampling(top_k=40),
        Sampling(top_k=5, temperature=0.7),
        Sampling(top_k=0, top_p=0.9),
    ]
    banned = torch.tensor([1, 2, 3])
    for seed in range(20):
        together = sample_rows(
            logits, samplings, [torch.Generator().manual_seed(seed + i) for i in range(5)], banned
        )
        alone = [
            sample_next_token(logits[i], s, torch.Generator().manual_seed(seed + i), banned)
            for i, s in enumerate(samplings)
        ]
        assert together == alone
        assert not set(together) & {1, 2, 3}
