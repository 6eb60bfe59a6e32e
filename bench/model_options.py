"""Speed and text quality of the model card options (``dtype``, ``quantize``), per model.

    .venv/bin/python bench/model_options.py    # bench/results/model-options.{md,json}

For each packaged model and each variant (float32 as converted, ``dtype = "bfloat16"``,
``quantize = "int8"``), with one torch thread: the time of one
decoding step for a batch of 1 and of 16 rows, scoring and sampling included (a 25-token
prompt, then 8 steps of sampled tokens, mean; for a screened vocabulary also with the whole
vocabulary scored), the perplexity of a fixed 80-token story text and the mean KL divergence
of the next-token distributions from float32's (nats; 0 = the same model), whether batched
rows give exactly their text alone (6 rows, 30 tokens, seeds 0–5), and a few seeded
one-sentence suggestions to read side by side.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEXT = (
    "The lighthouse keeper found a letter on the rocks. It was addressed to him, in his dead "
    "wife's handwriting. He sat down on the wet stone and read it twice. The wind was getting "
    "stronger, and far out at sea a ship was sounding its horn. Nobody in the town had seen "
    "the sun for three days. My grandmother kept a locked box under her bed for forty years."
)
STORIES = (
    ["The lighthouse keeper found a letter on the rocks."],
    ["Nobody in the town had seen the sun for three days."],
    ["The robot woke up in a field of sunflowers with no memory of how it got there."],
)
VARIANTS = {
    "float32": {},
    "bfloat16": {"dtype": "bfloat16"},
    "int8": {"quantize": "int8"},
}


def _step_ms(model: Any, vocabulary: Any, card: Any, prompt: list[int], rows: int) -> float:
    """One decoding step of ``rows`` rows with the card's sampling, scoring and sampling
    included (the mean of 8 steps after 2 of warm-up), in milliseconds."""
    import torch

    from cyoa.generation.engine.batching import Batch
    from cyoa.generation.engine.sampling import sample_rows_from_hidden

    batch = Batch(model, pad_id=0)
    generators = [torch.Generator().manual_seed(row) for row in range(rows)]
    samplings = [card.sampling] * rows

    def next_tokens(hidden: torch.Tensor) -> list[int]:
        return sample_rows_from_hidden(hidden, samplings, generators, vocabulary)

    tokens = next_tokens(batch.join([prompt] * rows))
    tokens = next_tokens(batch.step(tokens))
    started = time.perf_counter()
    for _ in range(8):
        tokens = next_tokens(batch.step(tokens))
    return round((time.perf_counter() - started) / 8 * 1000, 1)


def measure(name: str, variant: str, options: dict[str, str], cache: Path) -> dict[str, Any]:
    import torch

    from cyoa.generation import System, generate_suggestion, load_model_cards
    from cyoa.generation.engine.vocabulary import Vocabulary
    from cyoa.generation.local import TransformersBackend
    from cyoa.generation.types import Sampling

    card = load_model_cards(ROOT / "models")[name]
    # The torch engine's options are measured on the torch engine (llama.cpp takes none).
    card = replace(card, options={**card.options, "engine": "torch", **options})
    backends = {mode: TransformersBackend(card, cache, mode=mode) for mode in ("naive", "batched")}
    for backend in backends.values():
        backend.load(log=lambda _: None)
    naive = backends["naive"].local_model
    model, tokenizer = naive.model, naive.tokenizer
    ids = tokenizer(TEXT, return_tensors="pt").input_ids
    with torch.inference_mode():
        logprobs = torch.log_softmax(model(ids).logits[0].float(), -1)
    nll = -logprobs[:-1].gather(1, ids[0, 1:, None]).mean().item()

    steps = {}
    prompt = ids[0, :25].tolist()
    vocabularies = {"": naive.vocabulary}
    if naive.vocabulary.screen:
        vocabularies["_full_vocabulary"] = Vocabulary(
            model, banned=naive.vocabulary.banned, screen=False
        )
    for suffix, vocabulary in vocabularies.items():
        for rows in (1, 16):
            steps[f"step_ms_{rows}_rows{suffix}"] = _step_ms(model, vocabulary, card, prompt, rows)

    sampling = Sampling(max_new_tokens=30)
    story = STORIES[0][0]
    alone = {seed: list(naive.stream(story, sampling, seed)) for seed in range(6)}
    together: dict[int, list[str]] = {}
    start = threading.Barrier(6)

    def read(seed: int) -> None:
        start.wait()
        together[seed] = list(backends["batched"].stream(story, sampling, seed))

    threads = [threading.Thread(target=read, args=(seed,)) for seed in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    suggestions = [
        generate_suggestion(naive, System(name, card, card.sampling), story_turns, seed).text
        for story_turns in STORIES
        for seed in (1, 2)
    ]
    return {
        "model": name,
        "variant": variant,
        **steps,
        "perplexity": round(math.exp(nll), 1),
        "logprobs": logprobs,
        "batched_rows_as_alone": f"{sum(together[s] == alone[s] for s in alone)}/{len(alone)}",
        "suggestions": suggestions,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=list(VARIANTS),
        default=list(VARIANTS),
        help="the variants to measure (float32, the KL reference, is always first)",
    )
    args = parser.parse_args(argv)
    variants = {"float32": {}, **{v: VARIANTS[v] for v in args.variants}}
    import torch

    torch.set_num_threads(1)
    cache = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
    results = []
    for name in ("gemma-3-270m", "smollm2-135m-instruct"):
        reference = None
        for variant, options in variants.items():
            result = measure(name, variant, options, cache)
            logprobs = result.pop("logprobs")
            if reference is None:
                reference = logprobs
            kl = (reference.exp() * (reference - logprobs)).sum(-1).mean().item()
            result["kl_from_float32"] = round(kl, 3)
            results.append(result)
            print(json.dumps({k: v for k, v in result.items() if k != "suggestions"}), flush=True)
    load = [round(x, 2) for x in os.getloadavg()]
    lines = [
        "# Model card options: speed and text",
        "",
        f"`python bench/model_options.py` — {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs, 1 torch thread. " + __doc__.split("\n\n")[2].replace("\n", " "),
        "",
        "| model | variant | step, 1 row (ms) | step, 16 rows (ms) | perplexity | KL from "
        "float32 (nats) | batched rows = alone |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        for suffix, label in (("", ""), ("_full_vocabulary", ", whole vocabulary scored")):
            if f"step_ms_1_rows{suffix}" not in r:
                continue
            lines.append(
                f"| {r['model']} | {r['variant']}{label} | {r[f'step_ms_1_rows{suffix}']} "
                f"| {r[f'step_ms_16_rows{suffix}']} | {r['perplexity']} "
                f"| {r['kl_from_float32']} | {r['batched_rows_as_alone']} |"
            )
    lines += ["", f"Load average (1, 5, 15 min) at the end: {load}", "", "Seeded suggestions:", ""]
    for r in results:
        lines.append(f"- {r['model']}, {r['variant']}:")
        lines += [f"  - {text}" for text in r["suggestions"]]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "model-options.md").write_text("\n".join(lines) + "\n")
    (args.out / "model-options.json").write_text(
        json.dumps({"load_average": load, "results": results}, indent=1) + "\n"
    )
    print(f"Results: {args.out / 'model-options.md'}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
