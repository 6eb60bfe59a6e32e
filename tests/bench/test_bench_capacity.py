"""The capacity benchmark (bench/capacity.py): its latency summary, the "held" rule, the
largest number held, the replay check's counting, the mix of writers and raters, what it says
limits a step, and its page; and one tiny run against a real app process."""

from __future__ import annotations

import json

from bench.capacity import (
    held,
    largest_held,
    latency_summary,
    limit_hint,
    main,
    mix,
    render_markdown,
    replay_counts,
    write_results,
)


def test_an_action_never_acknowledged_counts_as_infinitely_slow():
    summary = latency_summary([0.01 * n for n in range(1, 100)] + [None])
    assert summary["n"] == 100 and summary["unacknowledged"] == 1
    assert summary["p50_s"] == 0.505
    assert summary["p99_s"] is None  # beyond any finite latency
    assert summary["max_s"] is None


def test_a_step_is_held_only_when_every_kind_is_within_both_targets():
    fast = {"n": 50, "unacknowledged": 0, "p95_s": 0.12, "p99_s": 0.4}
    assert held({"writer/line_submitted": fast, "rater/answer_given": fast})
    slow_p95 = {**fast, "p95_s": 0.3}
    assert not held({"writer/line_submitted": fast, "rater/answer_given": slow_p95})
    slow_tail = {**fast, "p99_s": 1.2}
    assert not held({"writer/turn_submitted": slow_tail})
    lost_one = {**fast, "unacknowledged": 1, "p99_s": None, "p95_s": 0.1}
    assert not held({"writer/turn_submitted": lost_one})
    assert not held({})


def test_the_figure_is_the_last_step_held_before_the_first_that_missed():
    steps = [
        {"participants": 20, "held": True},
        {"participants": 10, "held": True},
        {"participants": 40, "held": False},
        {"participants": 80, "held": True},  # a lucky step after a miss does not count
    ]
    assert largest_held(steps) == 20
    assert largest_held([{"participants": 10, "held": False}]) is None


def test_the_replay_check_counts_lost_and_duplicated_actions():
    counts = replay_counts(acknowledged=["a", "b", "c"], stored=["a", "a", "a", "b", "d"])
    assert counts == {"acknowledged": 3, "stored": 5, "lost": 1, "duplicated": 2}
    assert replay_counts(["a", "b"], ["b", "a"]) == {
        "acknowledged": 2,
        "stored": 2,
        "lost": 0,
        "duplicated": 0,
    }


def test_participants_are_three_writers_to_a_rater_and_at_least_one_writer():
    assert mix(40, 3) == (30, 10)
    assert mix(10, 3) == (8, 2)
    assert mix(1, 3) == (1, 0)


STEP = {
    "busy_retries": 0,
    "app_cpu_cores": [0.3, 0.2],
    "machine_cpu_percent": 40.0,
    "client_cpu_cores": 0.2,
    "client_processes": 2,
}


def test_the_limit_named_is_the_resource_that_was_saturated():
    assert limit_hint(STEP).startswith("none saturated")
    assert "database's lock (7 busy retries)" in limit_hint({**STEP, "busy_retries": 7})
    assert "GIL" in limit_hint({**STEP, "app_cpu_cores": [0.97, 0.2]})
    assert "load generator" in limit_hint({**STEP, "client_cpu_cores": 1.9})


def run(config: str, load: float) -> dict:
    summary = {"n": 10, "unacknowledged": 0, "p50_s": 0.02, "p95_s": 0.05, "p99_s": 0.08}
    step = {**STEP, "participants": 10, "writers_raters": [8, 2], "held": True, "limit": "x"}
    step |= {"by_kind": {"writer/line_submitted": summary}, "all": summary}
    step |= {"resent": 0, "errors": 0}
    return {
        "config": config,
        "command": f"python bench/capacity.py --config {config}",
        "finished": "2026-11-27 12:00",
        "machine": {"cpus": 2, "memory_gb": 23.5, "python": "3.11.7"},
        "load_average_start": [load, load, load],
        "processes": 1,
        "pace": 0.1,
        "hold_s": 60,
        "client_processes": 2,
        "largest_held": 10,
        "replay": {"acknowledged": 10, "stored": 10, "lost": 0, "duplicated": 0},
        "steps": [step],
    }


def test_the_page_keeps_each_configurations_latest_run_and_marks_a_busy_machine(tmp_path):
    write_results(run("sqlite-1", 0.1), tmp_path)
    write_results(run("sqlite-N", 3.0), tmp_path)
    write_results(run("sqlite-1", 0.2), tmp_path)
    results = json.loads((tmp_path / "capacity.json").read_text())
    assert list(results) == ["sqlite-1", "sqlite-N"]
    assert results["sqlite-1"]["load_average_start"] == [0.2, 0.2, 0.2]
    page = (tmp_path / "capacity.md").read_text()
    assert page == render_markdown(results)
    quiet, busy = page.split("## sqlite-N")
    assert "other work on the machine" not in quiet and "other work on the machine" in busy
    assert "**largest number of participants held: 10**" in page
    assert "| 10 (8/2) | yes | 50 / 80 | writer/line_submitted: 50 / 80 |" in page


def test_a_tiny_run_holds_its_participants_and_loses_nothing(tmp_path):
    main(
        ["--config", "sqlite-1", "--steps", "4", "--hold", "3", "--pace", "0.02",
         "--client-processes", "1", "--settle", "0", "--results", str(tmp_path)]
    )  # fmt: skip
    (result,) = json.loads((tmp_path / "capacity.json").read_text()).values()
    (step,) = result["steps"]
    assert step["participants"] == 4 and step["errors"] == 0, step["first_errors"]
    assert step["all"]["n"] > 0 and step["all"]["unacknowledged"] == 0
    replay = result["replay"]
    batches = step["by_kind"]["writer/record"]["n"]  # the keystroke record, on by default
    assert batches > 0 and result["config"] == "sqlite-1, keystroke record on"
    assert replay["acknowledged"] == step["all"]["n"] - batches == replay["stored"]
    assert replay["lost"] == replay["duplicated"] == 0
