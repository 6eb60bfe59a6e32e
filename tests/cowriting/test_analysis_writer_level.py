"""CYOA's own analysis with writers as the unit: the headline from the writers' t-test, the
within-writer edit test, per-round Holm, and the anytime-valid monitoring with its status
line, in every format of ``analyze``; and a seeded simulation showing the headline and the
edit test keep their level where Clark & Smith's pooled tests do not
(bench/results/cowriting-coverage.md has the full table)."""

import json

import numpy as np
import pytest

from bench.cowriting_coverage import Scenario, check
from cyoa import store
from cyoa.cowriting.analysis.data import load_study
from cyoa.cowriting.analysis.monitoring import (
    completed_shares,
    monitoring,
    planned_writers,
    status_line,
)
from cyoa.cowriting.analysis.report import report
from cyoa.cowriting.analysis.tables import analyze
from cyoa.sequential import confidence_sequence
from cyoa.stats import clustered_preference, holm, writer_difference
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment

# Per writer: which system they take in each of five rounds, and how many characters they
# add to the suggestion they take ("!" * n).
WRITERS = {
    "w1": ("aaaab", (3, 3, 3, 3, 1)),
    "w2": ("abbbb", (2, 1, 1, 1, 1)),
    "w3": ("aaaaa", (4, 4, 4, 4, 4)),
    "w4": ("aabab", (2, 2, 0, 2, 0)),
    "w5": ("baaab", (1, 3, 3, 3, 1)),
}


def turns(writer: str, picks: str, added: tuple[int, ...]) -> list[Turn]:
    result = []
    for n, (pick, extra) in enumerate(zip(picks, added, strict=True), start=1):
        chosen = FIRST if pick == "a" else SECOND
        suggestions = {s: f"{s} suggests part {n} to {writer}." for s in (FIRST, SECOND)}
        final = suggestions[chosen] + "!" * extra
        result.append(Turn(f"{writer} line {n}.", suggestions, FIRST, chosen, final))
    return result


@pytest.fixture
def db(tmp_path):
    database = store.connect(tmp_path / "study.sqlite")
    make_experiment(database)
    for writer, (picks, added) in WRITERS.items():
        add_writer(database, writer, turns(writer, picks, added))
    yield database
    database.close()


def test_the_headline_is_the_writers_t_test_not_the_pooled_binomial(db):
    analysis = analyze(load_study(db, "exp"), resamples=200)
    headline = analysis.writer_level.headline
    expected = clustered_preference([(4, 5), (1, 5), (5, 5), (3, 5), (3, 5)])
    assert headline.share == pytest.approx(expected.mean_writer_share) == pytest.approx(0.64)
    assert headline.p_value == pytest.approx(expected.p_value)
    assert (headline.ci_low, headline.ci_high) == pytest.approx((expected.t_low, expected.t_high))
    assert analysis.preference.rows[0].p_value != pytest.approx(headline.p_value)


def test_per_round_p_values_are_holm_adjusted_across_rounds(db):
    analysis = analyze(load_study(db, "exp"), resamples=200)
    rounds = [row for row in analysis.preference.rows if row.round is not None]
    expected = holm([row.p_value for row in rounds])
    assert list(analysis.writer_level.round_p_holm.values()) == pytest.approx(expected)


def test_edits_are_compared_within_writers(db):
    analysis = analyze(load_study(db, "exp"), resamples=200)
    edit = next(row for row in analysis.writer_level.edits if row.metric == "edit_distance")
    # Per writer, mean characters added to FIRST's suggestions minus to SECOND's: w3 took
    # FIRST only and is left out.
    differences = [3 - 1, 2 - 1, 2 - 0, 3 - 1]
    assert edit.test.difference == pytest.approx(np.mean(differences))
    assert (edit.test.writers, edit.test.left_out) == (4, 1)
    expected = writer_difference([([3, 3, 3, 3], [1]), ([2], [1] * 4), ([2, 2, 2], [0, 0]),
                                  ([3, 3, 3], [1, 1])])  # fmt: skip
    assert edit.test.p_value == pytest.approx(expected.p_value)


def test_the_sequence_follows_the_order_stories_were_completed(db):
    # w1 completes its story last.
    with store.write_transaction(db):
        db.execute(
            "UPDATE rounds SET turn_submitted_at = '2999-01-01T00:00:00.000Z' WHERE round = 5"
            " AND session_id = (SELECT s.id FROM sessions s JOIN participants p"
            " ON p.id = s.participant_id WHERE p.external_id = 'w1')"
        )
    data = load_study(db, "exp")
    assert completed_shares(data) == [0.2, 1.0, 0.6, 0.6, 0.8]
    watch = monitoring(data, planned=60)
    assert watch.sequence == confidence_sequence([0.2, 1.0, 0.6, 0.6, 0.8])
    assert watch.status == "not yet: keep going to the planned N (5 of 60 writers)"


def test_an_unfinished_story_is_not_in_the_sequence(tmp_path):
    database = store.connect(tmp_path / "s.sqlite")
    make_experiment(database)
    add_writer(database, "done", turns("done", "aaaab", (1,) * 5))
    add_writer(database, "stopped", turns("stopped", "aaaab", (1,) * 5)[:3])
    data = load_study(database, "exp")
    assert len(data.writers) == 2 and completed_shares(data) == [0.8]


@pytest.mark.parametrize(
    "decisive, above, writers, planned, status, fixed",
    [
        (True, True, 12, 60, "decisive: the share is above 50% at any stopping time",
         "valid at the planned N only, not yet reached (12 of 60 writers)"),
        (True, False, 12, None, "decisive: the share is below 50% at any stopping time",
         "no planned N"),
        (False, True, 12, 60, "not yet: keep going to the planned N (12 of 60 writers)",
         "not yet reached"),
        (False, True, 60, 60, "the planned N is reached: the fixed-sample test applies "
         "(60 of 60 writers)", "the planned N is reached, they apply"),
        (False, True, 12, None, "not yet decisive, and no planned N", "no planned N"),
    ],
)  # fmt: skip
def test_the_status_line_ties_the_sequence_to_the_plan(
    decisive, above, writers, planned, status, fixed
):
    line, note = status_line(decisive, above, writers, planned)
    assert line.startswith(status) and fixed in note


def test_the_planned_n_is_the_stored_cowriting_plans_writers():
    plan = {"record": {"kind": "cowriting", "chosen": {"writers": 60, "rounds": 5}}}
    assert planned_writers(plan) == 60
    assert planned_writers(None) is None
    assert planned_writers({"record": {"kind": "cowriting", "chosen": None}}) is None
    assert planned_writers({"record": {"kind": "rating", "chosen": {"stories": 9}}}) is None


def test_analyze_prints_the_writer_level_analysis_in_every_format(db):
    store.insert_plan(db, "exp", "cowriting", {"kind": "cowriting", "chosen": {"writers": 60}}, "")
    markdown = report(db, "exp", "markdown")
    assert (
        "**Headline (writers as the unit, 5 writers):** the mean writer chose alpha in 64.0%"
        in markdown
    )
    assert "**Study status:** not yet: keep going to the planned N (5 of 60 writers)." in markdown
    assert "Clark & Smith's pooled binomial (every round counted as independent" in markdown
    assert "| p (two-sided) | p (Holm, rounds) |" in markdown
    assert "### Within writers (CYOA's test of the edit metrics)" in markdown
    assert "Descriptive: no test is made per round" in markdown
    plain = json.loads(report(db, "exp", "json"))[0]["writer_level"]
    assert plain["headline"]["share"] == pytest.approx(0.64)
    assert plain["monitoring"]["planned_writers"] == 60
    assert len(plain["monitoring"]["sequence"]["lows"]) == 5
    csv = report(db, "exp", "csv")
    assert "alpha vs beta,preference_writers,headline,share,0.64" in csv
    assert "alpha vs beta,monitoring,sequence,status,not yet: keep going" in csv
    assert "alpha vs beta,preference,Round 1,p_holm_rounds," in csv
    assert "alpha vs beta,edits_writers,edit_distance,difference," in csv


def test_writers_as_the_unit_keep_the_level_where_pooled_tests_do_not():
    """A quick seeded version of bench/cowriting_coverage.py: 300 null studies of 40–60
    writers whose editing goes with their preference (r = 0.5). Bounds are loose (300
    studies: a 5% rate has a standard error of 1.3 points)."""
    shares = check(Scenario("correlated", r=0.5), studies=300, seed=3)
    assert shares["headline_rejects"] <= 0.09 and shares["edit_rejects"] <= 0.09
    assert shares["headline_covers"] >= 0.91 and shares["edit_covers"] >= 0.91
    assert shares["mann_whitney_rejects"] >= 0.12
