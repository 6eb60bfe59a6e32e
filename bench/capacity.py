"""Capacity of one machine: how many participants a deployment holds at acknowledgement
latency p95 < 300 ms and p99 < 1 s, with nothing acknowledged lost or duplicated.

    .venv/bin/python bench/capacity.py --config sqlite-1
    .venv/bin/python bench/capacity.py --config sqlite-N --processes 4
    .venv/bin/python bench/capacity.py --config postgresql-N --processes 4
    .venv/bin/python bench/capacity.py --config sqlite-1 --real-models --steps 2 4 8

Configurations (bench/deployment.py starts them): ``sqlite-1``, one app process on a SQLite
file; ``sqlite-N``, N processes on one SQLite file joined by Redis; ``postgresql-N``, N
processes on a throw-away PostgreSQL cluster, joined by Redis. ``--real-models`` runs the
packaged models (instance/models) instead of the fake backend, in one process.

Simulated participants (bench/participants.py), ``--writers-per-rater`` writers to each
rater, at a human pace shortened by ``--pace``: a writer writes a line (20–60 s), reads the
two suggestions (5–15 s), chooses one, edits it (10–30 s, one draft saved midway) and adds
it; a rater reads a story (30–90 s), answers its 22 questions one by one (2–6 s each) and
finishes it. With ``--record on`` (the default, as a study's ``record_keystrokes``) a writer
types each text key by key meanwhile and sends its keystroke record as the page does
(bench/typist.py: a batch every ten seconds of typing, spread over the pause), each line,
draft and turn checked against it; ``--record off`` is a study without the record. Each
participant is a client of one process, round-robin, over websocket only (no load
balancer: a client that keeps to its process is what sticky sessions give). The
participants are ramped up in ``--steps``, each held for ``--hold`` seconds with new
participants, until a step misses the targets; the participants run in ``--client-processes``
processes so that the load generator is not the bottleneck (its CPU is reported).

Measured per step and per kind of action: the acknowledgement latency (from the first
sending of an action to the acknowledgement that it is stored, resends included), its p50,
p95, p99 and max; the CPU of each app process and of the clients (psutil); the "database
busy" retries the app processes logged. Afterwards, the replay check: every acknowledged
client action id is in ``events`` or ``rating_events`` exactly once. Results:
``bench/results/capacity.md`` and ``capacity.json`` (the latest run of each configuration).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shlex
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import psutil
from socketio.exceptions import SocketIOError

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.deployment import (
    RATING,
    WRITING,
    app_processes,
    postgres_database,
    write_studies,
)
from bench.load import percentile
from bench.participants import Ledger, ParticipantError, Rater, Sent, Writer
from bench.typist import Typist
from cyoa import store

RESULTS = Path(__file__).resolve().parent / "results"
P95_TARGET_S = 0.3
P99_TARGET_S = 1.0
CONFIGS = ("sqlite-1", "sqlite-N", "postgresql-N")
# What the app processes log when the database stayed locked (cyoa/cowriting/sockets.py,
# runner.py, cyoa/rating/pages.py).
BUSY_MARKS = ("database busy", "waits to be recorded", "database is locked")
# The keystroke record's batches: stored in text_operations, not events (bench/keystrokes.py
# checks them row by row).
RECORD = "writer/record"


@dataclass(frozen=True)
class Pace:
    """Human pauses in seconds (uniform ranges), multiplied by ``factor``."""

    factor: float = 0.1
    write: tuple[float, float] = (20.0, 60.0)
    read: tuple[float, float] = (5.0, 15.0)
    edit: tuple[float, float] = (10.0, 30.0)
    story: tuple[float, float] = (30.0, 90.0)
    answer: tuple[float, float] = (2.0, 6.0)

    def pause(self, rng: random.Random, which: tuple[float, float]) -> float:
        return rng.uniform(*which) * self.factor


# --- the rules (pure) --------------------------------------------------------------------


def latency_summary(latencies: list[float | None]) -> dict[str, Any]:
    """Count, unacknowledged count and p50/p95/p99/max in seconds of one kind's latencies;
    an action never acknowledged counts as infinitely slow."""
    values = [float("inf") if v is None else v for v in latencies]
    return {
        "n": len(values),
        "unacknowledged": sum(v is None for v in latencies),
        **{f"p{q}_s": _round(percentile(values, q)) for q in (50, 95, 99)},
        "max_s": _round(max(values, default=None)),
    }


def held(by_kind: dict[str, dict[str, Any]], p95: float = P95_TARGET_S, p99: float = P99_TARGET_S):
    """Whether a step held its participants: some actions were acknowledged, and every kind
    of action has p95 below ``p95`` and p99 below ``p99`` seconds, none unacknowledged."""
    return bool(by_kind) and all(
        s["n"] and not s["unacknowledged"] and s["p95_s"] < p95 and s["p99_s"] < p99
        for s in by_kind.values()
    )  # a kind with an unacknowledged action has no finite percentiles to compare


def largest_held(steps: list[dict[str, Any]]) -> int | None:
    """The largest number of participants held, counting up the steps until the first that
    missed the targets (or had a participant fail); None if the first step missed them."""
    best = None
    for step in sorted(steps, key=lambda s: s["participants"]):
        if not step["held"]:
            break
        best = step["participants"]
    return best


def replay_counts(acknowledged: list[str], stored: list[str]) -> dict[str, int]:
    """The replay check's counts: acknowledged actions, those stored, those lost (acknowledged,
    not stored) and the duplicates (copies of a client action id beyond its first)."""
    copies = Counter(stored)
    return {
        "acknowledged": len(acknowledged),
        "stored": len(stored),
        "lost": sum(1 for action_id in set(acknowledged) if action_id not in copies),
        "duplicated": sum(n - 1 for n in copies.values() if n > 1),
    }


def mix(participants: int, writers_per_rater: int) -> tuple[int, int]:
    """(writers, raters) among ``participants``: one rater to ``writers_per_rater``
    writers, at least one writer."""
    raters = participants // (writers_per_rater + 1)
    return participants - raters, raters


def limit_hint(step: dict[str, Any]) -> str:
    """What most likely limited a step: the app processes' CPU (a process near one core is
    held by Python's global interpreter lock), the database's lock, the load generator, or
    none of these (then the event loop / the threads' scheduling)."""
    hints = []
    if step["busy_retries"]:
        hints.append(f"the database's lock ({step['busy_retries']} busy retries)")
    if max(step["app_cpu_cores"], default=0) >= 0.85:
        hints.append("the CPU of an app process (one core: Python's GIL)")
    if step["machine_cpu_percent"] >= 90:
        hints.append("the machine's CPU")
    if step["client_cpu_cores"] >= 0.85 * step["client_processes"]:
        hints.append("the load generator's CPU")
    return "; ".join(hints) or "none saturated: waits in the server (threads, event loop)"


# --- the simulated participants ------------------------------------------------------------


def write_until(
    writer: Writer, rng: random.Random, pace: Pace, stop: threading.Event, record: bool
) -> None:
    """A writer's rounds at a human pace until ``stop`` is set or the story ends; with
    ``record``, typing each text key by key and sending the keystroke record as the page
    does (bench/typist.py), its batches spread over the time the writer takes."""
    number = writer.state["round"]
    typist = None
    if record and writer.record_setting.get("on"):
        first = writer.record_setting.get("next_seq", 1) - 1
        typist = Typist(rng, int(time.time() * 1000), seq=first)
    while writer.state["phase"] == "writing":
        line = f"The keeper wrote line {number} of the story."
        if not _typed(
            writer, typist, stop, pace.pause(rng, pace.write), (number, "line", None), "", line
        ):
            return
        writer.act("line_submitted", {"text": line, **_through(typist)})
        view = writer.wait_for("choosing", number)
        if stop.wait(pace.pause(rng, pace.read)):
            return
        done = [s for s in view["current"]["suggestions"] if s["status"] == "done"]
        chosen = rng.choice(done)
        slot = chosen["slot"]
        writer.act("suggestion_chosen", {"slot": slot})
        text = f"The keeper kept the suggestion of round {number}, edited."
        box = (number, "edit", slot)
        if not _typed(
            writer, typist, stop, pace.pause(rng, pace.edit) / 2, box, chosen["text"], text[:30]
        ):
            return
        writer.act("draft_saved", {"slot": slot, "text": text[:30], **_through(typist)})
        if not _typed(writer, typist, stop, pace.pause(rng, pace.edit) / 2, box, text[:30], text):
            return
        writer.act("turn_submitted", {"text": text, **_through(typist)})
        number += 1


def _typed(writer, typist, stop, seconds, box, before: str, after: str) -> bool:
    """Wait ``seconds`` (False when ``stop`` came first); with a typist, the box goes from
    ``before`` to ``after`` meanwhile (the text selected and typed over when ``after`` does
    not go on from it) and its record's batches are sent evenly over those seconds."""
    if typist is None:
        return not stop.wait(seconds)
    round_number, name, slot = box
    if not after.startswith(before):
        typist.change(round_number, name, slot, before, after[:1])
        before = after[:1]
    typist.type_text(round_number, name, slot, before, after[len(before) :])
    batches = typist.batches()
    for batch in batches:
        if stop.wait(seconds / len(batches)):
            return False
        writer.record(batch)
    return True


def _through(typist: Typist | None) -> dict[str, int]:
    return {} if typist is None else {"record_seq": typist.seq}


def rate_until(rater: Rater, rng: random.Random, pace: Pace, stop: threading.Event) -> None:
    """A rater's stories at a human pace until ``stop`` is set or every story is rated."""
    while 'id="story"' in rater.load_page():
        story, items = rater.task()
        if stop.wait(pace.pause(rng, pace.story)):
            return
        for item, value in items:
            if stop.wait(pace.pause(rng, pace.answer)):
                return
            rater.act("answer_given", {"story": story, "item": item, "value": value})
        rater.act("story_finished", {"story": story})


def participant(
    role: str, urls: list[str], pid: str, pace: Pace, stop, ledger, seed, record: bool = False
) -> str:
    """Run one participant until ``stop``; returns "" or the error that ended it early."""
    rng = random.Random(seed)
    if stop.wait(rng.uniform(0, 2.0)):  # arrivals spread over the first seconds
        return ""
    try:
        if role == "writer":
            writer = Writer(urls, WRITING, pid, ledger)
            try:
                write_until(writer, rng, pace, stop, record)
            finally:
                writer.close()
        else:
            rate_until(Rater(urls, RATING, pid, ledger), rng, pace, stop)
    except (ParticipantError, SocketIOError, OSError, ValueError) as error:
        return f"{role} {pid}: {type(error).__name__}: {error}"
    return ""


def run_share(
    plan: list[tuple[str, list[str], str, int]], pace: Pace, hold: float, record: bool = False
) -> dict:
    """One client process's share of a step: ``plan`` rows (role, urls, participant id,
    seed), all run at once for ``hold`` seconds; the actions they sent, their errors and
    this process's CPU seconds."""
    ledger, stop, errors = Ledger(), threading.Event(), []
    cpu = time.process_time()

    def one(row):
        role, urls, pid, seed = row
        if error := participant(role, urls, pid, pace, stop, ledger, seed, record):
            errors.append(error)

    threads = [threading.Thread(target=one, args=(row,), daemon=True) for row in plan]
    for thread in threads:
        thread.start()
    time.sleep(hold)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    sent = [(s.kind, s.action_id, s.latency, s.sends, s.sent_at) for s in ledger.sent]
    return {"sent": sent, "errors": errors, "cpu_s": time.process_time() - cpu}


# --- one step, one configuration -------------------------------------------------------------


def step_plan(count: int, step_index: int, urls: list[str], writers_per_rater: int, seed: int):
    """The participants of a step: role, the process URLs starting with its own (round-robin),
    participant id and seed."""
    writers, raters = mix(count, writers_per_rater)
    roles = ["writer"] * writers + ["rater"] * raters
    random.Random(seed + step_index).shuffle(roles)
    return [
        (role, urls[i % len(urls) :] + urls[: i % len(urls)], f"s{step_index}-{i}", seed + i)
        for i, role in enumerate(roles)
    ]


def run_step(count: int, index: int, processes, args, executor) -> tuple[dict, list[Sent]]:
    """Hold ``count`` participants for ``args.hold`` seconds; the step's figures and every
    action sent."""
    urls = [p.url for p in processes]
    plan = step_plan(count, index, urls, args.writers_per_rater, args.seed)
    shares = [plan[k :: args.client_processes] for k in range(args.client_processes)]
    apps = [psutil.Process(p.pid) for p in processes]
    app_cpu = [_cpu(p) for p in apps]
    busy_before = sum(_busy(p.log()) for p in processes)
    psutil.cpu_percent()
    wall = time.monotonic()
    record = args.record == "on"
    futures = [
        executor.submit(run_share, share, args.pace, args.hold, record) for share in shares if share
    ]
    outcomes = [f.result() for f in futures]
    wall = time.monotonic() - wall
    sent = [Sent(*row) for outcome in outcomes for row in outcome["sent"]]
    kinds = sorted({s.kind for s in sent})
    by_kind = {k: latency_summary([s.latency for s in sent if s.kind == k]) for k in kinds}
    errors = [e for outcome in outcomes for e in outcome["errors"]]
    step = {
        "participants": count,
        "writers_raters": list(mix(count, args.writers_per_rater)),
        "by_kind": by_kind,
        "all": latency_summary([s.latency for s in sent]),
        "resent": sum(s.sends > 1 for s in sent),
        "errors": len(errors),
        "first_errors": errors[:3],
        "app_cpu_cores": [_round((_cpu(p) - c) / wall) for p, c in zip(apps, app_cpu, strict=True)],
        "machine_cpu_percent": psutil.cpu_percent(),
        "client_cpu_cores": _round(sum(o["cpu_s"] for o in outcomes) / wall),
        "client_processes": args.client_processes,
        "busy_retries": sum(_busy(p.log()) for p in processes) - busy_before,
    }
    step["held"] = held(by_kind) and not errors
    step["limit"] = limit_hint(step)
    return step, sent


def run_config(args) -> dict[str, Any]:
    """Start the configuration, ramp its participants up, check the replay; its figures."""
    count = 1 if args.config == "sqlite-1" or args.real_models else args.processes
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cyoa-capacity-")))
        database = str(root / "cyoa.sqlite")
        if args.config == "postgresql-N":
            database = stack.enter_context(postgres_database())
        setup = write_studies(
            root, database, real_models=args.real_models, record=args.record == "on"
        )
        extra = {"CYOA_RATER_ACTION_BURST": "100000", "CYOA_RATER_ACTIONS_PER_SECOND": "1000"}
        processes = stack.enter_context(app_processes(root, setup, count, extra))
        context = get_context("spawn")
        executor = stack.enter_context(
            ProcessPoolExecutor(args.client_processes, mp_context=context)
        )
        steps, sent = [], []
        for index, participants in enumerate(args.steps):
            step, step_sent = run_step(participants, index, processes, args, executor)
            steps.append(step)
            sent += step_sent
            print(_step_line(step), flush=True)
            if not step["held"]:
                break
        replay = replay_check(database, sent)
    return {
        "config": args.config
        + (" (real models)" if args.real_models else "")
        + f", keystroke record {args.record}",
        "processes": count,
        "steps": steps,
        "largest_held": largest_held(steps),
        "replay": replay,
    }


def replay_check(database: str, sent: list[Sent]) -> dict[str, int]:
    """Every acknowledged action against the stored client action ids (both kinds)."""
    db = store.connect(database)
    try:
        stored = [
            row["client_action_id"]
            for table in ("events", "rating_events")
            for row in db.query(
                f"SELECT client_action_id FROM {table} WHERE client_action_id IS NOT NULL"
            )
        ]
    finally:
        db.close()
    acknowledged = [s.action_id for s in sent if s.latency is not None and s.kind != RECORD]
    return replay_counts(acknowledged, stored)


READING = [
    "## Reading the table",
    "",
    "- A step is held when every kind of action (`writer/line_submitted`, "
    "`rater/answer_given`, …) has p95 and p99 within the targets, none went unacknowledged "
    "and no participant failed; the figure is the last step held before the first that was "
    "not. A kind with few actions in a step has its slowest action as its p95: hold steps "
    "for a minute or more for a figure (the default `--hold 60`).",
    "- App CPU is per process, in cores (1.0 = one core busy). The app serves Socket.IO in "
    "threading mode: a thread per connection, and Python's global interpreter lock lets one "
    "thread of a process run Python at a time, so a process near 1.0 is CPU-bound whatever "
    "the machine has; more processes (`-N`) spread that work.",
    "- Busy retries count what the app processes logged when the database stayed locked "
    "(SQLite takes one writer at a time, `BEGIN IMMEDIATE`; PostgreSQL takes row and advisory "
    "locks per session, rater and experiment, so unrelated participants do not wait for each "
    "other). An action that met one was sent again by its client and counts as resent.",
    "- Client CPU is the load generator's; when it nears one core per client process, add "
    "`--client-processes`, so the clients are not the bottleneck.",
    "- Every participant's acknowledged actions are checked afterwards against the "
    "`events` and `rating_events` tables by client action id (the replay check).",
]


# --- the page -------------------------------------------------------------------------------


def render_markdown(results: dict[str, Any]) -> str:
    """The capacity page: the command, the machine, and per configuration its steps."""
    lines = [
        "# Capacity of one machine",
        "",
        "How many participants (writers and raters, 3 : 1, at a human pace) a deployment holds",
        f"at acknowledgement latency p95 < {P95_TARGET_S * 1000:g} ms and p99 < "
        f"{P99_TARGET_S:g} s, with 0 acknowledged actions lost or duplicated (checked by "
        "replay). Script: [bench/capacity.py](../capacity.py), whose docstring says what a "
        "simulated participant does. Clients reach the processes directly, round-robin, "
        "over websocket only (no load balancer).",
        "",
    ]
    for name, run in results.items():
        lines += _config_section(name, run)
    return "\n".join([*lines, *READING]) + "\n"


def settled_load(limit_seconds: float = 180.0) -> tuple[float, float, float]:
    """The load average once its one-minute figure is below half the CPUs (a run just
    before leaves a decaying tail), waiting at most ``limit_seconds``; the page flags a run
    that started above it as measured with other work on the machine."""
    deadline = time.monotonic() + limit_seconds
    while os.getloadavg()[0] >= 0.5 * (os.cpu_count() or 1) and time.monotonic() < deadline:
        time.sleep(5)
    return os.getloadavg()


def _config_section(name: str, run: dict[str, Any]) -> list[str]:
    quiet = run["load_average_start"][0] < 0.5 * run["machine"]["cpus"]
    lines = [
        f"## {name}",
        "",
        f"`{run['command']}` — {run['finished']}",
        "",
        f"- machine: {run['machine']['cpus']} CPUs, {run['machine']['memory_gb']} GB, "
        f"Python {run['machine']['python']}; load average at start {run['load_average_start']}"
        + ("" if quiet else " — **measured with other work on the machine**"),
        f"- {run['processes']} app process(es); pace factor {run['pace']}; each step held "
        f"{run['hold_s']} s with new participants; {run['client_processes']} client process(es)",
        f"- **largest number of participants held: {run['largest_held']}**",
        f"- replay check: {run['replay']['acknowledged']} actions acknowledged, "
        f"{run['replay']['lost']} lost, {run['replay']['duplicated']} duplicated",
        "",
        "| participants (writers/raters) | held | p95 / p99 all (ms) | worst kind p95 / p99 "
        "(ms) | actions | resent | errors | app CPU (cores) | client CPU (cores) | machine "
        "CPU | busy retries | what limits it |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for step in run["steps"]:
        worst = max(step["by_kind"].items(), key=lambda kv: kv[1]["p99_s"], default=None)
        lines.append(
            f"| {step['participants']} ({step['writers_raters'][0]}/{step['writers_raters'][1]})"
            f" | {'yes' if step['held'] else 'no'} | {_ms(step['all']['p95_s'])} / "
            f"{_ms(step['all']['p99_s'])} | "
            + (f"{worst[0]}: {_ms(worst[1]['p95_s'])} / {_ms(worst[1]['p99_s'])}" if worst else "")
            + f" | {step['all']['n']} | {step['resent']} | {step['errors']} | "
            f"{', '.join(map(str, step['app_cpu_cores']))} | {step['client_cpu_cores']} | "
            f"{step['machine_cpu_percent']}% | {step['busy_retries']} | {step['limit']} |"
        )
    return [*lines, ""]


def write_results(run: dict[str, Any], folder: Path = RESULTS) -> None:
    """Keep ``run`` as its configuration's latest in capacity.json; rewrite capacity.md."""
    path = folder / "capacity.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results[run["config"]] = run
    path.write_text(json.dumps(results, indent=2) + "\n")
    (folder / "capacity.md").write_text(render_markdown(results))


# --- helpers and the command line ------------------------------------------------------------


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def _busy(log: str) -> int:
    return sum(log.count(mark) for mark in BUSY_MARKS)


def _round(value: float | None) -> float | None:
    """``value`` to 0.1 ms; None for none, or for an infinite one (an action never
    acknowledged), which JSON cannot hold."""
    return None if value is None or not math.isfinite(value) else round(value, 4)


def _ms(seconds: float | None) -> str:
    return "∞" if seconds is None else f"{seconds * 1000:.0f}"


def _step_line(step: dict[str, Any]) -> str:
    return (
        f"{step['participants']:>5} participants: p95 {_ms(step['all']['p95_s'])} ms, p99 "
        f"{_ms(step['all']['p99_s'])} ms, {step['all']['n']} actions, {step['errors']} errors,"
        f" app CPU {step['app_cpu_cores']}, held: {step['held']} ({step['limit']})"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=CONFIGS, default="sqlite-1")
    parser.add_argument("--processes", type=int, default=2, help="N for the -N configurations")
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 20, 40, 80, 160, 320, 640])
    parser.add_argument("--hold", type=float, default=60.0, help="seconds each step is held")
    parser.add_argument("--pace", type=float, default=0.1, help="factor on the human pauses")
    parser.add_argument("--writers-per-rater", type=int, default=3)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--real-models", action="store_true")
    parser.add_argument(
        "--record",
        choices=("on", "off"),
        default="on",
        help="the study's keystroke record (record_keystrokes), and writers typing key by key",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--settle",
        type=float,
        default=180.0,
        help="seconds to wait at most for the machine's load to settle before starting",
    )
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.pace = Pace(factor=args.pace)
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    started = settled_load(args.settle)
    try:
        run = run_config(args)
    except RuntimeError as error:  # the deployment refused to start: say why, no traceback
        raise SystemExit(f"The {args.config} deployment did not start: {error}") from None
    run |= {
        "command": "python bench/capacity.py " + shlex.join(sys.argv[1:] if argv is None else argv),
        "finished": time.strftime("%Y-%m-%d %H:%M"),
        "machine": {
            "cpus": os.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(),
        },
        "load_average_start": [round(x, 2) for x in started],
        "pace": args.pace.factor,
        "hold_s": args.hold,
        "client_processes": args.client_processes,
    }
    write_results(run, args.results)
    print(f"largest number held: {run['largest_held']}; replay: {run['replay']}")


if __name__ == "__main__":
    main()
