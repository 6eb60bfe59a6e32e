"""Benchmark: the test suite's wall time on two cores, and where the workers' time goes.

    .venv/bin/python bench/test_suite.py                 # runs the suite as `make test` does
    .venv/bin/python bench/test_suite.py --junit RUN.xml --wall 1805 --cpu 2887 --label before

Runs ``pytest -q -n 2 --dist worksteal`` (the command of ``make test``, with ``CI=true``) with
a JUnit report, or reads the report of a run made before (``--junit``, with that run's wall and
CPU seconds as measured by ``/usr/bin/time``). Prints and records: the run's wall time, its CPU
(user + system of pytest and every process it waited for), the tests' own time summed over the
workers ("worker-seconds"), per folder of ``tests/`` and for the slowest files. A fresh clone
also converts the packaged GGUF models for the torch-engine tests (once per clone, inside the
run). Writes ``bench/results/test-suite.json`` (each label's latest run) and the tables at the
top of ``bench/results/test-suite.md``; the page's notes below its tables are kept.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
NOTES = "<!-- notes: kept as written when the tables are redrawn -->"
COMMAND = [sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "worksteal"]


def run_suite(junit: Path) -> tuple[float, float, str]:
    """Runs the suite; its wall seconds, CPU seconds and last line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [*COMMAND, f"--junitxml={junit}"],
        cwd=ROOT,
        env={**os.environ, "CI": "true"},
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = done.stdout.strip().splitlines()
    return wall, cpu, lines[-1] if lines else done.stderr.strip()[-300:]


def summary(junit: Path) -> dict:
    """The report's start, tests, outcomes and worker-seconds by folder and by file."""
    root = ET.parse(junit).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    started = (suite.get("timestamp") or "")[:16].replace("T", " ") if suite is not None else ""
    folders: collections.Counter[str] = collections.Counter()
    files: collections.Counter[str] = collections.Counter()
    outcomes: collections.Counter[str] = collections.Counter()
    for case in root.iter("testcase"):
        module = case.get("classname") or "?"
        seconds = float(case.get("time") or 0)
        parts = module.split(".")
        folders["/".join(parts[:2]) if len(parts) > 2 else "tests"] += seconds
        files["/".join(parts) + ".py"] += seconds
        kind = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
        outcomes[kind] += 1
    return {
        "measured": f"{started} UTC" if started else "",
        "outcomes": dict(outcomes),
        "worker_seconds": round(sum(files.values()), 1),
        "folders": {k: round(v, 1) for k, v in folders.most_common()},
        "slowest_files": {k: round(v, 1) for k, v in files.most_common(15)},
    }


def page(runs: dict[str, dict], notes: str) -> str:
    labels = list(runs)
    head = "| | " + " | ".join(labels) + " |\n|---|" + "---|" * len(labels) + "\n"

    def row(name: str, values: list[str]) -> str:
        return f"| {name} | " + " | ".join(values) + " |\n"

    out = ["# The test suite: wall time on two cores, and where the workers' time goes\n\n"]
    out.append("Latest runs (`python bench/test_suite.py`, the command of `make test`):\n\n")
    out.append(head)
    out.append(row("measured", [runs[k]["measured"] for k in labels]))
    out.append(row("commit", [f"`{runs[k]['commit']}`" for k in labels]))
    out.append(row("outcomes", [_outcomes(runs[k]["outcomes"]) for k in labels]))
    out.append(row("wall", [_minutes(runs[k]["wall_s"]) for k in labels]))
    out.append(row("CPU (user + system)", [f"{runs[k]['cpu_s']:,.0f} s" for k in labels]))
    out.append(
        row("tests' time, both workers", [f"{runs[k]['worker_seconds']:,.0f} s" for k in labels])
    )
    folders = sorted(
        {f for k in labels for f in runs[k]["folders"]},
        key=lambda f: -max(runs[k]["folders"].get(f, 0) for k in labels),
    )
    for folder in folders:
        out.append(
            row(f"… `{folder}/`", [f"{runs[k]['folders'].get(folder, 0):,.0f} s" for k in labels])
        )
    latest = runs[labels[-1]]
    out.append(
        f"\nThe slowest files of `{labels[-1]}` (tests' time, s):\n\n| file | s |\n|---|---|\n"
    )
    for name, seconds in latest["slowest_files"].items():
        out.append(f"| `{name}` | {seconds:,.1f} |\n")
    out.append(f"\n{NOTES}\n{notes}")
    return "".join(out)


def _outcomes(outcomes: dict) -> str:
    return ", ".join(f"{n:,} {kind}" for kind, n in sorted(outcomes.items()))


def _minutes(seconds: float) -> str:
    return f"{seconds:,.0f} s ({int(seconds // 60)} min {int(seconds % 60)} s)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", type=Path, help="a report of a run made before")
    parser.add_argument("--wall", type=float, help="with --junit: that run's wall seconds")
    parser.add_argument("--cpu", type=float, help="with --junit: that run's CPU seconds")
    parser.add_argument("--label", default="latest", help="the run's column on the page")
    parser.add_argument("--commit", help="with --junit: the commit that run tested")
    args = parser.parse_args()
    if args.junit and (args.wall is None or args.cpu is None):
        parser.error("--junit needs that run's --wall and --cpu seconds")
    commit = (
        args.commit
        or subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
    )
    if args.junit:
        junit, wall, cpu, last = args.junit, args.wall, args.cpu, ""
    else:
        junit = Path(tempfile.mkdtemp()) / "junit.xml"
        print("Running the suite on two workers (about 15–30 minutes)…", flush=True)
        wall, cpu, last = run_suite(junit)
        print(last, flush=True)
    run = {
        "commit": commit,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        **summary(junit),
    }
    run["measured"] = run["measured"] or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    stored = RESULTS / "test-suite.json"
    runs = json.loads(stored.read_text())["runs"] if stored.exists() else {}
    runs[args.label] = run
    stored.write_text(json.dumps({"runs": runs}, indent=2) + "\n")
    markdown = RESULTS / "test-suite.md"
    text = markdown.read_text() if markdown.exists() else ""
    notes = text.split(NOTES, 1)[1].lstrip("\n") if NOTES in text else text
    markdown.write_text(page(runs, notes))
    print(f"wall {_minutes(wall)}, CPU {cpu:,.0f} s, tests {run['worker_seconds']:,.0f} s")


if __name__ == "__main__":
    main()
