"""The GPU backend (:mod:`cyoa.generation.engine.generate`): transformers' batched ``generate``
with the CPU engine's sampling. Its logic runs here on the CPU with a tiny random model:
the same text as the engine for the same seed, the same text alone or in a batch, a row
that leaves when its reader stops. The CUDA tests run only where torch sees a CUDA GPU."""

from __future__ import annotations

import threading

import pytest
import torch
from tiny_checkpoint import save_tiny_checkpoint, smollm2_tokenizer

from cyoa.generation import System, generate_suggestion, load_model_card
from cyoa.generation.engine import NAIVE, load_local_model
from cyoa.generation.engine.generate import GenerateModel
from cyoa.generation.local import TransformersBackend
from cyoa.generation.types import Sampling

PROMPTS = [
    "The lighthouse keeper found a letter on the rocks.",
    "It rained.",
    "Nobody in the village had ever seen the sea, and nobody wanted to.",
]
SAMPLINGS = [
    Sampling(top_k=40, max_new_tokens=12),
    Sampling(top_k=0, top_p=0.9, temperature=0.7, max_new_tokens=8),
    Sampling(top_k=5, temperature=1.3, max_new_tokens=15),
]
# Every prompt with every sampling, each with its own seed.
REQUESTS = [
    (prompt, sampling, 10 * p + s)
    for p, prompt in enumerate(PROMPTS)
    for s, sampling in enumerate(SAMPLINGS)
]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    tokenizer = smollm2_tokenizer(tmp_path_factory.mktemp("tokenizer"))
    return save_tiny_checkpoint(tmp_path_factory.mktemp("checkpoint") / "tiny", tokenizer)


@pytest.fixture(scope="module")
def tokenizer(checkpoint):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)


@pytest.fixture(scope="module")
def generate_model(checkpoint, tokenizer):
    model = GenerateModel(checkpoint, tokenizer, name="tiny", device="cpu")
    yield model
    model.close()


def together(model, requests) -> list[list[str]]:
    """Each request's pieces, all streamed at once (from one thread each)."""
    pieces: list[list[str]] = [[] for _ in requests]

    def read(i: int) -> None:
        pieces[i] = list(model.stream(*requests[i]))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return pieces


def test_generate_writes_the_cpu_engine_s_text_for_the_same_seed(
    checkpoint, tokenizer, generate_model
):
    engine = load_local_model(checkpoint, tokenizer, name="tiny", mode=NAIVE)
    for request in REQUESTS:
        assert "".join(generate_model.stream(*request)) == "".join(engine.stream(*request))


def test_a_row_s_text_is_the_same_alone_and_in_a_batch(generate_model):
    alone = [list(generate_model.stream(*request)) for request in REQUESTS]
    assert together(generate_model, REQUESTS) == alone


def test_a_row_ends_at_its_own_max_new_tokens_in_a_batch(generate_model):
    requests = [(PROMPTS[0], Sampling(top_k=40, max_new_tokens=n), 1) for n in (3, 20)]
    assert [len(pieces) for pieces in together(generate_model, requests)] == [3, 20]


def test_a_reader_that_stops_reading_takes_its_row_out_of_the_batch(generate_model):
    stream = generate_model.stream(PROMPTS[0], Sampling(top_k=40, max_new_tokens=60), 1)
    next(stream)
    stream.close()
    # The model goes on to serve the next request, whole.
    assert len(list(generate_model.stream(PROMPTS[1], SAMPLINGS[0], 2))) == 12


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@cuda
def test_a_card_on_cuda_loads_there_and_repeats_its_text_for_the_same_seed(tmp_path, checkpoint):
    path = tmp_path / "gpu.toml"
    path.write_text(
        f'backend = "transformers"\npath = "{checkpoint}"\n[sampling]\ntop_k = 40\n'
        '[options]\ndevice = "cuda"\n'
    )
    card = load_model_card(path)
    backend = TransformersBackend(card, tmp_path / "cache")
    system = System(card.name, card, card.sampling)
    first = generate_suggestion(backend, system, PROMPTS[:1], 3)
    assert backend.device == "cuda:0" and isinstance(backend.local_model, GenerateModel)
    assert generate_suggestion(backend, system, PROMPTS[:1], 3).text == first.text
