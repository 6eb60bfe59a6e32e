"""A judge's agreement with the human raters is measured as the references define it: Cohen's
κ (weighted for Likert items) checked by hand and against statsmodels, the TTCW release
notebook's scores against hand-worked confusion counts, the alternative annotator test's
t-test against scipy, and Kendall's τ-b against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa

from cyoa.rating.instruments import TTCW, Instrument, Item
from cyoa.rating.judges.alttest import alignment, alt_tests, one_sided_p
from cyoa.rating.judges.calibration import calibrate, kendall_tau_b, tau_permutation_p
from cyoa.rating.judges.measures import (
    binary_scores,
    cohen_kappa,
    consensus,
    kappa_of_tables,
    nearest_point,
)


def test_cohen_s_kappa_of_a_two_by_two_table_is_the_hand_worked_value():
    # n = 30, p_o = 22/30; margins 15/15 (candidate) and 13/17 (reference): p_e = 0.5,
    # κ = (22/30 − 0.5) / 0.5 = 0.4667.
    table = np.array([[10, 5], [3, 12]])
    assert kappa_of_tables(table) == pytest.approx(0.466667, abs=1e-6)
    assert kappa_of_tables(table) == pytest.approx(cohens_kappa(table).kappa)


def test_quadratic_weighted_kappa_is_the_hand_worked_value_and_statsmodels():
    # Weights 0, ¼, 1 by distance; observed weighted disagreement 1.5/21, expected
    # 126/441, so κ_w = 1 − (1.5/21) / (126/441) = 0.75.
    table = np.array([[5, 2, 0], [1, 6, 2], [0, 1, 4]])
    assert kappa_of_tables(table, "quadratic") == pytest.approx(0.75)
    assert kappa_of_tables(table, "linear") == pytest.approx(cohens_kappa(table, wt="linear").kappa)


def test_kappa_is_undefined_when_one_category_is_used_throughout():
    assert np.isnan(kappa_of_tables(np.array([[4, 0], [0, 0]])))
    result = cohen_kappa([("a", 1.0, 1.0), ("b", 1.0, 1.0)], [0.0, 1.0])
    assert result.kappa is None and "undefined" in result.reason


def test_the_kappa_interval_resamples_stories_and_holds_the_estimate():
    rng = np.random.default_rng(1)
    truth = rng.integers(0, 2, size=200).astype(float)
    judged = np.where(rng.random(200) < 0.8, truth, 1 - truth)
    pairs = [(f"s{n // 4}", j, t) for n, (j, t) in enumerate(zip(judged, truth, strict=True))]
    result = cohen_kappa(pairs, [0.0, 1.0], bootstrap=500, seed=3)
    assert result.stories == 50 and result.units == 200 and result.valid_resamples == 500
    assert result.ci_low < result.kappa < result.ci_high
    assert cohen_kappa(pairs, [0.0, 1.0], bootstrap=500, seed=3) == result


def test_the_release_notebook_s_scores_are_the_hand_worked_ones():
    # Reference 1 1 1 1 0 0 0 0 0 0; candidate 1 1 1 0 1 1 0 0 0 0:
    # TP 3, FN 1, FP 2, TN 4 → recall 0.75, specificity 4/6, precision 0.6.
    reference = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    candidate = [1, 1, 1, 0, 1, 1, 0, 0, 0, 0]
    scores = binary_scores(candidate, reference)
    assert scores.balanced_accuracy == pytest.approx((0.75 + 4 / 6) / 2)
    assert scores.precision == pytest.approx(0.6)
    assert scores.recall == pytest.approx(0.75)
    assert scores.f1 == pytest.approx(2 * 0.6 * 0.75 / 1.35)
    assert scores.correlation == pytest.approx(np.corrcoef(reference, candidate)[0, 1])


def test_a_judge_that_always_says_yes_has_no_correlation_and_zero_specificity():
    scores = binary_scores([1, 1, 1, 1], [1, 0, 0, 1])
    assert scores.balanced_accuracy == 0.5 and scores.recall == 1.0
    assert scores.correlation is None


def test_the_reference_majority_leaves_a_tie_out_and_a_likert_mean_rounds_halves_up():
    assert consensus([1, 1, 0], binary=True) == 1.0
    assert consensus([1, 0], binary=True) is None
    assert consensus([float("nan"), 0.0], binary=True) == 0.0
    assert consensus([3, 4], binary=False) == 3.5
    assert nearest_point(3.5) == 4.0 and nearest_point(2.5) == 3.0


def test_the_alt_test_t_test_is_scipy_s_one_sided_test():
    differences = [1, 0, 0, -1, 0, 1, 0, 0, -1, -1, 0, 0]
    expected = stats.ttest_1samp(differences, 0.2, alternative="less").pvalue
    assert one_sided_p(differences, 0.2) == pytest.approx(expected)
    assert one_sided_p([0, 0, 0], 0.2) == 0.0


def test_alignment_is_the_share_that_agree_or_minus_the_rmse():
    assert alignment(1.0, [1.0, 0.0, 1.0], "accuracy") == pytest.approx(2 / 3)
    assert alignment(3.0, [1.0, 5.0], "neg_rmse") == pytest.approx(-2.0)


def test_a_judge_that_always_gives_the_others_answer_wins_against_every_rater():
    # Three raters on 40 stories; rater c is wrong on every fourth story. The judge always
    # gives the majority answer, so it is at least as aligned as any rater left out.
    stories = [f"s{n}" for n in range(40)]
    truth = {story: float(n % 2) for n, story in enumerate(stories)}
    humans = {
        "a": dict(truth),
        "b": dict(truth),
        "c": {s: (1 - v if n % 4 == 0 else v) for n, (s, v) in enumerate(truth.items())},
    }
    result = alt_tests({"item": (humans, truth)}, {"item": "accuracy"})["item"]
    assert [test.rater_id for test in result.tests] == ["a", "b", "c"]
    assert result.winning_rate == 1.0 and result.passed
    assert result.advantage_probability == 1.0


def _criterion(wrong: int):
    """Three raters on 40 stories (rater c off on every fourth) and a judge that gives the
    majority answer except on the first ``wrong`` stories."""
    truth = {f"s{n}": float(n % 2) for n in range(40)}
    humans = {
        "a": dict(truth),
        "b": dict(truth),
        "c": {s: (1 - v if n % 4 == 0 else v) for n, (s, v) in enumerate(truth.items())},
    }
    return humans, {s: (1 - v if n < wrong else v) for n, (s, v) in enumerate(truth.items())}


def _by_by_hand(p_values: list[float]) -> list[float]:
    """Benjamini–Yekutieli adjusted p-values written out: m·c(m)·p₍ⱼ₎/j, the running
    minimum from the largest down, at most 1."""
    m = len(p_values)
    c = sum(1 / i for i in range(1, m + 1))
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted, running = [0.0] * m, 1.0
    for rank in range(m, 0, -1):
        index = order[rank - 1]
        running = min(running, m * c * p_values[index] / rank)
        adjusted[index] = running
    return adjusted


def test_the_alt_test_corrects_per_criterion_as_the_authors_code_does_or_per_judge_on_request():
    criteria = {"close": _criterion(6), "far": _criterion(15)}
    score = {"close": "accuracy", "far": "accuracy"}
    per_criterion = alt_tests(criteria, score)
    per_judge = alt_tests(criteria, score, family="judge")
    close = [test.p_value for test in per_criterion["close"].tests]
    far = [test.p_value for test in per_criterion["far"].tests]
    assert [t.p_adjusted for t in per_criterion["close"].tests] == pytest.approx(_by_by_hand(close))
    assert [t.p_adjusted for t in per_judge["close"].tests + per_judge["far"].tests] == (
        pytest.approx(_by_by_hand(close + far))
    )
    # Alone, the close criterion's three raters are all beaten (adjusted p 0.040 ≤ 0.05);
    # corrected with the far criterion's three, two of them are not (0.108).
    assert per_criterion["close"].passed and per_criterion["close"].winning_rate == 1.0
    assert not per_judge["close"].passed and per_judge["close"].winning_rate == pytest.approx(1 / 3)
    assert per_criterion["close"].family == "criterion" and per_judge["close"].family == "judge"
    assert not per_criterion["far"].passed and not per_judge["far"].passed


def test_the_alt_test_says_why_when_no_rater_judged_enough_units():
    humans = {"a": {"s1": 1.0, "s2": 0.0}, "b": {"s1": 1.0, "s2": 1.0}}
    result = alt_tests({"item": (humans, {"s1": 1.0, "s2": 0.0})}, {"item": "accuracy"})["item"]
    assert result.passed is None and "30 or more" in result.reason
    assert result.skipped == ("a", "b")


def test_tau_s_exact_permutation_p_is_scipy_s_exact_p_when_nothing_is_tied():
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [2.0, 1.0, 4.0, 3.0, 5.0, 7.0, 6.0]
    p, method = tau_permutation_p(x, y)
    assert p == pytest.approx(stats.kendalltau(x, y, method="exact").pvalue)
    assert method == "exact permutation (5,040 orderings)"


def test_kendall_s_tau_b_is_scipy_s_with_ties():
    x, y = [0.1, 0.4, 0.4, 0.9, 0.2], [1.0, 2.0, 3.0, 3.0, 0.5]
    assert kendall_tau_b(x, y) == pytest.approx(stats.kendalltau(x, y).statistic)
    assert kendall_tau_b([1.0, 1.0], [0.0, 1.0]) is None


def crossed_study(raters: int = 3, stories: int = 40, seed: int = 0) -> pd.DataFrame:
    """Every rater answers every TTCW test of every story: a story's quality decides the
    verdicts, each rater flipping some at random."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(stories):
        source = "A" if n % 2 else "B"
        quality = 0.6 if source == "A" else 0.3
        for item in TTCW.items:
            truth = float(rng.random() < quality)
            for r in range(raters):
                value = truth if rng.random() < 0.8 else 1 - truth
                rows.append((f"{n}_{source}", source, f"r{r}", item.id, value, f"r{r} on {n}"))
    return pd.DataFrame(
        rows, columns=["story_id", "source", "rater_id", "item", "value", "rationale"]
    )


def test_a_judge_built_to_copy_one_human_rater_reaches_that_rater_s_kappa():
    study = crossed_study()
    copy = study[study["rater_id"] == "r1"].assign(rater_id="judge")
    result = calibrate(TTCW, study, copy, judge="copy of r1", bootstrap=0)
    for calibration in (*result.items, result.overall):
        r1 = next(c for c in calibration.ceiling_per_rater if c.rater_id == "r1")
        assert r1.judge == pytest.approx(r1.human)
    # Against the majority that includes r1 it does better than against the others alone.
    assert result.overall.kappa.kappa > result.overall.ceiling_per_rater[1].human


def test_unparsed_verdicts_are_left_out_and_counted_or_counted_as_no_on_request():
    study = crossed_study(stories=6)
    judge = study[study["rater_id"] == "r0"].assign(rater_id="judge")
    judge.loc[judge.index[:5], "value"] = np.nan
    left_out = calibrate(TTCW, study, judge, judge="j", bootstrap=0)
    as_no = calibrate(TTCW, study, judge, judge="j", bootstrap=0, as_no=True)
    assert left_out.overall.unparsed == 5 and as_no.overall.unparsed == 5
    assert left_out.overall.kappa.units == 6 * 14 - 5
    assert as_no.overall.kappa.units == 6 * 14


def test_the_system_level_compares_pass_rates_and_ranks_sources_alike():
    study = crossed_study()
    judge = study[study["rater_id"] == "r2"].assign(rater_id="judge")
    system = calibrate(TTCW, study, judge, judge="j", bootstrap=200).system
    assert system.measure == "pass rate"
    by_source = {row.source: row for row in system.rows}
    human_a = study.loc[study["source"] == "A", "value"].mean()
    assert by_source["A"].human == pytest.approx(human_a)
    assert system.tau == 1.0
    # Two sources: both orderings are as extreme as the one seen.
    assert system.p_value == 1.0 and system.ci_low is None


def _ranked_sources(human: list[int], judge: list[int]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One TTCW test answered about twelve stories per source: source k passes ``human[k]``
    of its stories by the humans and ``judge[k]`` by the judge."""
    rows, verdicts = [], []
    for k, (h, j) in enumerate(zip(human, judge, strict=True)):
        for n in range(12):
            story = f"{n}_S{k}"
            rows.append((story, f"S{k}", "r0", "1", float(n < h), ""))
            verdicts.append((story, f"S{k}", "judge", "1", float(n < j), ""))
    columns = ["story_id", "source", "rater_id", "item", "value", "rationale"]
    return pd.DataFrame(rows, columns=columns), pd.DataFrame(verdicts, columns=columns)


def test_with_four_sources_tau_comes_with_its_exact_permutation_p_and_no_bootstrap_interval():
    # Judge swaps the top two of four: τ = (5 − 1)/6 = 2/3. Of the 24 orderings, 1 has no
    # discordant pair and 3 have one, and as many the other way: p = 8/24.
    humans, judge = _ranked_sources([2, 4, 6, 8], [2, 4, 8, 6])
    system = calibrate(TTCW, humans, judge, judge="j", bootstrap=200).system
    assert system.tau == pytest.approx(2 / 3)
    assert system.p_value == pytest.approx(1 / 3)
    assert system.p_method.startswith("exact permutation (24 orderings)")
    assert system.ci_low is None and system.ci_high is None
    assert "fewer than 10" in system.interval_reason


def test_with_twelve_sources_tau_has_a_bootstrap_interval_and_scipy_s_exact_p():
    humans, verdicts = _ranked_sources(list(range(12)), [0, 2, 1, 3, 5, 4, 6, 8, 7, 9, 11, 10])
    system = calibrate(TTCW, humans, verdicts, judge="j", bootstrap=200).system
    rates = ([row.human for row in system.rows], [row.judge for row in system.rows])
    expected = stats.kendalltau(*rates, method="exact")
    assert system.tau == pytest.approx(expected.statistic)
    assert system.p_value == pytest.approx(expected.pvalue)
    assert system.ci_low is not None and system.ci_low <= system.tau <= system.ci_high
    assert system.interval_reason is None


def test_the_disagreement_table_shows_unanimous_humans_overruled_with_both_rationales():
    rows = [
        ("1_A", "A", rater, "1", 1.0, f"{rater} liked the ending") for rater in ("e1", "e2")
    ] + [("2_A", "A", "e1", "1", 1.0, "fine"), ("2_A", "A", "e2", "1", 0.0, "weak")]
    study = pd.DataFrame(
        rows, columns=["story_id", "source", "rater_id", "item", "value", "rationale"]
    )
    judge = pd.DataFrame(
        [("1_A", "A", "j", "1", 0.0, "No, it stops."), ("2_A", "A", "j", "1", 0.0, "No.")],
        columns=study.columns,
    )
    result = calibrate(TTCW, study, judge, judge="j", bootstrap=0)
    assert len(result.disagreements) == 1
    row = result.disagreements[0]
    assert (row.story_id, row.item, row.human, row.judge) == ("1_A", "1", 1.0, 0.0)
    assert row.human_rationales == ("e1: e1 liked the ending", "e2: e2 liked the ending")
    assert row.judge_rationale == "No, it stops."


LIKERT = Instrument(
    id="likert",
    name="Two items",
    version="1",
    reference="",
    attribution="",
    instructions="",
    items=(Item("q1", "Vivid?", "likert", points=5), Item("q2", "Dull?", "likert", points=5)),
)


def test_a_likert_judge_gets_weighted_kappa_alpha_and_spearman_against_the_mean():
    rng = np.random.default_rng(2)
    rows = []
    for n in range(30):
        level = rng.integers(1, 6)
        for rater in ("a", "b", "c"):
            for item in ("q1", "q2"):
                value = float(np.clip(level + rng.integers(-1, 2), 1, 5))
                rows.append((f"s{n}", "A" if n % 2 else "B", rater, item, value, ""))
    study = pd.DataFrame(
        rows, columns=["story_id", "source", "rater_id", "item", "value", "rationale"]
    )
    means = study.groupby(["story_id", "item"], as_index=False)["value"].mean()
    judge = means.assign(
        value=[nearest_point(v) for v in means["value"]], rater_id="j", source="", rationale=""
    )
    result = calibrate(LIKERT, study, judge, judge="j", bootstrap=0)
    q1 = result.items[0]
    assert q1.kind == "likert" and q1.kappa.weights == "quadratic"
    assert q1.kappa.kappa == pytest.approx(1.0)
    assert q1.spearman > 0.95 and q1.alpha > 0.95
    assert result.overall is not None and result.system.measure == "mean score"
