"""Running the tests on several cores (pytest-xdist, ``-n N``): each worker gets one CPU
thread for torch, OpenMP and BLAS, so N workers use N cores instead of each spreading over all
of them (oversubscribed, every worker runs slower than alone). Tests that are about thread
counts set their own. A pytest plugin: tests/conftest.py takes its hook."""

from __future__ import annotations

import os

import pytest

ONE_THREAD_EACH = (
    "CYOA_TORCH_THREADS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
)


def pytest_configure(config: pytest.Config) -> None:
    """In the controller of several xdist workers, before it starts them (they inherit its
    environment before importing numpy or torch): one thread each, unless already set."""
    if getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        for name in ONE_THREAD_EACH:
            os.environ.setdefault(name, "1")
