"""``--compat cyoa-2021``: the original evaluation script's numbers, and the paper's.

Each expected value is computed here as eval_script.py computes it (its pooling, its sums, its
scipy calls), independently of ``cyoa.cowriting.analysis.compat``.
"""

import math

import numpy as np
import pytest
from nltk.metrics import edit_distance as nltk_edit_distance
from scipy import stats

from cyoa import store
from cyoa.cowriting.analysis.compat import analyze_rows_2021, describe, script_jaccard
from cyoa.cowriting.analysis.data import load_study
from cyoa.cowriting.analysis.results import HUMAN, OVERALL
from cyoa.cowriting.analysis.tables import analyze
from cyoa.cowriting.analysis.tsv import WriterRow, import_tsv, write_cyoa_tsv
from cyoa.metrics.edit import user_metric
from cyoa.metrics.text import distinct_n
from cyoa.stats import mann_whitney_scipy_2021
from tests.study_builder import tsv_rows as rows

SYSTEMS = ("model", "baseline")


@pytest.fixture(scope="module")
def analysis():
    return analyze_rows_2021(rows(), SYSTEMS)


def test_preference_counts_true_over_all_rounds(analysis):
    overall = analysis.preference.rows[0]
    # "true": 3 + 1 + 5 + 2 = 11 of 4 writers × 5 rounds.
    assert (overall.chosen, overall.total) == (11, 20)
    assert overall.share == 11 / 20
    assert overall.p_value == stats.binomtest(11, 20).pvalue
    assert overall.ci_low is None
    per_line = [(r.chosen, r.total, r.share) for r in analysis.preference.rows[1:]]
    assert per_line == [(2, 4, 0.5), (3, 4, 0.75), (1, 4, 0.25), (3, 4, 0.75), (2, 4, 0.5)]
    assert analysis.preference.clustered is None and analysis.preference.position is None


def script_distances():
    """eval_script.py's writer_changes_analysis, transcribed."""
    data = rows()
    accepted = {
        k: {m: [[] for _ in range(5)] for m in ("ed", "js", "user")}
        for k in ("overall", "model", "baseline")
    }
    for j in range(5):
        for row in data:
            edit = row.user_edits[j]
            line = (
                row.model_lines[j] if row.is_model_accepted[j] == "true" else row.baseline_lines[j]
            )
            a, b = set(edit.split()), set(line.split())
            c = a.intersection(b)
            values = {
                "ed": nltk_edit_distance(edit, line),
                "js": float(len(c)) / (len(a) + len(b) - len(c)),
                "user": user_metric(line, edit).f * 100,
            }
            group = "model" if row.is_model_accepted[j] == "true" else "baseline"
            for k in ("overall", group):
                for m, v in values.items():
                    accepted[k][m][j].append(v)
    return accepted


def test_revision_metrics_are_the_scripts(analysis):
    expected = script_distances()
    names = {"model": "model", "baseline": "baseline", "overall": OVERALL}
    for row in analysis.edits.rows:
        for group, name in names.items():
            lists = expected[group][row.metric]
            for number, values in enumerate(lists, start=1):
                assert row.by_round[number][name].mean == sum(values) / len(values)
            assert row.overall[name].mean == np.mean(np.concatenate(lists))
        baseline = np.concatenate(expected["baseline"][row.metric])
        model = np.concatenate(expected["model"][row.metric])
        assert row.test == mann_whitney_scipy_2021(baseline, model)
        assert row.p_holm is None
    assert [row.label for row in analysis.edits.rows] == [
        "ED (characters)",
        "JS (fraction)",
        "USER F (×100)",
    ]


def test_mann_whitney_is_scipy_2021_one_sided(analysis):
    ed = analysis.edits.rows[0]
    expected = script_distances()
    baseline = np.concatenate(expected["baseline"]["ed"])
    model = np.concatenate(expected["model"]["ed"])
    two_sided = stats.mannwhitneyu(baseline, model, alternative="two-sided", method="asymptotic")
    assert ed.test.p_value == pytest.approx(two_sided.pvalue / 2)
    assert ed.test.u == min(two_sided.statistic, len(baseline) * len(model) - two_sided.statistic)
    assert "one-sided" in ed.test.alternative


def test_jaccard_is_a_fraction_and_defined_for_empty_texts():
    assert script_jaccard("a b c", "a b d") == 2 / 4
    assert script_jaccard("", "  ") == 1.0


def test_text_metrics_average_over_writers(analysis):
    data = rows()
    table = analysis.text
    assert table.sources == ("model", "baseline", HUMAN)
    d2 = next(row for row in table.rows if row.metric == "distinct_2")
    stories = [" ".join(row.user_lines) for row in data]
    values = [distinct_n(story, 2) for story in stories]
    assert d2.values[HUMAN] == sum(values) / len(values)
    assert [row.metric for row in table.rows] == [
        "distinct_1",
        "distinct_2",
        "distinct_3",
        "concreteness_n",
        "concreteness_v",
        "mean_sent_len",
    ]


def test_likert_is_pandas_describe(analysis):
    q3 = next(row for row in analysis.likert if row.item_id == "Q3")
    # Q3: missing, 3, 3, 3 -> count 3, std 0.
    assert q3.describe == {
        "count": 3.0,
        "mean": 3.0,
        "std": 0.0,
        "min": 3.0,
        "25%": 3.0,
        "50%": 3.0,
        "75%": 3.0,
        "max": 3.0,
    }
    q5 = next(row for row in analysis.likert if row.item_id == "Q5")
    # Q5: 1, 2, 3, 4 -> quartiles by linear interpolation 1.75, 2.5, 3.25.
    assert (q5.describe["25%"], q5.describe["50%"], q5.describe["75%"]) == (1.75, 2.5, 3.25)
    assert q5.describe["std"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1))


def test_describe_of_nothing():
    result = describe([None, None])
    assert result["count"] == 0.0
    assert result["mean"] is None


def test_compat_from_the_database_matches_compat_on_its_export(tmp_path):
    db = store.connect(tmp_path / "c.sqlite")
    import_tsv(db, write_cyoa_tsv(rows(), 5, 5), "study")
    stored = analyze(load_study(db, "study"), compat="cyoa-2021")
    direct = analyze_rows_2021(rows(), SYSTEMS, "study", "study")
    assert stored.preference == direct.preference
    assert stored.edits == direct.edits
    assert stored.likert == direct.likert
    assert stored.compat == "cyoa-2021"
    db.close()


# --- the paper's numbers ------------------------------------------------------------------


def paper_rows(writers: int, model_chosen: int) -> list[WriterRow]:
    """``writers`` complete stories in which the model was chosen ``model_chosen`` times."""
    result = []
    left = model_chosen
    for index in range(writers):
        take = min(5, left)
        left -= take
        flags = tuple("true" if n < take else "false" for n in range(5))
        lines = tuple(f"Line {n} of writer {index}." for n in range(5))
        result.append(WriterRow(f"w{index}", lines, lines, lines, lines, flags, ()))
    return result


@pytest.mark.parametrize(
    ("writers", "chosen", "share", "two_sided", "one_sided"),
    [
        # Experiment 1 (GPT-2 vs FUSION): 345 of 525, p < 0.001.
        (105, 345, 0.657, 5.3e-13, None),
        # Experiment 2 (top-k vs nucleus): 275 of 515, p = 0.067 one-sided, 0.134 two-sided.
        (103, 275, 0.534, 0.134, 0.067),
    ],
)
def test_the_papers_preference_numbers(tmp_path, writers, chosen, share, two_sided, one_sided):
    data_rows = paper_rows(writers, chosen)
    compat = analyze_rows_2021(data_rows, SYSTEMS).preference.rows[0]
    assert (compat.chosen, compat.total) == (chosen, writers * 5)
    assert round(compat.share, 3) == share
    assert compat.p_value == pytest.approx(two_sided, rel=0.01)

    db = store.connect(tmp_path / "paper.sqlite")
    import_tsv(db, write_cyoa_tsv(data_rows, 5, 0), "paper")
    data = load_study(db, "paper")
    ours = analyze(data, resamples=200).preference.rows[0]
    assert ours.p_value == pytest.approx(two_sided, rel=0.01)
    assert ours.alternative == "two-sided"
    if one_sided is not None:
        greater = analyze(data, alternative="greater", resamples=200).preference.rows[0]
        assert round(greater.p_value, 3) == one_sided
        assert greater.alternative == "greater"
    db.close()


def test_overall_of_tables_7_and_8_from_per_model_columns_and_counts():
    """The Overall column is the acceptance-weighted mean of the model and baseline columns:
    Overall_r = (n_model,r · model_r + n_baseline,r · baseline_r) / (n_model,r + n_baseline,r).
    Checked on every round and metric of the script's computation."""
    analysis = analyze_rows_2021(rows(), SYSTEMS)
    for row in analysis.edits.rows:
        for groups in [*row.by_round.values(), row.overall]:
            model, baseline, overall = groups["model"], groups["baseline"], groups[OVERALL]
            weighted = (model.n * (model.mean or 0) + baseline.n * (baseline.mean or 0)) / (
                model.n + baseline.n
            )
            assert math.isclose(overall.mean, weighted, rel_tol=1e-12)
