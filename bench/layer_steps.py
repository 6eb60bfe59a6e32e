"""What one forward pass of each packaged model costs: decoding steps and prompt reads,
with the layers' weights as loaded and packed for oneDNN (docs/performance-log.md, steps 11 and 13).

    .venv/bin/python bench/layer_steps.py    # bench/results/layer-steps.{md,json}

For each model (float32, as the app loads it, converted weights from ``instance/models``):

- a decoding step (``Batch.step``, the model's layers and its last hidden state; no output
  layer, no sampling) for 1, 4 and 16 rows, each row a copy of the same 35-token real prompt,
  on 1 and on 2 torch threads: the mean of 10 steps after 2 of warm-up, in milliseconds;
- reading a 120-token prompt (``Batch.join``) alone and 16 of them at once, on 1 thread: the
  mean of 3 reads after 1 of warm-up, in milliseconds;
- for a model whose vocabulary is not screened (SmolLM2), the whole output layer (every
  token's logit) for 1, 4 and 16 rows on 1 thread, the mean of 20 products after 2: as
  loaded it is MKL's product, packed it is the app's (the float32 matrix packed for oneDNN,
  docs/performance-log.md, step 18).

Both with the weights as transformers loads them and after :func:`pack_model`, measured
alternately 3 times each, the best kept. Run it on a quiet machine: the figures are
wall-clock times.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TEXT = (
    "The lighthouse keeper found a letter on the rocks. It was addressed to him, in his dead "
    "wife's handwriting. He sat down on the wet stone and read it twice. The wind was getting "
    "stronger, and far out at sea a ship was sounding its horn. Nobody in the town had seen "
    "the sun for three days. My grandmother kept a locked box under her bed for forty years. "
    "She said it held the only map of the island that was ever drawn by someone who had left "
    "it and come back. On the morning of her funeral the lock was open and the box was empty, "
    "except for a brass key and a ticket for a ferry that had stopped running in 1962."
)
MODELS = ("gemma-3-270m", "smollm2-135m-instruct")
STEP_ROWS = (1, 4, 16)
THREADS = (1, 2)
WEIGHTS = ("as loaded", "packed")
ROUNDS = 3


def _mean_ms(run: Any, repeats: int, warmup: int) -> float:
    for _ in range(warmup):
        run()
    started = time.perf_counter()
    for _ in range(repeats):
        run()
    return round((time.perf_counter() - started) / repeats * 1000, 1)


def _step_ms(model: Any, prompt: list[int], rows: int) -> float:
    from cyoa.generation.engine.batching import Batch

    batch = Batch(model, pad_id=0)
    batch.join([prompt] * rows)
    tokens = [prompt[-1]] * rows
    return _mean_ms(lambda: batch.step(tokens), repeats=10, warmup=2)


def _read_ms(model: Any, prompt: list[int], rows: int) -> float:
    from cyoa.generation.engine.batching import Batch

    return _mean_ms(lambda: Batch(model, pad_id=0).join([prompt] * rows), repeats=3, warmup=1)


def measure(name: str, cache: Path) -> list[dict[str, Any]]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cyoa.generation import load_model_cards
    from cyoa.generation.engine.batching import Batch
    from cyoa.generation.engine.packing import PackedLinear, pack_model
    from cyoa.generation.engine.vocabulary import SCREEN_FROM_ENTRIES
    from cyoa.generation.weights import ensure_converted, force_offline

    force_offline()
    card = load_model_cards(ROOT / "models")[name]
    folder = ensure_converted(card, cache, log=lambda _: None)
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    ids = tokenizer(TEXT).input_ids
    short, long = ids[:35], ids[:120]
    models = {}
    for weights in WEIGHTS:
        model = AutoModelForCausalLM.from_pretrained(
            folder, local_files_only=True, dtype=torch.float32
        ).eval()
        if weights == "packed":
            pack_model(model)
        models[weights] = model
    results = {weights: {"model": name, "weights": weights} for weights in WEIGHTS}

    def best(key: str, measure_one: Any) -> None:
        """The best of ROUNDS alternating measurements of each weights variant, so that
        neither gains from running first or last on a machine whose load drifts."""
        figures: dict[str, list[float]] = {weights: [] for weights in WEIGHTS}
        for _ in range(ROUNDS):
            for weights in WEIGHTS:
                figures[weights].append(measure_one(models[weights]))
        for weights in WEIGHTS:
            results[weights][key] = min(figures[weights])

    with torch.inference_mode():
        for threads in THREADS:
            torch.set_num_threads(threads)
            for rows in STEP_ROWS:
                best(
                    f"step {rows} rows, {threads} thread(s)",
                    partial(_step_ms, prompt=short, rows=rows),
                )
        torch.set_num_threads(1)
        for rows in (1, 16):
            best(f"read {rows} × 120 tokens, 1 thread", partial(_read_ms, prompt=long, rows=rows))
        head = models["as loaded"].get_output_embeddings()
        if head.weight.numel() < SCREEN_FROM_ENTRIES:
            # Keyed by the variant's model, which ``best`` passes.
            heads = {models["as loaded"]: head, models["packed"]: PackedLinear(head)}
            for rows in STEP_ROWS:
                hidden = Batch(models["as loaded"], pad_id=0).join([short] * rows)
                best(
                    f"output layer {rows} rows, 1 thread",
                    lambda model, hidden=hidden: _mean_ms(
                        partial(heads[model], hidden), repeats=20, warmup=2
                    ),
                )
    for result in results.values():
        print(json.dumps(result), flush=True)
    return list(results.values())


METHOD = __doc__.split("\n\n")[2:5]


def markdown(results: list[dict[str, Any]], load: list[float]) -> str:
    columns = list(dict.fromkeys(k for r in results for k in r if k not in ("model", "weights")))
    lines = [
        "# One forward pass: decoding steps and prompt reads",
        "",
        f"`.venv/bin/python bench/layer_steps.py` — {time.strftime('%Y-%m-%d %H:%M')}, "
        f"{os.cpu_count()} CPUs. Milliseconds.",
        "",
        *[
            line.strip() if not line.startswith("  ") else "  " + line.strip()
            for paragraph in METHOD
            for line in [*paragraph.splitlines(), ""]
        ],
        "| model | weights | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for r in results:
        figures = " | ".join(str(r.get(c, "—")) for c in columns)
        lines.append(f"| {r['model']} | {r['weights']} | {figures} |")
    lines += ["", f"Load average (1, 5, 15 min) at the end: {load}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    cache = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
    results = [r for name in MODELS for r in measure(name, cache)]
    load = [round(x, 2) for x in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "layer-steps.md").write_text(markdown(results, load))
    (args.out / "layer-steps.json").write_text(
        json.dumps({"load_average": load, "results": results}, indent=1) + "\n"
    )
    print(f"Results: {args.out / 'layer-steps.md'}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
