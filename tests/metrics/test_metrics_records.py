"""Scoring researchers' JSON-lines records with the edit metrics."""

import pytest

from cyoa.metrics.edit import METRIC_COLUMNS
from cyoa.metrics.records import score_records


def test_each_record_gets_the_metric_columns_and_keeps_its_fields():
    records = [
        {"id": 7, "original": "kitten", "edited": "sitting"},
        {"id": 8, "original": "The knight drew.", "edited": "The knight drew."},
    ]
    scored = list(score_records(records, "cyoa-2021"))
    assert [record["id"] for record in scored] == [7, 8]
    assert all(set(METRIC_COLUMNS) <= set(record) for record in scored)
    # kitten -> sitting: 3 edits; {kitten} vs {sitting}: Jaccard 0.
    assert scored[0]["edit_distance"] == 3
    assert scored[0]["jaccard"] == 0.0
    # An unedited suggestion keeps everything.
    assert scored[1]["edit_distance"] == 0
    assert scored[1]["user"] == 100.0
    # The input records are not modified.
    assert "user" not in records[0]


def test_variant_changes_the_headline_user():
    record = {"original": "The old knight drew a sword.", "edited": "The knight drew his sword."}
    # cyoa-2021: F = 8/11; storium: P = 3/6 (see test_metrics_edit for the arithmetic).
    (cyoa,) = score_records([record], "cyoa-2021")
    (storium,) = score_records([record], "storium")
    assert cyoa["user"] == pytest.approx(100 * 8 / 11)
    assert storium["user"] == pytest.approx(50.0)


def test_missing_field_names_the_line():
    records = [{"original": "a", "edited": "b"}, {"original": "only the suggestion"}]
    with pytest.raises(ValueError, match=r"Line 2: the record has no 'edited' field"):
        list(score_records(records, "cyoa-2021"))


def test_wrong_types_name_the_line():
    with pytest.raises(ValueError, match=r"Line 1: 'original' must be a string, got int"):
        list(score_records([{"original": 3, "edited": "b"}], "cyoa-2021"))
    with pytest.raises(ValueError, match=r"Line 1: expected a JSON object"):
        list(score_records([["a", "b"]], "cyoa-2021"))


def test_unknown_variant_is_refused_before_reading():
    with pytest.raises(ValueError, match="Unknown USER variant 'rouge'"):
        score_records([], "rouge")
