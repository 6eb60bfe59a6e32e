"""Where a writer's round goes inside the llama.cpp engine, and whether prefix reuse would keep
the guarantee (issue 44).

    .venv/bin/python bench/llamacpp_probe.py --rounds 4

**Time**: one writer's round as the app asks it (both packaged models at once, on the
machine's cores shared by :class:`~cyoa.generation.engine.cores.CoreShare`, 60 tokens each, a
four-sentence story as the prompt), with every part of the scheduler thread's step timed in
wall-clock and thread CPU time: ``llama_decode``, reading the logits, CYOA's sampler,
detokenizing, and the rest of the step (Python bookkeeping). The first round is a warm-up.

**Prefix reuse**: a writer's next prompt starts with the previous one. Keeping that prefix's
KV cells and decoding only the new tokens is worth building only if the new prompt's logits
are then the same bits as a fresh decode of the whole prompt. For each packaged model the
probe decodes the whole prompt fresh, then (in another context) the previous prompt, six
generated tokens, drops those and decodes the rest: alone, and while three other writers'
sequences decode beside it. It also cuts the fresh prompt in two, its second part from 1 to
half the prompt's tokens.

**Rows per call**: a decoding row's next-token logits when its token goes to llama.cpp alone
and in one call with the tokens of k other decoding rows (each prompt decoded in a call of
its own first), for k from 1 to 15: whether they are the same bits; and what a step of 16
decoding rows costs (thread CPU time, one thread, mean of 6 steps) sent in calls of 16, 8, 4
or 1 rows.

Results: ``bench/results/llamacpp-probe.md`` and ``llamacpp-probe.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cyoa.generation import Sampling, load_model_cards  # noqa: E402 - the checkout is on the path
from cyoa.generation.engine.cores import CoreShare  # noqa: E402
from cyoa.generation.llamacpp import scheduler  # noqa: E402
from cyoa.generation.llamacpp.library import llama  # noqa: E402
from cyoa.generation.llamacpp.model import LlamaModel, load_gguf, new_context  # noqa: E402
from cyoa.generation.llamacpp.vocabulary import Vocabulary  # noqa: E402
from cyoa.generation.weights import locate_gguf  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MODELS = ("gemma-3-270m", "smollm2-135m-instruct")
STORY = (
    "The lighthouse keeper found a letter on the rocks. It was addressed to him, in his "
    "mother's hand, though she had been dead for eleven years. He read it twice by the lamp."
)
NEXT = " The ink had run where the sea had touched it, but one line was clear: the boat will come."
OTHERS = (
    "My grandmother kept a locked box under her bed for forty years.",
    "The last train of the night stopped in a village that was not on the map. Nobody",
    "We reached the top of the mountain just as the radio went silent.",
)


class Timers:
    """Wall-clock and thread CPU seconds, and calls, per (thread, part)."""

    def __init__(self) -> None:
        self.totals: dict[tuple[str, str], list[float]] = {}
        self._lock = threading.Lock()

    def wrap(self, part: str, function: Any) -> Any:
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                key = (threading.current_thread().name, part)
                with self._lock:
                    total = self.totals.setdefault(key, [0.0, 0.0, 0])
                    total[0] += time.perf_counter() - wall
                    total[1] += time.thread_time() - cpu
                    total[2] += 1

        return timed


class TimedLibrary:
    """The ``llama_cpp`` module with its per-step calls timed."""

    PARTS = ("llama_decode", "llama_get_logits_ith")

    def __init__(self, lib: Any, timers: Timers) -> None:
        self._lib, self._timers = lib, timers

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._lib, name)
        return self._timers.wrap(name, value) if name in self.PARTS else value


def time_rounds(files: dict[str, Path], rounds: int) -> dict[str, Any]:
    """One writer's rounds, both models at once; per round the wall time and each model's
    first token, and per model the seconds of each part of its steps after the warm-up."""
    timers = Timers()
    scheduler.next_token = timers.wrap("sampling", scheduler.next_token)
    cores = CoreShare(os.cpu_count() or 1)
    models = {name: LlamaModel(path, name=name, cores=cores) for name, path in files.items()}
    for model in models.values():
        model._scheduler._lib = TimedLibrary(model._scheduler._lib, timers)
        model._scheduler._step = timers.wrap("step", model._scheduler._step)
        model.vocabulary.decode = timers.wrap("detokenizing", model.vocabulary.decode)
    sampling = Sampling(top_k=40, temperature=1.0, max_new_tokens=60)
    seen: list[dict[str, Any]] = []
    try:
        for number in range(rounds + 1):
            if number == 1:
                timers.totals.clear()
            out: dict[str, Any] = {}

            def one(name: str, seed: int, out: dict[str, Any] = out) -> None:
                started, first, tokens = time.perf_counter(), None, 0
                for _ in models[name].stream(STORY, sampling, seed):
                    first = first if first is not None else time.perf_counter() - started
                    tokens += 1
                out[name] = {"first_token_s": round(first or 0, 3), "tokens": tokens}

            started = time.perf_counter()
            threads = [threading.Thread(target=one, args=(name, number)) for name in models]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if number:
                seen.append({"wall_s": round(time.perf_counter() - started, 3), **out})
    finally:
        for model in models.values():
            model.close()
    parts: dict[str, dict[str, Any]] = {}
    for (thread, part), (wall, cpu, calls) in sorted(timers.totals.items()):
        name = thread.removeprefix("cyoa-llama-")
        parts.setdefault(name, {})[part] = {
            "wall_s": round(wall, 3),
            "cpu_s": round(cpu, 3),
            "calls": calls,
        }
    return {"rounds": seen, "parts": parts}


def decode(lib: Any, context: Any, batch: Any, chunks: list[tuple[int, list[int], int]]) -> Any:
    """One ``llama_decode`` call of ``(stream, token ids, first position)`` chunks; each
    chunk's last logits (a copy), by stream."""
    count, scored = 0, {}
    for stream, ids, start in chunks:
        for i, token in enumerate(ids):
            batch.token[count], batch.pos[count] = token, start + i
            batch.n_seq_id[count], batch.seq_id[count][0] = 1, stream
            batch.logits[count] = i == len(ids) - 1
            count += 1
        scored[stream] = count - 1
    batch.n_tokens = count
    if lib.llama_decode(context, batch) != 0:
        raise RuntimeError("llama_decode failed")
    size = lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(lib.llama_get_model(context)))
    return {
        stream: np.ctypeslib.as_array(lib.llama_get_logits_ith(context, index), (size,)).copy()
        for stream, index in scored.items()
    }


def prefix_reuse(path: Path) -> dict[str, Any]:
    """The probe's bit comparisons for one model (see the module docstring)."""
    lib = llama()
    model = load_gguf(lib, path)
    vocabulary = Vocabulary(lib, model)
    whole = vocabulary(STORY + NEXT).input_ids
    before = vocabulary(STORY).input_ids
    kept = next(i for i, (a, b) in enumerate(zip(before + [-1], whole, strict=False)) if a != b)
    others = [vocabulary(text).input_ids for text in OTHERS]

    def run(steps: Any) -> np.ndarray:
        context = new_context(lib, model, 4, 1024, 1)
        batch = lib.llama_batch_init(2048, 0, 1)
        try:
            return steps(context, batch)
        finally:
            lib.llama_batch_free(batch)
            lib.llama_free(context)

    fresh = run(lambda c, b: decode(lib, c, b, [(0, whole, 0)])[0])

    def reused(c: Any, b: Any, beside: bool) -> np.ndarray:
        last = decode(lib, c, b, [(0, before, 0)])[0]
        chunks = [(i + 1, ids, 0) for i, ids in enumerate(others)] if beside else []
        for step in range(6):
            token = int(last.argmax())
            last = decode(lib, c, b, [(0, [token], len(before) + step), *chunks])[0]
            chunks = []
        lib.llama_memory_seq_rm(lib.llama_get_memory(c), 0, kept, -1)
        return decode(lib, c, b, [(0, whole[kept:], kept)])[0]

    def difference(logits: np.ndarray) -> float:
        return float(np.abs(logits - fresh).max())

    cuts = {}
    for new in (1, 2, 4, 7, 8, 12, 16, len(whole) - kept, len(whole) // 2):
        cut = len(whole) - new

        def halves(c: Any, b: Any, cut: int = cut) -> np.ndarray:
            decode(lib, c, b, [(0, whole[:cut], 0)])
            return decode(lib, c, b, [(0, whole[cut:], cut)])[0]

        cuts[str(new)] = difference(run(halves))
    result = {
        "prompt_tokens": len(whole),
        "kept_tokens": kept,
        "kept_prefix_alone_max_difference": difference(run(lambda c, b: reused(c, b, False))),
        "kept_prefix_beside_others_max_difference": difference(
            run(lambda c, b: reused(c, b, True))
        ),
        "fresh_prompt_cut_in_two_max_difference": cuts,
    }
    lib.llama_model_free(model)
    return result


def rows_per_call(path: Path) -> dict[str, bool]:
    """For k other rows: whether a row's next three steps' logits beside them (one call a
    step) are the bits it gets alone."""
    lib = llama()
    model = load_gguf(lib, path)
    vocabulary = Vocabulary(lib, model)
    target = vocabulary(STORY).input_ids
    other = vocabulary(OTHERS[0]).input_ids

    def steps(k: int) -> list[bytes]:
        context = new_context(lib, model, 16, 256, 1)
        batch = lib.llama_batch_init(512, 0, 1)
        try:
            last = {0: decode(lib, context, batch, [(0, target, 0)])[0]}
            for stream in range(1, k + 1):
                last[stream] = decode(lib, context, batch, [(stream, other, 0)])[stream]
            seen = []
            for step in range(3):
                chunks = [
                    (s, [int(last[s].argmax())], (len(target) if s == 0 else len(other)) + step)
                    for s in range(k + 1)
                ]
                last = decode(lib, context, batch, chunks)
                seen.append(last[0].tobytes())
            return seen
        finally:
            lib.llama_batch_free(batch)
            lib.llama_free(context)

    alone = steps(0)
    result: dict[str, Any] = {str(k): steps(k) == alone for k in range(1, 16)}
    result["step_cpu_ms_by_rows_per_call"] = step_cost(lib, model, other)
    lib.llama_model_free(model)
    return result


def step_cost(lib: Any, model: Any, ids: list[int]) -> dict[str, float]:
    """Thread CPU milliseconds of one step of 16 decoding rows, by rows per call."""
    context = new_context(lib, model, 16, 256, 1)
    batch = lib.llama_batch_init(512, 0, 1)
    try:
        for stream in range(16):
            decode(lib, context, batch, [(stream, ids, 0)])
        position, cost = len(ids), {}
        for size in (16, 8, 4, 1):
            started = time.thread_time()
            for _ in range(6):
                for first in range(0, 16, size):
                    rows = range(first, first + size)
                    decode(lib, context, batch, [(s, [ids[-1]], position) for s in rows])
                position += 1
            cost[str(size)] = round(1000 * (time.thread_time() - started) / 6, 1)
        return cost
    finally:
        lib.llama_batch_free(batch)
        lib.llama_free(context)


def write_page(result: dict[str, Any], command: str, out: Path) -> None:
    lines = [
        "# Inside the llama.cpp engine: where a round goes, and prefix reuse",
        "",
        f"`{command}` — {result['date']}",
        "",
        f"- machine: {result['machine']}; load average (1, 5, 15 min) at start: "
        f"{result['load_start']}, at end: {result['load_end']}",
        "",
        "## One writer's round (both models at once, 60 tokens each)",
        "",
        "| round | wall (s) | " + " | ".join(f"{m}: first token (s)" for m in MODELS) + " |",
        "|---|---|" + "---|" * len(MODELS),
    ]
    for number, seen in enumerate(result["time"]["rounds"], 1):
        firsts = " | ".join(str(seen[m]["first_token_s"]) for m in MODELS)
        lines.append(f"| {number} | {seen['wall_s']} | {firsts} |")
    lines += [
        "",
        "Seconds of each model's steps over those rounds (wall / thread CPU; ms a call):",
        "",
        "| model | part | calls | wall (s) | CPU (s) | ms a call |",
        "|---|---|---|---|---|---|",
    ]
    for model, parts in result["time"]["parts"].items():
        for part, t in parts.items():
            per = 1000 * t["wall_s"] / max(1, t["calls"])
            lines.append(
                f"| {model} | {part} | {t['calls']} | {t['wall_s']} | {t['cpu_s']} | {per:.2f} |"
            )
    lines += [
        "",
        "## Prefix reuse: the new prompt's last logits against a fresh decode (max |difference|)",
        "",
        "| model | prompt / kept tokens | kept prefix, alone | kept prefix, beside 3 others "
        "| the prompt cut in two, by the second part's tokens (tokens: difference) |",
        "|---|---|---|---|---|",
    ]
    for model, p in result["prefix"].items():
        cuts = ", ".join(
            f"{k}: {v:.3g}" for k, v in p["fresh_prompt_cut_in_two_max_difference"].items()
        )
        lines.append(
            f"| {model} | {p['prompt_tokens']} / {p['kept_tokens']} | "
            f"{p['kept_prefix_alone_max_difference']:.3g} | "
            f"{p['kept_prefix_beside_others_max_difference']:.3g} | {cuts} |"
        )
    lines += [
        "",
        "## Rows per call: a decoding row's logits beside k others in one call, the same bits "
        "as alone?",
        "",
        "| model | " + " | ".join(f"k={k}" for k in range(1, 16)) + " |",
        "|---|" + "---|" * 15,
    ]
    for model, same in result["rows_per_call"].items():
        cells = " | ".join("same" if same[str(k)] else "**differ**" for k in range(1, 16))
        lines.append(f"| {model} | {cells} |")
    lines += [
        "",
        "One step of 16 decoding rows, thread CPU ms (one thread), by rows per llama_decode call:",
        "",
        "| model | 16 | 8 | 4 | 1 |",
        "|---|---|---|---|---|",
    ]
    for model, same in result["rows_per_call"].items():
        cost = same["step_cpu_ms_by_rows_per_call"]
        lines.append(
            f"| {model} | " + " | ".join(str(cost[k]) for k in ("16", "8", "4", "1")) + " |"
        )
    lines += ["", f"Raw figures: [{out.stem}.json]({out.stem}.json)", ""]
    out.with_suffix(".md").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULTS / "llamacpp-probe")
    args = parser.parse_args(argv)
    cards = load_model_cards(ROOT / "models")
    cache = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models")) / "gguf"
    files = {name: locate_gguf(cards[name], cache) for name in MODELS}
    import platform

    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_start": [round(x, 2) for x in os.getloadavg()],
    }
    result["time"] = time_rounds(files, args.rounds)
    result["prefix"] = {name: prefix_reuse(path) for name, path in files.items()}
    result["rows_per_call"] = {name: rows_per_call(path) for name, path in files.items()}
    result["load_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    command = "python bench/llamacpp_probe.py " + " ".join(argv or sys.argv[1:])
    write_page(result, command.strip(), args.out)
    print(args.out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
