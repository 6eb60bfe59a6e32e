"""Bradley–Terry ranking: known examples, the likelihood maximum, no invented comparisons,
and writer-level bootstrap intervals."""

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize

from cyoa.cowriting.analysis.bradley_terry import NotEstimable, fit, rank


def beats(winner: str, loser: str, times: int) -> list[tuple[str, str]]:
    return [(winner, loser)] * times


def test_two_systems_share_as_their_wins():
    model = fit(beats("a", "b", 3) + beats("b", "a", 1))
    assert model.shares == pytest.approx((0.75, 0.25), abs=1e-9)
    assert model.probability("a", "b") == pytest.approx(0.75)


def test_a_pair_never_compared_gets_no_invented_comparison():
    # a–b and b–c were compared, a–c never. For such a tree of comparisons the maximum
    # likelihood makes each compared pair's odds equal its win ratio: a/b = 2, b/c = 2,
    # so the shares are 4/7, 2/7, 1/7 (any pseudo-comparison of a and c would change them).
    choices = beats("a", "b", 2) + beats("b", "a", 1) + beats("b", "c", 2) + beats("c", "b", 1)
    model = fit(choices, ["a", "b", "c"])
    assert model.shares == pytest.approx((4 / 7, 2 / 7, 1 / 7), abs=1e-9)
    assert model.wins[0][2] == 0 and model.wins[2][0] == 0


def test_a_balanced_cycle_gives_equal_strengths():
    choices = []
    for winner, loser in (("a", "b"), ("b", "c"), ("c", "a")):
        choices += beats(winner, loser, 2) + beats(loser, winner, 1)
    assert fit(choices).shares == pytest.approx((1 / 3,) * 3, abs=1e-9)


def test_the_fit_maximises_the_likelihood():
    rng = random.Random(5)
    names = ["a", "b", "c", "d"]
    truth = {"a": 4.0, "b": 2.0, "c": 1.0, "d": 0.5}
    choices = []
    for _ in range(400):
        x, y = rng.sample(names, 2)
        won = rng.random() < truth[x] / (truth[x] + truth[y])
        choices.append((x, y) if won else (y, x))
    model = fit(choices, names)

    def negative_log_likelihood(theta):
        strength = dict(zip(names, np.exp(np.append(theta, 0.0)), strict=True))
        return -sum(math.log(strength[w] / (strength[w] + strength[o])) for w, o in choices)

    best = minimize(negative_log_likelihood, np.zeros(3), method="BFGS", options={"gtol": 1e-9})
    direct = np.exp(np.append(best.x, 0.0))
    assert model.shares == pytest.approx(tuple(direct / direct.sum()), abs=1e-5)
    assert sorted(names, key=model.share, reverse=True) == names


def test_a_system_that_never_lost_makes_the_strengths_undetermined():
    with pytest.raises(NotEstimable, match="a was never passed over for b"):
        fit(beats("a", "b", 3) + beats("b", "c", 1) + beats("c", "b", 1))
    with pytest.raises(NotEstimable):
        fit(beats("a", "b", 1) + beats("b", "a", 1), ["a", "b", "c"])  # c never compared


def test_the_bootstrap_resamples_writers_and_brackets_the_estimate():
    rng = random.Random(2)
    truth = {"a": 3.0, "b": 1.5, "c": 1.0}
    by_writer = {}
    for w in range(40):
        x, y = rng.sample(sorted(truth), 2)
        choices = []
        for _ in range(5):
            won = rng.random() < truth[x] / (truth[x] + truth[y])
            choices.append((x, y) if won else (y, x))
        by_writer[f"w{w}"] = choices
    ranking = rank(by_writer, ["a", "b", "c"], resamples=500, seed=7)
    assert [r.system for r in ranking.systems] == ["a", "b", "c"]
    assert ranking.writers == 40 and ranking.choices == 200
    for ranked in ranking.systems:
        assert ranked.ci_low < ranked.share < ranked.ci_high
    assert sum(r.won for r in ranking.systems) == 200
    again = rank(by_writer, ["a", "b", "c"], resamples=500, seed=7)
    assert again == ranking
    # Writers are resampled whole: with one writer every resample is that writer.
    lonely = rank({"w": beats("a", "b", 1) + beats("b", "a", 1)}, ["a", "b"], resamples=50)
    assert lonely.skipped == 0
    assert lonely.systems[0].ci_low == pytest.approx(0.5) == lonely.systems[0].ci_high
