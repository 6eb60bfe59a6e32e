"""The researcher's Models page: every card with its state, loading and unloading while the
app runs, and three suggestions for a typed story (fake models)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from conftest import FAKE_CARD, Researcher, write_setup

from cyoa import create_app, store
from cyoa.cowriting.research.forms import form_defaults
from cyoa.web.parts import shared as shared_parts


@pytest.fixture
def app(tmp_path):
    """The test setup plus a third card, fake-c, that no experiment uses."""
    config = write_setup(tmp_path)
    (tmp_path / "models" / "fake-c.toml").write_text(FAKE_CARD.format(name="fake-c", options=""))
    return create_app(config)


@pytest.fixture
def researcher(app):
    person = Researcher(app)
    assert person.login().status_code == 302
    return person


def wait_state(app, name: str, state: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while shared_parts(app).pool.status()[name]["state"] != state:
        assert time.monotonic() < deadline, f"{name} did not become {state}"
        time.sleep(0.05)


def test_the_models_page_lists_every_card_with_its_state(app, researcher):
    shared_parts(app).pool.wait_ready(timeout=10)
    page = researcher.get("/research/models/").get_data(as_text=True)
    for name in ("fake-a", "fake-b", "fake-c"):
        assert f'id="model-{name}"' in page
    assert 'id="model-fake-c" data-state="not_loaded"' in page
    assert 'id="model-fake-a" data-state="ready"' in page
    assert "fake-ab</a> (" in page  # the experiment that uses fake-a


def test_a_card_no_experiment_uses_is_loaded_from_the_page_without_a_restart(app, researcher):
    response = researcher.post("/research/models/fake-c/load")
    assert response.status_code == 302
    wait_state(app, "fake-c", "ready")
    page = researcher.get("/research/models/").get_data(as_text=True)
    assert 'id="model-fake-c" data-state="ready"' in page
    assert researcher.get("/research/models/status.json").json["fake-c"]["state"] == "ready"


def test_trying_a_model_shows_three_suggestions_with_their_times(app, researcher):
    shared_parts(app).pool.wait_ready(timeout=10)
    response = researcher.post("/research/models/fake-a/try", {"story": "Once upon a time."})
    page = response.get_data(as_text=True)
    assert response.status_code == 200
    assert page.count('<blockquote class="suggestion">') == 3
    assert "first token after" in page and "seed 1" in page and "seed 3" in page


def test_trying_a_model_that_is_not_loaded_says_to_load_it(researcher):
    response = researcher.post("/research/models/fake-c/try", {"story": "Once upon a time."})
    assert response.status_code == 409
    assert "fake-c is not loaded: load it first" in response.get_data(as_text=True)


def test_a_model_an_open_experiment_uses_cannot_be_unloaded(app, researcher):
    shared_parts(app).pool.wait_ready(timeout=10)
    researcher.post("/research/experiments/fake-ab/status", {"status": "open"})
    response = researcher.post("/research/models/fake-a/unload", follow_redirects=True)
    assert "used by the experiment(s) fake-ab, open or opening" in response.get_data(as_text=True)
    assert shared_parts(app).pool.status()["fake-a"]["state"] == "ready"


def test_an_unused_model_can_be_unloaded(app, researcher):
    researcher.post("/research/models/fake-c/load")
    wait_state(app, "fake-c", "ready")
    response = researcher.post("/research/models/fake-c/unload", follow_redirects=True)
    assert "fake-c is unloaded" in response.get_data(as_text=True)
    assert shared_parts(app).pool.status()["fake-c"]["state"] == "not_loaded"


def test_the_models_page_needs_a_login_and_the_csrf_token(app):
    client = app.test_client()
    assert client.get("/research/models/").status_code == 302
    person = Researcher(app)
    person.login()
    assert person.http.post("/research/models/fake-c/load").status_code == 400


def test_a_card_file_added_while_the_app_runs_is_served_without_a_restart(app, researcher):
    models = Path(app.config["MODELS_DIR"])
    (models / "fake-d.toml").write_text(FAKE_CARD.format(name="fake-d", options=""))
    page = researcher.get("/research/models/").get_data(as_text=True)
    assert 'id="model-fake-d" data-state="not_loaded"' in page
    form = {
        **form_defaults(), "id": "with-d", "title": "With d", "consent": "You agree.",
        "instructions": "Write.", "system1_name": "a", "system1_model": "fake-a",
        "system2_name": "d", "system2_model": "fake-d",
    }  # fmt: skip
    assert researcher.post("/research/experiments/new", form).status_code == 302
    researcher.post("/research/experiments/with-d/status", {"status": "open"})
    wait_state(app, "fake-d", "ready")
    deadline = time.monotonic() + 10
    db = store.connect(app.config["DATABASE"])
    while store.get_experiment(db, "with-d")["status"] != "open":
        assert time.monotonic() < deadline, "with-d did not open"
        time.sleep(0.05)
    db.close()


def test_a_bad_card_file_is_named_on_the_page_and_the_others_still_work(app, researcher):
    (Path(app.config["MODELS_DIR"]) / "broken.toml").write_text('backend = "fake"\nname = ')
    page = researcher.get("/research/models/").get_data(as_text=True)
    assert "broken.toml: not valid TOML" in page
    assert 'id="model-fake-a"' in page


def test_a_card_file_changed_while_the_app_runs_is_kept_as_read_and_said_so(app, researcher):
    card = Path(app.config["MODELS_DIR"]) / "fake-c.toml"
    card.write_text(card.read_text().replace("top_k = 40", "top_k = 7"))
    page = researcher.get("/research/models/").get_data(as_text=True)
    assert "fake-c.toml changed since the app read it" in page
    assert shared_parts(app).cards["fake-c"].sampling.top_k == 40
