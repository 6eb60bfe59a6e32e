"""The prompt-store benchmark (bench/prompt_store.py): the studies it simulates, and the
prompt tokens it counts as read, on a case worked out by hand."""

from __future__ import annotations

from bench.prompt_store import ROUNDS, StoreBefore, _Cache, study_events, tokens_read
from cyoa.generation.engine.prefixes import PrefixStore


def test_a_simulated_writers_prompts_grow_round_by_round_and_rows_follow_them():
    events = study_events(writers=1, seed=3)
    assert [at for at, *_ in events] == sorted(at for at, *_ in events)
    prompts = [ids for _, kind, model, _, ids, _ in events if kind == "prompt" and model == "a"]
    assert len(prompts) == ROUNDS and all(ids[0] == 0 for ids in prompts)
    for before, after in zip(prompts, prompts[1:], strict=False):
        assert after[: len(before)] == before and len(after) > len(before)
    for _, kind, _, round_, ids, prompt_length in events:
        if kind == "row":
            assert ids[:prompt_length] == prompts[round_ - 1] and len(ids) > prompt_length


def test_the_prompt_tokens_read_are_those_the_store_does_not_serve():
    prompt = list(range(11))
    kept = prompt + [20, 21] + list(range(30, 40))  # 2 tokens of the suggestion kept, a line
    events = [
        (0.0, "prompt", "a", 1, prompt, 11),
        (1.0, "row", "a", 1, prompt + [20, 21, 22], 11),
        (2.0, "prompt", "a", 2, kept, 23),
    ]
    counts = tokens_read(events, PrefixStore, max_tokens=100)
    # Round 1 reads all 11 tokens; round 2 is served the prompt and the 2 kept tokens.
    assert (counts["read"][1], counts["read"][2]) == (11, 10)
    assert (counts["total"][1], counts["total"][2]) == (11, 23)
    assert counts["prompts"][1] == counts["prompts"][2] == 1


def test_the_store_before_step_27_makes_room_by_dropping_the_least_recently_used():
    store = StoreBefore(max_tokens=7, min_shared=1)
    for ids in ([1, 1, 1], [2, 2, 2], [3, 3, 3]):
        store.put(ids, _Cache(3), None)
    assert store.tokens == 6
    assert store.longest([1, 1, 1, 4]) is None and store.longest([3, 3, 3, 4]) is not None
