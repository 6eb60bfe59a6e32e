"""Bradley–Terry with style covariates, weights and writer-clustered intervals
(cyoa/cowriting/analysis/style_control.py), checked against statsmodels' logistic regression
on the same design matrix and against hand-worked cases."""

import math

import numpy as np
import pytest
import statsmodels.api as sm

from cyoa.cowriting.analysis.bradley_terry import NotEstimable, fit
from cyoa.cowriting.analysis.style_control import (
    Comparison,
    dialogue_share,
    logit_rank,
    style_differences,
)

SYSTEMS = ("a", "b", "c", "d")


def simulated(seed: int, writers: int = 80, rounds: int = 5, length_effect: float = 0.0):
    """Writers each compare one random pair; system d writes twice as long; choices follow
    the model with strengths (0.4, 0.1, -0.1, -0.4), a length effect and a writer
    preference for slot 1 that varies between writers."""
    rng = np.random.default_rng(seed)
    theta = dict(zip(SYSTEMS, (0.4, 0.1, -0.1, -0.4), strict=True))
    words = {"a": 20, "b": 20, "c": 20, "d": 40}
    out = []
    for w in range(writers):
        i, j = rng.choice(4, size=2, replace=False)
        bias = rng.normal(0, 0.5)
        for _ in range(rounds):
            first, second = (
                (SYSTEMS[i], SYSTEMS[j]) if rng.random() < 0.5 else (SYSTEMS[j], SYSTEMS[i])
            )
            len_a = words[first] + int(rng.integers(-5, 6))
            len_b = words[second] + int(rng.integers(-5, 6))
            length = (len_a - len_b) / (len_a + len_b)
            dialogue = float(rng.uniform(-0.3, 0.3))
            eta = theta[first] - theta[second] + length_effect * length + 0.3 * dialogue + bias
            chosen = rng.random() < 1 / (1 + math.exp(-eta))
            out.append(
                Comparison(f"w{w}", first, second, bool(chosen), (length, dialogue), 1.0 + (w % 3))
            )
    return out


def _statsmodels(comparisons, covariates: int):
    """The same model as a binomial GLM: system columns with 'a' as the reference."""
    rows, y, weights, groups = [], [], [], []
    for c in comparisons:
        row = [0.0] * 3
        for name, sign in ((c.first, 1.0), (c.second, -1.0)):
            if name != "a":
                row[SYSTEMS.index(name) - 1] = sign
        rows.append(row + list(c.style[:covariates]))
        y.append(1.0 if c.first_chosen else 0.0)
        weights.append(c.weight)
        groups.append(int(c.writer[1:]))
    model = sm.GLM(
        np.array(y), np.array(rows), family=sm.families.Binomial(), var_weights=np.array(weights)
    )
    return model.fit(
        cov_type="cluster",
        cov_kwds={"groups": np.array(groups), "use_correction": False},
        tol=1e-12,
    )


# statsmodels warns that clustered errors are "not fully supported" with var_weights; they
# equal the weighted sandwich here, which is what the test checks.
@pytest.mark.filterwarnings("ignore:cov_type not fully supported")
@pytest.mark.parametrize("covariates", [(), ("length", "dialogue")])
def test_the_coefficients_and_clustered_errors_match_statsmodels_logistic_regression(covariates):
    comparisons = simulated(seed=3, length_effect=1.0)
    if not covariates:
        comparisons = [
            Comparison(c.writer, c.first, c.second, c.first_chosen, (), c.weight)
            for c in comparisons
        ]
    ours = logit_rank(comparisons, SYSTEMS, covariates=covariates)
    reference = _statsmodels(comparisons, len(covariates))
    strength = {s.system: s.strength.estimate for s in ours.systems}
    for k, name in enumerate(("b", "c", "d")):
        assert strength[name] - strength["a"] == pytest.approx(reference.params[k], abs=1e-6)
    for j, coefficient in enumerate(ours.covariates):
        assert coefficient.estimate == pytest.approx(reference.params[3 + j], abs=1e-6)
    # Differences from the reference system: contrast c'Vc of our centred covariance.
    covariance = np.array(ours.covariance)
    for k in range(3):
        contrast = np.zeros(len(covariance))
        contrast[k + 1], contrast[0] = 1.0, -1.0
        assert math.sqrt(contrast @ covariance @ contrast) == pytest.approx(
            reference.bse[k], rel=1e-6
        )
    for j in range(len(covariates)):
        assert math.sqrt(covariance[4 + j, 4 + j]) == pytest.approx(reference.bse[3 + j], rel=1e-6)


def test_the_plain_model_gives_the_shares_of_hunters_mm_algorithm():
    comparisons = [
        Comparison(c.writer, c.first, c.second, c.first_chosen) for c in simulated(seed=5)
    ]
    ours = logit_rank(comparisons, SYSTEMS, covariates=())
    mm = fit(
        [(c.first, c.second) if c.first_chosen else (c.second, c.first) for c in comparisons],
        SYSTEMS,
    )
    for s in ours.systems:
        assert s.share.estimate == pytest.approx(mm.share(s.system), abs=1e-8)


def test_two_systems_with_three_wins_in_four_give_log_three_apart():
    # Hand-worked: one pair, 3 of 4 choices for x, so θ_x − θ_y = log(3/1), centred ±log(3)/2.
    comparisons = [Comparison(f"w{i}", "x", "y", i < 3) for i in range(4)]
    ranking = logit_rank(comparisons, ("x", "y"), covariates=())
    assert ranking.systems[0].system == "x"
    assert ranking.systems[0].strength.estimate == pytest.approx(math.log(3) / 2, abs=1e-9)
    assert ranking.systems[0].share.estimate == pytest.approx(0.75, abs=1e-9)


def test_a_system_that_wins_by_writing_longer_drops_once_length_is_controlled():
    comparisons = simulated(seed=11, writers=400, length_effect=3.0)
    unstyled = [Comparison(c.writer, c.first, c.second, c.first_chosen) for c in comparisons]
    plain = logit_rank(unstyled, SYSTEMS, covariates=())
    controlled = logit_rank(comparisons, SYSTEMS)
    assert plain.systems[0].system == "d"
    assert controlled.systems[-1].system == "d"
    length = controlled.covariates[0]
    assert length.ci_low < 3.0 < length.ci_high


def test_a_system_never_chosen_is_not_estimable():
    comparisons = [Comparison(f"w{i}", "x", "y", True) for i in range(5)]
    with pytest.raises(NotEstimable):
        logit_rank(comparisons, ("x", "y"), covariates=())


def test_style_is_the_normalised_word_difference_and_the_quoted_share():
    assert dialogue_share('He said "go" now') == pytest.approx(4 / 16)
    assert dialogue_share("“Run,” she said.") == pytest.approx(6 / 16)
    assert dialogue_share("") == 0.0
    assert style_differences("one two three", "one") == (pytest.approx(0.5), 0.0)
    assert style_differences("", "") == (0.0, 0.0)
