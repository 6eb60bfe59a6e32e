"""The packaged models' linear layers computed with the weights as shipped (4-bit blocks)
against their float32 expansion (issue #37, phase 1).

    .venv/bin/python bench/weights_as_shipped.py    # bench/results/weights-as-shipped.{md,json}

For each packaged GGUF file, at its real layer shapes (every decoder layer's seven linear
tensors, read with the ``gguf`` package):

- **one decoding step's linear layers** (all of them, in order, no attention or norms) for 1
  and 16 rows on 1 thread, in milliseconds (mean of as many steps as fill 1 s, at least 2,
  after 1 of warm-up; best of 2 alternating rounds), with the megabytes of weights a step
  reads: ``float32`` (``F.linear``, MKL), ``float32 packed`` (oneDNN, what the app runs),
  ``as shipped, float32`` (the Q4_1 / Q4_K tensors through torch's CPU int4 kernel from the
  file's own groups, float32 in and out: exact; every other tensor float32 packed),
  ``as shipped, bfloat16`` (the same with the kernel's bfloat16 inputs, scales and zeros:
  rounded), ``all int4, bfloat16`` (every tensor through the bfloat16 int4 kernel at its
  shape, random integers: the bound if every tensor were 4-bit) and ``all int8 per row,
  bfloat16`` (``_weight_int8pack_mm``, one scale per output row: exact for none of the
  files' formats, shown for its speed);
- **exactness**: the largest absolute difference between the weight the int4 kernel
  multiplies (its product with the identity) and ``gguf.quants.dequantize`` of the same
  tensor, for the file's first three 4-bit tensors, in float32 and in bfloat16 (beside the
  largest weight magnitude);
- **batch invariance**: for one tensor of each 4-bit format, a row's output computed in
  batches of 1, 3 and 16 rows and on 1 and 2 threads, compared bit for bit with the row
  alone on 1 thread: the int4 kernel in float32 and in bfloat16, and the float32 packed
  product.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROWS = (1, 16)
ROUNDS = 2
OPTIONS = (
    "float32",
    "float32 packed",
    "as shipped, float32",
    "as shipped, bfloat16",
    "all int4, bfloat16",
    "all int8 per row, bfloat16",
)


def gguf_files(work: Path) -> dict[str, Path]:
    """The packaged models' GGUF files (Gemma's assembled into ``work``)."""
    from cyoa.generation.cards import load_model_card
    from cyoa.generation.weights import locate_gguf

    files = {}
    for card_file in sorted((ROOT / "models").glob("*.toml")):
        card = load_model_card(card_file)
        files[card.name] = locate_gguf(card, work)
    return files


def decoder_tensors(path: Path) -> list[Any]:
    from gguf import GGUFReader

    from cyoa.generation.engine.shipped import LAYER_TENSORS

    return [
        tensor
        for tensor in GGUFReader(str(path)).tensors
        if tensor.name.startswith("blk.") and tensor.name.split(".")[2] in LAYER_TENSORS
    ]


def layers_for(tensors: list[Any], option: str) -> tuple[list[Any], int]:
    """Callables ``x ↦ x @ w.T`` for every tensor under ``option``, and the weight bytes."""
    import numpy as np
    import torch

    from cyoa.generation.engine.packing import PackedLinear
    from cyoa.generation.engine.shipped import Groups, Int4Linear, tensor_groups

    layers, size = [], 0
    for tensor in tensors:
        columns, rows = (int(n) for n in tensor.shape)
        compute = torch.bfloat16 if option.endswith("bfloat16") else torch.float32
        groups = tensor_groups(tensor) if option.startswith("as shipped") else None
        if option.startswith("all int4"):
            groups = Groups(
                torch.randint(0, 16, (rows, columns), dtype=torch.uint8),
                torch.rand(rows, columns // 32),
                torch.rand(rows, columns // 32),
            )
        if groups is not None:
            layer = Int4Linear(groups, compute=compute)
            size += layer.packed_weight.numel() + layer.scales_and_zeros.nbytes
            layers.append((columns, layer))
            continue
        if option.startswith("all int8"):
            weight = torch.randint(-127, 128, (rows, columns), dtype=torch.int8)
            scales = torch.rand(rows, dtype=torch.bfloat16)
            layers.append((columns, partial(_int8_product, weight=weight, scales=scales)))
            size += weight.numel() + rows * 2
            continue
        from gguf.quants import dequantize

        weight = torch.from_numpy(dequantize(tensor.data, tensor.tensor_type).astype(np.float32))
        linear = torch.nn.Linear(columns, rows, bias=False)
        linear.weight.data = weight
        layers.append((columns, PackedLinear(linear) if option != "float32" else linear))
        size += weight.numel() * 4
    return layers, size


def _int8_product(x: Any, weight: Any, scales: Any) -> Any:
    import torch

    return torch.ops.aten._weight_int8pack_mm(x.bfloat16(), weight, scales).float()


def step_ms(layers: list[Any], rows: int) -> float:
    import torch

    inputs = {columns: torch.randn(rows, columns) for columns, _ in layers}

    def step() -> None:
        for columns, layer in layers:
            layer(inputs[columns])

    with torch.inference_mode():
        step()
        started, steps = time.perf_counter(), 0
        while steps < 2 or time.perf_counter() - started < 1:
            step()
            steps += 1
    return (time.perf_counter() - started) / steps * 1000


def timings(tensors: list[Any]) -> dict[str, Any]:
    import torch

    torch.set_num_threads(1)
    built = {option: layers_for(tensors, option) for option in OPTIONS}
    best: dict[str, dict[int, float]] = {option: {} for option in OPTIONS}
    for _ in range(ROUNDS):
        for option in OPTIONS:
            for rows in ROWS:
                ms = step_ms(built[option][0], rows)
                best[option][rows] = round(min(best[option].get(rows, ms), ms), 2)
    return {option: {"bytes": built[option][1], "ms": best[option]} for option in OPTIONS}


def exactness(tensors: list[Any], count: int = 3) -> dict[str, float]:
    """The largest |kernel weight − gguf.quants.dequantize| over the first ``count`` 4-bit
    tensors, per kernel format, and their largest |weight|."""
    import torch
    from gguf.quants import dequantize

    from cyoa.generation.engine.shipped import Int4Linear, tensor_groups

    worst = {"float32": 0.0, "bfloat16": 0.0, "largest |weight|": 0.0}
    checked = [(t, g) for t in tensors if (g := tensor_groups(t)) is not None][:count]
    with torch.inference_mode():
        for tensor, groups in checked:
            reference = torch.from_numpy(dequantize(tensor.data, tensor.tensor_type)).float()
            for compute in (torch.float32, torch.bfloat16):
                layer = Int4Linear(groups, compute=compute)
                difference = (layer.weight_as_multiplied() - reference).abs().max().item()
                key = str(compute).removeprefix("torch.")
                worst[key] = max(worst[key], difference)
            worst["largest |weight|"] = max(worst["largest |weight|"], reference.abs().max().item())
    return {key: float(f"{value:.3g}") for key, value in worst.items()}


def invariance(tensors: list[Any]) -> dict[str, dict[str, bool]]:
    """Per 4-bit format (and float32 packed): whether each row's output is bitwise the
    same in batches of 1, 3 and 16 rows and on 1 and 2 threads."""
    import torch

    from cyoa.generation.engine.packing import PackedLinear
    from cyoa.generation.engine.shipped import Int4Linear, tensor_groups

    products = {}
    for tensor in tensors:
        kind = tensor.tensor_type.name
        groups = tensor_groups(tensor)
        if groups is not None and f"{kind}, float32" not in products:
            products[f"{kind}, float32"] = Int4Linear(groups)
            products[f"{kind}, bfloat16"] = Int4Linear(groups, compute=torch.bfloat16)
            linear = torch.nn.Linear(groups.integers.shape[1], groups.integers.shape[0], False)
            linear.weight.data = groups.dequantized()
            products["float32 packed"] = PackedLinear(linear)
    result = {}
    x = torch.randn(16, next(iter(products.values())).in_features)
    with torch.inference_mode():
        for kind, layer in products.items():
            torch.set_num_threads(1)
            alone = torch.cat([layer(x[i : i + 1]) for i in range(16)])
            checks = {}
            for threads in (1, 2):
                torch.set_num_threads(threads)
                for rows in (1, 3, 16):
                    batched = torch.cat([layer(x[i : i + rows]) for i in range(0, 16, rows)])
                    checks[f"{rows} rows, {threads} threads"] = bool(torch.equal(batched, alone))
            result[kind] = checks
    torch.set_num_threads(1)
    return result


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "# Weights as shipped: 4-bit products against the float32 expansion",
        "",
        f"`.venv/bin/python bench/weights_as_shipped.py` — {results['when']}, "
        f"{results['cpu']}, {os.cpu_count()} CPUs, torch {results['torch']}, 1 thread.",
        "",
        (__doc__ or "").split("\n\n", 2)[2].strip(),
        "",
    ]
    for name, model in results["models"].items():
        formats = ", ".join(f"{k} {v}" for k, v in model["formats"].items())
        lines += [f"## {name}", "", f"Decoder linear tensors: {formats}.", ""]
        lines += ["| weights | MB read per step | 1 row, ms | 16 rows, ms |", "|---|---|---|---|"]
        for option, row in model["timings"].items():
            ms = row["ms"]
            lines.append(f"| {option} | {row['bytes'] / 1e6:.0f} | {ms[1]} | {ms[16]} |")
        exact = ", ".join(f"{k} {v}" for k, v in model["exactness"].items())
        lines += ["", f"Largest |kernel weight − gguf dequantize|: {exact}.", ""]
        lines += ["| product | " + " | ".join(next(iter(model["invariance"].values()))) + " |"]
        lines += ["|---" * (1 + len(next(iter(model["invariance"].values())))) + "|"]
        for kind, checks in model["invariance"].items():
            marks = " | ".join("same" if same else "differs" for same in checks.values())
            lines.append(f"| {kind} | {marks} |")
        lines.append("")
    lines.append(f"Load average (1, 5, 15 min) at the end: {results['load']}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    import platform
    import tempfile

    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    cpuinfo = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next(
        (line.split(":", 1)[1].strip() for line in cpuinfo if "model name" in line),
        platform.processor(),
    )
    results: dict[str, Any] = {"when": time.strftime("%Y-%m-%d %H:%M"), "cpu": cpu}
    results["torch"] = torch.__version__
    results["models"] = {}
    with tempfile.TemporaryDirectory() as work:
        for name, path in gguf_files(Path(work)).items():
            tensors = decoder_tensors(path)
            results["models"][name] = {
                "formats": dict(Counter(t.tensor_type.name for t in tensors)),
                "exactness": exactness(tensors),
                "invariance": invariance(tensors),
                "timings": timings(tensors),
            }
            print(name, json.dumps(results["models"][name]["timings"]), flush=True)
    results["load"] = [round(x, 2) for x in os.getloadavg()]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "weights-as-shipped.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "weights-as-shipped.md").write_text(markdown(results))


if __name__ == "__main__":
    main()
