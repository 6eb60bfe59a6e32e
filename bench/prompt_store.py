"""How much of the writers' prompts the prompt store serves over whole stories of a real
study's length, with the store as the app runs it (docs/performance-log.md, step 27).

    .venv/bin/python bench/prompt_store.py    # bench/results/prompt-store.{md,json}

The load benchmark's lines are short (its stories stay under 200 tokens in five rounds), so
it cannot show what a study's longer turns do to the engine's
:class:`~cyoa.generation.engine.prefixes.PrefixStore`.
This simulates them, without a model: the real store, holding stand-in caches of the right
length (no keys or values), receives what the scheduler gives it in a study of W writers and
the two-model experiment, in the order the writers' rounds interleave.

Each writer writes five rounds. A round's prompt is the story so far: a start-of-text token,
then every turn. The writer's line is 5–65 tokens (20–260 characters at about 4 characters
a token); each model's suggestion 10–30 tokens (the load benchmark's average is 20); the
writer keeps one of the two (either with equal chance), keeps its first 0–all tokens and
rewrites the rest with as many tokens of their own. Writers start within the first minute
and take 20–60 s to write a line, 2–6 s to get their suggestions and 10–40 s to read and
edit them. Per model, per round: the prompt is looked up (its tokens not served are read),
then stored; when the suggestion is done, the prompt and the suggestion are stored (the
row that leaves).

Reported for each store size: the share of all prompt tokens read (not served by the store)
and the mean tokens read per prompt in round 5, with the store as it is and as it was
before step 27 (a story's dead branches kept until the store is full, and the least
recently used text dropped to make room for each new one), each the mean over several
seeds. Nothing here is timed: on one thread Gemma 3 270M reads 120 tokens
of prompt in about 230 ms (layer-steps.md), and every row of its batch waits while it does.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cyoa.generation.engine.prefixes import (  # noqa: E402
    DEFAULT_MAX_TOKENS,
    MIN_SHARED_TOKENS,
    Prefix,
    PrefixStore,
)

RESULTS = ROOT / "bench" / "results"
MODELS = ("a", "b")
ROUNDS = 5
BOS = 0
VOCABULARY = 50_000
LINE_TOKENS = (5, 65)
SUGGESTION_TOKENS = (10, 30)
START_S = (0.0, 60.0)
WRITE_S = (20.0, 60.0)
WAIT_S = (2.0, 6.0)
EDIT_S = (10.0, 40.0)
STORE_SIZES = (DEFAULT_MAX_TOKENS, 4096, 8192, 16384)
# A stored token's keys and values in float32, both packaged models together: Gemma 3 270M
# (18 layers, one key-value head of 256) and SmolLM2-135M (30 layers, three heads of 64).
BYTES_PER_TOKEN_BOTH = 4 * 2 * (18 * 256 + 30 * 3 * 64)


class _Layer:
    """A cache layer's stand-in: keys and values of the right length and no width."""

    def __init__(self, length: int) -> None:
        self.keys = torch.empty((1, 1, length, 0))
        self.values = self.keys


class _Cache:
    def __init__(self, length: int) -> None:
        self.layers = [_Layer(length)]


class StoreBefore(PrefixStore):
    """The store before step 27: a text is dropped only by a longer one that begins with it,
    or when the store is full, the least recently used first (so a story's dead branches
    stay until then, and a new text always goes in)."""

    def put(
        self, ids: list[int], cache: Any, hidden: Any, prompt_length: int | None = None
    ) -> None:
        key = tuple(ids)
        if len(key) > self.max_tokens:
            return
        prefix = Prefix(key, cache, hidden)
        for stored in list(self._prefixes):
            if len(stored) <= len(key) and key[: len(stored)] == stored:
                self._remove(stored)
        self._prefixes[key] = prefix
        self._tokens += len(key)
        while self._tokens > self.max_tokens:
            self._remove(next(iter(self._prefixes)))


def study_events(writers: int, seed: int) -> list[tuple[float, str, str, int, list[int], int]]:
    """The store's calls in a study, in time order: ``(time, "prompt" | "row", model,
    round, ids, prompt_length)``; a ``prompt`` is looked up and stored, a ``row`` (prompt
    and suggestion) only stored."""
    rng = random.Random(seed)

    def tokens(bounds: tuple[int, int]) -> list[int]:
        return [rng.randrange(1, VOCABULARY) for _ in range(rng.randint(*bounds))]

    events = []
    for _ in range(writers):
        at = rng.uniform(*START_S) + rng.uniform(*WRITE_S)
        story = [BOS, *tokens(LINE_TOKENS)]
        for round_ in range(1, ROUNDS + 1):
            done = at + rng.uniform(*WAIT_S)
            suggestions = {model: tokens(SUGGESTION_TOKENS) for model in MODELS}
            for model in MODELS:
                events.append((at, "prompt", model, round_, list(story), len(story)))
                events.append((done, "row", model, round_, story + suggestions[model], len(story)))
            kept = suggestions[rng.choice(MODELS)]
            k = rng.randint(0, len(kept))
            edited = kept[:k] + [rng.randrange(1, VOCABULARY) for _ in range(len(kept) - k)]
            story = story + edited + tokens(LINE_TOKENS)
            at = done + rng.uniform(*EDIT_S) + rng.uniform(*WRITE_S)
    return sorted(events, key=lambda event: event[0])


def tokens_read(events: list[Any], store_type: type[PrefixStore], max_tokens: int) -> dict:
    """Replay ``events`` against one store per model; the prompt tokens read (not served by
    the store) and the prompt tokens in all, per round."""
    now = [0.0]
    stores = {
        model: store_type(max_tokens, MIN_SHARED_TOKENS, clock=lambda: now[0]) for model in MODELS
    }
    read = {r: 0 for r in range(1, ROUNDS + 1)}
    total = {r: 0 for r in range(1, ROUNDS + 1)}
    prompts = {r: 0 for r in range(1, ROUNDS + 1)}
    for at, kind, model, round_, ids, prompt_length in events:
        now[0] = at
        store = stores[model]
        if kind == "prompt":
            found = store.longest(ids)
            read[round_] += len(ids) - (0 if found is None else len(found.ids))
            total[round_] += len(ids)
            prompts[round_] += 1
            store.put(ids, _Cache(len(ids)), torch.zeros(1))
        else:
            store.put(ids, _Cache(len(ids)), None, prompt_length)
    return {"read": read, "total": total, "prompts": prompts}


def measure(writers: int, seeds: int) -> list[dict[str, Any]]:
    """Per store size and store: the share of prompt tokens read and the round-5 tokens read
    per prompt, the mean over ``seeds`` studies of ``writers`` writers."""
    rows = []
    for size in STORE_SIZES:
        for label, store_type in (
            ("before step 27", StoreBefore),
            ("as the app runs it", PrefixStore),
        ):
            shares, last = [], []
            for seed in range(seeds):
                counts = tokens_read(study_events(writers, seed), store_type, size)
                shares.append(sum(counts["read"].values()) / sum(counts["total"].values()))
                last.append(counts["read"][ROUNDS] / counts["prompts"][ROUNDS])
            rows.append(
                {
                    "writers": writers,
                    "store_tokens": size,
                    "store_mb_both_models": round(size * BYTES_PER_TOKEN_BOTH / 1e6),
                    "store": label,
                    "share_read": round(sum(shares) / seeds, 3),
                    "round_5_tokens_read_per_prompt": round(sum(last) / seeds, 1),
                }
            )
    return rows


def round_5_prompt_tokens(writers: int, seeds: int) -> float:
    """The mean length of a round-5 prompt, for scale."""
    lengths = [
        len(ids)
        for seed in range(seeds)
        for _, kind, _, round_, ids, _ in study_events(writers, seed)
        if kind == "prompt" and round_ == ROUNDS
    ]
    return round(sum(lengths) / len(lengths), 1)


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Prompt store over whole stories",
        "",
        f"`{result['command'].strip()}` — {result['stamp']}",
        "",
        f"Five rounds per writer, two models, the mean of {result['seeds']} simulated studies "
        f"per row; a round-5 prompt holds {result['round_5_prompt_tokens_mean']} tokens on "
        "average. How the stories are drawn, and what the store receives: "
        "bench/prompt_store.py. Memory: the stored keys and values of both packaged models "
        "at their float32 size when the store is full (37 KB a token for Gemma 3 270M, 46 KB "
        "for SmolLM2-135M). A store of 16,384 tokens holds every story: what it leaves to "
        "read (the writers' lines, their edits, the suggestion of the other model) no store "
        "can serve.",
        "",
        "| writers | store (tokens per model) | memory (MB) | store | prompt tokens read "
        "(share) | round 5: tokens read per prompt |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['writers']} | {row['store_tokens']} | {row['store_mb_both_models']} | "
            f"{row['store']} | {row['share_read']} | {row['round_5_tokens_read_per_prompt']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = {
        "command": "python bench/prompt_store.py " + " ".join(sys.argv[1:]),
        "stamp": time.strftime("%Y-%m-%d %H:%M"),
        "seeds": args.seeds,
        "round_5_prompt_tokens_mean": round_5_prompt_tokens(max(args.writers), args.seeds),
        "rows": [row for writers in args.writers for row in measure(writers, args.seeds)],
    }
    print(markdown(result))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "prompt-store.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "prompt-store.md").write_text(markdown(result))
    print(f"wrote {args.out / 'prompt-store.json'} and {args.out / 'prompt-store.md'}")


if __name__ == "__main__":
    main()
