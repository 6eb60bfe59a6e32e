"""A rating study with people, over HTTP: a researcher creates and opens it from a spec, raters
consent, read their stories, answer, resume after a reload, and finish with a code; every
answer is in the database before the page is told it is saved."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import Researcher

from cyoa import store
from cyoa.cli import cli
from cyoa.rating.blind import rater_item_ids
from cyoa.rating.parts import parts as rating_parts
from tests.study_builder import add_writer, make_experiment, story

pytestmark = pytest.mark.both_databases

STORIES = [
    {
        "story_id": f"s{n}",
        "source": source,
        "title": f"Story {n}",
        "text": f"Once upon a time there was a lighthouse number {n}. It stood alone. "
        "A keeper lived in it.\nOne night a ship came. The keeper lit the lamp.",
    }
    for n, source in enumerate(["human", "human", "model", "model"], start=1)
]


def write_spec(root: Path, **fields) -> Path:
    (root / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in STORIES))
    spec = {
        "id": "aiss-pilot",
        "title": "Short stories",
        "kind": "rating",
        "instrument": "aiss-v1",
        "raters_per_story": 2,
        "stories_per_rater": 2,
        "consent": "You will read two short stories.",
        "instructions": "Read each story, then say how far you agree with each statement.",
        "completion_url": "https://example.org/done?cc={code}",
        "stories": {"file": "stories.jsonl"},
        **fields,
    }
    path = root / "rating.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.fixture
def study(app, tmp_path):
    """The app with the AISS rating study created from its spec and opened."""
    runner = CliRunner()
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    base = ["--db", app.config["DATABASE"]]
    created = runner.invoke(
        cli, [*base, "experiment", "create", str(write_spec(tmp_path))], env=env
    )
    assert created.exit_code == 0, created.output
    assert "Rating experiment 'aiss-pilot' created, paused, with 4 stories" in created.output
    opened = runner.invoke(cli, [*base, "experiment", "open", "aiss-pilot"], env=env)
    assert opened.exit_code == 0, opened.output
    return app


class Rater:
    """A participant's browser: its own cookies, the study's pages and answers."""

    def __init__(self, app, query: str = "") -> None:
        self.app = app
        self.client = app.test_client()
        self.query = query
        self.actions = 0

    def start(self):
        page = self.client.get(f"/r/aiss-pilot{self.query}")
        assert page.status_code == 200, page.get_data(as_text=True)
        token = re.search(r'name="csrf_token" value="([^"]+)"', page.get_data(as_text=True))[1]
        fields = dict(
            re.findall(r'type="hidden" name="(\w+)" value="([^"]*)"', page.get_data(as_text=True))
        )
        fields.update({"csrf_token": token, "consent": "yes"})
        reply = self.client.post("/r/aiss-pilot/start", data=fields)
        if reply.status_code == 302:
            self.page()  # the browser follows the redirect: the first story is shown
        return reply

    def page(self) -> str:
        response = self.client.get("/r/aiss-pilot/rate", follow_redirects=True)
        return response.get_data(as_text=True)

    def act(self, type_: str, payload: dict, action_id: str | None = None):
        """Send an action about a story and question named by their stored ids, as the page
        sends it: with the ids the rater is shown."""
        self.actions += 1
        body = {
            "action_id": action_id or f"a{self.actions}",
            "type": type_,
            "payload": self.as_shown(payload),
        }
        return self.client.post("/r/aiss-pilot/action", json=body, headers={"X-CYOA-Action": "1"})

    def as_shown(self, payload: dict) -> dict:
        exp = rating_parts(self.app).ratings.experiment("aiss-pilot")
        story_id = payload.get("story")
        if exp is None or story_id not in exp.stories:
            return payload
        shown = {**payload, "story": exp.stories[story_id]["alias"]}
        if "item" in payload:
            shown["item"] = rater_item_ids(exp, story_id).get(payload["item"], payload["item"])
        return shown

    def state(self):
        ratings = rating_parts(self.app).ratings
        with self.client.session_transaction() as cookie:
            rater_id = cookie["cyoa_rater"]["aiss-pilot"]
        return rater_id, ratings.state("aiss-pilot", rater_id)

    def answer_all(self, value: int = 4) -> list:
        rater_id, state = self.state()
        task = state.current
        replies = [
            self.act("answer_given", {"story": task.story_id, "item": item, "value": str(value)})
            for item in task.questions
        ]
        return replies


def rows(app, sql: str, *args) -> list[dict]:
    db = store.connect(app.config["DATABASE"])
    try:
        return list(db.query(sql, list(args)))
    finally:
        db.close()


def test_a_rater_reads_two_stories_answers_and_gets_a_completion_code(study):
    rater = Rater(study, "?PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=x")
    assert rater.start().status_code == 302
    page = rater.page()
    assert "Story 1 of 2" in page and "once upon a time" in page.lower()
    assert "The story had a clear theme." in page and "CC BY-SA 4.0" in page
    rater_id, state = rater.state()
    first = state.current.story_id
    # The AISS's 22 items, in an order of this rater's own.
    assert sorted(state.current.questions, key=int) == [str(n) for n in range(1, 23)]
    shown = rows(study, "SELECT shown_at FROM assignments WHERE rater_id = ? AND story_id = ?",
                 rater_id, first)  # fmt: skip
    assert shown[0]["shown_at"] is not None
    replies = rater.answer_all(4)
    assert all(reply.get_json() == {"ok": True, "duplicate": False} for reply in replies)
    stored = rows(study, "SELECT * FROM judgements WHERE rater_id = ? AND story_id = ?",
                  rater_id, first)  # fmt: skip
    assert len(stored) == 22 and {row["value"] for row in stored} == {4.0}
    assert all(row["shown_at"] == shown[0]["shown_at"] and row["answered_at"] for row in stored)
    finished = rater.act("story_finished", {"story": first}).get_json()
    assert finished == {"ok": True, "duplicate": False, "next": "/r/aiss-pilot/rate"}
    assert "Story 2 of 2" in rater.page()
    rater.answer_all(2)
    _, state = rater.state()
    done = rater.act("story_finished", {"story": state.current.story_id}).get_json()
    assert done["next"] == "/r/aiss-pilot/done"
    thanks = rater.client.get("/r/aiss-pilot/done").get_data(as_text=True)
    code = rows(study, "SELECT completion_code FROM raters WHERE rater_id = ?", rater_id)[0]
    assert code["completion_code"] in thanks
    assert f"https://example.org/done?cc={code['completion_code']}" in thanks


def test_a_reload_comes_back_to_the_same_story_with_the_answers_given(study):
    rater = Rater(study)
    rater.start()
    rater_id, state = rater.state()
    task = state.current
    rater.act("answer_given", {"story": task.story_id, "item": task.questions[0], "value": "5"})
    again = Rater(study)
    again.client = rater.client  # the same browser, reloading
    page = again.page()
    alias = rows(study, "SELECT alias FROM stories WHERE story_id = ?", task.story_id)[0]
    assert f'data-story="{alias["alias"]}"' in page
    assert re.search(r'name="answer-1" value="5" checked', page)  # the first question
    shown = rows(study, "SELECT count(*) AS n FROM rating_events WHERE rater_id = ?"
                 " AND type = 'story_shown'", rater_id)  # fmt: skip
    assert shown[0]["n"] == 1  # time on task counts from the first time it was shown


def test_a_participant_resumes_in_another_browser_only_with_their_platform_session(study):
    first = Rater(study, "?PROLIFIC_PID=p9&STUDY_ID=s&SESSION_ID=abc")
    first.start()
    stranger = Rater(study, "?PROLIFIC_PID=p9")
    page = stranger.client.get("/r/aiss-pilot?PROLIFIC_PID=p9")
    assert page.status_code == 403 and "another browser" in page.get_data(as_text=True)
    same = Rater(study).client.get("/r/aiss-pilot?PROLIFIC_PID=p9&SESSION_ID=abc")
    assert same.status_code == 302 and same.location.endswith("/r/aiss-pilot/rate")
    assert len(rows(study, "SELECT * FROM raters WHERE external_id = 'p9'")) == 1


def test_the_start_form_needs_its_token(study):
    rater = Rater(study)
    rater.client.get("/r/aiss-pilot")
    forged = rater.client.post("/r/aiss-pilot/start", data={"consent": "yes"})
    assert forged.status_code == 400 and "expired" in forged.get_data(as_text=True)
    assert rows(study, "SELECT * FROM raters") == []


def test_a_resent_answer_is_recorded_once(study):
    rater = Rater(study)
    rater.start()
    rater_id, state = rater.state()
    payload = {"story": state.current.story_id, "item": state.current.questions[0], "value": 3}
    assert rater.act("answer_given", payload, "same").get_json()["duplicate"] is False
    assert rater.act("answer_given", payload, "same").get_json()["duplicate"] is True
    events = rows(study, "SELECT * FROM rating_events WHERE rater_id = ?", rater_id)
    assert [e["type"] for e in events] == ["rater_started", "story_shown", "answer_given"]


@pytest.mark.parametrize(
    ("body", "headers", "status", "message"),
    [
        ({"type": "answer_given", "payload": {}}, {}, 400, "reload the page"),
        ({"type": ["x"], "payload": {}}, {"X-CYOA-Action": "1"}, 409, "malformed"),
        ({"type": "answer_given", "payload": None}, {"X-CYOA-Action": "1"}, 409, "malformed"),
        ({"type": "answer_given", "extra": 1}, {"X-CYOA-Action": "1"}, 400, "malformed"),
        ({"type": "rater_started", "payload": {}}, {"X-CYOA-Action": "1"}, 409, "malformed"),
        ({"type": "answer_given", "payload": {"story": "s1", "item": "1", "value": "\ud800"}},
         {"X-CYOA-Action": "1"}, 400, "cannot be saved"),
        ({"type": "answer_given", "payload": {"story": "s1", "item": "1", "value": "3",
          "rationale": "Because\x00 it is"}}, {"X-CYOA-Action": "1"}, 409, "cannot be saved"),
        ({"type": "answer_given", "action_id": "a\x00", "payload": {"story": "s1", "item": "1",
          "value": "3"}}, {"X-CYOA-Action": "1"}, 409, "cannot be saved"),
    ],
)  # fmt: skip
def test_every_bad_action_gets_a_sentence_not_a_traceback(study, body, headers, status, message):
    rater = Rater(study)
    rater.start()
    reply = rater.client.post("/r/aiss-pilot/action", json=body, headers=headers)
    assert reply.status_code == status
    assert reply.get_json()["ok"] is False and message in reply.get_json()["error"]


def test_a_study_whose_stories_all_have_their_raters_turns_new_raters_away(study):
    for n in range(4):
        rater = Rater(study, f"?pid=r{n}")
        assert rater.start().status_code == 302
    late = Rater(study, "?pid=late")
    reply = late.start()
    assert reply.status_code == 403
    assert "all the readers it needs" in reply.get_data(as_text=True)


def test_a_paused_study_takes_no_new_raters(study):
    runner = CliRunner()
    runner.invoke(cli, ["--db", study.config["DATABASE"], "experiment", "pause", "aiss-pilot"])
    page = Rater(study).client.get("/r/aiss-pilot")
    assert page.status_code == 403 and "not taking new" in page.get_data(as_text=True)


def test_a_spec_without_consent_or_with_link_only_stories_is_refused(app, tmp_path):
    runner = CliRunner()
    base = ["--db", app.config["DATABASE"], "experiment", "create"]
    blank = runner.invoke(cli, [*base, str(write_spec(tmp_path, consent="  "))])
    assert blank.exit_code != 0 and "consent is empty" in blank.output
    STORIES_WITH_LINK = [*STORIES, {"story_id": "0_NewYorker", "title": "T",
                                    "content": "https://www.newyorker.com/x"}]  # fmt: skip
    spec = write_spec(tmp_path)
    (tmp_path / "stories.jsonl").write_text(
        "".join(json.dumps(s) + "\n" for s in STORIES_WITH_LINK)
    )
    linked = runner.invoke(cli, [*base, str(spec)])
    assert (
        linked.exit_code != 0 and "only a link" in linked.output and "links = true" in linked.output
    )


def test_a_spec_whose_id_names_a_page_is_refused(app, tmp_path):
    base = ["--db", app.config["DATABASE"], "experiment", "create"]
    result = CliRunner().invoke(cli, [*base, str(write_spec(tmp_path, id="new"))])
    assert result.exit_code != 0 and "id 'new' names a page of the app" in result.output


def test_a_generated_story_keeps_its_model_seeds_and_sampling(app, tmp_path):
    spec = write_spec(tmp_path)
    origin = {"generated": True, "model": "fake-a", "model_version": "fake-1", "seeds": [7, 8]}
    generated = [{**STORIES[0], "origin": origin}, *STORIES[1:]]
    (tmp_path / "stories.jsonl").write_text("".join(json.dumps(s) + "\n" for s in generated))
    base = ["--db", app.config["DATABASE"], "experiment", "create"]
    assert CliRunner().invoke(cli, [*base, str(spec)]).exit_code == 0
    db = store.connect(app.config["DATABASE"])
    stored = {r["story_id"]: json.loads(r["origin"]) for r in db.query("SELECT * FROM stories")}
    db.close()
    assert stored["s1"] == {**origin, "file": "stories.jsonl"}
    assert stored["s2"] == {"file": "stories.jsonl"}


def test_a_co_writing_experiment_s_finished_stories_can_be_rated(app, tmp_path):
    db = store.connect(app.config["DATABASE"])
    make_experiment(db, "cowrite")
    add_writer(db, "w1", story(("alpha", "beta"), "alpha", "w1"), {"happy": 4}, exp_id="cowrite")
    db.close()
    spec = write_spec(
        tmp_path, stories={"from": "cowriting", "experiment": "cowrite"}, stories_per_rater=1
    )
    result = CliRunner().invoke(
        cli, ["--db", app.config["DATABASE"], "experiment", "create", str(spec)]
    )
    assert result.exit_code == 0, result.output
    stored = rows(app, "SELECT * FROM stories WHERE experiment_id = 'aiss-pilot'")
    assert [row["source"] for row in stored] == ["alpha vs beta"]
    assert json.loads(stored[0]["origin"])["turns"][0]["author"] == "writer"
    empty = write_spec(tmp_path, id="none", stories={"from": "cowriting", "experiment": "nope"})
    refused = CliRunner().invoke(
        cli, ["--db", app.config["DATABASE"], "experiment", "create", str(empty)]
    )
    assert refused.exit_code != 0 and "nope" in refused.output


def test_the_dashboard_shows_progress_exclusions_results_and_each_rater_s_answers(app, tmp_path):
    spec = write_spec(
        tmp_path,
        attention_checks=[{"builtin": "aiss"}],
        exclusions=[{"rule": "failed_attention_checks", "at_least": 1}],
    )
    runner = CliRunner()
    for args in (["experiment", "create", str(spec)], ["experiment", "open", "aiss-pilot"]):
        assert runner.invoke(cli, ["--db", app.config["DATABASE"], *args]).exit_code == 0
    for name, check_answer in (("careful", "2"), ("careless", "5")):
        rater = Rater(app, f"?pid={name}")
        rater.start()
        while (task := rater.state()[1].current) is not None:
            for item in task.questions:
                value = check_answer if item == "qc-aiss" else "4"
                rater.act("answer_given", {"story": task.story_id, "item": item, "value": value})
            rater.act("story_finished", {"story": task.story_id})
            rater.page()
    researcher = Researcher(app)
    researcher.login()
    researcher.analysed("/research/ratings/aiss-pilot/progress.json")
    page = researcher.get("/research/ratings/aiss-pilot").get_data(as_text=True)
    assert "Quality control" in page and "failed at least 1 attention check" in page
    assert re.search(r"<dt>Excluded</dt><dd>1</dd>", page)
    assert "(kept raters)" in page and "(all raters)" in page  # with and without exclusions
    careless = rows(app, "SELECT rater_id FROM raters WHERE external_id = 'careless'")[0]
    rater_page = researcher.get(f"/research/ratings/aiss-pilot/raters/{careless['rater_id']}")
    text = rater_page.get_data(as_text=True)
    assert "The story had a clear theme." in text and "qc-aiss" in text
    download = researcher.get("/research/ratings/aiss-pilot/download/raters.csv")
    assert download.status_code == 200 and b"failed at least 1 attention check" in download.data


@pytest.mark.parametrize("value", ["9" * 5000, "²", "①", "٣"])
def test_an_answer_that_is_no_ascii_whole_number_is_refused_with_a_sentence(study, value):
    rater = Rater(study)
    rater.start()
    task = rater.state()[1].current
    reply = rater.act(
        "answer_given", {"story": task.story_id, "item": task.questions[0], "value": value}
    )
    assert reply.status_code == 409
    assert reply.get_json()["error"] == "Please choose one of the answers offered."
    assert rows(study, "SELECT count(*) AS n FROM judgements")[0]["n"] == 0


def test_a_rater_answers_a_0_to_10_rubric_on_its_own_points(app, tmp_path):
    rubric = {
        "id": "rubric",
        "name": "Rubric",
        "items": [{"id": "plot", "text": "How good is the plot?", "kind": "likert", "low": 0,
                   "points": 11}],
    }  # fmt: skip
    runner = CliRunner()
    base = ["--db", app.config["DATABASE"]]
    spec = write_spec(tmp_path, instrument=rubric)
    for args in (["experiment", "create", str(spec)], ["experiment", "open", "aiss-pilot"]):
        result = runner.invoke(cli, [*base, *args])
        assert result.exit_code == 0, result.output
    rater = Rater(app)
    rater.start()
    page = rater.page()
    points = re.findall(r'<input type="radio" name="answer-1" value="(\d+)"', page)
    assert points == [str(point) for point in range(0, 11)]
    rater_id, state = rater.state()
    story = state.current.story_id
    reply = rater.act("answer_given", {"story": story, "item": "plot", "value": "0"})
    assert reply.get_json() == {"ok": True, "duplicate": False}
    off = rater.act("answer_given", {"story": story, "item": "plot", "value": "11"})
    assert off.status_code == 409 and "choose one of the answers" in off.get_json()["error"]
    stored = rows(app, "SELECT value FROM judgements WHERE rater_id = ?", rater_id)
    assert stored == [{"value": 0.0}]
