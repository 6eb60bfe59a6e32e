"""The two packaged models, loaded for real through the model pool.

The models come from the cache in ``$CYOA_MODEL_CACHE`` (default ``instance/models``, where
``make models`` converts them). If the cache lacks them they are converted first, which
takes a minute or two on two cores.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest

from cyoa.generation import (
    ModelPool,
    Sampling,
    Suggestion,
    System,
    generate_suggestion,
    load_model_cards,
)
from tests.paths import ROOT

pytestmark = pytest.mark.real_model

CACHE = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
MODELS = ["gemma-3-270m", "smollm2-135m-instruct"]
STORY = [
    "The lighthouse keeper found a letter on the rocks.",
    "It was addressed to him, in his dead wife's handwriting.",
]


@pytest.fixture(scope="module")
def pool() -> ModelPool:
    cards = load_model_cards(ROOT / "models")
    pool = ModelPool({name: cards[name] for name in MODELS}, CACHE)
    assert pool.wait_ready(timeout=900), pool.status()
    return pool


def suggest(pool: ModelPool, name: str, seed: int) -> Suggestion:
    backend = pool.get(name)
    return generate_suggestion(
        backend, System(name, backend.card, backend.card.sampling), STORY, seed
    )


def looks_like_english(text: str) -> bool:
    words = re.findall(r"[A-Za-z']+", text)
    letters = sum(ch.isalpha() for ch in text)
    return len(words) >= 3 and letters >= 0.6 * len(text.replace(" ", ""))


@pytest.mark.parametrize("name", MODELS)
def test_each_model_writes_one_english_sentence(pool, name):
    suggestion = suggest(pool, name, seed=1)
    assert 20 <= len(suggestion.text) <= 260
    assert looks_like_english(suggestion.text), suggestion.text
    # Either a sentence end (maybe inside quotes) or a cut after a whole word.
    assert re.search(r"([.!?…][\"'”’)\]]*|\w)$", suggestion.text), suggestion.text
    assert suggestion.model == name
    assert suggestion.model_version == pool.get(name).card.version
    assert 0 < suggestion.token_count <= pool.get(name).card.sampling.max_new_tokens
    assert 0 < suggestion.first_token_seconds <= suggestion.generation_seconds


@pytest.mark.parametrize("name", MODELS)
def test_the_same_seed_reproduces_the_text_and_other_seeds_differ(pool, name):
    texts = [suggest(pool, name, seed).text for seed in (11, 12, 13)]
    assert suggest(pool, name, 11).text == texts[0]
    assert len(set(texts)) >= 2, texts


def test_both_models_generate_at_the_same_time_with_unchanged_results(pool):
    alone = {name: suggest(pool, name, seed=5).text for name in MODELS}
    together: dict[str, str] = {}
    spans: dict[str, tuple[float, float]] = {}
    start = threading.Barrier(len(MODELS))

    def run(name: str) -> None:
        start.wait()
        began = time.perf_counter()
        together[name] = suggest(pool, name, seed=5).text
        spans[name] = (began, time.perf_counter())

    threads = [threading.Thread(target=run, args=(name,)) for name in MODELS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert together == alone
    (a_start, a_end), (b_start, b_end) = spans.values()
    assert a_start < b_end and b_start < a_end  # the two runs overlapped in time


def test_two_writers_on_one_model_get_their_own_seeded_text(pool):
    name = "smollm2-135m-instruct"
    alone = {seed: suggest(pool, name, seed).text for seed in (21, 22)}
    together: dict[int, str] = {}
    threads = [
        threading.Thread(target=lambda s=seed: together.__setitem__(s, suggest(pool, name, s).text))
        for seed in alone
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert together == alone


def test_characters_split_over_several_tokens_stream_out_whole(pool):
    # SmolLM2's byte-level tokens split an emoji over two or three tokens.
    backend = pool.get("smollm2-135m-instruct")
    prompt = "Zoë ate crème brûlée 🍮🍮 at the café 😀😀. Then she said: 😀"
    streamed = []
    for seed in range(4):
        pieces = list(backend.stream(prompt, Sampling(max_new_tokens=30), seed))
        assert len(pieces) <= 30
        assert not any("\ufffd" in piece for piece in pieces)
        streamed.append("".join(pieces))
    assert any(ord(ch) > 0xFFFF for text in streamed for ch in text), streamed
