"""Flood benchmark: while one session floods the server, how long does another writer wait?

    .venv/bin/python bench/flood.py                  # the packaged models, 2,000-event flood
    .venv/bin/python bench/flood.py --models fake    # fake models: the server's own overhead

Two runs, each on a fresh ``python app.py`` (bench/load.py's ``Server``, a temporary
database, the same seed salt, so both runs generate the same suggestions for the same
writer): **idle**, where one writer (bench/load.py's simulated writer, without pauses)
writes ``--rounds`` rounds alone; and **flooded**, where the same writer writes the same
rounds while another session floods the server. The flooding session first writes its line
and chooses a suggestion, as any writer; then, on one WebSocket connection, it sends
``--events`` tiny actions at once (drafts, each a different text: the "1,000 saved drafts in
one round" case) without waiting for the answers, and keeps sending a hundred more whenever
fewer than a hundred are unanswered, until the writer is done (``--burst-only``: the first
burst alone, as the issue's 2,000 events).

Measured per run: the writer's wait for both suggestions (the line sent → the state that
offers them), p50, p95 and max, and what the server recorded for the same suggestions
(``waited_seconds``, the writer's wait as the server saw it, and ``generation_seconds``);
the server's CPU seconds, peak threads and peak memory; for the flood, the events sent, the
answers by the end of the run, those answered "send it again in a moment", and the drafts
recorded. The target: the flooded
writer's waits within 1.5× the idle ones. Results: ``bench/results/flood.md`` (its notes
section, from the "Notes" heading on, is kept) and ``flood.json``; every run also in
``bench/results/runs/`` (not in git).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import signal
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil
import socketio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.deployment import FAKE_CARD  # noqa: E402 (after the path)
from bench.load import (  # noqa: E402
    EXPERIMENT,
    NO_PAUSES,
    NOTES_HEADING,
    RESULTS,
    Monitor,
    Server,
    bench_experiments,
    consent,
    machine,
    percentile,
    server_env,
    write_story,
)

TARGET_RATIO = 1.5
# The fake models of the ``--models fake`` runs (bench/deployment.py's card): 20 words at
# 0.05 s each, about a second a suggestion, with no CPU of their own, so the waits are the
# server's overhead alone.
FAKE_DELAY_SECONDS = 0.05
FAKE_EXPERIMENT = """id = "fake-flood"
title = "Fake models for the flood benchmark"
consent = "Benchmark."
instructions = "Benchmark."
rounds = 5
min_chars = 20
max_chars = 260
suggestion_timeout_seconds = 60

[prompt]
text = "Write the first sentence of a story."

[[systems]]
name = "fake-a"
model = "fake-a"

[[systems]]
name = "fake-b"
model = "fake-b"
"""


class Sampler(Monitor):
    """bench/load.py's Monitor (CPU, peak memory), also sampling the peak thread count."""

    def __enter__(self) -> Sampler:
        self.peak_threads = self.process.num_threads()
        return super().__enter__()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.peak_rss = max(self.peak_rss, self.rss())
                self.peak_threads = max(self.peak_threads, self.process.num_threads())
            except psutil.NoSuchProcess:
                return


class Flooder:
    """One session that floods the server with drafts on one connection."""

    def __init__(self, base: str, experiment: str, burst: int, top_up: bool) -> None:
        self.base = base
        self.experiment = experiment
        self.burst = burst
        self.top_up = top_up
        self.sent = 0
        self.answers: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.client = socketio.Client(http_session=consent(base, experiment, "flooder"))
        self.client.connect(base, transports=["websocket"])
        self._thread = threading.Thread(target=self._flood, daemon=True)

    def choose(self) -> None:
        """Write a line and choose a suggestion, so that drafts are what the rules allow."""
        chosen = threading.Event()
        self.client.on("state", lambda view: view["phase"] == "choosing" and chosen.set())
        self.client.call("join", {"experiment": self.experiment}, timeout=60)
        line = "The flood came up the valley before anyone woke."
        self._call("line_submitted", {"text": line})
        if not chosen.wait(600):
            raise TimeoutError("The flooding session's suggestions never came.")
        self._call("suggestion_chosen", {"slot": 1})

    def _call(self, kind: str, payload: dict[str, Any]) -> None:
        data = {"type": kind, "payload": payload, "action_id": uuid.uuid4().hex}
        ack = self.client.call("action", data, timeout=60)
        if not ack.get("ok"):
            raise RuntimeError(f"{kind} refused: {ack.get('error')}")

    def start(self) -> None:
        self._thread.start()

    def _answered(self, *args: Any) -> None:
        with self.lock:
            self.answers.append(args[0] if args and isinstance(args[0], dict) else {})

    def _send(self, count: int) -> None:
        for _ in range(count):
            text = f"My draft, edit number {self.sent}."
            data = {"type": "draft_saved", "payload": {"slot": 1, "text": text}}
            self.client.emit("action", data, callback=self._answered)
            self.sent += 1

    def _flood(self) -> None:
        self._send(self.burst)
        while self.top_up and not self.stop.wait(0.01):
            with self.lock:
                unanswered = self.sent - len(self.answers)
            if unanswered < 100:
                self._send(100)

    def finish(self, timeout: float = 5.0) -> dict[str, Any]:
        """Stop sending, wait (up to ``timeout``) for the answers, and count those that came
        (a server that answers a session over its rate only when its next token is due has
        most of a burst still to answer when the writer is done)."""
        self.stop.set()
        self._thread.join()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.answers) >= self.sent:
                    break
            time.sleep(0.05)
        self.client.disconnect()
        with self.lock:
            answers = list(self.answers)
        return {
            "sent": self.sent,
            "answered": len(answers),
            "recorded_or_unchanged": sum(1 for a in answers if a.get("ok")),
            "refused_retry": sum(1 for a in answers if a.get("retry")),
            "refused_otherwise": sum(
                1 for a in answers if a and not a.get("ok") and not a.get("retry")
            ),
        }


def recorded(database: Path, participant: str) -> list[dict[str, Any]]:
    """The suggestions the server recorded for ``participant``: round, both times."""
    db = sqlite3.connect(database)
    db.row_factory = sqlite3.Row
    rows = db.execute(
        "SELECT s.* FROM suggestions s JOIN sessions ON sessions.id = s.session_id"
        " JOIN participants p ON p.id = sessions.participant_id WHERE p.external_id = ?"
        " ORDER BY s.round, s.slot",
        [participant],
    ).fetchall()
    db.close()
    return [
        {
            "round": row["round"],
            "generation_s": row["generation_seconds"],
            # Servers before the column existed did not record the writer's wait.
            "waited_s": dict(row).get("waited_seconds"),
        }
        for row in rows
    ]


def drafts_recorded(database: Path) -> int:
    db = sqlite3.connect(database)
    (count,) = db.execute("SELECT count(*) FROM events WHERE type = 'draft_saved'").fetchone()
    db.close()
    return count


def run(kind: str, args: argparse.Namespace, workdir: Path, env_extra: dict[str, str]) -> dict:
    """One run (``idle`` or ``flooded``) on a fresh server."""
    folder = workdir / kind
    folder.mkdir()
    if args.models == "fake":
        experiments = workdir / "fake-experiments"
    else:
        experiments = bench_experiments(folder, args.experiment)
    env = server_env(folder, "batched", experiments, env_extra)
    server = Server(env, int(env["CYOA_PORT"]))
    server.start()
    result: dict[str, Any] = {"run": kind}
    flooder = None
    try:
        server.wait_ready(args.experiment)
        if kind == "flooded":
            flooder = Flooder(server.base, args.experiment, args.events, not args.burst_only)
            flooder.choose()
        rng = random.Random(args.seed)
        with Sampler(server.process.pid) as sampler:
            if flooder is not None:
                flooder.start()
            timings = write_story(
                server.base, args.experiment, 1, args.rounds, NO_PAUSES, rng, "writer"
            )
            if flooder is not None:
                result["flood"] = flooder.finish()
        waits = [t.both_s for t in timings]
        result |= {
            "wait_s": {
                "p50": round(percentile(waits, 50), 3),
                "p95": round(percentile(waits, 95), 3),
                "max": round(max(waits), 3),
            },
            "rounds": [asdict(t) for t in timings],
            "server_recorded": recorded(Path(env["CYOA_DATABASE"]), "writer-1"),
            "server_cpu_s": round(sampler.cpu_seconds, 1),
            "server_peak_threads": sampler.peak_threads,
            "server_peak_rss_mb": round(sampler.peak_rss / 2**20),
            "span_s": round(sampler.wall_seconds, 1),
        }
        if flooder is not None:
            result["flood"]["drafts_recorded"] = drafts_recorded(Path(env["CYOA_DATABASE"]))
    finally:
        server.stop()
    print(f"[{kind}] {json.dumps({k: v for k, v in result.items() if k != 'rounds'})}")
    return result


def render_markdown(results: dict[str, Any]) -> str:
    idle, flooded = results["runs"]["idle"], results["runs"]["flooded"]
    ratio = results["ratio"]
    flood = flooded["flood"]
    lines = [
        "# Flood: one session floods the server, another writes",
        "",
        f"`{results['command']}` — {results['finished']}, {results['machine']['cpus']} CPUs, "
        f"models: {results['models']}, {results['rounds']} rounds per run, "
        f"a first burst of {results['events']} events"
        + (" and nothing more." if results["burst_only"] else ", then more as it is answered."),
        "",
        "| | idle | flooded | flooded / idle |",
        "|---|---|---|---|",
    ]
    for q in ("p50", "p95", "max"):
        lines.append(
            f"| writer's wait for both suggestions, {q} (s) | {idle['wait_s'][q]} | "
            f"{flooded['wait_s'][q]} | {ratio[q]} |"
        )
    for label, key in (
        ("server CPU (s)", "server_cpu_s"),
        ("server threads, peak", "server_peak_threads"),
        ("server memory, peak (MB)", "server_peak_rss_mb"),
        ("span of the run (s)", "span_s"),
    ):
        lines.append(f"| {label} | {idle[key]} | {flooded[key]} | |")
    waited = [r["waited_s"] for r in flooded["server_recorded"] if r["waited_s"] is not None]
    generated = [r["generation_s"] for r in flooded["server_recorded"]]
    lines += [
        "",
        f"Flood: {flood['sent']} events sent, {flood['answered']} answered; "
        f'{flood["refused_retry"]} answered "send it again in a moment" (too fast, or the '
        "database busy), "
        f"{flood['recorded_or_unchanged']} accepted, {flood['drafts_recorded']} drafts recorded.",
        "",
        "What the server recorded for the flooded writer's suggestions: "
        + (
            f"waited {min(waited):.2f}–{max(waited):.2f} s "
            if waited
            else "no `waited_seconds` (a server from before the column) "
        )
        + f"for a generation of {min(generated):.2f}–{max(generated):.2f} s.",
        "",
        f"Target: the flooded writer's waits within {TARGET_RATIO}× the idle ones — "
        + ("met." if max(ratio["p50"], ratio["p95"]) <= TARGET_RATIO else "**not met**."),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", choices=["real", "fake"], default="real")
    parser.add_argument("--rounds", type=int, default=5, help="rounds the writer writes (1–5)")
    parser.add_argument("--events", type=int, default=2000, help="the flood's first burst")
    parser.add_argument("--burst-only", action="store_true", help="no events after the burst")
    parser.add_argument("--seed", type=int, default=1, help="seeds the writer's lines")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    given = sys.argv[1:] if argv is None else argv
    workdir = Path(tempfile.mkdtemp(prefix="cyoa-flood-"))
    env_extra: dict[str, str] = {}
    if args.models == "fake":
        args.experiment = "fake-flood"
        models = workdir / "fake-models"
        models.mkdir()
        for name in ("fake-a", "fake-b"):
            (models / f"{name}.toml").write_text(
                FAKE_CARD.format(name=name, delay=FAKE_DELAY_SECONDS)
            )
        (workdir / "fake-experiments").mkdir()
        (workdir / "fake-experiments" / "fake-flood.toml").write_text(FAKE_EXPERIMENT)
        env_extra["CYOA_MODELS_DIR"] = str(models)
    else:
        args.experiment = EXPERIMENT
    results: dict[str, Any] = {
        "command": shlex.join(["python", "bench/flood.py", *given]),
        "stamp": time.strftime("%Y%m%d-%H%M%S"),
        "machine": machine(),
        "models": args.models,
        "rounds": args.rounds,
        "events": args.events,
        "burst_only": args.burst_only,
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "runs": {},
    }
    try:
        for kind in ("idle", "flooded"):
            results["runs"][kind] = run(kind, args, workdir, env_extra)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    idle, flooded = results["runs"]["idle"]["wait_s"], results["runs"]["flooded"]["wait_s"]
    results["ratio"] = {q: round(flooded[q] / idle[q], 2) for q in ("p50", "p95", "max")}
    results["finished"] = time.strftime("%Y-%m-%d %H:%M")
    args.out.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(results, indent=1) + "\n"
    (args.out / "runs").mkdir(exist_ok=True)
    (args.out / "runs" / f"flood-{results['stamp']}.json").write_text(raw)
    (args.out / "flood.json").write_text(raw)
    page = args.out / "flood.md"
    notes = ""
    if page.exists() and NOTES_HEADING in page.read_text():
        notes = "\n" + NOTES_HEADING + page.read_text().split(NOTES_HEADING, 1)[1]
    text = render_markdown(results) + "\nRaw figures: [flood.json](flood.json)\n"
    page.write_text(text + notes)
    print(text)


if __name__ == "__main__":
    main()
