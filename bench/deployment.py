"""A CYOA deployment on this machine, for the capacity benchmark and the failover test: N app
processes (``python app.py``, each on its own port) on one database, joined by a private Redis
as Socket.IO's message queue when N > 1; a co-writing study on fake models (or the packaged
ones) and a rating study, both open.

The database is a parameter: a SQLite file, or a database on a throw-away PostgreSQL cluster
(:func:`postgres_database`, the tests' own cluster helpers). Clients reach the processes
directly, each on its port (no load balancer): a client keeps to one process, as a sticky
session or a websocket-only client behind a balancer would.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis
import requests

ROOT = Path(__file__).resolve().parent.parent
WRITING = "fake-ab"
RATING = "bench-rating"
# The fake backend writes deterministic sentences without weights, so the models are never
# the bottleneck; ``delay_seconds`` (per word) makes a suggestion take a while.
FAKE_CARD = """
name = "{name}"
display_name = "Fake model {name} (benchmarks and tests only)"
backend = "fake"
version = "fake-1"

[sampling]
top_k = 40
top_p = 1.0
temperature = 1.0
max_new_tokens = 40

[options]
delay_seconds = {delay}
"""
WRITING_SPEC = """
id = "fake-ab"
title = "A study on fake models"
consent = "Consent text."
instructions = "Write with the machine."
rounds = {rounds}
min_chars = 20
max_chars = 260
suggestion_timeout_seconds = 20
completion_url = "https://example.org/complete?cc={{code}}"
record_keystrokes = {record}

[prompt]
text = "Write the first sentence of a story."

[[systems]]
name = "{a}-sys"
model = "{a}"

[[systems]]
name = "{b}-sys"
model = "{b}"
"""
# The real packaged models of short-story-1 (instance/models holds their conversions).
REAL_MODELS = ("gemma-3-270m", "smollm2-135m-instruct")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(check: Callable[[], object], timeout: float, what: str) -> object:
    """``check()``'s first true value, polled every 50 ms; AssertionError after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@dataclass(frozen=True)
class Setup:
    """The folders and settings every app process of one deployment shares."""

    database: str
    models_dir: Path
    experiments_dir: Path
    model_cache: Path


def write_studies(
    root: Path,
    database: str,
    rounds: int = 50,
    delay: float = 0.0,
    real_models: bool = False,
    stories: int = 400,
    record: bool = True,
) -> Setup:
    """The co-writing study (fake models, or the packaged ones; keeping the keystroke record
    or not) and the rating study's spec and stories, written under ``root``."""
    models = root / "models"
    experiments = root / "experiments"
    models.mkdir(parents=True, exist_ok=True)
    experiments.mkdir(parents=True, exist_ok=True)
    if real_models:
        names, models, cache = REAL_MODELS, ROOT / "models", ROOT / "instance" / "models"
        cards = [(models / f"{n}.toml").exists() for n in names]
        if not all(cards):
            raise SystemExit(f"The packaged model cards {names} are missing from {models}.")
    else:
        names, cache = ("fake-a", "fake-b"), root / "model-cache"
        for name in names:
            (models / f"{name}.toml").write_text(FAKE_CARD.format(name=name, delay=delay))
    spec = WRITING_SPEC.format(
        rounds=rounds, a=names[0], b=names[1], record="true" if record else "false"
    )
    (experiments / f"{WRITING}.toml").write_text(spec)
    _write_rating_spec(root, stories)
    return Setup(database, models, experiments, cache)


def _write_rating_spec(root: Path, stories: int) -> None:
    lines = [
        {
            "story_id": f"s{n}",
            "source": "human" if n % 2 else "model",
            "title": f"Story {n}",
            "text": f"The lighthouse number {n} stood alone. A keeper lived in it.\n"
            "One night a ship came. The keeper lit the lamp.",
        }
        for n in range(1, stories + 1)
    ]
    (root / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in lines))
    spec = {
        "id": RATING,
        "title": "Short stories",
        "kind": "rating",
        "instrument": "aiss-v1",
        "raters_per_story": 3,
        "stories_per_rater": 2,
        "consent": "You will read two short stories.",
        "instructions": "Read each story, then answer.",
        "completion_url": "https://example.org/done?cc={code}",
        "stories": {"file": "stories.jsonl"},
    }
    (root / "rating.json").write_text(json.dumps(spec))


def open_rating_study(root: Path, setup: Setup) -> None:
    """Create and open the rating study with the CLI's verbs, as a researcher would."""
    from click.testing import CliRunner

    from cyoa.cli import cli

    env = {
        "CYOA_MODELS_DIR": str(setup.models_dir),
        "CYOA_EXPERIMENTS_DIR": str(setup.experiments_dir),
    }
    base = ["--db", setup.database, "experiment"]
    for verb in (["create", str(root / "rating.json")], ["open", RATING]):
        done = CliRunner().invoke(cli, [*base, *verb], env=env)
        if done.exit_code != 0:
            raise RuntimeError(f"experiment {verb[0]} failed: {done.output}")


class AppProcess:
    """One web worker, as ``python app.py`` runs it, on the deployment's database and queue."""

    def __init__(self, setup: Setup, queue: str, log_path: Path, extra: dict[str, str]):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        env = {k: v for k, v in os.environ.items() if not k.startswith("CYOA_")}
        env |= {
            "CYOA_PORT": str(self.port),
            "CYOA_DATABASE": setup.database,
            "CYOA_MODELS_DIR": str(setup.models_dir),
            "CYOA_EXPERIMENTS_DIR": str(setup.experiments_dir),
            "CYOA_MODEL_CACHE": str(setup.model_cache),
            "CYOA_DEFAULT_EXPERIMENT": WRITING,
            "CYOA_SECRET_KEY": "shared-by-every-worker",
            "CYOA_MESSAGE_QUEUE": queue,
            "CYOA_TAG_SENTENCES": "false",
            # Every simulated participant starts from this machine's one address.
            "CYOA_START_BURST": "100000",
            "PYTHONUNBUFFERED": "1",
            **extra,
        }
        with open(log_path, "w") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "app.py"], cwd=ROOT, env=env, stdout=log, stderr=log
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, timeout: float = 120) -> None:
        def up() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"The app process exited: {self.log_path.read_text()}")
            try:
                return requests.get(f"{self.url}/s/{WRITING}", timeout=5).ok
            except requests.RequestException:
                return False

        wait_until(up, timeout, f"the app process on {self.url}")

    def kill(self) -> None:
        """SIGKILL: the process dies at once, with whatever it was doing."""
        self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """A private redis-server on a free port (no persistence); yields its URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit(
            "redis-server is missing: run `make redis` (apt-get install redis-server)."
        )
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", str(folder)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)

    def answers() -> bool:
        try:
            return bool(client.ping())
        except redis.ConnectionError:
            return False

    try:
        wait_until(answers, 10, "redis-server to answer")
        yield url
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=10)


@contextmanager
def postgres_database() -> Iterator[str]:
    """A new database on a throw-away PostgreSQL cluster (Debian's ``postgresql``, as the
    tests start it: bench/postgres_server.py); yields its ``postgresql://`` URL."""
    from bench.postgres_server import binaries, create_database, start_cluster, stop_cluster

    bin_dir = binaries()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is missing: run `make postgres` (apt-get install postgresql).")
    cluster = start_cluster(bin_dir)
    try:
        yield create_database(cluster, "cyoa_bench")
    finally:
        stop_cluster(bin_dir, cluster)


@contextmanager
def app_processes(
    root: Path, setup: Setup, count: int, extra: dict[str, str] | None = None
) -> Iterator[list[AppProcess]]:
    """``count`` app processes on ``setup``'s database (with a private Redis when more than
    one), the rating study opened first; all ready when yielded, stopped afterwards."""
    open_rating_study(root, setup)
    with _queue(root, count) as queue:
        processes = [
            AppProcess(setup, queue, root / f"app-{n}.log", extra or {}) for n in range(count)
        ]
        try:
            for process in processes:
                process.wait_ready()
            yield processes
        finally:
            for process in processes:
                process.stop()


@contextmanager
def _queue(root: Path, count: int) -> Iterator[str]:
    if count == 1:
        yield ""
        return
    with redis_server(root / "redis") as url:
        yield url
