"""One planning service for the verb and the Plan page: the plan record, stored as a history
of plans whose latest is the experiment's plan, and shown in the evaluation card."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from cyoa.cowriting import planning as cowriting_planning
from cyoa.errors import PlanInputError
from cyoa.kinds import KINDS
from cyoa.rating.planner import design
from cyoa.research.planning import PLANNERS, Options, make_plan, parse_assumptions
from cyoa.web.card import planned_sample_size
from tests.cli.test_cli_plan import small_pilot
from tests.paths import DATA

RATING = {"difference": 0.4, "story_sd": 0.5, "rater_sd": 0.4, "residual_sd": 0.8, "minutes": 10}


def imported_pilot(tmp_path: Path) -> list[str]:
    scales = DATA / "scales"
    db = ["--db", str(tmp_path / "cyoa.sqlite")]
    result = CliRunner().invoke(cli, [
        *db, "import-ratings", str(small_pilot(tmp_path / "pilot.csv")), "--format", "long",
        "--instrument", str(scales / "crowd-1-4.toml"), "--name", "pilot",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    return db


def test_a_plan_record_says_where_each_value_came_from_and_what_was_chosen():
    record = make_plan(None, None, "rating", RATING, Options(seed=5))
    assert record.inputs["story_sd"] == {"value": 0.5, "source": "typed"}
    assert record.chosen["stories"] == 60 and record.chosen["raters_per_story"] == 2
    assert record.cost["recruit"] == 120
    assert len(record.curve) == 30 and record.seed == 5
    assert record.alternative == "two-sided"
    assert record.text.startswith("Rating plan:")


def test_an_appended_section_ends_the_plan_s_text():
    record = make_plan(None, None, "rating", RATING, Options())
    assert [s["title"] for s in record.sections] == ["Precision of agreement"]
    record.sections.append({"title": "Precision of α", "text": "±0.1 with 60 stories."})
    assert record.text.endswith("(expected width 0.194).\n\n±0.1 with 60 stories.")
    assert record.to_dict()["text"] == record.text


def test_a_stored_plan_round_trips_and_the_latest_is_the_plan(tmp_path):
    imported_pilot(tmp_path)
    db = store.connect(tmp_path / "cyoa.sqlite")
    first = make_plan(None, None, "rating", RATING, Options())
    second = make_plan(None, None, "rating", {**RATING, "difference": 0.8}, Options())
    store.insert_plan(db, "pilot", "rating", first.to_dict(), first.text)
    newest = store.insert_plan(db, "pilot", "rating", second.to_dict(), second.text)
    plan = store.latest_plan(db, "pilot")
    assert plan["id"] == newest
    assert plan["record"] == json.loads(json.dumps(second.to_dict()))
    assert plan["text"] == second.text
    assert db.execute("SELECT count(*) FROM plans").fetchone()[0] == 2


def test_plan_save_stores_the_printed_plan_on_the_experiment(tmp_path):
    db = imported_pilot(tmp_path)
    result = CliRunner().invoke(cli, [*db, "plan", "pilot", "--save", "--seed", "3"])
    assert result.exit_code == 0, result.output
    plan = store.latest_plan(store.connect(tmp_path / "cyoa.sqlite"), "pilot")
    assert plan["kind"] == "rating"
    assert plan["text"] in result.output
    assert plan["record"]["inputs"]["story_sd"]["source"] == "pilot"
    assert plan["record"]["seed"] == 3


def test_plan_save_without_an_experiment_is_refused_with_a_sentence():
    result = CliRunner().invoke(cli, ["plan", "--kind", "rating", "--save"])
    assert result.exit_code == 2
    assert "--save stores the plan on an experiment" in result.output


def test_an_older_database_gains_the_plans_table(tmp_path):
    db = store.connect(tmp_path / "old.sqlite")
    with store.write_transaction(db):
        store.migrate(db, store.MIGRATIONS[: store.MIGRATIONS.index(store._plans)])
    assert "plans" not in db.table_names()
    with store.write_transaction(db):
        store.migrate(db)
    assert "plans" in db.table_names()
    assert store.latest_plan(db, "anything") is None


def test_the_card_shows_the_latest_plan_or_how_to_make_one():
    assert "python -m cyoa plan demo --save" in "\n".join(planned_sample_size(None, "demo", design))
    record = make_plan(None, None, "rating", RATING, Options(seed=9)).to_dict()
    plan = {"id": 4, "created_at": "2026-11-27T10:00:00.000Z", "record": record}
    text = "\n".join(planned_sample_size(plan, "demo", design))
    assert "## Planned sample size" in text
    assert "Plan 4, made 2026-11-27T10:00:00.000Z" in text
    assert "story_sd = 0.5 (typed)" in text and "seed 9" in text
    assert "60 stories per source × 2 raters per story (120 raters, 240 ratings), power" in text
    assert "Cost: recruit 120 (for 120 kept)" in text
    assert "- Precision of agreement: Smallest design for α ± 0.10:" in text


def test_the_card_shows_a_judge_plan_s_stories_without_a_power_test():
    record = make_plan(None, None, "judge", {"kappa": 0.4, "prevalence": 0.3}, Options())
    plan = {"id": 1, "created_at": "2026-11-27T10:00:00.000Z", "record": record.to_dict()}
    text = "\n".join(planned_sample_size(plan, "demo", design))
    assert "- Judge calibration: " in text and "a 95% interval 0.2 wide: 379." in text
    assert "- Test:" not in text and "Chosen design" not in text


def test_a_co_writing_design_is_costed_for_its_own_rounds_from_the_pilot_s_minutes_per_round():
    values = {"p": 0.7, "writer_sd": 0.0, "minutes_per_round": 2.0}
    record = make_plan(None, None, "cowriting", values, Options(simulations=200))
    rounds = record.chosen["rounds"]
    assert record.cost["minutes"] == pytest.approx(2.0 * rounds)
    typed = make_plan(None, None, "cowriting", {**values, "minutes": 25}, Options(simulations=200))
    assert typed.cost["minutes"] == 25


def test_a_typed_value_that_is_not_finite_is_refused_with_a_sentence():
    with pytest.raises(PlanInputError, match="'story_sd=inf' needs a finite number"):
        parse_assumptions("story_sd=inf", {"story_sd"})


def test_a_plan_s_default_simulations_are_the_co_writing_planner_s_default():
    assert Options().simulations == cowriting_planning.SIMULATIONS


def test_each_kind_plans_with_its_own_planner_and_names_its_design_in_the_card():
    assert {name for name in PLANNERS} == {"cowriting", "rating", "fei", "judge"}
    cowriting = make_plan(None, None, "cowriting", {"p": 0.8}, Options(simulations=100))
    assert cowriting.kind == "cowriting" and cowriting.chosen is not None
    plan = {"id": 2, "created_at": "2026-11-27T10:00:00.000Z", "record": cowriting.to_dict()}
    text = "\n".join(planned_sample_size(plan, "demo", KINDS["cowriting"].planner.design))
    chosen = cowriting.chosen
    assert f"{chosen['writers']} writers × {chosen['rounds']} counted rounds each" in text
