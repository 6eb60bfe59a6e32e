"""CYOA against its peer: the same simulated writers against CYOA's in-process llama.cpp engine
and against llama-cpp-python's own server on the same GGUF files (issue 44).

    python3 -m venv /tmp/peer && /tmp/peer/bin/pip install -r bench/requirements-peer.txt
    .venv/bin/python bench/peer.py --peer-python /tmp/peer/bin/python

The peer: one ``python -m llama_cpp.server`` per packaged model (its GGUF file, one thread,
127.0.0.1, a free port), named by an ``openai`` model card with the packaged card's name,
version and sampling, so the default study runs unchanged against it. Each sitting runs
``bench/load.py``'s writers (:func:`load.run_mode`, the app in batched mode) for every N, and
the sittings alternate CYOA, peer, CYOA, peer, so that both are measured in one machine state.
Peak memory is the app's (CYOA) or the app's plus both servers' (peer), RSS sampled every
0.1 s. The peer's llama-cpp-python is CYOA's own build (the Makefile's, from pip's wheel
cache), so both run the same llama.cpp kernels.

Results: ``bench/results/peer.md`` (the goal table and every sitting) and ``peer.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import requests

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import load  # noqa: E402 - run as a script, the checkout is put on the path first

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MODELS = ("gemma-3-270m", "smollm2-135m-instruct")


def gguf_files(cache: Path) -> dict[str, Path]:
    """Each packaged model's GGUF file (Gemma's assembled once into the model cache)."""
    from cyoa.generation import load_model_cards
    from cyoa.generation.weights import locate_gguf

    cards = load_model_cards(ROOT / "models")
    return {name: locate_gguf(cards[name], cache / "gguf") for name in MODELS}


class PeerServers:
    """llama-cpp-python's server, one process per model, on free ports of 127.0.0.1."""

    def __init__(self, python: str, files: dict[str, Path], workdir: Path) -> None:
        self.python = python
        self.files = files
        self.workdir = workdir
        self.ports = {name: load.free_port() for name in files}
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self) -> None:
        for name, path in self.files.items():
            log = (self.workdir / f"peer-{name}.log").open("w")
            self.processes[name] = subprocess.Popen(
                [
                    self.python,
                    "-m",
                    "llama_cpp.server",
                    "--model",
                    str(path),
                    "--model_alias",
                    name,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.ports[name]),
                    "--n_threads",
                    "1",
                    "--n_threads_batch",
                    "1",
                    "--n_ctx",
                    "2048",
                    # Requests wait their turn: by default a new request interrupts the one
                    # being generated, which fails most suggestions of 16 writers.
                    "--interrupt_requests",
                    "False",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 300
        for name, port in self.ports.items():
            while True:
                if self.processes[name].poll() is not None:
                    raise RuntimeError(f"The peer server for {name} exited; see {self.workdir}.")
                try:
                    if requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).ok:
                        break
                except requests.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError(f"The peer server for {name} did not answer.")
                time.sleep(0.2)

    def pids(self) -> list[int]:
        return [process.pid for process in self.processes.values()]

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def peer_cards(folder: Path, ports: dict[str, int]) -> Path:
    """``openai`` cards named like the packaged ones (same version and sampling), each for
    its model's server."""
    folder.mkdir(parents=True)
    for name in MODELS:
        card = tomllib.loads((ROOT / "models" / f"{name}.toml").read_text())
        sampling = "\n".join(f"{key} = {value!r}" for key, value in card["sampling"].items())
        (folder / f"{name}.toml").write_text(
            f'name = "{name}"\nbackend = "openai"\n'
            f'version = "{card["weights_file"]} ({card["package"]} {card["version"]})"\n'
            f'prompt_template = "{{story}}"\n[sampling]\n{sampling}\n[options]\n'
            f'base_url = "http://127.0.0.1:{ports[name]}"\nmodel = "{name}"\n'
            "timeout_seconds = 600\n"
        )
    return folder


def sitting(
    label: str, args: argparse.Namespace, workdir: Path, files: dict[str, Path]
) -> dict[str, Any]:
    """One run of every N against CYOA (``label`` ``cyoa``) or the peer (``peer``)."""
    pauses = load.Pauses()
    folder = workdir / f"{label}-{time.monotonic_ns()}"
    folder.mkdir()
    servers = None
    monitors: list[load.Monitor] = []
    models_dir = ROOT / "models"
    try:
        if label == "peer":
            servers = PeerServers(args.peer_python, files, folder)
            servers.start()
            monitors = [load.Monitor(pid) for pid in servers.pids()]
            for monitor in monitors:
                monitor.__enter__()
            models_dir = peer_cards(folder / "models", servers.ports)
        result = load.run_mode(
            "batched",
            args.writers,
            args.rounds,
            pauses,
            args.seed,
            folder,
            load.EXPERIMENT,
            with_alone=False,
            models_dir=models_dir,
        )
    finally:
        for monitor in monitors:
            monitor.__exit__(None, None, None)
        if servers is not None:
            servers.stop()
    result["servers_peak_rss_mb"] = round(sum(m.peak_rss for m in monitors) / 2**20)
    return result


FIGURES = (
    ("1", "both_p50_s", "1 writer: both suggestions p50 (s)"),
    ("1", "first_token_p50_s", "1 writer: first text p50 (s)"),
    ("16", "suggestions_per_s", "16 writers: suggestions/s"),
    ("16", "pace_bound_per_s", "16 writers: suggestions/s the writers' pace allows"),
    ("16", "both_p95_s", "16 writers: both suggestions p95 (s)"),
    ("16", "tokens", "16 writers: generated tokens"),
)


def figure(result: dict[str, Any], count: str, key: str) -> float | None:
    run = result["runs"].get(count)
    return None if run is None else run["summary"].get(key)


def peak_memory_mb(result: dict[str, Any]) -> int:
    """The app's peak RSS over every N, plus the peer's servers' where there are any."""
    app = max(run["summary"]["peak_rss_mb"] for run in result["runs"].values())
    return app + result.get("servers_peak_rss_mb", 0)


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def render(results: dict[str, Any]) -> str:
    sittings = results["sittings"]
    by = {label: [s for s in sittings if s["label"] == label] for label in ("cyoa", "peer")}

    def cells(label: str, count: str, key: str) -> str:
        return " / ".join(str(figure(s["result"], count, key)) for s in by[label])

    def med(label: str, count: str, key: str) -> float | None:
        return median([figure(s["result"], count, key) for s in by[label]])

    memory = {label: [peak_memory_mb(s["result"]) for s in by[label]] for label in by}
    lines = [
        "# CYOA against llama-cpp-python's server",
        "",
        f"`{results['command']}` — {results['finished']}",
        "",
        f"- machine: {results['machine']['cpus']} CPUs, {results['machine']['memory_gb']} GB, "
        f"Python {results['machine']['python']}; CYOA's llama.cpp CPU kernels use: "
        f"{results['cpu_features']}",
        f"- load average (1, 5, 15 min) at start: {results['load_average_start']}, at end: "
        f"{results['load_average_end']}",
        f"- {results['rounds']} rounds per writer, the writers' pauses of bench/load.py; "
        f"sittings in this order: {', '.join(s['label'] for s in sittings)}",
        "- the peer: `python -m llama_cpp.server` 0.3.36, one per model, `--n_threads 1 "
        "--n_threads_batch 1 --n_ctx 2048 --interrupt_requests False`, behind the `openai` "
        "backend, which sends every sampling setting, neutral ones included (no `min_p`, no "
        "repetition penalty), so both sides sample as the card says",
        "",
        "| figure | CYOA (each sitting) | peer (each sitting) |",
        "|---|---|---|",
    ]
    for count, key, label in FIGURES:
        lines.append(f"| {label} | {cells('cyoa', count, key)} | {cells('peer', count, key)} |")
    lines.append(
        "| peak memory, both models loaded (MB) | "
        + " / ".join(map(str, memory["cyoa"]))
        + " | "
        + " / ".join(map(str, memory["peer"]))
        + " (app + servers) |"
    )
    both = (med("cyoa", "1", "both_p50_s"), med("peer", "1", "both_p50_s"))
    rate = (med("cyoa", "16", "suggestions_per_s"), med("peer", "16", "suggestions_per_s"))
    first = med("cyoa", "1", "first_token_p50_s")
    p95 = med("cyoa", "16", "both_p95_s")
    peak = max(memory["cyoa"]) if memory["cyoa"] else None

    def ratio(pair: tuple[float | None, float | None]) -> str:
        return "—" if None in pair or not pair[1] else f"{pair[0] / pair[1]:.2f}×"

    lines += [
        "",
        "## Goals (issue 44), on the medians of the sittings",
        "",
        "| goal | reached |",
        "|---|---|",
        f"| 1 writer: both suggestions p50 ≤ 0.8 × the peer's | {ratio(both)} ({both[0]} s "
        f"against {both[1]} s) |",
        f"| 1 writer: first text p50 ≤ 0.1 s | {first} s |",
        f"| 16 writers: suggestions/s ≥ 1.5 × the peer's | {ratio(rate)} ({rate[0]} against "
        f"{rate[1]}) |",
        f"| 16 writers: both suggestions p95 ≤ 2 s | {p95} s |",
        f"| peak memory, both models and 16 writers ≤ 1.0 GB | {peak} MB |",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--peer-python", required=True, help="a Python with llama-cpp-python[server]"
    )
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sittings", type=int, default=2, help="sittings of each, alternating")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    from cyoa.generation.llamacpp.library import cpu_features

    given = sys.argv[1:] if argv is None else argv
    results: dict[str, Any] = {
        "command": shlex.join(["python", "bench/peer.py", *given]),
        "machine": load.machine(),
        "cpu_features": cpu_features(),
        "rounds": args.rounds,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "sittings": [],
    }
    files = gguf_files(load.model_cache())
    workdir = Path(tempfile.mkdtemp(prefix="cyoa-peer-"))
    try:
        for _ in range(args.sittings):
            for label in ("cyoa", "peer"):
                print(f"[{label}] sitting {len(results['sittings']) // 2 + 1}", flush=True)
                result = sitting(label, args, workdir, files)
                results["sittings"].append({"label": label, "result": result})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    results["finished"] = time.strftime("%Y-%m-%d %H:%M")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peer.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "peer.md").write_text(render(results) + "\nRaw figures: [peer.json](peer.json)\n")
    print(f"Results: {args.out / 'peer.md'}")


if __name__ == "__main__":
    main()
