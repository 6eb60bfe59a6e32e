"""The planning benchmark (bench/plan.py): how it summarises growth."""

import pytest

from bench.plan import growth_exponent


def test_time_that_doubles_with_the_work_grows_with_exponent_one():
    assert growth_exponent([500, 1000, 2000], [0.5, 1.0, 2.0]) == pytest.approx(1.0)


def test_time_that_does_not_change_with_the_work_grows_with_exponent_zero():
    assert growth_exponent([50, 100, 200, 400], [0.1, 0.1, 0.1, 0.1]) == pytest.approx(
        0.0, abs=1e-9
    )
