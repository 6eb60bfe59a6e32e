"""A small FEI study end to end: stories and their shuffled copies (corrupted controls, FEI
§5) read by raters over HTTP, answered, and analysed: readers agree about coherent stories
and disagree about shuffled ones, so the corrupted source gets the higher entropy."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from cyoa.cli import cli
from tests.rating.test_rating_journey import Rater, rows

pytestmark = pytest.mark.both_databases

STORIES = [
    {
        "story_id": f"s{n}",
        "source": "model",
        "title": f"Story {n}",
        "text": f"Mara found a key in the snow near house {n}. She carried it home. "
        "She tried it in every door. The cellar door opened. Inside was her father's old "
        "radio. She turned it on and heard her own voice.",
    }
    for n in (1, 2)
]
QUESTIONS = [
    {"story_id": f"s{n}", "question_id": f"q{n}{k}", "kind": kind, "text": text}
    for n in (1, 2)
    for k, (kind, text) in enumerate(
        [
            ("transitional", "Mara found the key before she opened the cellar."),
            ("transitional", "The radio was found after a door opened."),
            ("world", "It is winter in the story."),
        ]
    )
]


def test_corrupted_stories_get_the_higher_entropy(app, tmp_path):
    (tmp_path / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in STORIES))
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    spec = {
        "id": "aiss-pilot",  # the journey helpers' experiment id
        "title": "Coherence probes",
        "kind": "rating",
        "instrument": "fei",
        "raters_per_story": 3,
        "stories_per_rater": 2,
        "consent": "You will read two short stories.",
        "instructions": "Answer each statement with true or false.",
        "stories": {"file": "stories.jsonl"},
        "questions": {"file": "questions.jsonl"},
        "corrupt": [{"operation": "shuffle_sentences", "seed": 3}],
    }
    (tmp_path / "fei.json").write_text(json.dumps(spec))
    runner = CliRunner()
    base = ["--db", app.config["DATABASE"]]
    created = runner.invoke(cli, [*base, "experiment", "create", str(tmp_path / "fei.json")])
    assert created.exit_code == 0, created.output
    assert "with 4 stories" in created.output
    runner.invoke(cli, [*base, "experiment", "open", "aiss-pilot"])
    copies = {
        row["story_id"]
        for row in rows(app, "SELECT story_id FROM stories WHERE family IS NOT NULL")
    }
    assert copies == {"s1-shuffled", "s2-shuffled"}

    guess = random.Random(7)
    for n in range(6):
        rater = Rater(app, f"?pid=reader{n}")
        assert rater.start().status_code == 302
        while True:
            _, state = rater.state()
            task = state.current
            if task is None:
                break
            for item in task.questions:
                # Coherent stories: every reader reads the same facts. Shuffled ones: readers
                # cannot tell what happened in which order, and answer as they guess.
                value = guess.choice(["true", "false"]) if task.story_id in copies else "true"
                reply = rater.act(
                    "answer_given", {"story": task.story_id, "item": item, "value": value}
                )
                assert reply.get_json()["ok"], reply.get_json()
            finished = rater.act("story_finished", {"story": task.story_id}).get_json()
            assert finished["ok"], finished
            rater.page()
    # Never two copies of one story for one rater.
    pairs = rows(app, "SELECT a.rater_id, s.family, s.story_id FROM assignments a JOIN stories s"
                 " ON s.story_id = a.story_id AND s.experiment_id = a.experiment_id")  # fmt: skip
    families = {}
    for pair in pairs:
        family = pair["family"] or pair["story_id"]
        assert (pair["rater_id"], family) not in families
        families[pair["rater_id"], family] = pair["story_id"]
    counts = rows(app, "SELECT story_id, count(*) AS n FROM assignments GROUP BY story_id")
    assert {row["n"] for row in counts} == {3}

    analysis = runner.invoke(cli, [*base, "analyze", "aiss-pilot", "--format", "json"])
    assert analysis.exit_code == 0, analysis.output
    fei = json.loads(analysis.output)["all_raters"]["fei"]
    means = {(s["index"], s["source"]): s["mean"]["mean"] for s in fei["summaries"]}
    for index in ("ETC", "EWC"):
        assert means[index, "model (shuffled)"] > means[index, "model"] == 0
    # Each shuffled copy is paired with its own original, not tested as a second source.
    paired = {(p["index"], p["copies"], p["originals"]): p for p in fei["paired"]}
    assert set(paired) == {
        ("ETC", "model (shuffled)", "model"),
        ("EWC", "model (shuffled)", "model"),
    }
    assert all(p["pairs"] == 2 and p["mean_difference"] > 0 for p in paired.values())
    assert fei["tests"] == []
    markdown = runner.invoke(cli, [*base, "analyze", "aiss-pilot"]).output
    assert "Corrupted copies against their originals" in markdown
    plan = runner.invoke(cli, [*base, "plan", "aiss-pilot"])
    assert plan.exit_code == 0, plan.output
    assert "readers per question" in plan.output.lower()
    assert "model (shuffled)" in plan.output and "Traceback" not in plan.output
    assert "plan at least 4 stories per source" in plan.output
    # The pilot is planned as FEI, so FEI's own assumptions are taken for it.
    typed = runner.invoke(cli, [*base, "plan", "aiss-pilot", "--assume", "questions=5"])
    assert typed.exit_code == 0, typed.output
    assert "readers per question" in typed.output.lower()
