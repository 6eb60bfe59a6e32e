"""How long one call of the ``openai`` backend takes to end against each mode of the hostile
test server (bench/hostile_server.py), and how soon Stop ends a call whose server
hangs, with the card's bounds as given.

    .venv/bin/python bench/hostile_servers.py    # bench/results/hostile-servers.{md,json}

Each mode is called ``--repeats`` times with ``max_tokens`` 20 (a judge's short answer);
the table gives the median and the slowest seconds from the call to its error, and the error's
first words. Stop: a call to a hanging server is stopped 0.5 s after it was sent (its read
timeout and deadline far away); the seconds from the stop to the call's end.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.hostile_server import HostileServer  # noqa: E402
from cyoa.generation.openai_backend import ModelServerError, OpenAIBackend  # noqa: E402
from cyoa.generation.stopping import GenerationStopped, stop_when  # noqa: E402
from cyoa.generation.types import ModelCard, Sampling  # noqa: E402

RESULTS = ROOT / "bench" / "results"
MODES = (
    "ok",
    "over-long",
    "drip",
    "huge-line",
    "many-events",
    "html",
    "json",
    "empty",
    "garbage",
    "hang",
)
SAMPLING = Sampling(max_new_tokens=20)


def card(url: str, timeout: float, deadline: float) -> ModelCard:
    options = {"base_url": url, "model": "judge", "timeout_seconds": timeout,
               "deadline_seconds": deadline}  # fmt: skip
    return ModelCard("remote", "remote", "openai", SAMPLING, version="bench", options=options)


def call(backend: OpenAIBackend) -> tuple[float, str]:
    """Seconds until one call ends, and how it ended."""
    started = time.perf_counter()
    try:
        text = "".join(backend.stream("Is the ending earned?", SAMPLING, 1))
        outcome = f"answer: {text[:40]!r}"
    except (ModelServerError, GenerationStopped) as error:
        outcome = str(error).split("/v1/completions ", 1)[-1][:90]
    return time.perf_counter() - started, outcome


def stop_latency(backend: OpenAIBackend) -> float:
    """Seconds from a stop to the end of a call to a server that hangs."""
    stop = threading.Event()
    ended: list[float] = []

    def work() -> None:
        with stop_when(stop.is_set):
            call(backend)
        ended.append(time.perf_counter())

    worker = threading.Thread(target=work)
    worker.start()
    time.sleep(0.5)
    pressed = time.perf_counter()
    stop.set()
    worker.join()
    return ended[0] - pressed


def measure(repeats: int, timeout: float, deadline: float) -> dict[str, Any]:
    server = HostileServer()
    try:
        rows = []
        for mode in MODES:
            backend = OpenAIBackend(card(server.base_url(mode), timeout, deadline))
            runs = [call(backend) for _ in range(repeats)]
            seconds = [s for s, _ in runs]
            rows.append({"mode": mode, "median_s": round(statistics.median(seconds), 3),
                         "max_s": round(max(seconds), 3), "outcome": runs[0][1]})  # fmt: skip
        hang = OpenAIBackend(card(server.base_url("hang"), 300, 600))
        stops = [stop_latency(hang) for _ in range(repeats)]
    finally:
        server.stop()
    return {
        "rows": rows,
        "stop_median_s": round(statistics.median(stops), 3),
        "stop_max_s": round(max(stops), 3),
    }


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# Hostile model servers",
        "",
        f"`{result['command']}` — {result['stamp']}",
        "",
        f"One call of the `openai` backend per row, {result['repeats']} times, `max_tokens` 20, "
        f"the card's `timeout_seconds` {result['timeout']:g} and `deadline_seconds` "
        f'{result["deadline"]:g} (docs/deployment.md, "Bounds on every call"); the modes are '
        "bench/hostile_server.py's.",
        "",
        "| mode | median (s) | slowest (s) | how it ended |",
        "|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(f"| {row['mode']} | {row['median_s']} | {row['max_s']} | {row['outcome']} |")
    lines += [
        "",
        f"Stop during a hang (bounds 300 s / 600 s): the call ended {result['stop_median_s']} s "
        f"after the stop (median; slowest {result['stop_max_s']} s).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--deadline", type=float, default=10.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    result = {
        "command": "python bench/hostile_servers.py " + " ".join(sys.argv[1:]),
        "stamp": time.strftime("%Y-%m-%d %H:%M"),
        "repeats": args.repeats,
        "timeout": args.timeout,
        "deadline": args.deadline,
        **measure(args.repeats, args.timeout, args.deadline),
    }
    print(markdown(result))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hostile-servers.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.out / "hostile-servers.md").write_text(markdown(result))
    print(f"wrote {args.out / 'hostile-servers.json'} and {args.out / 'hostile-servers.md'}")


if __name__ == "__main__":
    main()
