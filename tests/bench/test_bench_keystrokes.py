"""The keystroke record's benchmark (bench/keystrokes.py): a typical writer's story, typed
key by key over Socket.IO against a real app process, is checked against its record at
every line, draft and turn, and the stored rows rebuild every round."""

from __future__ import annotations

from bench.keystrokes import render_markdown, run


def test_a_typical_writer_s_record_matches_every_submitted_text_and_rebuilds_the_story():
    result = run(writers=1, seed=3)
    stored = result["stored"]
    assert stored["checks"] == stored["checks_matching"] == 3 * result["rounds_per_writer"]
    assert stored["rounds_rebuilt"] == result["rounds_per_writer"]
    assert result["rows_per_writer"] > 100 and result["record_bytes_per_round"]["mean"] > 1000
    page = render_markdown(
        {**result, "command": "c", "finished": "f", "machine": {"cpus": 2, "python": "3"},
         "load_average_start": [0, 0, 0]}
    )  # fmt: skip
    assert "| record rows per writer (5 rounds) |" in page
