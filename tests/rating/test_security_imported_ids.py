"""Text from outside (imported ids, participants' answers) in a researcher's spreadsheet and
pages: a cell a spreadsheet would run as a formula is neutralised however it hides its sign,
and a direction control cannot reorder what is shown after it (written as its code point in
a CSV cell, isolated in a ``<bdi>`` on a page)."""

from __future__ import annotations

import pytest

from cyoa import store
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement
from cyoa.rating.instruments import load_instrument
from cyoa.web.security import neutralize_cell, visible_controls


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (" =1+1", "' =1+1"),
        ("   +A1", "'   +A1"),
        ("\u00a0-1", "'\u00a0-1"),  # a no-break space
        ("\u3000@SUM(A1)", "'\u3000@SUM(A1)"),  # an ideographic space
        ("\n=1", "'\n=1"),
        ("\u200b=1", "'\u200b=1"),  # a zero-width space
        ("\ufeff=1", "'\ufeff=1"),  # a byte-order mark
        ("＝1+1", "'＝1+1"),
        ("＋1", "'＋1"),
        ("－1", "'－1"),
        ("＠SUM(A1)", "'＠SUM(A1)"),
        (" ＝1", "' ＝1"),
        ("\u202e=1", "'<U+202E>=1"),  # an override before the sign: both caught
        ("Safe = text", "Safe = text"),
        ("1 - 2", "1 - 2"),
        ("   ", "   "),
        ("\u2212 1", "\u2212 1"),  # the minus sign is no formula sign
    ],
    ids=[
        "space then =", "spaces then +", "no-break space then -", "ideographic space then @",
        "newline then =", "zero-width space then =", "byte-order mark then =", "full-width =",
        "full-width +", "full-width -", "full-width @", "space then full-width =",
        "override then =", "= inside", "- inside", "only spaces", "minus sign",
    ],
)  # fmt: skip
def test_a_formula_hidden_behind_spaces_or_full_width_signs_is_neutralised(value, expected):
    assert neutralize_cell(value) == expected


@pytest.mark.parametrize(
    "code", [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]
)
def test_each_direction_control_is_written_as_its_code_point(code):
    assert visible_controls(f"id{chr(code)}x") == f"id<U+{code:04X}>x"
    assert neutralize_cell(f"id{chr(code)}x") == f"id<U+{code:04X}>x"


def test_direction_marks_are_kept_since_they_reorder_nothing_after_them():
    text = "שלום\u200f world\u200e"
    assert neutralize_cell(text) == text


RLO = "\u202e"
SPOOFED = f"rater{RLO}fdp.exe"


@pytest.fixture
def imported_ratings(app):
    """A rating study imported with a rater id holding a right-to-left override."""
    aiss = load_instrument("aiss-v1")
    judgements = [
        Judgement("s1", "model", rater, str(item), 3.0, None, None)
        for rater in (SPOOFED, "plain")
        for item in range(1, 23)
    ]
    db = store.connect(app.config["DATABASE"])
    try:
        import_rating_experiment(db, "released", aiss, judgements)
    finally:
        db.close()


def test_an_imported_rater_id_is_isolated_on_the_rating_dashboard_and_its_rater_page(
    researcher, imported_ratings
):
    progress = researcher.analysed("/research/ratings/released/progress.json")
    dashboard = researcher.get("/research/ratings/released").get_data(as_text=True)
    assert f'dir="auto">{SPOOFED[:12]}</a>' in dashboard  # ids are cut to 12 characters
    [row] = [r for r in progress["quality"] if r["rater"] == SPOOFED[:12]]
    page = researcher.get(row["url"]).get_data(as_text=True)
    assert f"<h1>Rater <bdi>{SPOOFED[:12]}</bdi></h1>" in page
    title = page.split("<title>", 1)[1].split("</title>", 1)[0]
    assert RLO not in title and "rater&lt;U+202E&gt;fdp.ex" in title


def test_an_imported_rater_id_is_written_as_its_code_point_in_the_csv_only(
    researcher, imported_ratings
):
    base = "/research/ratings/released/download/raters"
    csv_text = researcher.get(f"{base}.csv").get_data(as_text=True)
    assert RLO not in csv_text and "rater<U+202E>fdp.exe" in csv_text
    assert SPOOFED in researcher.get(f"{base}.jsonl").get_data(as_text=True)
