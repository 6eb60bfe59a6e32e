"""The model pool loads the models stored experiments use at start, and any other card when
asked, while the app runs; a loaded model can be let go. Fake models (no weights)."""

from __future__ import annotations

import threading

import pytest

from cyoa.generation import ModelPool
from cyoa.generation.pool import ModelNotAvailable
from cyoa.generation.types import ModelCard, Sampling
from tests.generation.test_generation_fake import fake_card


def pool_of(tmp_path, *names: str, at_start=()) -> ModelPool:
    return ModelPool({n: fake_card(n) for n in names}, tmp_path, load_at_start=at_start)


def test_a_card_no_experiment_needs_is_not_loaded_until_asked(tmp_path):
    pool = pool_of(tmp_path, "fake-a", "fake-b", at_start=["fake-a"])
    assert pool.wait_ready(timeout=5)
    assert pool.status()["fake-b"]["state"] == "not_loaded"
    assert pool.is_ready() and not pool.is_ready(["fake-a", "fake-b"])


def test_asking_for_a_model_that_is_not_loaded_loads_it(tmp_path):
    pool = pool_of(tmp_path, "fake-a", at_start=[])
    assert pool.get("fake-a", timeout=5).card.name == "fake-a"
    assert pool.status()["fake-a"]["state"] == "ready"


def test_loading_a_model_while_running_tells_the_caller_when_it_is_ready(tmp_path):
    pool = pool_of(tmp_path, "fake-a", "fake-b", at_start=["fake-a"])
    done = threading.Event()
    outcome: list[dict[str, str]] = []
    pool.load(["fake-b"], then=lambda errors: (outcome.append(errors), done.set()))
    assert done.wait(5)
    assert outcome == [{}]
    assert pool.status()["fake-b"]["state"] == "ready"
    assert pool.get("fake-b", timeout=1).card.name == "fake-b"


def test_asking_for_a_ready_model_answers_at_once(tmp_path):
    pool = pool_of(tmp_path, "fake-a", at_start=["fake-a"])
    assert pool.wait_ready(timeout=5)
    outcome: list[dict[str, str]] = []
    pool.load(["fake-a"], then=outcome.append)
    assert outcome == [{}]


def test_a_model_that_fails_to_load_is_named_with_its_error(tmp_path):
    broken = ModelCard(
        name="broken", display_name="broken", backend="transformers", sampling=Sampling(),
        package="no-such-weights-package", weights_file="model.gguf", version="1.0",
    )  # fmt: skip
    pool = ModelPool({"broken": broken}, tmp_path, load_at_start=[])
    done = threading.Event()
    outcome: list[dict[str, str]] = []
    pool.load(["broken"], then=lambda errors: (outcome.append(errors), done.set()))
    assert done.wait(30)
    assert list(outcome[0]) == ["broken"] and "no-such-weights-package" in outcome[0]["broken"]
    assert pool.status()["broken"]["state"] == "failed"


def test_a_card_the_pool_cannot_run_is_failed_unless_an_experiment_needs_it(tmp_path):
    odd = ModelCard(name="odd", display_name="odd", backend="telepathy", sampling=Sampling())
    pool = ModelPool({"odd": odd, "fake-a": fake_card("fake-a")}, tmp_path, load_at_start=[])
    assert pool.status()["odd"]["state"] == "failed"
    assert "telepathy" in pool.status()["odd"]["error"]
    with pytest.raises(ModelNotAvailable, match="'odd' could not be loaded.*telepathy"):
        pool.get("odd", timeout=None)  # answered at once, not waited for
    with pytest.raises(ValueError, match="telepathy"):
        ModelPool({"odd": odd}, tmp_path, load_at_start=["odd"])


def test_an_unloaded_model_can_be_loaded_again(tmp_path):
    pool = pool_of(tmp_path, "fake-a", at_start=["fake-a"])
    assert pool.wait_ready(timeout=5)
    first = pool.get("fake-a")
    pool.unload("fake-a")
    assert pool.status()["fake-a"]["state"] == "not_loaded"
    done = threading.Event()
    pool.load(["fake-a"], then=lambda errors: done.set())
    assert done.wait(5)
    assert pool.get("fake-a") is not first


def test_an_unknown_model_is_a_clear_error_everywhere(tmp_path):
    pool = pool_of(tmp_path, "fake-a")
    for call in (lambda: pool.load(["nope"]), lambda: pool.unload("nope")):
        with pytest.raises(ModelNotAvailable, match="No model named 'nope'.*fake-a"):
            call()
