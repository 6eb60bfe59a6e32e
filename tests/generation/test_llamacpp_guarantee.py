"""The llama.cpp engine's guarantee, on the packaged GGUF models: a suggestion's text depends
only on its prompt, its sampling and its seed. It is the same alone, inside a batch of other
writers' suggestions (joining while they decode, moved to another stream when they leave),
after a restart (a fresh context) and on one thread or two.

These tests mean this CPU: llama.cpp runs the kernels of the instruction set it finds (AVX2,
AVX-512, …), and another CPU may round differently; on each CPU the property holds, which is
what a restarted server needs to regenerate a recorded suggestion.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

from cyoa.generation import Sampling, load_model_cards
from cyoa.generation.llamacpp.library import llama
from cyoa.generation.llamacpp.model import LlamaModel, context_params, load_gguf, new_context
from cyoa.generation.llamacpp.scheduler import PromptTooLong
from cyoa.generation.llamacpp.settings import GUARANTEE, MODEL
from cyoa.generation.llamacpp.vocabulary import Vocabulary
from cyoa.generation.weights import locate_gguf
from tests.paths import ROOT

CACHE = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
MODELS = ["gemma-3-270m", "smollm2-135m-instruct"]
PROMPT = "The lighthouse keeper found a letter on the rocks. It was addressed to him,"
OTHERS = [
    "My grandmother kept a locked box under her bed for forty years.",
    "The last train of the night stopped in a village that was not on the map. Nobody",
    "We reached the top of the mountain just as the radio went silent.",
]


def test_the_settings_the_guarantee_rests_on_are_fixed_in_code():
    # Changing one of these breaks reproducibility (settings.py says why each is so); the
    # real-model tests below are the proof, this test the tripwire.
    assert GUARANTEE == {
        "kv_unified": False,
        "flash_attn_type": 1,
        "swa_full": True,
        "type_k": 1,
        "type_v": 1,
        "embeddings": False,
        "offload_kqv": False,
        "op_offload": False,
        "no_perf": True,
    }
    assert MODEL == {
        "n_gpu_layers": 0,
        "use_mmap": True,
        "use_mlock": False,
        "use_extra_bufts": False,
    }


def test_every_context_is_made_with_those_settings():
    params = context_params(llama(), rows=16, context_tokens=1024, threads=1)
    for key, value in GUARANTEE.items():
        assert getattr(params, key) == value, key
    assert (params.n_seq_max, params.n_ctx, params.n_outputs_max) == (16, 16 * 1024, 16)


@pytest.fixture(scope="module", params=MODELS)
def gguf(request) -> Path:
    card = load_model_cards(ROOT / "models")[request.param]
    return locate_gguf(card, CACHE / "gguf")


class Streams:
    """Sequences decoded on one fresh llama.cpp context, each continued greedily: ``add``
    starts one in a stream, ``step`` decodes every pending token in one call and returns
    each stream's logits, ``move`` and ``drop`` do what the scheduler does when rows leave."""

    def __init__(self, model, rows: int, threads: int) -> None:
        self.lib = llama()
        self.context = new_context(self.lib, model, rows, 1024, threads)
        self.memory = self.lib.llama_get_memory(self.context)
        self.batch = self.lib.llama_batch_init(2048, 0, 1)
        self.size = self.lib.llama_vocab_n_tokens(self.lib.llama_model_get_vocab(model))
        self.pending: dict[int, list[int]] = {}
        self.position: dict[int, int] = {}

    def add(self, stream: int, ids: list[int]) -> None:
        self.lib.llama_memory_seq_rm(self.memory, stream, -1, -1)
        self.pending[stream], self.position[stream] = list(ids), 0

    def step(self) -> dict[int, np.ndarray]:
        batch, count, scored = self.batch, 0, {}
        for stream in sorted(self.pending):
            ids = self.pending[stream]
            for i, token in enumerate(ids):
                batch.token[count], batch.pos[count] = token, self.position[stream] + i
                batch.n_seq_id[count], batch.seq_id[count][0] = 1, stream
                batch.logits[count] = i == len(ids) - 1
                count += 1
            scored[stream] = count - 1
            self.position[stream] += len(ids)
        batch.n_tokens = count
        assert self.lib.llama_decode(self.context, batch) == 0
        out = {}
        for stream, index in scored.items():
            pointer = self.lib.llama_get_logits_ith(self.context, index)
            out[stream] = np.ctypeslib.as_array(pointer, shape=(self.size,)).copy()
            self.pending[stream] = [int(out[stream].argmax())]
        return out

    def move(self, source: int, target: int) -> None:
        self.lib.llama_memory_seq_cp(self.memory, source, target, -1, -1)
        self.lib.llama_memory_seq_rm(self.memory, source, -1, -1)
        self.pending[target] = self.pending.pop(source)
        self.position[target] = self.position.pop(source)

    def drop(self, stream: int) -> None:
        self.lib.llama_memory_seq_rm(self.memory, stream, -1, -1)
        del self.pending[stream], self.position[stream]

    def close(self) -> None:
        self.lib.llama_batch_free(self.batch)
        self.lib.llama_free(self.context)


STEPS = 8


def alone(model, ids: list[int], threads: int) -> list[bytes]:
    streams = Streams(model, rows=4, threads=threads)
    try:
        streams.add(0, ids)
        return [streams.step()[0].tobytes() for _ in range(STEPS)]
    finally:
        streams.close()


def in_a_batch(model, ids: list[int], others: list[list[int]], threads: int) -> list[bytes]:
    """The target joins streams 0–2 while they decode (a stream reused after a sequence left
    it), is moved from stream 3 to stream 1 when that one's sequence leaves, and goes on
    beside the rest."""
    streams = Streams(model, rows=4, threads=threads)
    try:
        streams.add(0, others[2])
        streams.step()
        streams.drop(0)
        for stream, other in enumerate(others):
            streams.add(stream, other)
        streams.step()
        streams.add(3, ids)
        seen = []
        for step in range(STEPS):
            seen.append(streams.step()[1 if step > 2 else 3].tobytes())
            if step == 2:
                streams.drop(1)
                streams.move(3, 1)
        return seen
    finally:
        streams.close()


@pytest.mark.real_model
def test_a_sequence_s_logits_are_the_same_bits_alone_in_a_batch_and_on_one_or_two_threads(gguf):
    lib = llama()
    model = load_gguf(lib, gguf)
    try:
        vocabulary = Vocabulary(lib, model)
        ids = vocabulary(PROMPT).input_ids
        others = [vocabulary(text).input_ids for text in OTHERS]
        reference = alone(model, ids, threads=1)
        assert alone(model, ids, threads=2) == reference
        assert in_a_batch(model, ids, others, threads=1) == reference
        assert in_a_batch(model, ids, others, threads=2) == reference
    finally:
        lib.llama_model_free(model)


def read(pieces, seen_rows: list[int] | None = None, model: LlamaModel | None = None) -> str:
    text = ""
    for piece in pieces:
        text += piece
        if seen_rows is not None:
            seen_rows.append(model.rows)
    return text


@pytest.mark.real_model
def test_a_suggestion_is_the_same_alone_among_other_writers_after_a_restart_and_on_two_threads(
    gguf,
):
    sampling = Sampling(top_k=40, temperature=1.0, max_new_tokens=40)
    first = LlamaModel(gguf, name="first", rows=4, threads=1)
    try:
        reference = read(first.stream(PROMPT, sampling, seed=7))
        others = [
            first.stream(text, Sampling(top_k=0, top_p=0.9, max_new_tokens=60), seed=i)
            for i, text in enumerate(OTHERS)
        ]
        for pieces in others:
            next(pieces)  # each is decoding before the suggestion joins
        texts: dict[int, str] = {}

        def other(index: int) -> None:
            if index == 0:  # a writer who stops reading: the suggestion moves into its stream
                next(others[0])
                others[0].close()
            else:
                texts[index] = read(others[index])

        readers = [threading.Thread(target=other, args=(i,)) for i in range(len(OTHERS))]
        rows: list[int] = []
        target = first.stream(PROMPT, sampling, seed=7)
        for reader in readers:
            reader.start()
        together = read(target, rows, first)
        for reader in readers:
            reader.join(timeout=60)
        assert together == reference
        assert max(rows) >= 2, rows  # it was decoded inside a batch
    finally:
        first.close()
    restarted = LlamaModel(gguf, name="restarted", rows=4, threads=2)
    try:
        assert read(restarted.stream(PROMPT, sampling, seed=7)) == reference
        assert read(restarted.stream(PROMPT, sampling, seed=8)) != reference
    finally:
        restarted.close()


@pytest.mark.real_model
def test_a_prompt_longer_than_a_row_holds_says_which_option_to_raise(gguf):
    model = LlamaModel(gguf, name="short", rows=1, context_tokens=256, card_file="my.toml")
    try:
        with pytest.raises(PromptTooLong, match=r"options.context_tokens = 512 .*my.toml"):
            read(model.stream(PROMPT * 20, Sampling(max_new_tokens=60), seed=1))
        assert read(model.stream(PROMPT, Sampling(max_new_tokens=3), seed=1))
    finally:
        model.close()


@pytest.mark.real_model
def test_a_suggestion_is_the_same_when_another_writer_s_prompt_arrives_with_it(gguf):
    # llama.cpp splits one call's prompts into passes of equal length per sequence, and
    # Gemma's logits for a token depend on which of its own tokens share its pass: a
    # prompt decoded beside a shorter one (here 13 and 16 tokens) was cut in two.
    sampling = Sampling(top_k=40, temperature=1.0, max_new_tokens=12)
    model = LlamaModel(gguf, name="pairs", rows=4, threads=1)
    try:
        reference = read(model.stream(PROMPT, sampling, seed=3))
        ids = model.vocabulary(PROMPT).input_ids
        for shorter in (len(ids) - 4, len(ids) - 1):
            other = model.vocabulary.decode(model.vocabulary(OTHERS[1]).input_ids[1:shorter])
            model._scheduler.window_seconds = 0.5  # both arrive within one collecting window
            beside = threading.Thread(target=read, args=(model.stream(other, sampling, 4),))
            beside.start()
            together = read(model.stream(PROMPT, sampling, seed=3))
            beside.join(timeout=60)
            assert together == reference, shorter
    finally:
        model.close()


@pytest.mark.real_model
def test_a_suggestion_is_the_same_among_fifteen_other_writers_decoding(gguf):
    # From eight tokens a call, llama.cpp multiplied Gemma's layers with another kernel
    # (other rounding) than for one row alone: a row's text changed once eight writers
    # decoded together (bench/results/llamacpp-probe.md).
    sampling = Sampling(top_k=40, temperature=1.0, max_new_tokens=12)
    model = LlamaModel(gguf, name="crowd", rows=16, threads=1)
    try:
        reference = read(model.stream(PROMPT, sampling, seed=5))
        long = Sampling(top_k=40, temperature=1.0, max_new_tokens=40)
        others = [model.stream(OTHERS[i % 3], long, seed=100 + i) for i in range(15)]
        for pieces in others:
            next(pieces, None)  # each is decoding (or done) before the suggestion joins
        readers = [threading.Thread(target=read, args=(pieces,)) for pieces in others]
        for reader in readers:
            reader.start()
        rows: list[int] = []
        together = read(model.stream(PROMPT, sampling, seed=5), rows, model)
        for reader in readers:
            reader.join(timeout=120)
        assert max(rows) >= 9, rows  # it was decoded among at least eight others
        assert together == reference
    finally:
        model.close()
