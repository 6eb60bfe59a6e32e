"""Stories written by the systems from prompts: the same seeds for every system, each story
recorded with what reproduces it, and a file a rating study reads."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import PACKAGED_MODELS, STORY_PROMPT, write_setup

from cyoa.cli import cli
from cyoa.generation import System, load_model_cards
from cyoa.generation.fake import FakeBackend
from cyoa.rating.importing import stories_from_file
from cyoa.rating.stories.generate import generate_stories, sentence_seed
from tests.paths import ROOT

PROMPTS = ["The lighthouse keeper found a letter on the rocks.", "Nobody had seen the sun."]


def fake_systems(tmp_path):
    config = write_setup(tmp_path)
    cards = load_model_cards(tmp_path / "models")
    systems = [System(name, cards[name], cards[name].sampling) for name in ("fake-a", "fake-b")]
    return config, systems, {name: FakeBackend(cards[name]) for name in ("fake-a", "fake-b")}


def test_every_system_continues_every_prompt_with_the_same_seeds(tmp_path):
    _, systems, backends = fake_systems(tmp_path)
    told = []
    stories = generate_stories(
        systems, backends, PROMPTS, stories_per_prompt=2, sentences=3, seed=7, log=told.append
    )
    assert [s.story_id for s in stories][:4] == ["fake-a-p1-1", "fake-b-p1-1", "fake-a-p1-2",
                                                 "fake-b-p1-2"]  # fmt: skip
    assert len(stories) == 8 and told[-1] == "Generated 8/8 stories (fake-b, prompt 2)."
    by_id = {s.story_id: s for s in stories}
    a, b = by_id["fake-a-p2-1"], by_id["fake-b-p2-1"]
    assert a.origin["seeds"] == b.origin["seeds"]  # the systems differ only by model
    assert a.origin["seeds"][0] in {sentence_seed(7, 2, 1, 1, d) for d in range(5)}
    assert a.text.startswith(PROMPTS[1]) and a.origin["model"] == "fake-a"
    assert a.origin["sampling"]["top_k"] == systems[0].sampling.top_k
    again = generate_stories(systems, backends, PROMPTS, stories_per_prompt=2, sentences=3, seed=7,
                             log=lambda _: None)  # fmt: skip
    assert [s.text for s in again] == [s.text for s in stories]


def test_the_seed_of_a_draw_depends_on_its_place_and_the_study_seed():
    assert sentence_seed(0, 1, 1, 1, 0) == sentence_seed(0, 1, 1, 1, 0)
    seeds = {sentence_seed(0, p, n, s, d) for p in (1, 2) for n in (1, 2) for s in (1, 2)
             for d in (0, 1)}  # fmt: skip
    assert len(seeds) == 16 and all(0 <= seed < 2**31 for seed in seeds)
    assert sentence_seed(1, 1, 1, 1, 0) != sentence_seed(0, 1, 1, 1, 0)


def test_the_command_writes_a_story_file_a_rating_study_reads(tmp_path):
    config, _, _ = fake_systems(tmp_path)
    (tmp_path / "prompts.txt").write_text("\n".join(PROMPTS) + "\n\n")
    out = tmp_path / "stories.jsonl"
    env = {"CYOA_MODELS_DIR": config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    result = CliRunner().invoke(
        cli,
        ["--db", config["DATABASE"], "generate-stories", str(tmp_path / "prompts.txt"),
         "--model", "fake-a", "--model", "fake-b", "--sentences", "2", "--out", str(out)],
        env=env,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "Wrote 4 stories" in result.output
    stories = stories_from_file(out.read_text(), out.name)
    assert {s.source for s in stories} == {"fake-a", "fake-b"}
    first = json.loads(out.read_text().splitlines()[0])
    assert first["origin"]["model_version"] == "fake-1"


def test_an_unknown_model_is_named(tmp_path):
    config, _, _ = fake_systems(tmp_path)
    (tmp_path / "prompts.txt").write_text(PROMPTS[0])
    env = {"CYOA_MODELS_DIR": config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    result = CliRunner().invoke(
        cli,
        ["--db", config["DATABASE"], "generate-stories", str(tmp_path / "prompts.txt"),
         "--model", "gpt-9", "--out", str(tmp_path / "o.jsonl")],
        env=env,
    )  # fmt: skip
    assert result.exit_code != 0 and "Unknown model card(s) gpt-9" in result.output


@pytest.mark.real_model
def test_the_packaged_models_write_stories_from_the_same_prompt(packaged_stories):
    stories = [json.loads(line) for line in packaged_stories.read_text().splitlines()]
    cards = load_model_cards(ROOT / "models")
    assert [s["source"] for s in stories] == list(PACKAGED_MODELS)
    for story in stories:
        assert story["text"].startswith(STORY_PROMPT)
        assert len(story["text"]) > len(STORY_PROMPT) + 30
        assert story["origin"]["model_version"] == cards[story["source"]].version
