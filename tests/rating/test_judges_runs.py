"""Judge runs: a model card answers a rating study's instrument, one prompt per story × item
built from the instrument, each verdict stored as it comes (unparsed ones counted, the
response kept as rationale), resumable without losing or repeating a verdict, from the
command line (``python -m cyoa judge``). Fast tests use the fake backend; the packaged models
run a small TTCW study end to end under the ``real_model`` marker."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FAKE_CARD

from cyoa import store
from cyoa.cli import cli
from cyoa.generation import load_model_cards
from cyoa.generation.fake import FakeBackend
from cyoa.rating import store as rating_store
from cyoa.rating.instruments import AISS_V1, TTCW, FeiQuestion, fei_instrument
from cyoa.rating.instruments.ttcw import released_prompts
from cyoa.rating.judges.estimate import Speed, estimate, tokens
from cyoa.rating.judges.prompts import (
    TEMPLATES,
    PromptError,
    judge_prompts,
    parse_answer,
    templates_for,
)
from cyoa.rating.judges.runs import (
    RunRequest,
    judge_experiment,
    run_status,
    stored_run,
    story_prompts,
    verdict_seed,
)
from tests.paths import ROOT

STORIES = [
    ("s1", "GPT4", "The keeper found a letter on the rocks. It was addressed to her mother."),
    ("s2", "Human", "Nobody had seen the sun for a week. Then the gulls came back, all at once."),
    ("s3", "GPT4", "The train stopped in a field of snow. The driver got out and walked away."),
]


# --- prompts ------------------------------------------------------------------------------


def test_a_ttcw_prompt_is_the_story_then_the_test_s_released_prompt_then_the_answer_format():
    prompts = judge_prompts(TTCW, {"s1": STORIES[0][2]}, templates_for(TTCW))
    assert [p.item_id for p in prompts] == [str(n) for n in range(1, 15)]
    sensory = prompts[12].text
    assert sensory.startswith(STORIES[0][2] + "\n\n" + released_prompts()["13"])
    assert "list out the elements in the story that call to each of the five senses" in sensory
    assert sensory.endswith(
        "Begin your answer with 'Yes' or 'No', then give your reasoning.\nAnswer:"
    )


def test_likert_prompts_list_the_scale_and_fei_probes_are_asked_of_their_own_story_only():
    likert = judge_prompts(AISS_V1, {"s1": "A story."}, templates_for(AISS_V1))[0].text
    item = AISS_V1.items[0]
    assert f"Statement: {item.text}" in likert
    assert "\n".join(f"{n} = {label}" for n, label in enumerate(item.labels, 1)) in likert
    fei = fei_instrument([FeiQuestion("s1", "q1", "world", "The keeper is a woman."),
                          FeiQuestion("s2", "q2", "world", "The gulls left.")])  # fmt: skip
    prompts = judge_prompts(fei, {"s1": "One.", "s2": "Two."}, templates_for(fei))
    assert [(p.story_id, p.item_id) for p in prompts] == [("s1", "q1"), ("s2", "q2")]
    assert "Statement: The gulls left." in prompts[1].text


def test_answers_are_read_from_their_start_and_anything_else_is_unparsed():
    yes_no, likert = TTCW.items[0], AISS_V1.items[0]
    fei = fei_instrument([FeiQuestion("s1", "q1", "world", "It rains.")]).items[0]
    assert parse_answer(yes_no, " Yes, the ending is earned.") == 1.0
    assert parse_answer(yes_no, "no. It stops.") == 0.0
    assert parse_answer(yes_no, "The ending is earned, so yes.") is None
    assert parse_answer(fei, "False: it snows.") == 0.0 and parse_answer(fei, "Yes") is None
    points = likert.points
    assert parse_answer(likert, f"{points} - strongly") == float(points)
    assert parse_answer(likert, "3.5 because") is None
    assert parse_answer(likert, f"{points + 1}") is None and parse_answer(likert, "Four") is None


def test_a_template_without_the_story_or_with_an_unknown_placeholder_is_refused():
    with pytest.raises(PromptError, match=r"must contain \{story\}"):
        templates_for(TTCW, {"ttcw": "{full_prompt}\nAnswer:"})
    with pytest.raises(PromptError, match=r"\{rubric\}"):
        templates_for(TTCW, {"ttcw": "{story} {full_prompt} {rubric}"})
    with pytest.raises(PromptError, match=r"writes \{story:d\}: write its placeholders plainly"):
        templates_for(TTCW, {"ttcw": "{story:d} {full_prompt}"})
    with pytest.raises(PromptError, match=r"writes \{question!r\}"):
        templates_for(AISS_V1, {"likert": "{story} {question!r}"})
    with pytest.raises(PromptError, match="has no such items"):
        templates_for(TTCW, {"likert": TEMPLATES["likert"]})
    braces = "{story} {full_prompt} {{literal}}"
    assert templates_for(TTCW, {"ttcw": braces}) == {"ttcw": braces}


def test_the_estimate_counts_tokens_and_shares_the_time_between_concurrent_prompts():
    prompts = ["x" * 400, "y" * 801]  # 100 and 201 tokens at four characters a token
    assert [tokens(p) for p in prompts] == [100, 201]
    guess = estimate(prompts, 50, Speed(read_seconds=0.01, write_seconds=0.1), concurrency=2)
    # (100 × 0.01 + 50 × 0.1) + (201 × 0.01 + 50 × 0.1) = 6 + 7.01, over 2 at once.
    assert guess.prompt_tokens == 301 and guess.output_tokens == 100
    assert guess.seconds == pytest.approx(6.505)
    assert "the time is not known yet" in estimate(prompts, 50, None).sentence()


# --- runs with the fake backend -----------------------------------------------------------


def ttcw_study(
    tmp_path: Path, answers: str = '["Yes", "No"]', database: str | None = None
) -> dict[str, str]:
    """A TTCW experiment 'tiny' (three stories, tests 1 and 13, three experts), and fake
    model cards: 'judge-a' answers Yes or No, 'mumbler' never does."""
    models = tmp_path / "models"
    models.mkdir()
    (models / "judge-a.toml").write_text(
        FAKE_CARD.format(name="judge-a", options=f"answers = {answers}")
    )
    (models / "mumbler.toml").write_text(FAKE_CARD.format(name="mumbler", options=""))
    rows = ["story_id,source,rater_id,item,value"]
    for n, (story, source, _) in enumerate(STORIES):
        for rater in ("e1", "e2", "e3"):
            for test in ("1", "13"):
                rows.append(
                    f"{story},{source},{rater},{test},{'Yes' if (n + len(rater)) % 2 else 'No'}"
                )
    (tmp_path / "experts.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "stories.jsonl").write_text(
        "".join(json.dumps({"story_id": s, "source": src, "title": "", "text": t}) + "\n"
                for s, src, t in STORIES)
    )  # fmt: skip
    config = {"db": database or str(tmp_path / "cyoa.sqlite"), "models": str(models)}
    result = cli_run(
        config, "import-ratings", str(tmp_path / "experts.csv"), "--format", "long",
        "--instrument", "ttcw", "--name", "tiny", "--stories", str(tmp_path / "stories.jsonl"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return config


def cli_run(config: dict[str, str], *args: str):
    env = {"CYOA_MODELS_DIR": config["models"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    return CliRunner().invoke(cli, ["--db", config["db"], *args], env=env)


def verdicts(config: dict[str, str], judge: str) -> list[dict]:
    db = store.connect(config["db"])
    try:
        return list(
            db.query(
                "SELECT story_id, item_id, value, rationale, recorded_at FROM judgements"
                " WHERE experiment_id = 'tiny' AND rater_id = ? ORDER BY story_id, item_id",
                [judge],
            )
        )
    finally:
        db.close()


def stop_after(config: dict[str, str], judge: str, stored: int):
    """A ``stop`` that says stop once ``judge`` has ``stored`` verdicts (it is asked before
    each prompt and while one is answered)."""
    return lambda: len(verdicts(config, judge)) >= stored


def card(config: dict[str, str], name: str):
    return load_model_cards(Path(config["models"]))[name]


def judge(config, request: RunRequest, backend=None, stop=lambda: False):
    db = store.connect(config["db"])
    try:
        backend = backend or FakeBackend(request.card)
        run = judge_experiment(db, request, backend, "test/1/1/x", stop=stop, log=lambda _: None)
        return run, run_status(db, run)
    finally:
        db.close()


def test_a_run_stores_one_verdict_per_story_and_item_with_the_response_as_rationale(tmp_path):
    config = ttcw_study(tmp_path)
    run, status = judge(config, RunRequest("tiny", card(config, "judge-a"), items=("1", "13")))
    stored = verdicts(config, "judge-a")
    assert run.state == "done" and status["done"] == status["total"] == 6
    assert [(v["story_id"], v["item_id"]) for v in stored] == [
        (s, i) for s in ("s1", "s2", "s3") for i in ("1", "13")
    ]
    for verdict in stored:
        assert verdict["rationale"].split(",")[0] in ("Yes", "No")
        assert verdict["value"] == (1.0 if verdict["rationale"].startswith("Yes") else 0.0)
    assert status["unparsed"] == 0 and status["sampling"]["max_new_tokens"] == 256
    assert status["templates"] == {"ttcw": TEMPLATES["ttcw"]}


@pytest.mark.both_databases
def test_a_run_takes_the_stories_in_the_order_they_were_stored_not_by_their_ids(tmp_path, database):
    config = ttcw_study(tmp_path, database=database)
    db = store.connect(config["db"])
    try:
        first = store.get_experiment(db, "tiny")
        spec = {**json.loads(first["spec"]), "id": "reordered"}
        stories = [
            {"story_id": story, "source": source, "title": "", "text": text}
            for story, source, text in reversed(STORIES)
        ]
        items = [
            {k: v for k, v in row.items() if k != "experiment_id"}
            for row in db.query("SELECT * FROM instrument_items WHERE experiment_id = 'tiny'")
        ]
        instrument = db.query("SELECT * FROM instruments WHERE experiment_id = 'tiny'")
        rating_store.create_rating_experiment(
            db, "reordered", "Reordered", spec, instrument=next(instrument),
            items=items, stories=stories, raters=[], judgements=[],
        )  # fmt: skip
        prompts = story_prompts(db, "reordered", TTCW, TEMPLATES, 2, ("1",))
    finally:
        db.close()
    assert [prompt.story_id for prompt in prompts] == ["s3", "s2"]


def test_answers_that_cannot_be_read_are_stored_without_a_value_and_counted(tmp_path):
    config = ttcw_study(tmp_path)
    run, status = judge(config, RunRequest("tiny", card(config, "mumbler"), items=("1",)))
    assert run.state == "done" and status["unparsed"] == 3
    assert all(v["value"] is None and v["rationale"] for v in verdicts(config, "mumbler"))


def test_a_run_stopped_in_the_middle_resumes_without_losing_or_repeating_a_verdict(tmp_path):
    config = ttcw_study(tmp_path)
    request = RunRequest("tiny", card(config, "judge-a"), items=("1", "13"))
    run, status = judge(config, request, stop=stop_after(config, "judge-a", 4))
    first = verdicts(config, "judge-a")
    assert run.state == "stopped" and status["done"] == len(first) == 4
    run, status = judge(config, request)
    assert run.state == "done" and status["done"] == 6
    again = verdicts(config, "judge-a")
    assert [v for v in again if (v["story_id"], v["item_id"]) in
            {(f["story_id"], f["item_id"]) for f in first}] == first  # fmt: skip
    whole, _ = judge(config, RunRequest("tiny", card(config, "judge-a"), judge="fresh",
                                        items=("1", "13")))  # fmt: skip
    assert [v["value"] for v in verdicts(config, "fresh")] == [v["value"] for v in again]


class FailsOnce(FakeBackend):
    """A fake whose third prompt fails, as a server going away does."""

    def stream(self, prompt, sampling, seed):
        if self._streams == 2:
            self._streams += 1
            raise RuntimeError("the server went away")
        return super().stream(prompt, sampling, seed)


def test_a_run_whose_model_fails_keeps_its_verdicts_says_why_and_resumes(tmp_path):
    config = ttcw_study(tmp_path)
    request = RunRequest("tiny", card(config, "judge-a"), items=("1", "13"))
    # The warm-up is the first stream; the third fails.
    run, status = judge(config, request, backend=FailsOnce(request.card))
    assert run.state == "failed" and status["done"] == 1
    assert "the server went away" in run.error and "start the run again" in run.error
    run, status = judge(config, request)
    assert run.state == "done" and status["done"] == 6


def test_a_run_whose_process_died_is_interrupted_and_resumes_where_it_was(tmp_path):
    config = ttcw_study(tmp_path)
    request = RunRequest("tiny", card(config, "judge-a"), items=("1", "13"))
    judge(config, request, stop=lambda: True)
    db = store.connect(config["db"])
    try:
        gone = f"{socket.gethostname()}/999999999/1/ab"  # no process has that id
        db.execute("UPDATE judge_runs SET state = 'running', worker = ?", [gone])
        assert stored_run(db, "tiny", "judge-a").state == "interrupted"
    finally:
        db.close()
    run, status = judge(config, request)
    assert run.state == "done" and status["done"] == 6


def test_a_verdict_s_seed_is_its_story_and_item_s_whatever_the_concurrency(tmp_path):
    assert verdict_seed(0, "s1", "1") != verdict_seed(0, "s1", "13") != verdict_seed(1, "s1", "1")
    config = ttcw_study(tmp_path)
    judge(config, RunRequest("tiny", card(config, "judge-a"), judge="one", items=("1", "13")))
    run, _ = judge(config, RunRequest("tiny", card(config, "judge-a"), judge="four",
                                      items=("1", "13"), concurrency=4))  # fmt: skip
    assert run.concurrency == 4
    one, four = verdicts(config, "one"), verdicts(config, "four")
    assert [v["rationale"] for v in one] == [v["rationale"] for v in four]


# --- the command line ---------------------------------------------------------------------


def test_the_judge_command_runs_a_judge_that_analyze_calibrates(tmp_path):
    config = ttcw_study(tmp_path)
    result = cli_run(config, "judge", "tiny", "--model", "judge-a", "--items", "1,13")
    assert result.exit_code == 0, result.output
    assert "6 prompts: about" in result.output
    assert "Judge 'judge-a' of 'tiny': done, 6/6 verdicts, 0 unparsed" in result.output
    analysis = cli_run(config, "analyze", "tiny", "--format", "json")
    assert analysis.exit_code == 0, analysis.output
    judges = json.loads(analysis.output)["judges"]
    assert [j["judge"] for j in judges] == ["judge-a"]
    db = store.connect(config["db"])
    try:
        spec = json.loads(store.get_experiment(db, "tiny")["spec"])
    finally:
        db.close()
    origin = spec["judges"]["judge-a"]
    assert origin["format"] == "run" and origin["model_version"] == "fake-1"
    assert origin["templates"]["ttcw"] == TEMPLATES["ttcw"] and origin["seed"] == 0


def test_the_estimate_alone_stores_nothing(tmp_path):
    config = ttcw_study(tmp_path)
    result = cli_run(config, "judge", "tiny", "--model", "judge-a", "--limit", "2", "--estimate")
    assert result.exit_code == 0, result.output
    assert "28 prompts" in result.output and "at a measured warm-up" in result.output
    assert verdicts(config, "judge-a") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["judge", "nope", "--model", "judge-a"], "There is no rating experiment 'nope'"),
        (["judge", "tiny", "--model", "gpt-9"], "Unknown model card 'gpt-9'"),
        (["judge", "tiny", "--model", "judge-a", "--judge", "e1"], "already has a judge or rater"),
        (["judge", "tiny", "--model", "judge-a", "--judge", "human"], "names the study's raters"),
        (["judge", "tiny", "--model", "judge-a", "--items", "99"], "has no item '99'"),
    ],
)
def test_a_judge_that_cannot_run_is_refused_with_a_sentence(tmp_path, args, message):
    config = ttcw_study(tmp_path)
    result = cli_run(config, *args)
    assert result.exit_code == 1 and message in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize(
    ("templates", "sentence"),
    [
        (b'{"ttcw": "{story:d} {full_prompt}"}', "The ttcw template writes {story:d}: write its"),
        (b'{"ttcw": "{story!x} {full_prompt}"}', "The ttcw template writes {story!x}: write its"),
        ('{"ttcw": "{story} {full_prompt} \u2014"}'.encode("cp1252"),
         "is not UTF-8 text (byte 0x97"),
        (b'{"ttcw": "{story}', "is not JSON"),
        (b'["{story}"]', "must be a JSON object of templates by kind"),
    ],
    ids=["format-spec", "conversion", "not-utf-8", "not-json", "not-an-object"],
)  # fmt: skip
def test_templates_that_cannot_be_filled_are_refused_with_a_sentence_before_any_verdict(
    tmp_path, templates, sentence
):
    config = ttcw_study(tmp_path)
    path = tmp_path / "templates.json"
    path.write_bytes(templates)
    result = cli_run(config, "judge", "tiny", "--model", "judge-a", "--templates", str(path))
    assert result.exit_code == 1, result.output
    assert sentence in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert verdicts(config, "judge-a") == []


# --- the packaged models ------------------------------------------------------------------


@pytest.mark.real_model
@pytest.mark.parametrize("name", ["smollm2-135m-instruct", "gemma-3-270m"])
def test_a_packaged_model_judges_a_small_ttcw_study_end_to_end_with_a_restart(tmp_path, name):
    from cyoa.generation.pool import make_backend

    config = ttcw_study(tmp_path)
    cache = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
    model = load_model_cards(ROOT / "models")[name]
    backend = make_backend(model, cache)
    backend.load(log=lambda _: None)
    # Two stories × two tests, short answers: the plumbing, not the quality.
    request = RunRequest("tiny", model, story_limit=2, items=("1", "13"), max_new_tokens=16)
    run, status = judge(config, request, backend, stop=stop_after(config, name, 2))
    assert run.state == "stopped" and status["done"] == 2
    run, status = judge(config, request, backend)
    assert run.state == "done" and status["done"] == status["total"] == 4
    stored = verdicts(config, name)
    # Each answer is stored as the model wrote it; a sampled answer may end at once (empty).
    assert len(stored) == 4 and all(isinstance(v["rationale"], str) for v in stored)
    assert any(v["rationale"] for v in stored)
    assert all(v["value"] in (0.0, 1.0, None) for v in stored)
    assert status["unparsed"] == sum(v["value"] is None for v in stored)
    assert status["estimate"]["prompts"] == 2 and status["seconds_per_verdict"] > 0
    analysis = cli_run(config, "analyze", "tiny", "--format", "json")
    assert analysis.exit_code == 0, analysis.output
    (calibration,) = json.loads(analysis.output)["judges"]
    assert calibration["judge"] == name
