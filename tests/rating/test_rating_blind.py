"""Raters stay blind: nothing a rater's page shows or sends names a story's source, model or
corruption; the researcher's ids stay in the database."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from cyoa.cli import cli
from tests.rating.test_rating_journey import Rater, rows

SOURCES = ("gemma-3-270m", "smollm2-135m")
TEXT = (
    "The keeper climbed the stairs. The lamp was cold. A ship called from the rocks. "
    "He lit the wick. The light swept the sea. The ship turned away."
)


@pytest.fixture
def fei_study(app, tmp_path):
    """An FEI study of two generated stories (ids naming their models) and their shuffled
    copies, created and opened as a researcher would."""
    stories = [
        {"story_id": f"{source}-p2-1", "source": source, "title": "", "text": TEXT}
        for source in SOURCES
    ]
    questions = [
        {"story_id": f"{source}-p2-1", "question_id": "q1", "kind": "world", "text": "Night?"}
        for source in SOURCES
    ]
    (tmp_path / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in stories))
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    spec = {
        "id": "aiss-pilot", "title": "Short stories", "kind": "rating", "instrument": "fei",
        "raters_per_story": 1, "stories_per_rater": 2, "consent": "You will read stories.",
        "instructions": "Answer each question.", "stories": {"file": "stories.jsonl"},
        "questions": {"file": "questions.jsonl"},
        "corrupt": [{"operation": "shuffle_sentences", "seed": 1, "fraction": 1.0}],
        "attention_checks": [{"id": "qc-night", "kind": "yes_no", "answer": "yes",
                              "text": "Please answer yes."}],
    }  # fmt: skip
    (tmp_path / "rating.json").write_text(json.dumps(spec))
    runner = CliRunner()
    base = ["--db", app.config["DATABASE"]]
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    for args in (["experiment", "create", str(tmp_path / "rating.json")],
                 ["experiment", "open", "aiss-pilot"]):  # fmt: skip
        result = runner.invoke(cli, [*base, *args], env=env)
        assert result.exit_code == 0, result.output
    return app


def revealing(text: str) -> list[str]:
    """The model names, story ids and corruption words found in ``text``."""
    words = [*SOURCES, "shuffle", "p2-1"]
    return [word for word in words if word in text]


def answer_both_stories(rater: Rater) -> None:
    """Answer the rater's two stories from what their pages show, checking that nothing shown
    or sent names a model or a corruption."""
    for _ in range(2):
        page = rater.page()
        assert revealing(page) == []
        story = re.search(r'<form[^>]*data-story="([^"]+)"', page, re.S)[1]
        items = re.findall(r'data-item="([^"]+)"', page)
        assert len(items) == 2  # the story's question and the check
        for item in items:
            body = {"story": story, "item": item, "value": "1"}
            assert revealing(json.dumps(body)) == []
            reply = rater.client.post(
                "/r/aiss-pilot/action",
                json={"action_id": f"{story}{item}", "type": "answer_given", "payload": body},
                headers={"X-CYOA-Action": "1"},
            )
            assert reply.get_json() == {"ok": True, "duplicate": False}
            assert revealing(reply.get_data(as_text=True)) == []
        done = rater.client.post(
            "/r/aiss-pilot/action",
            json={"action_id": f"{story}-done", "type": "story_finished",
                  "payload": {"story": story}},
            headers={"X-CYOA-Action": "1"},
        )  # fmt: skip
        assert done.get_json()["ok"] is True


def test_a_raters_pages_and_answers_name_no_model_and_no_corruption(fei_study):
    stored = {row["story_id"] for row in rows(fei_study, "SELECT story_id FROM stories")}
    assert any(story.endswith("shuffled") for story in stored)  # the ids do name them
    for n in range(2):  # a rater reads one story of each family
        rater = Rater(fei_study, f"?pid=r{n}")
        rater.start()
        answer_both_stories(rater)
    judged = rows(fei_study, "SELECT story_id, item_id FROM judgements ORDER BY story_id")
    assert {row["story_id"] for row in judged} == stored  # kept under the researcher's ids
    assert {row["item_id"] for row in judged} == {
        "q1@gemma-3-270m-p2-1",
        "q1@smollm2-135m-p2-1",
        "q1@gemma-3-270m-p2-1@gemma-3-270m-p2-1-shuffled",
        "q1@smollm2-135m-p2-1@smollm2-135m-p2-1-shuffled",
    }


def test_each_story_has_its_own_alias_and_a_copy_of_the_study_new_ones(fei_study, researcher):
    aliases = rows(fei_study, "SELECT alias FROM stories WHERE experiment_id = 'aiss-pilot'")
    assert len({row["alias"] for row in aliases}) == 4 and all(r["alias"] for r in aliases)
    reply = researcher.post("/research/ratings/aiss-pilot/clone", data={"new_id": "copy"})
    assert reply.status_code == 302, reply.get_data(as_text=True)
    copied = rows(fei_study, "SELECT alias FROM stories WHERE experiment_id = 'copy'")
    assert len(copied) == 4
    assert not {row["alias"] for row in copied} & {row["alias"] for row in aliases}


def test_a_story_alias_that_names_no_story_is_refused(fei_study):
    rater = Rater(fei_study)
    rater.start()
    _, state = rater.state()
    reply = rater.client.post(
        "/r/aiss-pilot/action",
        json={"action_id": "x", "type": "story_finished",
              "payload": {"story": state.current.story_id}},
        headers={"X-CYOA-Action": "1"},
    )  # fmt: skip
    assert reply.status_code == 409 and "not the one to rate now" in reply.get_json()["error"]
