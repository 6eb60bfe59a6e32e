"""Texts read before: a prompt that begins with a stored one, or shares its beginning, reads
only the rest, and gives what reading it whole gives (up to float32 rounding).

The batch tests use the tiny random models of test_generation_batching (Gemma-3 layout with a
sliding window of 3 tokens, so stored prefixes cross the window, and Llama layout).
"""

from __future__ import annotations

import time

import pytest
import torch

from cyoa.generation.engine.batching import Batch
from cyoa.generation.engine.prefixes import PrefixStore
from tests.generation.test_generation_batching import tiny_models
from tests.paths import ROOT


class FakeLayer:
    """Test stand-in for a cache layer: keys and values of ``held`` columns."""

    def __init__(self, held: int) -> None:
        self.keys = torch.arange(held, dtype=torch.float32).reshape(1, 1, held, 1)
        self.values = self.keys.clone()


class FakeCache:
    """Test stand-in for a KV cache of ``length`` tokens whose layer holds ``held`` columns
    (fewer: a sliding-window layer that dropped the oldest)."""

    def __init__(self, length: int, held: int | None = None) -> None:
        self.layers = [FakeLayer(length if held is None else held)]
        self.length = length


def store_with(*prompts: list[int], max_tokens: int = 100, min_shared: int = 1) -> PrefixStore:
    store = PrefixStore(max_tokens=max_tokens, min_shared=min_shared)
    for ids in prompts:
        store.put(ids, FakeCache(len(ids)), torch.zeros(4))
    return store


def test_the_longest_stored_prompt_that_begins_a_prompt_is_found():
    store = store_with([1, 2], [7, 8, 9], [1, 5, 6])
    assert store.longest([1, 2, 3, 4]).ids == (1, 2)
    assert store.longest([1, 5, 6]).ids == (1, 5, 6)  # the whole prompt
    assert store.longest([2, 1]) is None
    assert (store.hits, store.tokens_reused) == (2, 5)


def test_a_prompt_that_shares_the_beginning_of_a_stored_text_gets_those_tokens():
    store = store_with([1, 2, 3, 4], [1, 2, 9])
    assert store_with([1, 2, 3, 4], min_shared=4).longest([1, 2, 3, 7]) is None  # too few
    shared = store.longest([1, 2, 3, 7, 8])
    assert shared.ids == (1, 2, 3) and shared.hidden is None  # the last token is read
    assert shared.cache.layers[0].keys.flatten().tolist() == [0.0, 1.0, 2.0]  # first columns
    assert store.longest([1, 2, 3, 4, 5]).ids == (1, 2, 3, 4)  # all of it: as before
    # A prompt inside a stored text: all but its last token, read for its hidden state.
    assert store.longest([1, 2]).ids == (1,)
    assert (store.hits, store.tokens_reused) == (3, 8)


def test_a_text_stored_without_its_hidden_state_leaves_a_prompt_its_last_token_to_read():
    store = PrefixStore(min_shared=1)
    store.put([1, 2, 3], FakeCache(3), None)  # what a row generated
    assert store.longest([1, 2, 3]).ids == (1, 2)
    assert store.longest([1, 2, 3, 4]).ids == (1, 2, 3)


def test_a_text_past_its_sliding_window_serves_only_prompts_that_begin_with_all_of_it():
    store = PrefixStore(min_shared=1)
    store.put([1, 2], FakeCache(2), torch.zeros(4))
    store.put([1, 2, 3, 4, 5], FakeCache(5, held=2), torch.zeros(4))
    assert store.longest([1, 2, 3, 4, 5, 6]).ids == (1, 2, 3, 4, 5)
    assert store.longest([1, 2, 3, 9]).ids == (1, 2)  # the shorter text was kept for this
    assert len(store) == 2


def test_a_longer_prompt_replaces_the_stored_prompts_it_begins_with():
    store = store_with([1, 2], [1, 2, 3], [4])
    assert len(store) == 2 and store.tokens == 4
    assert store.longest([1, 2, 3, 9]).ids == (1, 2, 3)


def test_a_cleared_store_serves_nothing_and_takes_texts_again():
    store = store_with([1, 2], [7, 8, 9])
    store.longest([1, 2, 3])
    store.clear()
    assert len(store) == 0 and store.tokens == 0
    assert store.longest([1, 2, 3]) is None
    store.put([7, 8], FakeCache(2), torch.zeros(4))
    assert store.longest([7, 8, 9]).ids == (7, 8) and store.tokens == 2
    assert store.hits == 2  # the counts of what it served before stay


class Clock:
    """Test stand-in for the store's clock: the time is what the test sets."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_new_text_is_not_stored_while_every_stored_one_is_in_use():
    clock = Clock()
    store = PrefixStore(max_tokens=7, min_shared=1, clock=clock)
    store.put([1, 1, 1], FakeCache(3), torch.zeros(4))
    store.put([2, 2, 2], FakeCache(3), torch.zeros(4))
    clock.now = 599.0
    store.put([3, 3, 3], FakeCache(3), torch.zeros(4))
    assert store.tokens == 6 and store.longest([3, 3, 3]) is None
    assert store.longest([1, 1, 1]) is not None and store.longest([2, 2, 2]) is not None
    store.put(list(range(8)), FakeCache(8), torch.zeros(4))  # longer than the store: skipped
    assert store.longest(list(range(8))) is None


def test_texts_unused_for_ten_minutes_make_room_the_least_recently_used_first():
    clock = Clock()
    store = PrefixStore(max_tokens=14, min_shared=1, clock=clock)
    store.put([1] * 8 + [2, 2], FakeCache(10), torch.zeros(4))
    store.put([3, 3, 3], FakeCache(3), torch.zeros(4))
    clock.now = 300.0
    store.longest([1] * 8 + [5])  # used in part: that does not keep it in use
    store.longest([3, 3, 3, 4])  # used whole: in use again
    clock.now = 650.0
    store.put([4, 4, 4], FakeCache(3), torch.zeros(4))
    assert store.tokens == 6
    assert store.longest([1] * 8 + [6]) is None
    assert store.longest([3, 3, 3, 9]).ids == (3, 3, 3)
    assert store.longest([4, 4, 4, 9]).ids == (4, 4, 4)


def test_a_text_not_stored_leaves_the_texts_it_would_have_replaced():
    store = store_with([1, 2, 3], [9, 9, 9, 9], max_tokens=7)
    store.put([1, 2, 3, 4, 5], FakeCache(5), None, prompt_length=3)  # 2 tokens too many
    assert store.tokens == 7
    assert store.longest([1, 2, 3, 7]).ids == (1, 2, 3)


def test_the_next_rounds_prompt_drops_the_branches_generated_after_the_last_rounds():
    story = [1, 2, 3, 4]
    store = store_with(story, [9, 9, 9])  # a round's prompt, and another writer's story
    store.put(story + [5, 6], FakeCache(6), None, prompt_length=4)  # the kept suggestion
    store.put(story + [7, 8], FakeCache(6), None, prompt_length=4)  # the one not kept
    assert len(store) == 3 and store.tokens == 15  # both branches stay within the round
    # Next round: the story with the kept suggestion (edited after 5) and a new line.
    next_round = story + [5, 0, 3]
    assert store.longest(next_round).ids == (1, 2, 3, 4, 5)
    store.put(next_round, FakeCache(7), torch.zeros(4))
    assert len(store) == 2 and store.tokens == 10  # both branches are gone
    assert store.longest([9, 9, 9, 1]).ids == (9, 9, 9)  # the other writer's story stays
    assert store.longest(story + [7, 8, 1]).ids == (1, 2, 3, 4)  # served by the new prompt


def test_a_branch_is_kept_when_the_new_text_does_not_extend_its_prompt():
    store = store_with([1, 2, 3, 4])
    store.put([1, 2, 3, 4, 5, 6], FakeCache(6), None, prompt_length=4)
    store.put([1, 2, 7, 7, 7], FakeCache(5), torch.zeros(4))  # shares only part of it
    assert store.longest([1, 2, 3, 4, 5, 6, 0]).ids == (1, 2, 3, 4, 5, 6)
    past_window = [1, 2, 3, 4, 8, 8]  # extends its prompt, but cannot be truncated
    store.put(past_window, FakeCache(6, held=2), torch.zeros(4))
    assert store.longest([1, 2, 3, 4, 5, 6, 0]).ids == (1, 2, 3, 4, 5, 6)


def test_a_stored_cache_is_a_copy_the_caller_may_go_on_extending():
    cache = FakeCache(2)
    store = PrefixStore()
    store.put([1, 2], cache, torch.zeros(4))
    stored = store.longest([1, 2])
    assert stored.cache is not cache and stored.cache.layers[0] is not cache.layers[0]
    assert stored.cache_copy().layers[0] is not stored.cache.layers[0]


@pytest.mark.parametrize("layout", ["gemma3", "llama"])
def test_prompts_that_extend_stored_ones_give_what_reading_them_whole_gives(layout):
    model = tiny_models()[layout]
    generator = torch.Generator().manual_seed(4)

    def tokens(n: int) -> list[int]:
        return torch.randint(3, 50, (n,), generator=generator).tolist()

    story = tokens(5)
    other = tokens(2)
    round_2 = story + tokens(4)  # extends a stored prompt, past the sliding window
    round_3 = round_2 + tokens(1)
    with torch.inference_mode():

        def alone(ids: list[int]) -> torch.Tensor:
            return model(input_ids=torch.tensor([ids])).logits[0, -1]

        def head(hidden: torch.Tensor) -> torch.Tensor:
            return model.lm_head(hidden)

        store = PrefixStore()
        first = Batch(model, pad_id=0)
        logits = head(first.join([story, other], store))
        for row, ids in zip(logits, [story, other], strict=True):
            torch.testing.assert_close(row, alone(ids), atol=1e-5, rtol=1e-4)
        assert len(store) == 2

        # A new batch: one fresh prompt, one extending a stored prompt, one stored exactly;
        # the rows keep the order asked for, and each continues as it would alone.
        fresh = tokens(3)
        batch = Batch(model, pad_id=0)
        prompts = [round_2, fresh, other]
        logits = head(batch.join(prompts, store))
        for row, ids in zip(logits, prompts, strict=True):
            torch.testing.assert_close(row, alone(ids), atol=1e-5, rtol=1e-4)
        assert store.hits == 2
        logits = head(batch.join([round_3], store))
        torch.testing.assert_close(logits[0], alone(round_3), atol=1e-5, rtol=1e-4)
        fed = [tokens(3) for _ in range(4)]
        for step in range(3):
            logits = head(batch.step([f[step] for f in fed]))
            for row, ids, f in zip(logits, [*prompts, round_3], fed, strict=True):
                torch.testing.assert_close(row, alone(ids + f[: step + 1]), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(("layout", "reused"), [("llama", 4), ("gemma3", 0)])
def test_a_prompt_that_shares_a_stored_texts_beginning_reads_on_as_if_read_whole(layout, reused):
    """Llama layout: the stored text's first columns serve the shared opening. Gemma-3 layout
    (a sliding window of 3 tokens): the stored text of 7 tokens has dropped its first
    columns, so it serves nothing here and the prompt is read whole."""
    model = tiny_models()[layout]
    generator = torch.Generator().manual_seed(5)

    def tokens(n: int) -> list[int]:
        return torch.randint(3, 50, (n,), generator=generator).tolist()

    opening, one_story, another = tokens(4), tokens(3), tokens(2)
    with torch.inference_mode():

        def alone(ids: list[int]) -> torch.Tensor:
            return model(input_ids=torch.tensor([ids])).logits[0, -1]

        store = PrefixStore(min_shared=1)
        Batch(model, pad_id=0).join([opening + one_story], store)
        batch = Batch(model, pad_id=0)
        logits = model.lm_head(batch.join([opening + another], store))
        assert store.tokens_reused == reused
        torch.testing.assert_close(logits[0], alone(opening + another), atol=1e-5, rtol=1e-4)
        logits = model.lm_head(batch.step([7]))
        torch.testing.assert_close(logits[0], alone([*opening, *another, 7]), atol=1e-5, rtol=1e-4)


def test_a_finished_row_leaves_its_prompt_and_generated_tokens_in_the_store():
    from cyoa.generation.engine.scheduler import BatchScheduler
    from cyoa.generation.engine.vocabulary import Vocabulary
    from cyoa.generation.types import Sampling
    from tests.generation.test_generation_cores import CharTokenizer, tiny_llama

    model = tiny_llama()
    store = PrefixStore(min_shared=1)
    scheduler = BatchScheduler(
        model, CharTokenizer(), frozenset(), Vocabulary(model), name="tiny", prefixes=store
    )
    scheduler.start()
    try:
        prompt = "Once upon a time"
        first = list(scheduler.stream(prompt, Sampling(max_new_tokens=6), 1))
        # The prompt and the 5 tokens fed after it (the 6th was sampled, never fed), in one
        # text that replaced the prompt's own; stored as the row leaves, just after its end.
        deadline = time.monotonic() + 5
        while store.tokens == len(prompt) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (len(store), store.tokens) == (1, len(prompt) + 5)
        # Read again from that text (all but the prompt's last token), the same continuation.
        assert list(scheduler.stream(prompt, Sampling(max_new_tokens=6), 1)) == first
        assert store.tokens_reused == len(prompt) - 1
    finally:
        scheduler.close()


def real_gemma() -> tuple:
    """The packaged Gemma's card and the model cache."""

    from cyoa.generation import load_model_cards
    from tests.tiny_checkpoint import MODEL_CACHE, torch_engine

    card = torch_engine(load_model_cards(ROOT / "models")["gemma-3-270m"])
    return card, MODEL_CACHE


@pytest.fixture(scope="module")
def fresh(mode, shared_gemma):
    """Real Gemma in ``mode`` storing nothing it reads (so no test changes it): each of its
    answers reads the whole prompt. The worker's shared load."""
    return shared_gemma(mode, prefix_tokens=0)


@pytest.fixture
def reusing(mode, shared_gemma):
    """Real Gemma in ``mode`` keeping what it reads, with nothing kept yet (the worker's
    shared load, its store emptied before the test and after it)."""
    yield shared_gemma(mode, emptied=True)
    shared_gemma(mode, emptied=True)


@pytest.mark.real_model
@pytest.mark.parametrize("mode", ["batched", "naive"], scope="module")
def test_gemma_continues_a_story_read_before_as_one_read_whole(fresh, reusing):
    from cyoa.generation.types import Sampling

    round_1 = "Nobody in the town had seen the sun for three days."
    round_2 = round_1 + " The baker said it was a sign, and nobody laughed."
    sampling = Sampling(max_new_tokens=16)
    list(reusing.stream(round_1, sampling, 0))
    for seed in (1, 2, 3):
        read_whole = list(fresh.stream(round_2, sampling, seed))
        assert list(reusing.stream(round_2, sampling, seed)) == read_whole
    # Round 2 read on from round 1, then twice from round 2 itself.
    assert reusing.prefixes.hits == 3
    assert fresh.prefixes.hits == 0


@pytest.mark.real_model
@pytest.mark.parametrize("mode", ["batched", "naive"], scope="module")
def test_a_kept_suggestion_is_not_read_again_by_the_model_that_wrote_it(fresh, reusing):
    from cyoa.generation.types import Sampling
    from cyoa.generation.weights import ensure_converted, load_tokenizer

    tokenizer = load_tokenizer(ensure_converted(*real_gemma(), log=lambda _: None))
    round_1 = "Nobody in the town had seen the sun for three days."
    sampling = Sampling(max_new_tokens=16)
    suggestion = "".join(reusing.stream(round_1, sampling, 0))
    round_2 = round_1 + suggestion.rstrip() + " The baker laughed."
    before = reusing.prefixes.tokens_reused
    assert list(reusing.stream(round_2, sampling, 5)) == list(fresh.stream(round_2, sampling, 5))
    # Round 1's prompt and most of the suggestion (15 tokens were fed; the text re-read as
    # part of the story may split into tokens differently near its end).
    reused = reusing.prefixes.tokens_reused - before
    assert reused >= len(tokenizer(round_1).input_ids) + 10
