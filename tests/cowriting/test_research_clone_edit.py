"""Cloning an experiment (a new id, every field of its stored spec, paused) and editing one
while no writer has started it, from the researcher's pages."""

import html
import io
import json

import pytest
from conftest import Writer, db_rows

from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.research.forms import form_defaults


def form(**overrides) -> dict:
    data = {
        **form_defaults(),
        "id": "draft",
        "title": "A draft study",
        "consent": "You agree to take part.",
        "instructions": "Write a story with the machine.",
        "prompt_text": "Begin with a storm.",
        "system1_name": "alpha",
        "system1_model": "fake-a",
        "system1_temperature": "0.7",
        "system2_name": "beta",
        "system2_model": "fake-b",
        "system2_top_k": "5",
        "slot_order": "balanced",
        "target_writers": "12",
        "completion_url": "https://example.org/done?cc={code}",
        "likert": "fun: It was fun.",
        "open": "why: Why did you choose?",
    }
    data.update(overrides)
    return data


def stored(app, exp_id: str) -> dict | None:
    rows = db_rows(app.config["DATABASE"], f"SELECT * FROM experiments WHERE id = '{exp_id}'")
    return {**rows[0], "spec": json.loads(rows[0]["spec"])} if rows else None


def page_text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


@pytest.fixture
def draft(app, researcher):
    """A paused experiment made with the form, that no writer has started."""
    assert researcher.post("/research/experiments/new", data=form()).status_code == 302
    return stored(app, "draft")


# --- clone ----------------------------------------------------------------------------


def test_a_clone_copies_every_field_of_the_stored_spec_and_is_paused(app, researcher):
    response = researcher.post("/research/experiments/fake-ab/clone", data={"new_id": "again"})
    assert response.headers["Location"] == "/research/experiments/again"
    source, copy = stored(app, "fake-ab"), stored(app, "again")
    assert copy["spec"] == {**source["spec"], "id": "again"}
    assert copy["spec"]["suggestion_timeout_seconds"] == 20  # a field the form does not show
    assert (copy["title"], copy["status"], source["status"]) == ("A test study", "paused", "open")
    page = page_text(researcher.get("/research/experiments/again"))
    assert "Experiment 'again' created as a copy of 'fake-ab'. It is paused" in page
    assert "System <strong>fake-b-topk</strong>" in page and "top_k 20" in page
    assert app.test_client().get("/s/again").status_code == 403  # paused: no new writers


def test_a_clone_of_a_form_made_experiment_keeps_its_survey_sampling_and_limits(
    app, researcher, draft
):
    researcher.post("/research/experiments/draft/status", data={"status": "closed"})
    researcher.post("/research/experiments/draft/clone", data={"new_id": "draft-2"})
    assert stored(app, "draft-2")["spec"] == {**draft["spec"], "id": "draft-2"}
    assert stored(app, "draft-2")["status"] == "paused"


@pytest.mark.parametrize(
    ("new_id", "message"),
    [
        ("fake-ab", "An experiment with the id 'fake-ab' exists already."),
        ("Not An Id", "'id' must be lowercase letters, digits, '-' or '_'."),
        ("  ", "please give the copy an id"),
    ],
)
def test_a_clone_with_a_taken_or_invalid_id_says_so_and_stores_nothing(
    app, researcher, new_id, message
):
    response = researcher.post(
        "/research/experiments/fake-ab/clone", data={"new_id": new_id}, follow_redirects=True
    )
    page = page_text(response)
    assert "Not cloned." in page and message in page
    ids = db_rows(app.config["DATABASE"], "SELECT id FROM experiments")
    assert [r["id"] for r in ids] == ["fake-ab"]


# --- edit -----------------------------------------------------------------------------


def test_the_edit_form_shows_the_stored_spec(researcher, draft):
    page = researcher.get("/research/experiments/draft/edit").get_data(as_text=True)
    assert "Edit experiment" in page and 'name="id" value="draft" readonly' in page
    assert 'value="A draft study"' in page and "You agree to take part.</textarea>" in page
    assert 'name="system1_temperature" value="0.7"' in page
    assert 'name="system2_top_k" value="5"' in page
    assert '<option value="balanced" selected>' in page
    assert "fun: It was fun.</textarea>" in page and "Save changes" in page
    assert "From a spec file" not in page


def test_saving_the_edit_form_unchanged_keeps_the_stored_spec(app, researcher, draft):
    page = researcher.get("/research/experiments/draft/edit").get_data(as_text=True)
    assert "Begin with a storm.</textarea>" in page
    response = researcher.post("/research/experiments/draft/edit", data=form())
    assert response.headers["Location"] == "/research/experiments/draft"
    assert stored(app, "draft")["spec"] == draft["spec"]


def test_an_edit_is_stored_and_served_at_once_and_the_id_stays(app, researcher, draft):
    changed = form(
        id="renamed",
        title="A better title",
        system2_model="fake-a",
        system2_top_k="",
        rounds="3",
        system3_name="gamma",
        system3_model="fake-b",
        system_rows="6",
    )
    response = researcher.post("/research/experiments/draft/edit", data=changed)
    assert response.headers["Location"] == "/research/experiments/draft"
    row = stored(app, "draft")
    assert row["title"] == "A better title" and row["status"] == "paused"
    assert row["spec"]["id"] == "draft" and stored(app, "renamed") is None
    assert row["spec"]["rounds"] == 3
    assert row["spec"]["systems"][1] == {"name": "beta", "model": "fake-a"}
    assert [s["name"] for s in row["spec"]["systems"]] == ["alpha", "beta", "gamma"]
    exp = cowriting_parts(app).study.experiments["draft"]
    assert exp.title == "A better title" and exp.limits.rounds == 3 and len(exp.systems) == 3
    page = page_text(researcher.get("/research/experiments/draft"))
    assert "Experiment 'draft' saved." in page and "System <strong>gamma</strong>" in page
    # Opened, writers write the edited design.
    researcher.post("/research/experiments/draft/status", data={"status": "open"})
    writer = Writer(app, "?pid=w1", experiment="draft")
    assert writer.joined["state"]["rounds"] == 3


def test_an_edit_keeps_what_the_form_does_not_show(app, researcher):
    spec = {
        "id": "uploaded",
        "title": "Uploaded",
        "consent": "You agree.",
        "instructions": "Write.",
        "suggestion_timeout_seconds": 33,
        "prompt": {"text": "Begin.", "image": "prompts/forest.jpg"},
        "systems": [{"name": "alpha", "model": "fake-a"}, {"name": "beta", "model": "fake-b"}],
    }
    upload = {"spec": (io.BytesIO(json.dumps(spec).encode()), "uploaded.json")}
    assert researcher.post("/research/experiments/upload", data=upload).status_code == 302
    page = researcher.get("/research/experiments/uploaded/edit").get_data(as_text=True)
    values = {
        **form_defaults(),
        "title": "Uploaded, edited",
        "consent": "You agree.",
        "instructions": "Write.",
        "prompt_text": "Begin.",
        "system1_name": "alpha",
        "system1_model": "fake-a",
        "system2_name": "beta",
        "system2_model": "fake-b",
    }
    assert 'value="Uploaded"' in page
    assert researcher.post("/research/experiments/uploaded/edit", data=values).status_code == 302
    edited = stored(app, "uploaded")["spec"]
    assert edited["title"] == "Uploaded, edited"
    assert edited["suggestion_timeout_seconds"] == 33
    assert edited["prompt"] == {"text": "Begin.", "image": "prompts/forest.jpg"}


def test_a_bad_edit_says_what_to_fix_keeps_the_values_and_changes_nothing(app, researcher, draft):
    response = researcher.post(
        "/research/experiments/draft/edit", data=form(title="Typed title", consent=" ")
    )
    assert response.status_code == 400
    page = page_text(response)
    assert "The form: the consent text is empty." in page
    assert 'value="Typed title"' in page and "Edit experiment" in page
    assert stored(app, "draft") == draft


def test_more_system_rows_while_editing_keeps_the_values_and_saves_nothing(app, researcher, draft):
    response = researcher.post(
        "/research/experiments/draft/edit", data=form(title="Typed title", action="more_rows")
    )
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert page.count('_model" aria-label') == 6 and 'value="Typed title"' in page
    assert "/research/experiments/draft/edit" in page
    assert stored(app, "draft") == draft


def test_an_edit_is_refused_once_a_writer_has_started(app, researcher, draft):
    researcher.post("/research/experiments/draft/status", data={"status": "open"})
    Writer(app, "?pid=w1", experiment="draft")
    researcher.post("/research/experiments/draft/status", data={"status": "paused"})
    before = stored(app, "draft")
    dashboard = page_text(researcher.get("/research/experiments/draft"))
    assert "Not editable now: 1 writer has started 'draft'" in dashboard
    assert "/research/experiments/draft/edit" not in dashboard
    response = researcher.post(
        "/research/experiments/draft/edit", data=form(title="Too late"), follow_redirects=True
    )
    page = page_text(response)
    assert "Not editable now: 1 writer has started 'draft'" in page
    assert "clone it and edit the copy." in page
    assert stored(app, "draft")["spec"] == before["spec"]
    assert stored(app, "draft")["title"] == "A draft study"


def test_an_open_experiment_must_be_paused_before_an_edit(app, researcher, draft):
    researcher.post("/research/experiments/draft/status", data={"status": "open"})
    response = researcher.get("/research/experiments/draft/edit", follow_redirects=True)
    assert "Not editable now: 'draft' is open: pause it first" in page_text(response)
    researcher.post("/research/experiments/draft/edit", data=form(title="While open"))
    assert stored(app, "draft")["title"] == "A draft study"
    researcher.post("/research/experiments/draft/status", data={"status": "paused"})
    dashboard = researcher.get("/research/experiments/draft").get_data(as_text=True)
    assert 'href="/research/experiments/draft/edit">Edit</a>' in dashboard


def test_an_experiment_from_a_spec_file_is_edited_in_its_file(app, researcher):
    researcher.post("/research/experiments/fake-ab/status", data={"status": "paused"})
    page = page_text(researcher.get("/research/experiments/fake-ab/edit", follow_redirects=True))
    assert "Not editable now: 'fake-ab' comes from the spec file fake-ab.toml" in page
    assert stored(app, "fake-ab")["title"] == "A test study"
