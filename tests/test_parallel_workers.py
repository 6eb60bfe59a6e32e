"""`make test` runs the tests on two cores (pytest-xdist): each worker keeps to one thread."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import parallel_workers
import pytest

from tests.paths import TESTS

pytest_plugins = ["pytester"]

THREAD_SETTINGS = (
    "CYOA_TORCH_THREADS",
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
)

SEEN = f"""
import json, os

def test_what_the_worker_sees():
    seen = [os.environ.get(name) for name in {THREAD_SETTINGS!r}]
    with open(os.environ["SEEN_FILE"], "w") as file:
        json.dump(seen, file)
"""


@pytest.fixture
def seen_in_a_test(pytester, monkeypatch, tmp_path):
    """Runs one test with pytest and these options; the thread settings it saw."""
    for name in THREAD_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    # Under `make test` this test itself runs in a worker, whose mark the run below must not see.
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    here = str(TESTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("SEEN_FILE", str(tmp_path / "seen.json"))
    pytester.makepyfile(test_seen=SEEN)

    def run(*options: str) -> list[str | None]:
        result = pytester.runpytest_subprocess("-p", "parallel_workers", *options)
        result.assert_outcomes(passed=1)
        return json.loads((tmp_path / "seen.json").read_text())

    return run


def test_each_of_two_workers_runs_torch_openmp_and_blas_on_one_thread(seen_in_a_test):
    assert seen_in_a_test("-n", "2") == ["1", "1", "1", "1"]


def configure(monkeypatch, numprocesses: int | None, worker: str | None = None) -> None:
    if worker is None:  # under `make test` the test itself runs in a worker
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    parallel_workers.pytest_configure(
        SimpleNamespace(option=SimpleNamespace(numprocesses=numprocesses))
    )


def test_a_thread_count_set_by_the_person_running_the_tests_is_kept(monkeypatch):
    for name in THREAD_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    configure(monkeypatch, numprocesses=2)
    assert [os.environ.get(name) for name in THREAD_SETTINGS] == ["1", "2", "1", "1"]


@pytest.mark.parametrize(("numprocesses", "worker"), [(None, None), (0, None), (2, "gw0")])
def test_without_several_workers_or_in_a_worker_nothing_is_changed(
    monkeypatch, numprocesses, worker
):
    for name in THREAD_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    configure(monkeypatch, numprocesses, worker)
    assert [os.environ.get(name) for name in THREAD_SETTINGS] == [None] * 4
