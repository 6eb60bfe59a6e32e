"""The planner's bounds: each number a plan takes is finite and within documented bounds, and
docs/research.md lists every bound as the code holds it."""

import math

import pytest

from cyoa.errors import PlanInputError
from cyoa.kinds import KINDS
from cyoa.research.plan_bounds import ASSUMPTIONS, OPTIONS, Bound, check_assumption, check_options
from tests.paths import ROOT

DOCS = ROOT / "docs" / "research.md"


@pytest.mark.parametrize(
    ("bound", "value", "holds"),
    [
        (Bound("x", 0, 1), 0, True),
        (Bound("x", 0, 1), 1, True),
        (Bound("x", 0, 1, low_open=True), 0, False),
        (Bound("x", 0, 2, high_open=True), 2, False),
        (Bound("x", 0, 2, high_open=True), 1.999, True),
        (Bound("x", 2, 200, whole=True), 2.5, False),
        (Bound("x", 2, 200, whole=True), 200, True),
        (Bound("x", 0, 1e9), math.inf, False),
        (Bound("x", -1e9, 1e9), math.nan, False),
    ],
)
def test_a_bound_holds_a_finite_value_between_its_ends_each_open_or_closed(bound, value, holds):
    assert bound.holds(value) is holds


def test_a_bound_says_its_ends_and_whether_each_is_included():
    assert Bound("x", 0.01, 0.99).describe() == "a number from 0.01 to 0.99"
    assert Bound("x", 0.01, 2, high_open=True).describe() == "a number at least 0.01 and below 2"
    assert Bound("x", 0, 1, True, True).describe() == "a number more than 0 and below 1"
    assert Bound("x", 0, 2**31 - 1, whole=True).describe() == "a whole number from 0 to 2147483647"


def test_a_typed_value_outside_its_bounds_is_named_with_what_it_is_and_its_bounds():
    with pytest.raises(PlanInputError) as error:
        check_assumption("story_sd", 1e308)
    assert str(error.value) == (
        "story_sd, the story SD (score units), is a number from 0 to 1000, not 1e+308: change "
        "it and plan again."
    )


def test_an_effect_is_bounded_as_the_kind_s_effect():
    check_options(KINDS["rating"].planner.effect, {"effect": 2.0})
    with pytest.raises(PlanInputError, match="The preference for the first system"):
        check_options(KINDS["cowriting"].planner.effect, {"effect": 2.0})


def test_the_documentation_lists_every_bound_as_the_code_holds_it():
    text = DOCS.read_text(encoding="utf-8")
    for name, bound in ASSUMPTIONS.items():
        assert f"| `{name}` | {bound.what} | {bound.describe()} |" in text, name
    for name, bound in OPTIONS.items():
        assert f"| {bound.what} | {bound.describe()} |" in text, name
