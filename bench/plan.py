"""Benchmark: how long a study plan takes, and how the time grows.

    .venv/bin/python bench/plan.py             # 3 repeats of each timing, best kept
    .venv/bin/python bench/plan.py --repeats 1 # a quicker run

Times the planners behind ``python -m cyoa plan`` at their defaults and as the work grows:

- co-writing (:func:`cyoa.cowriting.planning.plan_cowriting`): the default grid (9 writer
  counts × 4 round counts × 2,000 simulations, then the writer counts bisected between the
  grid's steps) for each test; 500–4,000 simulations; the grid
  doubled (8 round counts) and every writer count doubled; on one BLAS thread and the default;
  the pilot's detectable preference (:func:`~cyoa.cowriting.planning.detectable_preference`,
  up to 49 steps of 2,000 simulations);
- rating (:func:`cyoa.rating.planning.plan_rating`): the default grid (10 story counts × 3
  raters per story, analytic) and one design as the stories grow;
- the command itself, ``python -m cyoa plan --kind … --assume …``, start to finish, and its
  start-up alone (``plan --help``).

Growth is summarised as the exponent b of time ∝ size^b (least squares on log–log).
Writes ``bench/results/plan.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cyoa.cowriting import planning as cowriting  # noqa: E402
from cyoa.rating import planning as rating  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PREFERENCE, WRITER_SD = 0.6, 0.5
ASSUMED = rating.RatingAssumptions(difference=0.3, story_sd=0.5, rater_sd=0.5, residual_sd=0.8)
COMMANDS = {
    "start-up alone": ["--help"],
    "co-writing": ["--kind", "cowriting", "--assume", f"p={PREFERENCE},writer_sd={WRITER_SD}"],
    "rating": [
        "--kind", "rating", "--assume",
        "difference=0.3,story_sd=0.5,rater_sd=0.5,residual_sd=0.8",
    ],
}  # fmt: skip


def best_of(repeats: int, work: Callable[[], object]) -> float:
    """The shortest wall time of ``repeats`` runs of ``work``, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def growth_exponent(sizes: list[float], seconds: list[float]) -> float:
    """b of seconds ∝ size^b: the least-squares slope of log(seconds) on log(size)."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def cowriting_timings(repeats: int) -> dict[str, object]:
    """Seconds for the co-writing planner at its defaults and as simulations and grid grow."""

    def grid(test="writers", simulations=cowriting.SIMULATIONS, writers=cowriting.WRITERS,
             rounds=cowriting.ROUNDS):  # fmt: skip
        return lambda: cowriting.plan_cowriting(
            PREFERENCE, WRITER_SD, test=test, simulations=simulations, writers=writers,
            rounds=rounds,
        )  # fmt: skip

    out: dict[str, object] = {}
    for test in cowriting.TESTS:
        out[f"default grid, {test}"] = best_of(repeats, grid(test))
    with threadpool_limits(1):
        out["default grid, writers, 1 BLAS thread"] = best_of(repeats, grid())
    sims = [500, 1000, 2000, 4000]
    out["simulations"] = {n: best_of(repeats, grid(simulations=n)) for n in sims}
    out["grid doubled (8 round counts)"] = best_of(repeats, grid(rounds=(5, 10, 15, 20, 25, 30,
                                                                        35, 40)))  # fmt: skip
    out["writer counts doubled"] = best_of(
        repeats, grid(writers=tuple(2 * w for w in cowriting.WRITERS))
    )
    out["detectable preference, 10 writers × 5 rounds"] = best_of(
        repeats, lambda: cowriting.detectable_preference(10, 5, WRITER_SD)
    )
    return out


def rating_timings(repeats: int) -> dict[str, object]:
    """Seconds for the rating planner's default grid and for one design as stories grow."""
    out: dict[str, object] = {"default grid": best_of(repeats, lambda: rating.plan_rating(ASSUMED))}
    stories = [50, 100, 200, 400]
    out["stories, 3 raters per story"] = {
        n: best_of(repeats, lambda n=n: rating.planned_power(ASSUMED, n, 3)) for n in stories
    }
    return out


def command_timings() -> dict[str, float]:
    """Seconds for ``python -m cyoa plan`` from the shell, start (imports) to finish."""
    out = {}
    for kind, arguments in COMMANDS.items():
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cyoa", "plan", *arguments], cwd=ROOT, check=True,
                       capture_output=True)  # fmt: skip
        out[kind] = time.perf_counter() - start
    return out


def render_markdown(body: dict) -> str:
    """The benchmark page: the command, the machine, the tables."""
    co, ra, cli = body["cowriting"], body["rating"], body["command"]
    sims = {int(k): v for k, v in co["simulations"].items()}
    stories = {int(k): v for k, v in ra["stories, 3 raters per story"].items()}
    lines = [
        "# How long a study plan takes",
        "",
        f"`.venv/bin/python bench/plan.py --repeats {body['repeats']}` (best of the repeats)",
        "",
        f"- {body['machine']}; Python {body['python']}; numpy {body['numpy']}",
        f"- co-writing: preference {PREFERENCE}, writer SD {WRITER_SD}; rating: {ASSUMED}",
        "- the issue's bar: a default grid in under a minute on 2 cores",
        "",
        "| what | seconds |",
        "|---|---:|",
    ]
    lines += [f"| `plan {' '.join(COMMANDS[k][:2])}`, start to finish | {v:.1f} |"
              for k, v in cli.items()]  # fmt: skip
    lines += [f"| co-writing: {k} | {v:.2f} |" for k, v in co.items() if isinstance(v, float)]
    lines.append(f"| rating: default grid (analytic) | {ra['default grid']:.2f} |")
    lines += ["", "## How the time grows", "", "| co-writing simulations per cell | seconds |",
              "|---:|---:|"]  # fmt: skip
    lines += [f"| {n} | {s:.2f} |" for n, s in sims.items()]
    b_sims = growth_exponent(list(sims), list(sims.values()))
    lines += [
        "", f"Exponent (time ∝ simulations^b): b = {b_sims:.2f}.",
        "", "| rating: stories per source (3 raters each, 1 design) | seconds |", "|---:|---:|",
    ]  # fmt: skip
    lines += [f"| {n} | {s:.3f} |" for n, s in stories.items()]
    b = growth_exponent(list(stories), list(stories.values()))
    lines += ["", f"Exponent (time ∝ stories^b): b = {b:.2f}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    body = {
        "repeats": args.repeats,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "command": command_timings(),
        "cowriting": cowriting_timings(args.repeats),
        "rating": rating_timings(args.repeats),
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "plan.json").write_text(json.dumps(body, indent=2) + "\n")
    markdown = render_markdown(body)
    (RESULTS / "plan.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
