"""The ``openai`` backend against a real server process that speaks the OpenAI-compatible
completions protocol on localhost (tests/support/openai_server.py), serving the fake model
for the fast tests and the packaged SmolLM2 through transformers for the real one."""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from conftest import FAKE_CARD, Researcher, Writer, write_setup

from cyoa import create_app, store
from cyoa.generation import (
    ModelCardError,
    ModelPool,
    Sampling,
    System,
    generate_suggestion,
    load_model_card,
    load_model_cards,
)
from cyoa.generation.fake import FakeBackend
from cyoa.generation.openai_backend import ModelServerError, OpenAIBackend
from cyoa.web.parts import shared as shared_parts
from tests.paths import ROOT

SERVER = ROOT / "tests" / "support" / "openai_server.py"
EXAMPLE = ROOT / "models" / "examples" / "remote-llama-server.toml.example"
KEY_ENV = "CYOA_TEST_MODEL_SERVER_KEY"
STORY = ["The lighthouse keeper found a letter on the rocks."]

OPENAI_CARD = """
name = "{name}"
display_name = "{name}, served over HTTP"
backend = "openai"
version = "{version}"

[sampling]
top_k = 40
top_p = 0.9
temperature = 0.8
max_new_tokens = 40

[options]
base_url = "{url}"
model = "{model}"
{options}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ModelServer:
    """tests/support/openai_server.py in its own process, serving one model card."""

    def __init__(self, card: Path, tmp: Path, api_key_env: str = "", cache: Path | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tmp / f"model-server-{self.port}.log"
        command = [sys.executable, str(SERVER), "--card", str(card), "--port", str(self.port)]
        if api_key_env:
            command += ["--api-key-env", api_key_env]
        if cache is not None:
            command += ["--cache", str(cache)]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=log)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail("the model server exited: " + self.log.read_text())
            try:
                requests.get(f"{self.url}/test/requests", timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        self.stop()
        pytest.fail("the model server did not start: " + self.log.read_text())

    def requests(self) -> list[dict]:
        return requests.get(f"{self.url}/test/requests", timeout=5).json()["requests"]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def fake_server(tmp_path_factory):
    """The fake model "fake-a" (0.05 s per word) served over HTTP, behind an API key."""
    tmp = tmp_path_factory.mktemp("served")
    card = tmp / "fake-a.toml"
    card.write_text(FAKE_CARD.format(name="fake-a", options="delay_seconds = 0.05"))
    os.environ[KEY_ENV] = "sk-test-secret"
    server = ModelServer(card, tmp, api_key_env=KEY_ENV)
    yield server
    server.stop()
    os.environ.pop(KEY_ENV, None)


def remote_card(
    tmp_path: Path, url: str, name: str = "fake-a", model: str = "fake-a", options: str = ""
) -> Path:
    path = tmp_path / f"{name}.toml"
    key = f'api_key_env = "{KEY_ENV}"'
    text = OPENAI_CARD.format(
        name=name, url=url, model=model, version="fake-1", options=options or key
    )
    path.write_text(text)
    return path


def system_for(card) -> System:
    return System(f"{card.name}-remote", card, card.sampling)


def test_a_remote_suggestion_streams_piece_by_piece_and_matches_the_served_model(
    fake_server, tmp_path
):
    card = load_model_card(remote_card(tmp_path, fake_server.url))
    backend = OpenAIBackend(card)
    backend.load(log=lambda message: None)
    shown: list[str] = []
    suggestion = generate_suggestion(
        backend, system_for(card), STORY, seed=11, on_text=shown.append
    )

    # The same model run in-process with the same prompt, sampling and seed.
    local = FakeBackend(load_model_card(remote_card(tmp_path, fake_server.url)))
    expected = "".join(local.stream(STORY[0], card.sampling, 11)).strip()
    assert suggestion.text == expected
    assert len(shown) > 3 and shown[-1] == suggestion.text
    assert all(b.startswith(a) for a, b in itertools.pairwise(shown))
    assert suggestion.token_count == len(expected.split())
    assert suggestion.first_token_seconds < suggestion.generation_seconds
    assert suggestion.model == "fake-a" and suggestion.model_version == "fake-1"
    sent = fake_server.requests()[-1]["body"]
    assert sent == {
        "model": "fake-a",
        "prompt": STORY[0],
        "max_tokens": 40,
        "temperature": 0.8,
        "top_p": 0.9,
        "top_k": 40,
        "seed": 11,
        "stream": True,
        # The neutral values, so the server's own defaults do not sample on top.
        "min_p": 0.0,
        "repeat_penalty": 1.0,
        "repetition_penalty": 1.0,
        "typical_p": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
    }


def test_top_k_off_is_sent_as_0_and_settings_are_left_out_only_when_the_card_says_so(
    fake_server, tmp_path
):
    card = load_model_card(remote_card(tmp_path, fake_server.url))
    "".join(OpenAIBackend(card).stream("Once.", Sampling(top_k=0), 1))
    assert fake_server.requests()[-1]["body"]["top_k"] == 0
    options = f'api_key_env = "{KEY_ENV}"\nsend_top_k = false\nsend_neutral_settings = false'
    card = load_model_card(remote_card(tmp_path, fake_server.url, options=options))
    "".join(OpenAIBackend(card).stream("Once.", card.sampling, 1))
    sent = fake_server.requests()[-1]["body"]
    assert not {"top_k", "min_p", "repeat_penalty", "repetition_penalty", "typical_p"} & set(sent)
    assert sent["presence_penalty"] == sent["frequency_penalty"] == 0.0


def test_stopping_early_hangs_up_so_the_server_stops_generating(fake_server, tmp_path):
    card = load_model_card(remote_card(tmp_path, fake_server.url))
    pieces = OpenAIBackend(card).stream("The storm broke at midnight.", card.sampling, 5)
    assert next(pieces).strip()
    before = len(fake_server.requests())
    pieces.close()
    deadline = time.monotonic() + 5
    while not fake_server.requests()[before - 1]["hung_up"]:
        assert time.monotonic() < deadline, fake_server.requests()[before - 1]
        time.sleep(0.05)
    entry = fake_server.requests()[before - 1]
    assert not entry["finished"] and entry["pieces_sent"] < 6


def test_a_server_that_is_not_running_is_named_in_the_error(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    card = load_model_card(remote_card(tmp_path, url, options="wait_seconds = 0.5"))
    backend = OpenAIBackend(card)
    with pytest.raises(ModelServerError, match=re.escape(f"{url}/v1/completions")) as error:
        next(backend.stream("Once.", card.sampling, 1))
    assert "check that it is running" in str(error.value)
    with pytest.raises(ModelServerError, match=re.escape(f"{url}/v1/models")):
        backend.load(log=lambda message: None)


def test_a_wrong_or_missing_api_key_says_which_variable_to_set(fake_server, tmp_path, monkeypatch):
    card = load_model_card(remote_card(tmp_path, fake_server.url))
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with pytest.raises(ModelServerError, match="HTTP 401: Incorrect API key") as error:
        next(OpenAIBackend(card).stream("Once.", card.sampling, 1))
    assert KEY_ENV in str(error.value)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(ModelServerError, match=f"variable {KEY_ENV}, which is not set"):
        OpenAIBackend(card).load(log=lambda message: None)


def test_a_model_the_server_does_not_serve_is_refused_at_load(fake_server, tmp_path):
    card = load_model_card(remote_card(tmp_path, fake_server.url, model="llama-70b"))
    with pytest.raises(ModelServerError, match="serves fake-a, not 'llama-70b'"):
        OpenAIBackend(card).load(log=lambda message: None)
    with pytest.raises(ModelServerError, match="HTTP 404"):
        next(OpenAIBackend(card).stream("Once.", card.sampling, 1))


def test_a_whole_round_runs_on_remote_models(fake_server, tmp_path):
    """The study, unchanged, with both of the experiment's models behind HTTP."""
    config = write_setup(tmp_path)
    models = Path(config["MODELS_DIR"])
    for name in ("fake-a", "fake-b"):
        # The server serves fake-a only: both cards name it, each under its own card name.
        remote_card(models, fake_server.url, name=name, model="fake-a")
    app = create_app(config)
    assert shared_parts(app).pool.wait_ready(timeout=30)
    writer = Writer(app)
    writer.write_round(1)
    db = store.connect(config["DATABASE"])
    rows = list(db.query("SELECT model, status, text, token_count, seed, sampling, sent_settings"
                         " FROM suggestions"))  # fmt: skip
    db.close()
    assert sorted(r["model"] for r in rows) == ["fake-a", "fake-b"]
    assert all(r["status"] == "done" and r["token_count"] > 3 for r in rows)
    # Each suggestion records what its request sent, as the server received it.
    received = [entry["body"] for entry in fake_server.requests()]
    for row in rows:
        sent = json.loads(row["sent_settings"])
        assert sent["seed"] == row["seed"] and sent["min_p"] == 0.0
        assert sent["repeat_penalty"] == 1.0
        assert sent["top_k"] == json.loads(row["sampling"])["top_k"]
        assert any(
            {k: v for k, v in body.items() if k not in ("model", "prompt", "stream")} == sent
            for body in received
        )
    # ... and the evaluation card says what the servers were sent.
    researcher = Researcher(app)
    researcher.login()
    card = researcher.get("/research/experiments/fake-ab/evaluation-card.md").get_data(as_text=True)
    assert "Sent to the model servers of served systems" in card
    assert '- fake-b-topk: `{"frequency_penalty": 0.0, "max_tokens": 40, "min_p": 0.0,' in card


# Model cards


@pytest.mark.parametrize(
    ("options", "field", "hint"),
    [
        ('api_key = "sk-123"', "options.api_key", "environment variable"),
        ('api_key_env = "sk-123"', "options.api_key_env", "never the key itself"),
        ("timeout_seconds = 0", "options.timeout_seconds", "number of seconds"),
        ('send_top_k = "no"', "options.send_top_k", "true or false"),
        ("temperature = 2", "options.temperature", "not an option"),
    ],
)
def test_a_bad_remote_card_names_the_field(tmp_path, options, field, hint):
    path = remote_card(tmp_path, "http://127.0.0.1:8000", options=options)
    with pytest.raises(ModelCardError, match=re.escape(field)) as error:
        load_model_card(path)
    assert hint in str(error.value)


def test_a_remote_card_needs_a_url_a_model_and_a_version(tmp_path):
    path = remote_card(tmp_path, "localhost:8000")
    with pytest.raises(ModelCardError, match="http:// or https://"):
        load_model_card(path)
    path.write_text(path.read_text().replace('model = "fake-a"', ""))
    with pytest.raises(ModelCardError, match="options.base_url|options.model"):
        load_model_card(path)
    path = remote_card(tmp_path, "http://127.0.0.1:8000")
    path.write_text(path.read_text().replace('version = "fake-1"', ""))
    with pytest.raises(ModelCardError, match="'version' is required for the openai backend"):
        load_model_card(path)


def test_the_example_remote_card_is_valid_and_not_loaded_by_default():
    card = load_model_card(EXAMPLE)
    assert card.backend == "openai"
    assert card.options["base_url"].startswith("http://")
    assert card.options["api_key_env"] and "api_key" not in card.options
    assert card.name not in load_model_cards(ROOT / "models")


# A real packaged model behind the server


@pytest.mark.real_model
def test_smollm2_served_over_http_writes_one_sentence_as_it_streams(tmp_path):
    cache = Path(os.environ.get("CYOA_MODEL_CACHE", ROOT / "instance" / "models"))
    server = ModelServer(ROOT / "models" / "smollm2-135m-instruct.toml", tmp_path, cache=cache)
    try:
        path = remote_card(
            tmp_path, server.url, name="smollm2-remote", model="smollm2-135m-instruct",
            options="timeout_seconds = 60",
        )  # fmt: skip
        pool = ModelPool({"smollm2-remote": load_model_card(path)}, tmp_path)
        assert pool.wait_ready(timeout=30), pool.status()
        backend = pool.get("smollm2-remote")
        shown: list[str] = []
        suggestion = generate_suggestion(
            backend, system_for(backend.card), STORY, seed=3, on_text=shown.append
        )
        assert server.requests()[-1]["body"]["seed"] == 3
    finally:
        server.stop()
    assert len(shown) >= 3, shown  # it streamed: the writer saw the text grow
    text = suggestion.text
    assert 20 <= len(text) <= 260
    words = re.findall(r"[A-Za-z']+", text)
    assert len(words) >= 3 and sum(ch.isalpha() for ch in text) >= 0.6 * len(text.replace(" ", ""))
    # Either a sentence end (maybe inside quotes) or a cut after a whole word.
    assert re.search(r"([.!?…][\"'”’)\]]*|\w)$", text), text
    assert 0 < suggestion.token_count <= backend.card.sampling.max_new_tokens
