"""The load benchmark (bench/load.py): its simulated writer, run once against a real server
process with the fake models (it consents, connects, writes a round and times it), the
writers' pace it reports beside the throughput, and the CPU time the host took meanwhile."""

from __future__ import annotations

import os
import random
from types import SimpleNamespace

import pytest
import torch
from conftest import FAKE_CARD, write_setup

from bench import load
from bench.load import (
    NO_PAUSES,
    Monitor,
    RoundTiming,
    Server,
    free_port,
    pace_bound,
    render_markdown,
    replay_alone,
    summarize,
    write_results,
    write_story,
)
from cyoa.generation import load_model_card
from cyoa.generation.engine.prefixes import PrefixStore
from cyoa.generation.fake import FakeBackend
from tests.generation.test_generation_prefixes import FakeCache

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
        # A deadline, not a measurement: a server process starting beside the other test
        # worker on a busy 2-core machine took over 30 s to import and become ready.
        assert server.wait_ready("fake-ab", timeout=120) < 120
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


def test_a_run_reports_the_cpu_time_the_host_took_while_it_ran(monkeypatch):
    """On a shared virtual machine the hypervisor gives some of this machine's CPU time to
    other guests (/proc/stat's steal column, summed over CPUs, through psutil). The monitor
    reports how much of it went while the run ran: here the counter moves from 100.0 to
    112.5 s, so the run lost 12.5 CPU-s, and the summary page says so. Where the counter is
    missing (not Linux) the figure is left out, not made up."""
    counter = iter([100.0, 112.5])
    monkeypatch.setattr(load.psutil, "cpu_times", lambda: SimpleNamespace(steal=next(counter)))
    with Monitor(os.getpid(), interval=0.01) as monitor:
        pass
    assert monitor.steal_seconds == pytest.approx(12.5)
    summary = summarize([_round_timing(0, 1, 5.0, 9.0)], monitor)
    assert summary["host_steal_s"] == 12.5
    results = {
        "command": "python bench/load.py --writers 1 --modes batched",
        "finished": "2026-11-22 10:00",
        "machine": {"cpus": 2, "memory_gb": 23.5, "python": "3.11.7"},
        "load_average_start": [0.1, 0.1, 0.1],
        "load_average_end": [0.2, 0.1, 0.1],
        "rounds_per_writer": 1,
        "pauses": {"start": [0.0, 3.0]},
        "experiment": "short-story-1",
        "card_options": [],
        "modes": {
            "batched": {
                "startup_to_ready_s": 9.0,
                "rss_at_ready_mb": 2100,
                "runs": {"1": {"summary": summary}},
            }
        },
        "throughput_ratio": {},
    }
    assert "| CPU s taken by the host (steal) | 12.5 |" in render_markdown(results)

    monkeypatch.setattr(load.psutil, "cpu_times", lambda: SimpleNamespace(user=1.0))
    with Monitor(os.getpid(), interval=0.01) as monitor:
        pass
    assert monitor.steal_seconds is None
    assert "host_steal_s" not in summarize([_round_timing(0, 1, 5.0, 9.0)], monitor)


class StoringBackend(FakeBackend):
    """Test stand-in for a local model: it keeps each prompt it reads in a real prompt store
    and notes, per prompt, how many words of it the store already held."""

    def __init__(self, card):
        super().__init__(card)
        self.prefixes = PrefixStore(min_shared=1)
        self.read_before: list[int] = []

    def stream(self, prompt, sampling, seed):
        words = [len(word) for word in prompt.split()]  # the stand-in's token ids
        stored = self.prefixes.longest(words)
        self.read_before.append(0 if stored is None else len(stored.ids))
        self.prefixes.put(words, FakeCache(len(words)), None)
        return super().stream(prompt, sampling, seed)


def _minimal_results(stamp: str, card_options: list[str], pauses: list[float]) -> dict:
    summary = summarize([_round_timing(0, 1, 5.0, 9.0)], None)
    return {
        "command": "python bench/load.py --writers 1 --modes batched",
        "stamp": stamp,
        "finished": "2026-11-22 10:00",
        "machine": {"cpus": 2, "memory_gb": 23.5, "python": "3.11.7"},
        "load_average_start": [0.1, 0.1, 0.1],
        "load_average_end": [0.2, 0.1, 0.1],
        "rounds_per_writer": 1,
        "pauses": {"start": pauses},
        "experiment": "short-story-1",
        "card_options": card_options,
        "modes": {
            "batched": {
                "startup_to_ready_s": 9.0,
                "rss_at_ready_mb": 2100,
                "runs": {"1": {"summary": summary}},
            }
        },
        "throughput_ratio": {},
    }


def test_a_run_replaces_its_page_s_latest_json_keeps_the_notes_and_keeps_each_run_aside(
    tmp_path,
):
    first = write_results(_minimal_results("20261125-100000", [], [0.0, 3.0]), tmp_path)
    assert first == tmp_path / "load.json"
    page = tmp_path / "load.md"
    page.write_text(page.read_text() + "\n## Notes\n\nWhy these figures matter.\n")
    write_results(_minimal_results("20261125-110000", [], [0.0, 3.0]), tmp_path)
    assert '"stamp": "20261125-110000"' in (tmp_path / "load.json").read_text()
    assert "[load.json](load.json)" in page.read_text()
    assert "Why these figures matter." in page.read_text()
    runs = sorted(path.name for path in (tmp_path / "runs").iterdir())
    assert runs == ["load-20261125-100000.json", "load-20261125-110000.json"]
    variant = write_results(
        _minimal_results("20261125-120000", ['dtype = "bfloat16"'], [0.0, 0.0]), tmp_path
    )
    assert variant.name == "load-no-pauses-dtype-bfloat16.json"
    assert (tmp_path / "load-no-pauses-dtype-bfloat16.md").exists()


def test_each_thread_count_replays_the_rounds_from_empty_prompt_stores(tmp_path):
    """The 1-writer "alone" times: with 1 and then 2 threads, round 1 reads its whole prompt
    (nothing stored yet, though the pass before read the same prompt) and round 2 only what
    its story added after round 1's prompt."""
    card = FAKE_CARD.format(name="fake-a", options="delay_seconds = 0.001")
    (tmp_path / "fake-a.toml").write_text(card)
    backend = StoringBackend(load_model_card(tmp_path / "fake-a.toml"))

    class Pool:
        def get(self, name):
            return backend

    story = ["The lighthouse keeper found a letter.", "It was wet."]
    timings = [
        RoundTiming(0, 1, "w0", story[:1], both_s=2.0),
        RoundTiming(0, 2, "w0", story, both_s=3.0),
    ]
    rows = [
        {"round": number, "participant": "w0", "model": "fake-a", "system": "a",
         "sampling": "{}", "seed": 7}
        for number in (1, 2)
    ]  # fmt: skip
    threads = torch.get_num_threads()
    try:
        result = replay_alone(Pool(), rows, timings, [1, 2])
    finally:
        torch.set_num_threads(threads)  # the replay sets the process's thread count
    first_prompt = len(story[0].split())
    assert backend.read_before == [0, first_prompt, 0, first_prompt]
    assert [r["round"] for r in result] == [1, 2]
    assert set(result[1]["alone_s"]) == {"1 thread", "2 threads"}
    assert result[1]["both_s"] == 3.0
