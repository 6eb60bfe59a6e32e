"""The load benchmark (bench/load.py): its simulated writer, run once against a real server
process with the fake models (it consents, connects, writes a round and times it), and the
writers' pace it reports beside the throughput."""

from __future__ import annotations

import os
import random

import pytest
from conftest import write_setup

from bench.load import NO_PAUSES, RoundTiming, Server, free_port, pace_bound, summarize, write_story

pytestmark = pytest.mark.load_client


def test_one_simulated_writer_writes_a_round_against_the_server(tmp_path):
    setup = write_setup(tmp_path, options_a="delay_seconds = 0.01")
    port = free_port()
    env = {
        "CYOA_PORT": str(port),
        "CYOA_DATABASE": setup["DATABASE"],
        "CYOA_MODELS_DIR": setup["MODELS_DIR"],
        "CYOA_EXPERIMENTS_DIR": setup["EXPERIMENTS_DIR"],
        "CYOA_MODEL_CACHE": setup["MODEL_CACHE"],
        "CYOA_DEFAULT_EXPERIMENT": "fake-ab",
        "CYOA_SECRET_KEY": "load-client-test",
    }
    server = Server({**os.environ, **env}, port)
    server.start()
    try:
        assert server.wait_ready("fake-ab", timeout=30) < 30
        timings = write_story(server.base, "fake-ab", 0, 2, NO_PAUSES, random.Random(1))
    finally:
        server.stop()
    assert [t.round for t in timings] == [1, 2]
    for timing in timings:
        assert timing.suggestions == 2 and timing.failed_slots == 0
        assert 0 < timing.first_token_s <= timing.both_s < 10
    # Round 2 continued the story: the writer's line, the kept suggestion, the new line.
    assert len(timings[1].story) == 3
    summary = summarize(timings, monitor=None)
    assert summary["suggestions"] == 4 and summary["suggestions_per_s"] > 0


def _round_timing(writer: int, number: int, submitted: float, completed: float) -> RoundTiming:
    return RoundTiming(
        writer,
        number,
        f"w{writer}",
        [],
        first_token_s=0.1,
        both_s=completed - submitted,
        submitted_at=submitted,
        completed_at=completed,
        suggestions=2,
    )


def test_the_writers_pace_keeps_their_own_time_between_rounds_and_drops_every_wait():
    """Computed by hand. Writer 0 sends at 10, waits 4 s, takes 6 s to send again (at 20),
    waits 2 s: without waits its rounds are sent at 10 and 16. Writer 1 sends at 11, waits
    1 s, takes 9 s (sends at 21), waits 5 s: without waits at 11 and 20. The span without
    waits is 10 → 20 = 10 s, for 8 suggestions: 0.8 per second (the run itself took
    10 → 26 = 16 s, 0.5 per second)."""
    timings = [
        _round_timing(0, 1, 10.0, 14.0),
        _round_timing(0, 2, 20.0, 22.0),
        _round_timing(1, 2, 21.0, 26.0),  # order does not matter
        _round_timing(1, 1, 11.0, 12.0),
    ]
    assert pace_bound(timings) == pytest.approx(0.8)
    assert summarize(timings, None)["suggestions_per_s"] == pytest.approx(0.5)
    assert summarize(timings, None)["pace_bound_per_s"] == pytest.approx(0.8)


def test_one_writer_with_one_round_has_no_pace_to_measure():
    assert pace_bound([_round_timing(0, 1, 5.0, 9.0)]) is None
