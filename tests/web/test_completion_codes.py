"""Completion codes as crowd platforms check them: a study-wide code (Prolific's one code per
study) shown to every participant who finishes and sent back in the completion URL, or, by
default, a code per participant; both kinds of study, and a bad code refused with a sentence."""

from __future__ import annotations

import html

import pytest
from click.testing import CliRunner
from conftest import SURVEY_ANSWERS, Writer

from cyoa.cli import cli
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.research.forms import edited_spec
from cyoa.cowriting.research.forms import form_defaults as cowriting_form_defaults
from cyoa.cowriting.research.forms import form_from_spec as cowriting_form_from_spec
from cyoa.cowriting.research.forms import spec_from_form as cowriting_spec_from_form
from cyoa.cowriting.spec import SpecError, experiment_from_dict
from cyoa.rating.form import form_defaults as rating_form_defaults
from cyoa.rating.form import form_from_spec as rating_form_from_spec
from cyoa.rating.form import spec_from_form as rating_spec_from_form
from cyoa.rating.spec import RatingSpecError, parse_rating_spec
from cyoa.web.parts import shared as shared_parts
from tests.cowriting.test_research_form_fixes import form as cowriting_post
from tests.rating.test_rating_journey import Rater, rows, write_spec
from tests.rating.test_research_rating_admin import form as rating_post

pytestmark = pytest.mark.both_databases


def finish_story(writer: Writer) -> dict:
    for n in range(1, 3):
        writer.write_round(n)
    ack = writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})
    assert ack["ok"], ack
    return ack["state"]


def test_a_writer_of_a_study_with_a_study_wide_code_is_shown_it_and_sent_back_with_it(make_app):
    app = make_app(rounds=2, top='completion_code = "C1ABC2XY"')
    writer = Writer(app, "?PROLIFIC_PID=w1&STUDY_ID=s&SESSION_ID=x")
    state = finish_story(writer)
    assert state["completion_code"] == "C1ABC2XY"
    html = writer.http.get("/s/fake-ab/done").get_data(as_text=True)
    assert '<p class="code" id="completion-code">C1ABC2XY</p>' in html
    assert 'href="https://example.org/complete?cc=C1ABC2XY"' in html
    # The writer's own code is still stored, for a researcher's own check.
    own = rows(app, "SELECT completion_code FROM sessions")[0]["completion_code"]
    assert own != "C1ABC2XY" and own not in html


def test_without_a_study_wide_code_each_writer_gets_their_own(make_app):
    app = make_app(rounds=2)
    writer = Writer(app)
    state = finish_story(writer)
    own = rows(app, "SELECT completion_code FROM sessions")[0]["completion_code"]
    assert state["completion_code"] == own
    assert f"cc={own}" in writer.http.get("/s/fake-ab/done").get_data(as_text=True)


def finish_rating(rater: Rater) -> str:
    assert rater.start().status_code == 302
    for _ in range(2):
        rater.answer_all(4)
        _, state = rater.state()
        rater.act("story_finished", {"story": state.current.story_id})
        rater.page()  # the browser follows to the next story, which shows it
    return rater.client.get("/r/aiss-pilot/done").get_data(as_text=True)


@pytest.fixture
def rating_app(app, tmp_path):
    """The app with a factory for an opened AISS rating study created from a spec with
    extra fields."""

    def create(**fields):
        runner = CliRunner()
        env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
        base = ["--db", app.config["DATABASE"]]
        spec = str(write_spec(tmp_path, **fields))
        created = runner.invoke(cli, [*base, "experiment", "create", spec], env=env)
        assert created.exit_code == 0, created.output
        assert runner.invoke(cli, [*base, "experiment", "open", "aiss-pilot"]).exit_code == 0
        return app

    return create


def test_a_rater_of_a_study_with_a_study_wide_code_is_shown_it_and_sent_back_with_it(rating_app):
    app = rating_app(
        completion_code="C1ABC2XY",
        completion_url="https://app.prolific.com/submissions/complete?cc={code}",
    )
    thanks = finish_rating(Rater(app, "?PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=x"))
    assert '<p class="code" id="completion-code">C1ABC2XY</p>' in thanks
    assert "https://app.prolific.com/submissions/complete?cc=C1ABC2XY" in thanks
    own = rows(app, "SELECT completion_code FROM raters")[0]["completion_code"]
    assert own not in thanks


def test_without_a_study_wide_code_each_rater_gets_their_own(rating_app):
    app = rating_app()
    thanks = finish_rating(Rater(app))
    own = rows(app, "SELECT completion_code FROM raters")[0]["completion_code"]
    assert f"https://example.org/done?cc={own}" in thanks


def rating_spec(tmp_path, **fields) -> dict:
    """A minimal raw AISS rating spec (its stories file written in ``tmp_path``) with
    ``fields`` added."""
    stories = write_spec(tmp_path).parent.joinpath("stories.jsonl").name
    return {
        "id": "aiss-pilot",
        "title": "Short stories",
        "kind": "rating",
        "instrument": "aiss-v1",
        "consent": "c",
        "instructions": "i",
        "stories": {"file": stories},
        **fields,
    }


@pytest.mark.parametrize("code", ["", "has space", "x" * 65, 1234, "C1<b>"])
def test_a_bad_study_wide_code_is_refused_with_a_sentence_in_both_kinds(app, tmp_path, code):
    cards = shared_parts(app).cards
    spec = dict(cowriting_parts(app).study.experiments["fake-ab"].source)
    with pytest.raises(SpecError, match="completion_code must be 1–64 letters, digits"):
        experiment_from_dict({**spec, "completion_code": code}, cards)
    raw = rating_spec(tmp_path, completion_code=code)
    with pytest.raises(RatingSpecError, match="completion_code must be 1–64 letters, digits"):
        parse_rating_spec(raw, "spec", tmp_path)


def cowriting_form(**overrides) -> dict:
    return {
        **cowriting_form_defaults(),
        "id": "study-1",
        "consent": "You agree.",
        "instructions": "Write.",
        "system1_name": "alpha",
        "system1_model": "fake-a",
        "system2_name": "beta",
        "system2_model": "fake-b",
        **overrides,
    }


def test_the_cowriting_form_sets_keeps_and_clears_a_study_wide_code():
    assert cowriting_form_defaults()["completion_code"] == ""
    assert "completion_code" not in cowriting_spec_from_form(cowriting_form())
    spec = cowriting_spec_from_form(cowriting_form(completion_code=" C1ABC2XY "))
    assert spec["completion_code"] == "C1ABC2XY"
    assert cowriting_form_from_spec(spec)["completion_code"] == "C1ABC2XY"
    assert "completion_code" not in edited_spec(cowriting_form(completion_code=""), spec)


def test_the_rating_form_sets_and_shows_a_study_wide_code():
    values = {
        **rating_form_defaults(),
        "id": "pilot",
        "title": "Short stories",
        "consent": "You agree.",
        "instructions": "Read.",
    }
    files = {"stories": "s.jsonl"}
    assert values["completion_code"] == ""
    assert "completion_code" not in rating_spec_from_form(values, files)
    spec = rating_spec_from_form({**values, "completion_code": "C1ABC2XY"}, files)
    assert spec["completion_code"] == "C1ABC2XY"
    assert rating_form_from_spec(spec, "Short stories")["completion_code"] == "C1ABC2XY"


PROLIFIC_URLS = [
    "https://app.prolific.com/submissions/complete?cc={code}",
    "https://APP.PROLIFIC.COM/submissions/complete?cc=XYZ",
    "https://example.org/submissions/complete?cc={code}",
]


@pytest.mark.parametrize("url", PROLIFIC_URLS)
def test_a_prolific_completion_url_without_a_study_code_is_refused_in_both_kinds_specs(
    app, tmp_path, url
):
    cards = shared_parts(app).cards
    spec = dict(cowriting_parts(app).study.experiments["fake-ab"].source)
    spec.pop("completion_code", None)
    with pytest.raises(SpecError, match="a Prolific completion URL needs the study's completion"):
        experiment_from_dict({**spec, "completion_url": url}, cards)
    raw = rating_spec(tmp_path, completion_url=url)
    with pytest.raises(RatingSpecError, match="a Prolific completion URL needs the study's"):
        parse_rating_spec(raw, "spec", tmp_path)
    assert parse_rating_spec({**raw, "completion_code": "C1ABC2XY"}, "spec", tmp_path)


def test_both_forms_refuse_a_prolific_completion_url_without_a_study_code(app, researcher):
    url = "https://app.prolific.com/submissions/complete?cc={code}"
    for path, data in (
        ("/research/experiments/new", cowriting_post(completion_url=url)),
        ("/research/ratings/new", rating_post(completion_url=url)),
    ):
        reply = researcher.post(path, data=data)
        assert reply.status_code == 400, path
        assert "a Prolific completion URL needs the study" in html.unescape(reply.text), path
