"""The dashboards' stored analyses on both databases: one computation per experiment however
many processes ask (the claim in ``analysis_jobs``), a silent or taken-over worker never
overwrites newer work, a failure is kept and said, and what the page says of each state."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from cyoa import store
from cyoa.analyses import store as analyses
from cyoa.analyses.jobs import BackgroundAnalyses, Served, describe
from cyoa.analyses.store import Job, StoredAnalysis

pytestmark = pytest.mark.both_databases

NOON = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
KIND = "rating-dashboard"


@pytest.fixture
def db(database):
    handle = store.connect(database)
    store.init_db(handle)
    store.upsert_experiment(handle, "study", "A study", {"kind": "rating"})
    yield handle
    handle.close()


def test_a_claim_is_one_worker_s_until_its_holder_goes_silent(db):
    assert analyses.claim(db, "study", KIND, "v1", "worker-a", 60, NOON)
    assert not analyses.claim(db, "study", KIND, "v1", "worker-b", 60, NOON + timedelta(seconds=30))
    assert not analyses.claim(db, "study", KIND, "v2", "worker-a", 60, NOON)  # a's already
    assert analyses.heartbeat(db, "study", KIND, "worker-a", NOON + timedelta(seconds=50), "step")
    assert not analyses.claim(
        db, "study", KIND, "v1", "worker-b", 60, NOON + timedelta(seconds=100)
    )
    assert analyses.claim(db, "study", KIND, "v1", "worker-b", 60, NOON + timedelta(seconds=111))
    assert analyses.job(db, "study", KIND).worker_id == "worker-b"


def test_a_claim_whose_holder_is_gone_passes_at_once(db):
    assert analyses.claim(db, "study", KIND, "v1", "worker-a", 60, NOON)
    gone = {"worker-a"}.__contains__
    assert analyses.claim(db, "study", KIND, "v1", "worker-b", 60, NOON, holder_gone=gone)


def test_a_worker_taken_over_stores_nothing_and_the_one_that_took_over_stores_its_own(db):
    analyses.claim(db, "study", KIND, "v1", "worker-a", 60, NOON)
    later = NOON + timedelta(seconds=61)
    analyses.claim(db, "study", KIND, "v2", "worker-b", 60, later)
    assert not analyses.heartbeat(db, "study", KIND, "worker-a", later)
    assert not analyses.store_result(db, "study", KIND, "worker-a", 5, "v1", 2.0, {"n": 5}, later)
    assert analyses.store_result(db, "study", KIND, "worker-b", 7, "v2", 3.5, {"n": 7}, later)
    stored = analyses.latest(db, "study", KIND)
    assert (stored.answers, stored.version, stored.result) == (7, "v2", {"n": 7})
    assert stored.computed_at == later and stored.seconds == 3.5
    assert analyses.job(db, "study", KIND) is None


def test_a_failed_analysis_is_kept_and_not_tried_again_until_the_data_changes(db):
    analyses.claim(db, "study", KIND, "v1", "worker-a", 60, NOON)
    analyses.fail(db, "study", KIND, "worker-a", "ValueError: no stories.", NOON)
    failed = analyses.job(db, "study", KIND)
    assert (failed.state, failed.error) == ("failed", "ValueError: no stories.")
    assert not analyses.claim(db, "study", KIND, "v1", "worker-b", 60, NOON)
    assert analyses.claim(db, "study", KIND, "v2", "worker-b", 60, NOON)


def test_two_processes_asking_at_once_start_one_computation_and_serve_its_result(db, database):
    release = threading.Event()
    calls = []

    def compute(handle, step):
        calls.append(1)
        step("analysing 3 answers")
        assert release.wait(60)
        return 3, "v1", {"answers": 3}

    first = BackgroundAnalyses(database, "host/1/1/a", heartbeat_every=0.05)
    second = BackgroundAnalyses(database, "host/2/1/b", heartbeat_every=0.05)
    served = []
    askers = [
        threading.Thread(
            target=lambda w=w: served.append(w.serve(db, "study", KIND, "v1", compute, 30))
        )
        for w in (first, second, first, second)
    ]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert all(s.stored is None and not s.current for s in served)
    job = analyses.job(db, "study", KIND)
    assert job.state == "running" and job.worker_id in (first.worker_id, second.worker_id)
    release.set()
    assert first.wait_idle(60) and second.wait_idle(60)
    assert calls == [1]
    after = first.serve(db, "study", KIND, "v1", compute, 30)
    assert after.current and after.stored.result == {"answers": 3}
    assert analyses.job(db, "study", KIND) is None


def test_an_analysis_that_raises_is_stored_as_failed_with_its_reason(db, database):
    def compute(handle, step):
        raise ValueError("the spec names no instrument")

    worker = BackgroundAnalyses(database, "host/1/1/a")
    worker.serve(db, "study", KIND, "v1", compute, 30)
    assert worker.wait_idle(60)
    failed = analyses.job(db, "study", KIND)
    assert failed.state == "failed"
    assert failed.error == "ValueError: the spec names no instrument."


def _stored(answers: int, at: datetime, seconds: float = 20.0) -> StoredAnalysis:
    return StoredAnalysis("study", KIND, answers, "v1", at, seconds, {})


def _job(state: str, started: datetime, step: str = "", error: str = "") -> Job:
    return Job(state, "v2", "host/1/1/a", started, started, step, error)


@pytest.mark.sqlite_only
def test_the_page_says_what_the_analysis_counted_and_what_is_being_computed():
    at = NOON
    now = NOON + timedelta(seconds=12)
    current = describe(Served(_stored(1300, at), None, True), now, 30)
    assert current == {
        "state": "current",
        "as_of": "1,300 answers, 12:00 UTC",
        "text": "Analysis as of 1,300 answers, 12:00 UTC.",
        "answers": 1300,
    }
    computing = describe(
        Served(_stored(1300, at), _job("running", at, "drawing the charts"), False), now, 30
    )
    assert computing["state"] == "computing"
    assert computing["text"] == (
        "Analysis as of 1,300 answers, 12:00 UTC; a newer analysis is being computed "
        "(drawing the charts, 12 s so far; the last took 20 s)."
    )
    first = describe(Served(None, _job("running", at, "analysing 5 answers"), False), now, 30)
    assert first["state"] == "first" and first["as_of"] == "–"
    assert first["text"] == "Computing the first analysis… (analysing 5 answers, 12 s so far)"
    waiting = describe(Served(_stored(1300, at), None, False), now, 60)
    assert waiting["state"] == "waiting"
    assert waiting["text"].endswith("; the newer answers are analysed from 12:01 UTC.")
    failed = describe(
        Served(_stored(1300, at), _job("failed", at, error="ValueError: no."), False), now, 30
    )
    assert failed["state"] == "failed"
    assert failed["text"] == (
        "Analysis as of 1,300 answers, 12:00 UTC. The newest analysis failed: ValueError: no. "
        "It is tried again when the data changes."
    )


def test_an_analysis_read_before_is_not_read_again_until_a_newer_one_is_stored(db):
    analyses.claim(db, "study", KIND, "v1", "worker-a", 60, NOON)
    analyses.store_result(db, "study", KIND, "worker-a", 5, "v1", 2.0, {"n": 5}, NOON)
    first = analyses.latest(db, "study", KIND)
    assert analyses.latest(db, "study", KIND, known=first) is first
    later = NOON + timedelta(seconds=40)
    analyses.claim(db, "study", KIND, "v2", "worker-a", 60, later)
    analyses.store_result(db, "study", KIND, "worker-a", 6, "v2", 2.0, {"n": 6}, later)
    newer = analyses.latest(db, "study", KIND, known=first)
    assert newer is not first and newer.result == {"n": 6} and newer.answers == 6
