"""One round of the default study with the two real packaged models, through the app."""

import os

import pytest
from conftest import Writer

from cyoa import create_app, store
from tests.paths import ROOT

pytestmark = pytest.mark.real_model


@pytest.fixture
def real_app(tmp_path):
    cache = os.environ.get("CYOA_MODEL_CACHE", str(ROOT / "instance" / "models"))
    return create_app(
        {
            "TESTING": True,
            "SECRET_KEY": "test",
            "DATABASE": str(tmp_path / "cyoa.sqlite"),
            "MODEL_CACHE": cache,
            "TAG_SENTENCES": False,
        }
    )


def test_a_round_with_the_two_real_models_is_generated_streamed_and_stored(real_app):
    writer = Writer(real_app, experiment="short-story-1")
    writer.io.get_received()
    ack = writer.act(
        "line_submitted", {"text": "The lighthouse keeper found a letter on the rocks."}
    )
    assert ack["ok"], ack
    state = writer.wait_for("choosing", timeout=300)

    texts = [s["text"] for s in state["current"]["suggestions"]]
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    for text in texts:
        assert 20 <= len(text) <= 260
        assert any(c.isalpha() for c in text)
    streamed = [m for m in writer.io.get_received() if m["name"] == "suggestion_progress"]
    assert {m["args"][0]["slot"] for m in streamed} == {1, 2}

    db = store.connect(real_app.config["DATABASE"])
    rows = {r["model"]: r for r in db.query("SELECT * FROM suggestions")}
    db.close()
    assert set(rows) == {"gemma-3-270m", "smollm2-135m-instruct"}
    assert rows["gemma-3-270m"]["weights_file"].endswith(".gguf")
    for row in rows.values():
        assert row["status"] == "done"
        assert row["token_count"] > 0
        assert row["generation_seconds"] > 0
        assert row["text"] in texts
