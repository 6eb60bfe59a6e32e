"""The co-writing planner's power is what CYOA's own analysis delivers.

A plan is fitted on a simulated pilot drawn with a known preference and writer spread; then
whole studies at the recommended size are drawn from the plan's assumptions and analysed by
the functions the dashboard's preference table reports (:func:`cyoa.stats.preference` for the
headline, :func:`cyoa.stats.clustered_preference` for the writer level). The planned power is
a promise given the pilot's estimates: the pilot's own sampling error is checked separately."""

from functools import cache

import numpy as np
import pytest
from scipy import special

from cyoa.cowriting.analysis.data import RoundRecord, StudyData
from cyoa.cowriting.analysis.tables import preference_table
from cyoa.cowriting.planning import estimate_pilot, intercept_for, plan_cowriting
from cyoa.stats import clustered_preference, preference

TRUE_PREFERENCE = 0.6
TRUE_WRITER_SD = 0.6
PILOT_WRITERS = 400
ROUNDS = 10
STUDIES = 1000


def _choices(rng, writers, rounds, preference, writer_sd):
    """How many of each writer's rounds chose the first system, under the planner's model."""
    mu = intercept_for(preference, writer_sd)
    chance = special.expit(mu + writer_sd * rng.standard_normal(writers))
    return rng.binomial(rounds, chance)


def _study(chosen_per_writer, rounds):
    """A stored study as the analysis reads it: ``chosen`` of each writer's counted rounds
    choose system "a"."""
    records = [
        RoundRecord(
            f"s{writer}", f"w{writer}", number, "line", ("a", "b"), ("x", "y"),
            1 if number <= chosen else 2, "a" if number <= chosen else "b", "x", "x", False,
        )
        for writer, chosen in enumerate(chosen_per_writer)
        for number in range(1, rounds + 1)
    ]  # fmt: skip
    writers = {f"s{i}": f"w{i}" for i in range(len(chosen_per_writer))}
    return StudyData("sim", "sim", ("a", "b"), rounds, tuple(records), writers, frozenset(),
                     (), {})  # fmt: skip


@cache
def _headline_p(chosen, total):
    return preference(chosen, total).p_value


def _writer_p(chosen_per_writer, rounds):
    return clustered_preference([(int(c), rounds) for c in chosen_per_writer], resamples=1).p_value


@pytest.fixture(scope="module")
def pilot():
    rng = np.random.default_rng(35)
    chosen = _choices(rng, PILOT_WRITERS, ROUNDS, TRUE_PREFERENCE, TRUE_WRITER_SD)
    return estimate_pilot([(int(c), ROUNDS) for c in chosen])


def test_a_simulated_pilot_gives_back_its_preference_and_writer_spread_within_sampling_error(
    pilot,
):
    # 400 writers × 10 rounds: the pooled share's SE is about 0.012 and the spread's about
    # 0.05 (100 pilots: mean 0.593, SD 0.053), so these bounds are about two SEs.
    assert pilot.preference == pytest.approx(TRUE_PREFERENCE, abs=0.025)
    assert pilot.writer_sd == pytest.approx(TRUE_WRITER_SD, abs=0.11)


def test_the_dashboard_s_preference_table_reports_the_tests_the_check_runs():
    chosen = _choices(np.random.default_rng(4), 12, ROUNDS, 0.6, 0.6)
    table = preference_table(_study(chosen, ROUNDS), resamples=1)
    assert table.rows[0].p_value == pytest.approx(_headline_p(int(chosen.sum()), 12 * ROUNDS))
    assert table.clustered.p_value == pytest.approx(_writer_p(chosen, ROUNDS))


@pytest.mark.parametrize("test", ["writers", "binomial"])
def test_studies_of_the_recommended_size_reject_as_often_as_the_plan_promised(pilot, test):
    plan = plan_cowriting(
        pilot.preference, pilot.writer_sd, test=test, rounds=(ROUNDS,),
        writers=(10, 15, 20, 25, 30, 40), simulations=10_000, seed=1,
    )  # fmt: skip
    cell = plan.chosen
    assert cell is not None and plan.target <= cell.power < 0.95
    rng = np.random.default_rng(7)
    rejections = 0
    for _ in range(STUDIES):
        chosen = _choices(rng, cell.writers, cell.rounds, pilot.preference, pilot.writer_sd)
        if test == "writers":
            p = _writer_p(chosen, cell.rounds)
        else:
            p = _headline_p(int(chosen.sum()), cell.writers * cell.rounds)
        rejections += bool(p <= plan.alpha)
    # 1,000 studies: the realised share's SE is about 0.013 at power 0.8; ±0.03 is 2.4 SEs.
    assert rejections / STUDIES == pytest.approx(cell.power, abs=0.03)
