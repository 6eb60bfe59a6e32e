"""A served model samples as its card says: the ``openai`` backend sends every sampling
setting the app means, neutral ones included, and a server that refuses one or replaces it
is said in a sentence at ``try-model`` and on the researcher's Models page (against the
hostile test server, bench/hostile_server.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import Researcher, write_setup

from bench.hostile_server import HostileServer
from cyoa import create_app
from cyoa.cli import cli
from cyoa.generation import load_model_card
from cyoa.generation.openai_backend import OpenAIBackend
from cyoa.web.parts import shared as shared_parts

CARD = """
name = "remote"
display_name = "A served model"
backend = "openai"
version = "hostile-1"

[sampling]
top_k = 40
top_p = 0.9
temperature = 0.8
max_new_tokens = 20

[options]
base_url = "{url}"
model = "judge"
wait_seconds = 1
timeout_seconds = 5
deadline_seconds = 10
"""
STORY = "The lighthouse keeper found a letter on the rocks."


@pytest.fixture(scope="module")
def hostile():
    server = HostileServer()
    yield server
    server.stop()


def remote_card(folder: Path, url: str) -> Path:
    path = folder / "remote.toml"
    path.write_text(CARD.format(url=url))
    return path


def test_a_server_that_samples_with_what_it_was_sent_raises_nothing(hostile, tmp_path):
    card = load_model_card(remote_card(tmp_path, hostile.base_url("ok")))
    assert OpenAIBackend(card).check_sampling(card.sampling, STORY) == []
    sent = hostile.of_mode("ok")[-1]["body"]
    assert {k: sent[k] for k in ("top_k", "top_p", "temperature", "max_tokens")} == {
        "top_k": 40, "top_p": 0.9, "temperature": 0.8, "max_tokens": 20,
    }  # fmt: skip
    assert sent["min_p"] == 0.0 and sent["repeat_penalty"] == 1.0


def test_a_server_whose_reply_shows_its_own_defaults_is_named_with_each_setting(hostile, tmp_path):
    url = hostile.base_url("drops-min-p")
    card = load_model_card(remote_card(tmp_path, url))
    problems = OpenAIBackend(card).check_sampling(card.sampling, STORY)
    assert problems == [
        f"The model server at {url} sampled with min_p = 0.05 where model card 'remote' sent "
        "min_p = 0.0: it does not sample as the card says.",
        f"The model server at {url} sampled with repeat_penalty = 1.1 where model card "
        "'remote' sent repeat_penalty = 1.0: it does not sample as the card says.",
    ]


def test_a_server_that_refuses_a_setting_says_which_and_how_to_leave_it_out(hostile, tmp_path):
    url = hostile.base_url("rejects-top-k")
    card = load_model_card(remote_card(tmp_path, url))
    [problem] = OpenAIBackend(card).check_sampling(card.sampling, STORY)
    assert problem.startswith(f"The model server at {url}/v1/completions refused the setting top_k")
    assert "Unrecognized request argument supplied: top_k" in problem
    assert "options.send_top_k = false" in problem


def try_model(tmp_path: Path, card: Path):
    env = {"CYOA_MODELS_DIR": str(tmp_path), "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    args = ["--db", str(tmp_path / "cyoa.sqlite"), "try-model", str(card), "--n", "1"]
    return CliRunner().invoke(cli, args, env=env)


def test_try_model_says_that_a_server_does_not_sample_as_the_card_says(hostile, tmp_path):
    result = try_model(tmp_path, remote_card(tmp_path, hostile.base_url("drops-min-p")))
    assert result.exit_code == 0, result.output
    assert "Sampling: The model server at" in result.output
    assert "sampled with min_p = 0.05 where model card 'remote' sent min_p = 0.0" in result.output
    assert "Yes, the ending is earned." in result.output


def test_try_model_on_a_server_that_refuses_a_setting_names_it_and_exits_1(hostile, tmp_path):
    result = try_model(tmp_path, remote_card(tmp_path, hostile.base_url("rejects-top-k")))
    assert result.exit_code == 1, result.output
    assert "Sampling: The model server at" in result.output
    assert "refused the setting top_k" in result.output
    assert "Traceback" not in result.output


def test_the_models_page_says_that_a_server_does_not_sample_as_the_card_says(hostile, tmp_path):
    config = write_setup(tmp_path)
    remote_card(Path(config["MODELS_DIR"]), hostile.base_url("drops-min-p"))
    app = create_app(config)
    researcher = Researcher(app)
    assert researcher.login().status_code == 302
    researcher.get("/research/models/")  # reads the new card
    researcher.post("/research/models/remote/load")
    deadline = time.monotonic() + 30
    while shared_parts(app).pool.status()["remote"]["state"] != "ready":
        assert time.monotonic() < deadline, shared_parts(app).pool.status()["remote"]
        time.sleep(0.05)
    response = researcher.post("/research/models/remote/try", {"story": STORY})
    page = response.get_data(as_text=True)
    assert response.status_code == 200
    assert 'class="notice error sampling-problem"' in page
    assert "sampled with min_p = 0.05 where model card &#39;remote&#39; sent min_p = 0.0" in page
    assert page.count('<blockquote class="suggestion">') == 3


def test_try_model_on_a_server_that_sends_no_completion_says_so_after_one_request(
    hostile, tmp_path
):
    result = try_model(tmp_path, remote_card(tmp_path, hostile.base_url("html~try")))
    assert result.exit_code == 1, result.output
    assert "answered with an HTML page, not a completion" in result.output
    assert "Traceback" not in result.output
    assert len(hostile.of_mode("html~try")) == 1  # the check, not three draws more
