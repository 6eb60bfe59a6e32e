"""The bootstrap replicates of α and AC1 computed as weighted sums over units give the values
of the per-replicate loop they replace (krippendorff.alpha and _ac1_of_counts on each
replicate's units, from the same draws), to rounding, and drop the same replicates."""

import krippendorff
import numpy as np
import pytest

from cyoa.rating.analysis.agreement import (
    _ac1_of_counts,
    ac1_replicates,
    alpha_replicates,
    cluster_resamples,
    replicate_weights,
)

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def looped_alpha(counts, domain, level, story_index, bootstrap, seed):
    """The old loop: krippendorff.alpha of each replicate with two values or more."""
    found, dropped = [], 0
    for rows in cluster_resamples(story_index, bootstrap, seed):
        drawn = counts[rows]
        if np.count_nonzero(drawn.sum(axis=0)) < 2:
            dropped += 1
            continue
        found.append(
            krippendorff.alpha(value_counts=drawn, value_domain=domain, level_of_measurement=level)
        )
    return np.asarray(found, dtype=float), dropped


def looped_ac1(counts, story_index, bootstrap, seed):
    """The old loop: _ac1_of_counts of each replicate with a unit of two ratings."""
    found, dropped = [], 0
    for rows in cluster_resamples(story_index, bootstrap, seed):
        value = _ac1_of_counts(counts[rows])
        if value is None:
            dropped += 1
        else:
            found.append(value[0])
    return np.asarray(found, dtype=float), dropped


def random_counts(rng, units, values, raters=(1, 5)):
    """Units × values counts, each unit with 1 to 4 ratings drawn from a skewed scale."""
    shares = rng.dirichlet(np.ones(values) * 0.7)
    return np.stack(
        [rng.multinomial(rng.integers(raters[0], raters[1]), shares) for _ in range(units)]
    )


def layouts(rng, units):
    """Story of each unit: one unit per story, a few units per story, uneven stories."""
    return {
        "one unit per story": np.arange(units),
        "three units per story": np.arange(units) // 3,
        "uneven stories": np.unique(
            np.sort(rng.integers(0, units // 4, units)), return_inverse=True
        )[1],
    }


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_replicates_equal_the_per_replicate_loop(level):
    rng = np.random.default_rng(11)
    domain = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    for trial in range(3):
        counts = random_counts(rng, 40, len(domain))
        # Every story keeps a pairable unit: krippendorff.alpha refuses a replicate without one.
        counts[:, 0] += 2 * (counts.sum(axis=1) < 2)
        counts[::7] = 0
        counts[::7, trial] = 1  # units with a single rating, which pair with nothing
        counts[1::7, 0] = 3  # ... beside pairable units in the same stories
        for name, story_index in layouts(rng, len(counts)).items():
            expected, expected_dropped = looped_alpha(
                counts, domain, level, story_index, 200, trial
            )
            found, dropped = alpha_replicates(counts, domain, level, story_index, 200, trial)
            assert dropped == expected_dropped, name
            np.testing.assert_allclose(found, expected, rtol=0, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("level", LEVELS)
def test_alpha_replicates_with_a_single_value_are_dropped_as_before(level):
    # Two stories: one all 2s, one mixed; a replicate drawing the first twice has one value.
    counts = np.array([[0, 3, 0], [0, 2, 0], [1, 1, 1], [2, 0, 1]])
    story_index = np.array([0, 0, 1, 1])
    domain = np.array([1.0, 2.0, 3.0])
    expected, expected_dropped = looped_alpha(counts, domain, level, story_index, 100, 5)
    found, dropped = alpha_replicates(counts, domain, level, story_index, 100, 5)
    assert expected_dropped > 0
    assert dropped == expected_dropped
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-9)


def test_ac1_replicates_equal_the_per_replicate_loop():
    rng = np.random.default_rng(12)
    for categories in (2, 3, 5):
        counts = random_counts(rng, 36, categories)
        counts[::5] = 0
        counts[::5, 0] = 1  # units with a single rating count in the shares only
        for name, story_index in layouts(rng, len(counts)).items():
            for seed in (0, 1):
                expected, expected_dropped = looped_ac1(counts, story_index, 300, seed)
                found, dropped = ac1_replicates(counts, story_index, 300, seed)
                assert dropped == expected_dropped, name
                np.testing.assert_allclose(found, expected, rtol=0, atol=1e-9, err_msg=name)


def test_ac1_replicates_without_a_pair_of_ratings_are_dropped_as_before():
    counts = np.array([[1, 0], [0, 1], [2, 1], [1, 0]])
    story_index = np.array([0, 1, 2, 3])
    expected, expected_dropped = looped_ac1(counts, story_index, 200, 3)
    found, dropped = ac1_replicates(counts, story_index, 200, 3)
    assert expected_dropped > 0
    assert dropped == expected_dropped
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-9)


def test_replicate_weights_count_each_unit_as_often_as_its_story_was_drawn():
    story_index = np.array([0, 0, 1, 2, 2, 2, 3])
    chunks = list(replicate_weights(story_index, 250, 9, chunk=100))
    assert [len(chunk) for chunk in chunks] == [100, 100, 50]
    weights = np.concatenate(chunks)
    for row, rows in zip(weights, cluster_resamples(story_index, 250, 9), strict=True):
        assert row.tolist() == np.bincount(rows, minlength=len(story_index)).tolist()
