"""Judges of the writers' choices: a model card is shown each round's story so far and its two
suggestions, in both orders, and asked which continues the story better; its verdicts are
stored one by one (resumable, never repeated) and compared with the writers' choices
(agreement with a writer-clustered interval) and with themselves (position bias), from the
command line (``python -m cyoa judge-rounds``) to ``analyze`` and the results page. Fast
tests with the fake backend and a judge that copies the writers."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FAKE_CARD, Writer

from cyoa import store
from cyoa.cli import cli
from cyoa.cowriting.analysis.data import RoundRecord, load_study
from cyoa.cowriting.judges.figures import RoundVerdict, agreement_with_writers
from cyoa.cowriting.judges.prompts import (
    TEMPLATE,
    RoundPromptError,
    check_template,
    parse_choice,
    round_prompts,
)
from cyoa.cowriting.judges.report import study_judges
from cyoa.cowriting.judges.runs import RoundJudgeRequest, judge_rounds, run_progress
from cyoa.generation import load_model_cards
from cyoa.generation.fake import FakeBackend
from cyoa.stats import clustered_preference
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment

WRITERS = 8
ROUNDS = 5


def round_turns(writer: int) -> list[Turn]:
    """Five rounds of one writer; the suggestion chosen and the slot order vary."""
    turns = []
    for n in range(1, ROUNDS + 1):
        chosen = FIRST if (writer + n) % 3 else SECOND
        suggestions = {s: f"The {s} of writer {writer} says {n} things." for s in (FIRST, SECOND)}
        turns.append(
            Turn(
                line=f"Writer {writer} opens round {n}.",
                suggestions=suggestions,
                slot1=(FIRST, SECOND)[(writer * 7 + n) % 2],
                chosen=chosen,
                final=suggestions[chosen].replace("things", "stories"),
            )
        )
    return turns


def study(tmp_path: Path) -> dict[str, str]:
    """A co-writing experiment 'exp' of eight writers × five rounds, and fake model cards:
    'slot-a' begins 70% of its answers with "A", 'mumbler' never with a letter."""
    db_path = tmp_path / "cyoa.sqlite"
    db = store.connect(db_path)
    try:
        make_experiment(db)
        for writer in range(WRITERS):
            # Fixed session ids: a verdict's seed depends on its session, so the planted
            # judge's draws are the same in every run.
            add_writer(db, f"w{writer}", round_turns(writer), session_id=f"session-{writer}")
    finally:
        db.close()
    models = tmp_path / "models"
    models.mkdir()
    slot_a = 'answers = ["A", "A", "A", "A", "A", "A", "A", "B", "B", "B"]'
    (models / "slot-a.toml").write_text(FAKE_CARD.format(name="slot-a", options=slot_a))
    (models / "mumbler.toml").write_text(FAKE_CARD.format(name="mumbler", options=""))
    return {"db": str(db_path), "models": str(models)}


def card(config: dict[str, str], name: str):
    return load_model_cards(Path(config["models"]))[name]


class Copier(FakeBackend):
    """A judge that answers with the slot holding the suggestion the writer chose."""

    def __init__(self, card, chosen: set[str]) -> None:
        super().__init__(card)
        self.chosen = chosen
        self.asked: list[str] = []

    def stream(self, prompt, sampling, seed):
        self.asked.append(prompt)
        shown = dict(re.findall(r"^([AB]): (.*)$", prompt, re.MULTILINE))
        slot = "A" if shown["A"] in self.chosen else "B"
        yield from (slot, ". It follows the story.")


def chosen_suggestions(config: dict[str, str]) -> set[str]:
    db = store.connect(config["db"])
    try:
        return {r.chosen_suggestion for r in load_study(db, "exp").rounds}
    finally:
        db.close()


def run(config, request: RoundJudgeRequest, backend, stop=lambda: False):
    db = store.connect(config["db"])
    try:
        found = judge_rounds(db, request, backend, "test/1/1/x", stop=stop, log=lambda _: None)
        return found, run_progress(db, found)
    finally:
        db.close()


def stored(config: dict[str, str], judge: str) -> list[dict]:
    db = store.connect(config["db"])
    try:
        return list(
            db.query(
                "SELECT session_id, round, shown_order, chosen_slot, chosen_system, response,"
                " recorded_at FROM round_verdicts WHERE experiment_id = 'exp' AND judge = ?"
                " ORDER BY session_id, round, shown_order",
                [judge],
            )
        )
    finally:
        db.close()


def cli_run(config: dict[str, str], *args: str):
    env = {"CYOA_MODELS_DIR": config["models"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    return CliRunner().invoke(cli, ["--db", config["db"], *args], env=env)


# --- prompts and parsing --------------------------------------------------------------------


def record(session: str, number: int, line: str, slots, final: str, chosen_slot: int = 1):
    return RoundRecord(
        session_id=session, writer=session, round=number, writer_line=line,
        slot_systems=(FIRST, SECOND), suggestions=slots, chosen_slot=chosen_slot,
        chosen_system=(FIRST, SECOND)[chosen_slot - 1], chosen_suggestion=slots[chosen_slot - 1],
        final_text=final, one_suggestion_only=False,
    )  # fmt: skip


def test_each_round_is_asked_twice_with_the_story_so_far_and_the_suggestions_swapped():
    rounds = [
        record("s1", 1, "The fog came in.", ("A bell rang.", "A gull cried."), "A bell rang!"),
        record("s1", 2, "She ran.", ("She fell.", "She flew."), "She fell."),
    ]
    prompts = round_prompts(rounds, TEMPLATE)
    assert [(p.round, p.order) for p in prompts] == [(1, "AB"), (1, "BA"), (2, "AB"), (2, "BA")]
    second, swapped = prompts[2], prompts[3]
    assert "The fog came in. A bell rang! She ran." in second.text
    assert "A: She fell.\nB: She flew." in second.text
    assert "A: She flew.\nB: She fell." in swapped.text
    assert (swapped.slot_a_system, swapped.slot_b_system) == (SECOND, FIRST)


def test_a_round_in_which_the_writer_had_no_choice_is_not_asked():
    one = record("s1", 1, "The fog came in.", ("A bell rang.", "A gull cried."), "A bell rang!")
    one = RoundRecord(**{**one.__dict__, "suggestions": ("A bell rang.", None)})
    assert round_prompts([one], TEMPLATE) == []


def test_the_choice_is_read_from_a_lone_a_or_b_at_the_start_and_anything_else_is_unparsed():
    assert parse_choice("A. It keeps the fog.") == "A"
    assert parse_choice(" **B**, because") == "B"
    assert parse_choice("(A)") == "A" and parse_choice("B") == "B"
    assert parse_choice("A gull watched the map.") is None  # the article, not the slot
    assert parse_choice("Both are fine.") is None and parse_choice("") is None
    assert parse_choice("I choose A.") is None


def test_a_template_without_the_story_or_both_suggestions_is_refused():
    check_template(TEMPLATE)
    with pytest.raises(RoundPromptError, match=r"\{b\}"):
        check_template("{story}\nA: {a}\nAnswer:")
    with pytest.raises(RoundPromptError, match="placeholder"):
        check_template("{story} {a} {b} {writer}")


# --- figures --------------------------------------------------------------------------------


def test_agreement_is_the_share_of_read_verdicts_choosing_the_writers_suggestion():
    rounds = [
        record("w1", 1, "x.", ("a1", "b1"), "a1", chosen_slot=1),
        record("w1", 2, "x.", ("a2", "b2"), "b2", chosen_slot=2),
        record("w2", 1, "x.", ("a3", "b3"), "a3", chosen_slot=1),
    ]
    verdicts = [
        RoundVerdict("w1", 1, "AB", "A"),  # slot 1: agrees
        RoundVerdict("w1", 1, "BA", "A"),  # slot 2: disagrees (a flip)
        RoundVerdict("w1", 2, "AB", "B"),  # slot 2: agrees
        RoundVerdict("w1", 2, "BA", "A"),  # slot 2: agrees
        RoundVerdict("w2", 1, "AB", None),  # unread
        RoundVerdict("w2", 1, "BA", "A"),  # slot 2: disagrees
    ]
    found = agreement_with_writers(rounds, verdicts, resamples=500)
    assert (found.verdicts, found.unread, found.agreed, found.read) == (6, 1, 3, 5)
    expected = clustered_preference([(3, 4), (0, 1)], resamples=500)
    assert found.share == pytest.approx(0.6)
    assert (found.ci_low, found.ci_high) == (expected.bootstrap_low, expected.bootstrap_high)
    assert found.position.pairs == 2 and found.position.flips == 1
    assert found.position.slot_a.chosen == 4 and found.position.slot_a.total == 5


def test_with_one_writer_the_share_has_no_interval_and_a_note_says_why():
    rounds = [record("w1", 1, "x.", ("a1", "b1"), "a1")]
    found = agreement_with_writers(rounds, [RoundVerdict("w1", 1, "AB", "A")])
    assert found.share == 1.0 and found.ci_low is None
    assert "two writers" in found.note


# --- runs -----------------------------------------------------------------------------------


def test_a_judge_that_copies_the_writers_choices_agrees_with_them_every_time(tmp_path):
    config = study(tmp_path)
    copier = Copier(card(config, "slot-a"), chosen_suggestions(config))
    found, progress = run(config, RoundJudgeRequest("exp", card(config, "slot-a"), "copier"),
                          copier)  # fmt: skip
    assert found.state == "done" and progress["done"] == progress["total"] == 2 * WRITERS * ROUNDS
    assert len(copier.asked) == 2 * WRITERS * ROUNDS
    db = store.connect(config["db"])
    try:
        (agreement,) = study_judges(db, load_study(db, "exp"), resamples=500)
    finally:
        db.close()
    assert agreement.judge == "copier" and agreement.share == 1.0
    assert agreement.ci_low == agreement.ci_high == 1.0
    assert agreement.position.flips == 0 and not agreement.position.flagged


def test_a_planted_judge_that_says_slot_a_70_percent_of_the_time_is_flagged(tmp_path):
    config = study(tmp_path)
    result = cli_run(config, "judge-rounds", "exp", "--model", "slot-a")
    assert result.exit_code == 0, result.output
    verdicts = stored(config, "slot-a")
    assert len(verdicts) == 2 * WRITERS * ROUNDS
    assert all(v["chosen_slot"] in ("A", "B") for v in verdicts)
    result = cli_run(config, "analyze", "exp", "--format", "json")
    assert result.exit_code == 0, result.output
    (judge,) = json.loads(result.output)[0]["judges"]
    assert judge["judge"] == "slot-a" and judge["position"]["flagged"] is True
    assert judge["position"]["slot_a"]["share"] == pytest.approx(0.7, abs=0.1)
    markdown = cli_run(config, "analyze", "exp").output
    assert "## Judges of the writers' choices" in markdown and "slot-a" in markdown
    assert "flagged" in markdown


def test_answers_that_cannot_be_read_are_stored_without_a_slot_and_counted(tmp_path):
    config = study(tmp_path)
    result = cli_run(config, "judge-rounds", "exp", "--model", "mumbler", "--limit", "3")
    assert result.exit_code == 0, result.output
    assert "6 unparsed" in result.output
    verdicts = stored(config, "mumbler")
    assert len(verdicts) == 6 and all(v["chosen_slot"] is None and v["response"] for v in verdicts)


def stop_after(config: dict[str, str], judge: str, verdicts: int):
    """A ``stop`` that says stop once ``judge`` has stored ``verdicts`` (it is asked before
    each prompt and while one is answered)."""
    return lambda: len(stored(config, judge)) >= verdicts


def test_a_run_stopped_in_the_middle_resumes_without_losing_or_repeating_a_verdict(tmp_path):
    config = study(tmp_path)
    request = RoundJudgeRequest("exp", card(config, "slot-a"))
    first_backend = FakeBackend(card(config, "slot-a"))
    found, progress = run(config, request, first_backend, stop=stop_after(config, "slot-a", 7))
    first = stored(config, "slot-a")
    assert found.state == "stopped" and progress["done"] == len(first) == 7
    counting = Copier(card(config, "slot-a"), set())
    found, progress = run(config, request, counting)
    assert found.state == "done" and progress["done"] == 2 * WRITERS * ROUNDS
    assert len(counting.asked) == 2 * WRITERS * ROUNDS - 7
    again = stored(config, "slot-a")
    keys = {(v["session_id"], v["round"], v["shown_order"]) for v in first}
    assert [v for v in again if (v["session_id"], v["round"], v["shown_order"]) in keys] == first


def test_a_judge_of_an_unknown_experiment_or_model_is_refused_with_a_sentence(tmp_path):
    config = study(tmp_path)
    result = cli_run(config, "judge-rounds", "nope", "--model", "slot-a")
    assert result.exit_code != 0 and "nope" in result.output and "Traceback" not in result.output
    result = cli_run(config, "judge-rounds", "exp", "--model", "ghost")
    assert result.exit_code != 0 and "Unknown model card" in result.output


@pytest.mark.parametrize(
    ("template", "sentence"),
    [
        (b"{story:d}\nA: {a}\nB: {b}", "The template writes {story:d}: write its"),
        (b"{story!x}\nA: {a}\nB: {b}", "The template writes {story!x}: write its"),
        ("{story}\nA: {a}\nB: {b} \u2014 choose".encode("cp1252"), "is not UTF-8 text (byte 0x97"),
    ],
    ids=["format-spec", "conversion", "not-utf-8"],
)  # fmt: skip
def test_a_template_that_cannot_be_filled_is_refused_with_a_sentence_before_any_verdict(
    tmp_path, template, sentence
):
    config = study(tmp_path)
    path = tmp_path / "template.txt"
    path.write_bytes(template)
    result = cli_run(config, "judge-rounds", "exp", "--model", "slot-a", "--template", str(path))
    assert result.exit_code == 1, result.output
    assert sentence in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert stored(config, "slot-a") == []


def test_the_results_page_shows_each_judge_against_the_writers(app, researcher):
    writer = Writer(app, "?pid=w1")
    for n in range(1, 4):
        writer.write_round(n, slot=1)
    judge_card = replace(load_model_cards(Path(app.config["MODELS_DIR"]))["fake-a"],
                         options={"answers": ["A", "B"]})  # fmt: skip
    db = store.connect(app.config["DATABASE"])
    try:
        judge_rounds(db, RoundJudgeRequest("fake-ab", judge_card, "reader"),
                     FakeBackend(judge_card), "test/1/1/x", log=lambda _: None)  # fmt: skip
    finally:
        db.close()
    results = researcher.analysed("/research/experiments/fake-ab/results.json")
    (table,) = [t for t in results["tables"] if t["key"].startswith("judges-")]
    assert table["title"].startswith("Judges of the writers' choices")
    (row,) = table["rows"]
    assert row[0] == "reader (fake-a)" and row[2] == "6 (0 unread)"
    assert "writer-clustered bootstrap" in table["notes"][0]
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    assert "Judges of the writers&#39; choices" in page
