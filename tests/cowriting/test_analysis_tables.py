"""The paper's tables from a small stored experiment, against hand-computed values.

Three writers × five rounds, systems alpha (first) and beta (second). Who chose what:

    writer   r1 r2 r3 r4 r5
    w1       A  A  A  A  B      4 of 5 alpha
    w2       A  A  B  B  B      2 of 5
    w3       A  A  A  A  A      5 of 5      -> 11 of 15 overall

Edits: an accepted alpha suggestion gets ``round`` characters appended (ED = round), an
accepted beta suggestion ``10 + round`` (ED = 10 + round).
"""

import math
import statistics

import numpy as np
import pytest
from scipy import stats

from cyoa import store
from cyoa.cowriting.analysis.data import load_study
from cyoa.cowriting.analysis.results import HUMAN, OVERALL
from cyoa.cowriting.analysis.tables import analyze, preference_table
from cyoa.metrics.text import distinct_n
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment, story

CHOICES = {"w1": "AAAAB", "w2": "AABBB", "w3": "AAAAA"}
LIKERT = {"w1": 4, "w2": 5, "w3": 4}


def suggestion(writer: str, number: int, system: str) -> str:
    return f"The {system} story of {writer} goes on in round {number}."


def turns(writer: str) -> list[Turn]:
    result = []
    for number, letter in enumerate(CHOICES[writer], start=1):
        chosen = FIRST if letter == "A" else SECOND
        text = suggestion(writer, number, chosen)
        extra = number if chosen == FIRST else 10 + number
        result.append(
            Turn(
                line=f"{writer} writes line {number} about a dog and a river.",
                suggestions={s: suggestion(writer, number, s) for s in (FIRST, SECOND)},
                # alpha sits in slot 1 in odd rounds.
                slot1=FIRST if number % 2 else SECOND,
                chosen=chosen,
                final=text + "x" * extra,
            )
        )
    return result


@pytest.fixture
def db(tmp_path):
    database = store.connect(tmp_path / "study.sqlite")
    make_experiment(database)
    for writer in CHOICES:
        survey = {
            "happy": LIKERT[writer],
            "collaborative": 3,
            "useful": 3,
            "connected": 3,
            "ideas": 3,
            "why_chosen": "",
            "looking_for": "",
        }
        add_writer(database, writer, turns(writer), survey)
    yield database
    database.close()


@pytest.fixture
def analysis(db):
    return analyze(load_study(db, "exp"), resamples=2000)


def test_load_study_reads_every_submitted_round(db):
    data = load_study(db, "exp")
    assert data.systems == (FIRST, SECOND)
    assert len(data.rounds) == 15
    assert list(data.writers.values()) == ["w1", "w2", "w3"]
    first = data.rounds[0]
    assert (first.writer, first.round, first.slot_systems) == ("w1", 1, (FIRST, SECOND))
    assert first.suggestion_of(SECOND) == suggestion("w1", 1, SECOND)
    assert first.final_text == suggestion("w1", 1, FIRST) + "x"
    assert data.rounds[1].slot_systems == (SECOND, FIRST)


def test_percent_chosen_overall_and_by_round(analysis):
    table = analysis.preference
    overall = table.rows[0]
    assert (table.system, overall.chosen, overall.total) == (FIRST, 11, 15)
    assert overall.share == pytest.approx(11 / 15)
    assert overall.p_value == pytest.approx(stats.binomtest(11, 15).pvalue)
    assert overall.alternative == "two-sided"
    interval = stats.binomtest(11, 15).proportion_ci(method="exact")
    assert (overall.ci_low, overall.ci_high) == pytest.approx((interval.low, interval.high))
    by_round = {row.round: (row.chosen, row.total) for row in table.rows[1:]}
    assert by_round == {1: (3, 3), 2: (3, 3), 3: (2, 3), 4: (2, 3), 5: (1, 3)}
    assert table.rows[5].p_value == pytest.approx(stats.binomtest(1, 3).pvalue)


def test_alternative_is_passed_to_every_test(db):
    table = preference_table(load_study(db, "exp"), alternative="greater", resamples=100)
    assert table.rows[0].p_value == pytest.approx(
        stats.binomtest(11, 15, alternative="greater").pvalue
    )
    assert {row.alternative for row in table.rows} == {"greater"}
    assert table.clustered.alternative == "greater"
    assert "greater" in table.method


def test_writer_clustered_test_uses_writer_shares(analysis):
    clustered = analysis.preference.clustered
    shares = [4 / 5, 2 / 5, 5 / 5]
    assert clustered.writers == 3
    assert clustered.mean_writer_share == pytest.approx(statistics.fmean(shares))
    assert clustered.p_value == pytest.approx(stats.ttest_1samp(shares, 0.5).pvalue)
    assert clustered.bootstrap_low <= 11 / 15 <= clustered.bootstrap_high


def test_position_bias_counts_slot_one(analysis):
    # alpha is in slot 1 in rounds 1, 3, 5, beta in rounds 2, 4. Slot 1 chosen:
    # w1 (AAAAB): r1, r3 -> 2; w2 (AABBB): r1, r4 -> 2; w3 (AAAAA): r1, r3, r5 -> 3. 7 of 15.
    position = analysis.preference.position
    assert (position.chosen, position.total) == (7, 15)
    assert position.p_value == pytest.approx(stats.binomtest(7, 15).pvalue)


def test_edit_distance_per_model_and_overall(analysis):
    ed = next(row for row in analysis.edits.rows if row.metric == "edit_distance")
    alpha = [1, 2, 3, 4] + [1, 2] + [1, 2, 3, 4, 5]
    beta = [15, 13, 14, 15]
    assert ed.overall[FIRST].mean == pytest.approx(28 / 11)
    assert ed.overall[SECOND].mean == pytest.approx(57 / 4)
    assert (ed.overall[FIRST].n, ed.overall[SECOND].n, ed.overall[OVERALL].n) == (11, 4, 15)
    assert ed.overall[OVERALL].mean == pytest.approx(85 / 15)
    reference = stats.mannwhitneyu(alpha, beta, alternative="two-sided")
    assert ed.test.u == reference.statistic
    # 11 and 4 values with ties: the exact permutation p over the C(15, 4) = 1,365 splits.
    # Midranks: alpha 2, 2, 2, 5, 5, 5, 7.5, 7.5, 9.5, 9.5, 11 (sum 66), beta 12, 13, 14.5,
    # 14.5; the null mean of alpha's sum is 11·16/2 = 88. No other split lies 22 from it (the
    # other extreme, alpha on the 11 largest midranks, sums to 109, 21 away): p = 1/1365.
    assert ed.test.p_value == pytest.approx(1 / 1365)
    assert ed.test.method == "permutation (exact enumeration)"
    # alpha's values are all below beta's: r = 2U/(nx·ny) − 1 = −1.
    assert ed.test.rank_biserial == -1.0


def test_edit_metrics_by_round(analysis):
    ed = next(row for row in analysis.edits.rows if row.metric == "edit_distance")
    round5 = ed.by_round[5]
    assert (round5[FIRST].mean, round5[FIRST].n) == (5, 1)
    assert (round5[SECOND].mean, round5[SECOND].n) == (15, 2)
    assert round5[OVERALL].mean == pytest.approx(35 / 3)


def test_overall_column_is_the_acceptance_weighted_mean(analysis):
    for row in analysis.edits.rows:
        for groups in [row.overall, *row.by_round.values()]:
            a, b, pooled = groups[FIRST], groups[SECOND], groups[OVERALL]
            assert pooled.n == a.n + b.n
            parts = [m.mean * m.n for m in (a, b) if m.n]
            assert pooled.mean == pytest.approx(sum(parts) / pooled.n)


def test_holm_adjusts_across_the_edit_metrics(analysis):
    rows = analysis.edits.rows
    raw = [row.test.p_value for row in rows]
    order = np.argsort(raw)
    for rank, index in enumerate(order):
        assert rows[index].p_holm >= min(1.0, (len(raw) - rank) * raw[index]) - 1e-12
    assert all(row.p_holm >= row.test.p_value for row in rows)


def test_text_metrics_average_per_writer_texts(analysis):
    table = analysis.text
    assert table.sources == (FIRST, SECOND, HUMAN)
    row = next(r for r in table.rows if r.metric == "distinct_1")
    human = [
        distinct_n(
            " ".join(f"{w} writes line {n} about a dog and a river." for n in range(1, 6)), 1
        )
        for w in CHOICES
    ]
    assert row.values[HUMAN] == pytest.approx(statistics.fmean(human))
    # A system's text holds all its suggestions, accepted or not: 5 per writer.
    alpha = [distinct_n(" ".join(suggestion(w, n, FIRST) for n in range(1, 6)), 1) for w in CHOICES]
    assert row.values[FIRST] == pytest.approx(statistics.fmean(alpha))
    assert row.n == {FIRST: 3, SECOND: 3, HUMAN: 3}
    length = next(r for r in table.rows if r.metric == "mean_sentence_length")
    assert length.values[HUMAN] == 10.0  # "w1 writes line 1 about a dog and a river."
    corpus = next(r for r in table.rows if r.metric == "corpus_distinct_1")
    assert corpus.n[HUMAN] == 15


def test_likert_counts_mean_and_median(analysis):
    happy = next(row for row in analysis.likert if row.item_id == "happy")
    assert happy.pair == f"{FIRST} vs {SECOND}"
    assert happy.summary.counts == {1: 0, 2: 0, 3: 0, 4: 2, 5: 1}
    assert happy.summary.mean == pytest.approx(13 / 3)
    assert happy.summary.median == 4.0
    assert happy.question == "I'm happy with my final story."


def test_notes_say_what_was_computed(analysis):
    text = " ".join(analysis.notes)
    assert "two-sided" in text
    assert "Holm" in text
    assert "acceptance-weighted" in text


# --- what counts -----------------------------------------------------------------------------


def test_one_suggestion_rounds_and_unfinished_sessions(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    make_experiment(db)
    full = turns("w1")
    # w1's round 2: beta failed, so alpha was the only option.
    full[1] = Turn(
        full[1].line, {FIRST: full[1].suggestions[FIRST], SECOND: None}, FIRST, FIRST, full[1].final
    )
    add_writer(db, "w1", full, {"happy": 4})
    # w2 stopped in round 3, after submitting the line: two rounds count.
    partial = turns("w2")[:3]
    partial[2] = Turn(partial[2].line, partial[2].suggestions, FIRST, FIRST, None)
    add_writer(db, "w2", partial)

    data = load_study(db, "exp")
    assert len(data.rounds) == 7
    assert data.finished == frozenset({next(iter(data.writers))})
    one = data.rounds[1]
    assert one.one_suggestion_only and not one.counts_for_preference
    assert one.suggestions == (one.suggestions[0], None)
    table = preference_table(data, resamples=100)
    assert table.excluded_rounds == 1
    assert (table.rows[0].chosen, table.rows[0].total) == (5, 6)
    # The one-suggestion round still counts for the edit metrics.
    result = analyze(data, resamples=100)
    ed = next(row for row in result.edits.rows if row.metric == "edit_distance")
    assert ed.overall[OVERALL].n == 7

    finished = load_study(db, "exp", finished_only=True)
    assert list(finished.writers.values()) == ["w1"]
    assert len(finished.rounds) == 5
    db.close()


def test_missing_experiment_names_the_known_ones(db):
    from cyoa.errors import AnalysisError

    with pytest.raises(AnalysisError, match="experiments: exp"):
        load_study(db, "nope")


def test_empty_experiment_has_no_tables(tmp_path):
    db = store.connect(tmp_path / "empty.sqlite")
    make_experiment(db)
    result = analyze(load_study(db, "exp"))
    assert (result.preference, result.edits, result.text, result.writers) == (None, None, None, 0)
    assert not math.isnan(result.rounds)
    db.close()


# --- experiments of more than two systems ----------------------------------------------------


@pytest.fixture
def three_systems(tmp_path):
    db = store.connect(tmp_path / "three.sqlite")
    make_experiment(db, systems=("a", "b", "c"))
    # Pairs are stored in either orientation: (c, a) is the pair "a vs c".
    add_writer(db, "w1", story(("a", "b"), "a", "w1"), pair=("a", "b"))
    add_writer(db, "w2", story(("b", "a"), "b", "w2"), pair=("b", "a"))
    add_writer(db, "w3", story(("c", "a"), "c", "w3"), pair=("c", "a"))
    yield db
    db.close()


def test_pairs_are_analysed_one_at_a_time(three_systems):
    from cyoa.cowriting.analysis.data import experiment_pairs
    from cyoa.errors import AnalysisError

    assert experiment_pairs(three_systems, "exp") == [("a", "b"), ("a", "c")]
    with pytest.raises(AnalysisError, match="compares 3 systems"):
        load_study(three_systems, "exp")
    ab = load_study(three_systems, "exp", pair=("b", "a"))
    assert ab.systems == ("a", "b")
    assert sorted(ab.writers.values()) == ["w1", "w2"]
    table = preference_table(ab, resamples=100)
    assert (table.rows[0].chosen, table.rows[0].total) == (5, 10)
    ac = load_study(three_systems, "exp", pair=("a", "c"))
    assert list(ac.writers.values()) == ["w3"]
    assert preference_table(ac, resamples=100).rows[0].chosen == 0
    with pytest.raises(AnalysisError, match="not two systems"):
        load_study(three_systems, "exp", pair=("a", "z"))
