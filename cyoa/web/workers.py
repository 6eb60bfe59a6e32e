"""This process's name among the web workers, and whether a named worker still runs.

A worker id is ``host/process id/start/random``: the machine's host name, the process id,
when the process started as the kernel counts it (clock ticks since boot, from
``/proc/PID/stat``), and a random part (several apps in one process, as in the tests, are
several workers). The start tells a restarted server from the one it replaced even when the
new process got the old one's id (a container's processes start with the same ids each
time). A generation claim held by a worker of this host that no longer runs is taken over at
once (:func:`cyoa.cowriting.store.claim_generation`) instead of waiting for its heartbeat to go
stale.

Workers that share a host name must share a process table (one machine, or one container):
a worker of another container with the same host name would look gone from here.
"""

from __future__ import annotations

import os
import secrets
import socket
from pathlib import Path

PROC = Path("/proc")


def process_start(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot, as text; None when there is
    no such process. Where the system has no ``/proc`` the start is unknown: "" for a
    process that exists."""
    if PROC.is_dir():
        try:
            stat = (PROC / str(pid) / "stat").read_text()
        except OSError:
            return None
        # Field 2, the command name, is in parentheses and may hold spaces or parentheses;
        # the start time is field 22, the 20th after it.
        return stat[stat.rindex(")") + 2 :].split()[19]
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        pass  # it exists, and belongs to another user
    return ""


def new_worker_id() -> str:
    """This process's name in ``generation_claims`` (see the module's docstring)."""
    pid = os.getpid()
    return f"{socket.gethostname()}/{pid}/{process_start(pid)}/{secrets.token_hex(3)}"


def worker_gone(worker_id: str) -> bool:
    """Whether ``worker_id`` names a worker of this host whose process no longer runs: no
    process has its id, or the one that has it started at another time. False for another
    host's worker, for an id in the older form without a start (``host/pid/random``) and
    for a start this system cannot tell: a live worker's claim must never be taken."""
    parts = worker_id.split("/")
    if len(parts) != 4 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    start = process_start(int(parts[1]))
    return start is None or (start != "" and start != parts[2])
