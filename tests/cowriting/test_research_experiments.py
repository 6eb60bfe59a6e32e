"""Experiments from the researcher's side: create (form, spec file, command line), open,
pause, close, participant links, and what the writers see at each step."""

import html
import io
import json
import threading
import time
from collections import Counter

import pytest
from click.testing import CliRunner
from conftest import FAKE_CARD, RESEARCHER_PASSWORD, Researcher, Writer, db_rows, write_setup

from cyoa import ROOT, create_app, store
from cyoa.cli import cli
from cyoa.cli import research as research_commands
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.research.forms import form_defaults
from cyoa.web.parts import shared as shared_parts


def status_of(app, exp_id: str) -> str:
    db = store.connect(app.config["DATABASE"])
    try:
        return store.get_experiment(db, exp_id)["status"]
    finally:
        db.close()


def form(**overrides) -> dict:
    data = {
        **form_defaults(),
        "id": "new-study",
        "title": "A new study",
        "consent": "You agree.",
        "instructions": "Write well.",
        "system1_name": "alpha",
        "system1_model": "fake-a",
        "system2_name": "beta",
        "system2_model": "fake-b",
        "system2_top_k": "5",
        "system_rows": "4",
        "target_writers": "40",
    }
    data.update(overrides)
    return data


def test_the_list_shows_each_experiment_with_status_progress_and_links(app, researcher):
    Writer(app, "?pid=w1")
    page = researcher.get("/research/").get_data(as_text=True)
    assert "A test study" in page and "fake-ab" in page
    assert "status-open" in page
    assert "<dt>Started</dt><dd>1</dd>" in page
    assert "/s/fake-ab?PROLIFIC_PID={{%PROLIFIC_PID%}}&amp;STUDY_ID={{%STUDY_ID%}}" in page
    assert "/s/fake-ab?pid=PARTICIPANT_ID" in page


def test_an_experiment_made_with_the_form_starts_paused_and_goes_through_its_lifecycle(
    app, researcher
):
    response = researcher.post("/research/experiments/new", data=form())
    assert response.status_code == 302
    assert response.headers["Location"] == "/research/experiments/new-study"
    page = researcher.get("/research/experiments/new-study").get_data(as_text=True)
    assert "is paused: check it, then open it" in page
    assert "top_k 5" in page  # the form's sampling override of fake-b's default 40
    assert status_of(app, "new-study") == "paused"
    # Paused: a new writer sees the friendly page.
    closed = app.test_client().get("/s/new-study")
    assert closed.status_code == 403 and "not taking new writers" in closed.get_data(True)

    assert researcher.post("/research/experiments/new-study/status", data={"status": "open"})
    assert status_of(app, "new-study") == "open"
    early = Writer(app, "?pid=early", experiment="new-study")
    early.write_round(1)

    researcher.post("/research/experiments/new-study/status", data={"status": "paused"})
    assert app.test_client().get("/s/new-study?pid=late").status_code == 403
    early.write_round(2)  # a writer with a session can go on
    assert early.http.get("/s/new-study?pid=early").status_code == 302  # and come back

    researcher.post("/research/experiments/new-study/status", data={"status": "closed"})
    assert status_of(app, "new-study") == "closed"
    late = app.test_client()
    with late.session_transaction() as s:
        s["csrf"] = "a-token-for-this-browser"
    consent = {"consent": "yes", "csrf_token": "a-token-for-this-browser"}
    assert late.post("/s/new-study/start", data=consent).status_code == 403
    early.write_round(3)
    page = researcher.get("/research/experiments/new-study", follow_redirects=True)
    assert "status-closed" in page.get_data(as_text=True)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"id": "Bad Id"}, "'id' must be lowercase letters"),
        ({"system2_name": "", "system2_model": ""}, "needs at least two [[systems]]"),
        ({"system2_model": "no-such-model"}, "unknown model 'no-such-model'"),
        ({"system2_top_p": "7"}, "invalid sampling: top_p must be in (0, 1]"),
        ({"rounds": "five"}, "Rounds: please enter a number"),
        ({"min_chars": "300"}, "1 <= min_chars <= max_chars"),
        ({"likert": "no colon here"}, "write each item as 'id: text'"),
        ({"id": "fake-ab"}, "exists already"),
    ],
)
def test_a_broken_form_says_what_to_fix_and_keeps_the_values(app, researcher, overrides, message):
    response = researcher.post("/research/experiments/new", data=form(**overrides))
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert message in html.unescape(page)
    assert 'value="A new study"' in page
    assert status_of(app, "fake-ab") == "open"


def test_an_experiment_can_be_made_from_a_spec_file(app, researcher, tmp_path):
    spec = (tmp_path / "experiments" / "fake-ab.toml").read_text().replace("fake-ab", "uploaded")
    upload = {"spec": (io.BytesIO(spec.encode()), "uploaded.toml")}
    response = researcher.post("/research/experiments/upload", data=upload)
    assert response.headers["Location"] == "/research/experiments/uploaded"
    assert status_of(app, "uploaded") == "paused"
    broken = {"spec": (io.BytesIO(b"id = 'x'\ntitle = 'X'"), "broken.toml")}
    response = researcher.post("/research/experiments/upload", data=broken)
    assert response.status_code == 400
    message = "broken.toml: a pairwise study needs at least two [[systems]]."
    assert message in html.unescape(response.get_data(as_text=True))


def test_the_form_offers_the_model_cards_and_the_papers_survey(researcher):
    page = researcher.get("/research/experiments/new").get_data(as_text=True)
    assert '<option value="fake-a"' in page and '<option value="fake-b"' in page
    assert "happy: I&#39;m happy with my final story." in page
    assert (
        researcher.get("/research/experiments/new?rows=7")
        .get_data(True)
        .count('_model" aria-label')
        == 7
    )


def test_an_experiment_whose_model_is_not_loaded_opens_once_it_loads_without_a_restart(
    tmp_path,
):
    config = write_setup(tmp_path)
    card = FAKE_CARD.format(name="fake-c", options="delay_seconds = 0.01")
    (tmp_path / "models" / "fake-c.toml").write_text(card)
    app = create_app(config)
    assert shared_parts(app).pool.status()["fake-c"]["state"] == "not_loaded"
    researcher = Researcher(app)
    researcher.login()
    page = researcher.get("/research/experiments/new").get_data(as_text=True)
    assert "fake-c, loaded when opened" in page
    response = researcher.post(
        "/research/experiments/new", data=form(system2_model="fake-c"), follow_redirects=True
    )
    assert "Opening it first loads fake-c" in response.get_data(as_text=True)
    response = researcher.post(
        "/research/experiments/new-study/status", data={"status": "open"}, follow_redirects=True
    )
    assert "Loading fake-c: &#39;new-study&#39; opens as soon as it is ready" in response.get_data(
        True
    )
    deadline = time.monotonic() + 10
    while status_of(app, "new-study") != "open":
        assert time.monotonic() < deadline, "the experiment did not open"
        time.sleep(0.05)
    writer = Writer(app, "?pid=after-load", experiment="new-study")
    writer.connect()
    state = writer.write_round(1)
    rounds = list(store.connect(config["DATABASE"]).query(
        "SELECT s.model FROM suggestions s JOIN sessions x ON x.id = s.session_id"
        " WHERE x.experiment_id = 'new-study'"
    ))  # fmt: skip
    assert "fake-c" in {row["model"] for row in rounds} and state["round"] >= 1


def test_an_opening_whose_model_fails_to_load_keeps_the_experiment_paused(tmp_path):
    config = write_setup(tmp_path)
    broken = "\n".join([
        'name = "broken"', 'display_name = "Broken"', 'backend = "transformers"',
        'package = "no-such-weights-package"', 'weights_file = "m.gguf"', 'version = "1"',
        "[sampling]", "top_k = 40",
    ])  # fmt: skip
    (tmp_path / "models" / "broken.toml").write_text(broken)
    app = create_app(config)
    researcher = Researcher(app)
    researcher.login()
    researcher.post("/research/experiments/new", data=form(system2_model="broken"))
    researcher.post("/research/experiments/new-study/status", data={"status": "open"})
    deadline = time.monotonic() + 30
    while cowriting_parts(app).openings.waiting_for("new-study"):
        assert time.monotonic() < deadline, "the loading did not end"
        time.sleep(0.05)
    page = researcher.get("/research/experiments/new-study").get_data(as_text=True)
    assert "Not opened: broken could not be loaded" in page and "no-such-weights-package" in page
    assert status_of(app, "new-study") == "paused"


def test_three_systems_made_with_the_form_can_be_paired_adaptively(app, researcher):
    data = form(system3_name="gamma", system3_model="fake-a", pairing="adaptive", rounds="3")
    assert researcher.post("/research/experiments/new", data=data).status_code == 302
    researcher.post("/research/experiments/new-study/status", data={"status": "open"})
    Writer(app, "?pid=w1", experiment="new-study")
    rows = db_rows(
        app.config["DATABASE"],
        "SELECT pair_probability FROM sessions WHERE experiment_id = 'new-study'",
    )
    assert [r["pair_probability"] for r in rows] == [pytest.approx(1 / 3)]
    page = researcher.get("/research/experiments/new").get_data(as_text=True)
    assert '<option value="adaptive"' in page


def test_three_systems_made_with_the_form_are_balanced_over_pairs_and_slots(app, researcher):
    data = form(system3_name="gamma", system3_model="fake-a", slot_order="balanced", rounds="3")
    assert researcher.post("/research/experiments/new", data=data).status_code == 302
    researcher.post("/research/experiments/new-study/status", data={"status": "open"})
    writers = [Writer(app, f"?pid=w{n}", experiment="new-study") for n in range(6)]
    db = store.connect(app.config["DATABASE"])
    try:
        pairs = Counter(
            (r["system_a"], r["system_b"])
            for r in db.query("SELECT * FROM sessions WHERE experiment_id = 'new-study'")
        )
        plans = [
            json.loads(r["payload"])["slot_plan"]
            for r in db.query("SELECT payload FROM events WHERE type = 'session_started'")
            if json.loads(r["payload"])["experiment"] == "new-study"
        ]
    finally:
        db.close()
    unordered = Counter(tuple(sorted(p)) for p in pairs.elements())
    assert sorted(unordered.values()) == [2, 2, 2]
    assert all(pairs[(a, b)] == 1 for a, b in pairs)
    assert all(sorted(plan) == [0, 0, 1] for plan in plans) and len(plans) == len(writers)


def test_researcher_details_for_the_evaluation_card_are_stored(app, researcher):
    researcher.post(
        "/research/experiments/fake-ab/details",
        data={"pay": "£2.50 per story (about £10/hour)", "qualifications": "UK, 95% approval"},
    )
    db = store.connect(app.config["DATABASE"])
    details = store.get_evaluation_details(db, "fake-ab")
    db.close()
    assert details["pay"] == "£2.50 per story (about £10/hour)"
    assert details["updated_by"] == "alice"
    reply = researcher.get("/research/experiments/fake-ab/evaluation-card.md")
    assert reply.headers["Content-Type"] == "text/markdown; charset=utf-8"
    card = reply.get_data(True)
    assert "> £2.50 per story (about £10/hour)" in card
    assert "> UK, 95% approval" in card


# --- command line ---------------------------------------------------------------------


@pytest.fixture
def runner():
    return CliRunner()


def invoke(runner, app, *args, **kwargs):
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    return runner.invoke(cli, ["--db", app.config["DATABASE"], *args], env=env, **kwargs)


def test_create_researcher_reads_the_password_from_stdin(app, runner):
    result = invoke(runner, app, "create-researcher", "bob", input=RESEARCHER_PASSWORD + "\n")
    assert result.exit_code == 0, result.output
    assert "Researcher 'bob' created" in result.output
    assert Researcher(app, name="bob").login().status_code == 302
    again = invoke(runner, app, "create-researcher", "bob", input=RESEARCHER_PASSWORD + "\n")
    assert again.exit_code != 0 and "exists already" in again.output
    short = invoke(runner, app, "create-researcher", "eve", input="short\n")
    assert short.exit_code != 0 and "at least 10 characters" in short.output


def test_experiments_are_created_and_switched_from_the_command_line(app, runner, tmp_path):
    spec = tmp_path / "cli.toml"
    spec.write_text(
        (tmp_path / "experiments" / "fake-ab.toml").read_text().replace("fake-ab", "from-cli")
    )
    result = invoke(runner, app, "experiment", "create", str(spec))
    assert result.exit_code == 0, result.output
    assert "Experiment 'from-cli' created, paused." in result.output
    assert status_of(app, "from-cli") == "paused"
    for verb, status in (("open", "open"), ("pause", "paused"), ("close", "closed")):
        result = invoke(runner, app, "experiment", verb, "from-cli")
        assert result.exit_code == 0, result.output
        assert status_of(app, "from-cli") == status
    listing = invoke(runner, app, "experiment", "list")
    assert "from-cli\tclosed\tcowriting\t0 sessions" in listing.output
    assert invoke(runner, app, "experiment", "open", "nope").exit_code != 0
    duplicate = invoke(runner, app, "experiment", "create", str(spec))
    assert duplicate.exit_code != 0 and "exists already" in duplicate.output
    # The running app serves it from its page without a restart (models permitting).
    researcher = Researcher(app)
    researcher.login()
    assert researcher.get("/research/experiments/from-cli").status_code == 200


def test_every_researcher_verb_is_documented():
    research = (ROOT / "docs" / "research.md").read_text()
    for command in (
        research_commands.create_researcher_command,
        research_commands.experiment_group,
    ):
        name = command.name
        subcommands = getattr(command, "commands", None)
        for verb in [f"{name} {sub}" for sub in subcommands] if subcommands else [name]:
            assert f"python -m cyoa {verb} " in research, verb


def test_links_print_the_address_the_app_serves_on_unless_told_another(app, runner):
    env = {
        "CYOA_MODELS_DIR": app.config["MODELS_DIR"],
        "CYOA_EXPERIMENTS_DIR": app.config["EXPERIMENTS_DIR"],
        "CYOA_HOST": "0.0.0.0",
        "CYOA_PORT": "8123",
    }
    served = runner.invoke(cli, ["--db", app.config["DATABASE"], "links"], env=env)
    assert served.exit_code == 0, served.output
    assert "fake-ab (cowriting): http://0.0.0.0:8123/s/fake-ab" in served.output
    told = runner.invoke(
        cli,
        ["--db", app.config["DATABASE"], "links", "--base-url", "https://cyoa.example/"],
        env=env,
    )
    assert "fake-ab (cowriting): https://cyoa.example/s/fake-ab" in told.output


def test_rating_experiments_are_listed_with_the_co_writing_ones(app, runner):
    annotations = ROOT / "tests" / "data" / "ttcw" / "ttcw_annotations_gpt.json"
    result = invoke(
        runner, app, "import-ratings", str(annotations), "--format", "ttcw", "--name", "ttcw-gpt"
    )
    assert result.exit_code == 0, result.output
    researcher = Researcher(app)
    researcher.login()
    page = researcher.get("/research/").get_data(as_text=True)
    assert "Rating experiments" in page and "ttcw-gpt" in page
    assert "Torrance Test of Creative Writing" in page and "GPT3.5, GPT4" in page
    assert "fake-ab" in page  # the co-writing experiment is still listed


def test_an_opening_never_overwrites_a_close_made_while_its_models_loaded(app):
    db = store.connect(app.config["DATABASE"])
    store.set_experiment_status(db, "fake-ab", "paused")
    assert store.open_if_paused(db, "fake-ab") and status_of(app, "fake-ab") == "open"
    store.set_experiment_status(db, "fake-ab", "closed")
    assert not store.open_if_paused(db, "fake-ab") and status_of(app, "fake-ab") == "closed"
    db.close()


def test_a_model_an_opening_waits_for_cannot_be_unloaded(app, researcher):
    pool = shared_parts(app).pool
    assert pool.wait_ready(timeout=10)
    openings = cowriting_parts(app).openings
    gate = threading.Event()
    original = pool.load

    def slow_load(names, then=None):  # the models "load" until the gate opens
        original(names, then=(lambda errors: (gate.wait(10), then(errors))) if then else None)

    pool.load = slow_load
    researcher.post("/research/experiments/fake-ab/status", {"status": "paused"})
    pool.unload("fake-b")
    researcher.post("/research/experiments/fake-ab/status", {"status": "open"})
    assert openings.waiting_for("fake-ab") == ("fake-a", "fake-b")
    response = researcher.post("/research/models/fake-a/unload", follow_redirects=True)
    assert "fake-ab, open or opening" in response.get_data(as_text=True)
    gate.set()
    deadline = time.monotonic() + 10
    while status_of(app, "fake-ab") != "open":
        assert time.monotonic() < deadline, "fake-ab did not open"
        time.sleep(0.05)
