"""The writing-process tables per system, on hand-worked rows, and their writer-clustered
interval."""

from __future__ import annotations

import math

import pytest

from cyoa.cowriting.analysis.process import display_rows, headline, notes, process_table
from cyoa.stats import clustered_ratio


def row(session, chosen, kept, suggested, first_ms=1000, recorded=True, problem=""):
    return {
        "session_id": session,
        "chosen_system": chosen,
        "slot1_system": "alpha",
        "slot2_system": "beta",
        "recorded": recorded,
        "record_problem": problem,
        "kept_chars": kept,
        "suggestion_chars": suggested,
        "first_keystroke_ms": first_ms,
        "slot1_focused_ms": 2000,
        "slot2_focused_ms": 500,
        "edit_typed_chars": 3,
        "edit_pasted_chars": 0,
        "revisions": 1,
        "pauses": 0,
    }


ROWS = [
    row("w1", "alpha", 8, 10),
    row("w1", "alpha", 6, 10, first_ms=3000),
    row("w2", "alpha", 5, 10),
    row("w2", "beta", 2, 4),
    row("w3", "beta", None, None, recorded=False),
    row("w3", "alpha", None, None, problem="broken"),
]


def test_kept_characters_are_pooled_per_system_over_the_rounds_it_was_taken():
    table = process_table(ROWS, ("alpha", "beta"), resamples=200)
    assert table.cells["kept", "alpha"].value == pytest.approx(19 / 30)
    assert table.cells["kept", "beta"].value == pytest.approx(0.5)
    assert headline(table) == "Writers kept 63% of alpha's characters and 50% of beta's."
    assert (table.recorded, table.rounds) == (4, 6)


def test_one_writer_gives_a_value_without_an_interval_and_several_an_interval_around_it():
    table = process_table(ROWS, ("alpha", "beta"), resamples=200)
    kept = dict(zip(("alpha", "beta"), display_rows(table)[0][1:], strict=True))
    assert kept["beta"] == "50%"
    low, high = table.cells["kept", "alpha"].low, table.cells["kept", "alpha"].high
    assert low <= 19 / 30 <= high and low < high


def test_time_measures_are_shown_in_seconds_and_focus_counts_every_round_shown():
    table = process_table(ROWS, ("alpha", "beta"), resamples=200)
    assert table.cells["first_keystroke", "alpha"].value == pytest.approx(5000 / 3)
    # beta was shown in all four measured rounds, focused 500 ms each.
    assert table.cells["focused", "beta"].value == pytest.approx(500)
    rows = {r[0]: r for r in display_rows(table)}
    assert rows["Seconds to the first keystroke after the suggestions appeared"][1].startswith(
        "1.7"
    )


def test_a_study_without_a_record_says_so():
    table = process_table([row("w1", "alpha", None, None, recorded=False)], ("alpha", "beta"))
    assert headline(table) == ""
    assert "This study has no keystroke record" in notes(table)[0]
    assert set(display_rows(table)[0][1:]) == {"—"}


def test_the_clustered_ratio_draws_writers_not_rounds():
    # Two writers with very different ratios: the interval spans both.
    ratio = clustered_ratio([(9, 10), (1, 10)], resamples=2000, seed=1)
    assert ratio.value == pytest.approx(0.5)
    assert ratio.low == pytest.approx(0.1) and ratio.high == pytest.approx(0.9)
    assert math.isnan(clustered_ratio([(1, 2)]).low)
    with pytest.raises(ValueError, match="denominator above 0"):
        clustered_ratio([(1, 0)])
