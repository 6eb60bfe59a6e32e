"""A throw-away PostgreSQL server for the tests: a new cluster in a temporary folder, on a free
port of 127.0.0.1, started once per test session and removed at its end.

It uses Debian's ``postgresql`` package (``make postgres`` installs it): ``initdb`` and
``pg_ctl`` from ``PATH`` or ``/usr/lib/postgresql/VERSION/bin``. PostgreSQL refuses to run as
root, so as root the cluster belongs to the ``postgres`` user (``runuser``); as anyone else it
runs as them. Durability is switched off (``fsync``, ``synchronous_commit``): the cluster
lives for one test run, and a test never kills this server; a test that stops its server
uses another (:func:`stoppable_cluster`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

SERVER_SETTINGS = (
    "fsync=off",
    "synchronous_commit=off",
    "full_page_writes=off",
    "max_connections=200",
    "listen_addresses=127.0.0.1",
)


# A server a test stops at once must keep what it acknowledged: a commit waits for its WAL
# to reach the operating system (which outlives the server), as in production.
STOPPABLE_SETTINGS = tuple(s for s in SERVER_SETTINGS if not s.startswith("synchronous_commit"))


@dataclass(frozen=True)
class Cluster:
    """A running cluster: its folder, port and the superuser's URL (database ``postgres``)."""

    folder: Path
    port: int
    owner: list[str]
    settings: tuple[str, ...] = SERVER_SETTINGS

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"


def binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on ``PATH``, else Debian's newest."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parts[-3])
    )
    return versions[-1].parent if versions else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_cluster(bin_dir: Path, settings: tuple[str, ...] = SERVER_SETTINGS) -> Cluster:
    """Create a cluster in a new temporary folder and start it with ``settings``; waits until
    it accepts connections."""
    folder = Path(tempfile.mkdtemp(prefix="cyoa-postgres-"))
    owner: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        owner = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    initdb = [str(bin_dir / "initdb"), "-D", str(folder / "data"), "-U", "postgres"]
    initdb += ["-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"]
    subprocess.run([*owner, *initdb], check=True, capture_output=True)
    cluster = Cluster(folder, port, owner, settings)
    start_server(bin_dir, cluster)
    return cluster


def start_server(bin_dir: Path, cluster: Cluster) -> None:
    """Start the cluster's server (again) on its port; waits until it accepts connections."""
    folder = cluster.folder
    options = f"-p {cluster.port} -k {folder} " + " ".join(f"-c {s}" for s in cluster.settings)
    start = [str(bin_dir / "pg_ctl"), "-D", str(folder / "data"), "-l", str(folder / "log")]
    subprocess.run(
        [*cluster.owner, *start, "-o", options, "-w", "start"], check=True, capture_output=True
    )


def stop_server(bin_dir: Path, cluster: Cluster) -> None:
    """Stop the cluster's server at once, as a crash would (``immediate``: no shutdown
    checkpoint, every connection cut), keeping its folder for :func:`start_server`."""
    stop = [str(bin_dir / "pg_ctl"), "-D", str(cluster.folder / "data"), "-m", "immediate"]
    subprocess.run([*cluster.owner, *stop, "-w", "stop"], check=False, capture_output=True)


def stop_cluster(bin_dir: Path, cluster: Cluster) -> None:
    """Stop the server at once and remove its folder."""
    stop_server(bin_dir, cluster)
    shutil.rmtree(cluster.folder, ignore_errors=True)


def create_database(cluster: Cluster, name: str, template: str | None = None) -> str:
    """A new database in ``cluster``, empty or a copy of the database named ``template``
    (which nobody may be connected to meanwhile: PostgreSQL copies its files); returns its
    URL."""
    copy = f' TEMPLATE "{template}"' if template else ""
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    return cluster.url(name)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[Cluster]:
    """One PostgreSQL server for the whole test session."""
    bin_dir = binaries()
    if bin_dir is None:
        pytest.fail("PostgreSQL is missing: run `make postgres` (apt-get install postgresql).")
    cluster = start_cluster(bin_dir)
    try:
        yield cluster
    finally:
        stop_cluster(bin_dir, cluster)


@pytest.fixture(scope="session")
def stoppable_cluster() -> Iterator[tuple[Path, Cluster]]:
    """A second PostgreSQL server, for the tests that stop it and start it again
    (:func:`stop_server`, :func:`start_server`; each leaves it running), with the folder of
    its binaries; no other test uses it."""
    bin_dir = binaries()
    if bin_dir is None:
        pytest.fail("PostgreSQL is missing: run `make postgres` (apt-get install postgresql).")
    cluster = start_cluster(bin_dir, STOPPABLE_SETTINGS)
    try:
        yield bin_dir, cluster
    finally:
        stop_cluster(bin_dir, cluster)


@pytest.fixture
def postgres_url(postgres_cluster: Cluster, request: pytest.FixtureRequest) -> str:
    """A new empty database for one test on the session's server, as a ``postgresql://``
    URL (``CYOA_DATABASE``'s form)."""
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:40].lower()
    return create_database(postgres_cluster, f"test_{name}_{secrets.token_hex(4)}")
