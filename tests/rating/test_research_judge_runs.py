"""Judge runs from the researcher's pages: the form shows each card's estimate and the prompt
templates as they will be sent, starts a run in the background, and the run's page follows
it to the end; a run that cannot start says why, on the form."""

from __future__ import annotations

import re
import time

import pytest
from conftest import Researcher

from cyoa import store
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement, Story
from cyoa.rating.instruments import TTCW
from cyoa.web.parts import shared as shared_parts
from cyoa.words import sampling_words

PAGE = "/research/ratings/tiny/judges/run"


@pytest.fixture
def judged_app(make_app):
    """An app whose fake card 'fake-a' answers Yes or No, and an imported TTCW study 'tiny'
    of two stories with their texts."""
    return tiny_study(make_app(options_a='answers = ["Yes", "No"]'))


def tiny_study(app):
    """``app`` with the imported TTCW study 'tiny' of two stories with their texts."""
    db = store.connect(app.config["DATABASE"])
    stories = [Story(f"s{n}", "GPT4", "", f"Story {n}: the keeper found a letter.", "")
               for n in (1, 2)]  # fmt: skip
    judgements = [
        Judgement(story.story_id, "GPT4", f"e{rater}", item.id, float(rater == 0), None, "Why.")
        for story in stories
        for rater in range(3)
        for item in TTCW.items
    ]
    import_rating_experiment(db, "tiny", TTCW, judgements, stories)
    db.close()
    return app


def test_the_judge_pages_need_a_researcher(judged_app):
    client = judged_app.test_client()
    assert client.get(PAGE).status_code == 302
    assert client.get(f"{PAGE}/fake-a").status_code == 302


def test_the_form_shows_each_card_s_estimate_and_the_templates_it_will_send(judged_app):
    researcher = Researcher(judged_app)
    researcher.login()
    dashboard = researcher.get("/research/ratings/tiny").get_data(as_text=True)
    assert f'href="{PAGE}"' in dashboard
    page = researcher.get(PAGE).get_data(as_text=True)
    assert "28 prompts: about" in page and "the time is not known yet" in page
    assert 'name="probe" value="fake-a"' in page  # the form offers to time the card
    assert (
        "{full_prompt}" in page and "Begin your answer with &#39;Yes&#39; or &#39;No&#39;" in page
    )


def test_a_run_started_from_the_page_is_followed_to_its_end(judged_app):
    researcher = Researcher(judged_app)
    researcher.login()
    started = researcher.post(PAGE, {"model": "fake-a", "items": "1,13", "seed": "3"})
    assert started.status_code == 302 and started.headers["Location"].endswith(f"{PAGE}/fake-a")
    deadline = time.monotonic() + 30
    while (status := researcher.get(f"{PAGE}/fake-a.json").get_json())["state"] == "running":
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    assert status["state"] == "done" and status["done"] == status["total"] == 4
    assert status["seed"] == 3 and status["unparsed"] == 0
    page = researcher.get(f"{PAGE}/fake-a").get_data(as_text=True)
    assert "done: 4/4 verdicts" in page and "Estimate at the start: 4 prompts" in page
    listing = researcher.get(PAGE).get_data(as_text=True)
    assert "<td>done</td>" in listing and "<td>4/4</td>" in listing


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"model": "gpt-9"}, "Choose the judge&#39;s model"),
        ({"model": "fake-a", "seed": "-1"}, "Seed: a whole number"),
        ({"model": "fake-a", "judge": "e1"}, "already has a judge or rater"),
        ({"model": "fake-a", "items": "99"}, "has no item &#39;99&#39;"),
    ],
)
def test_a_run_that_cannot_start_says_why_on_the_form(judged_app, form, message):
    researcher = Researcher(judged_app)
    researcher.login()
    response = researcher.post(PAGE, form)
    assert response.status_code == 400 and message in response.get_data(as_text=True)


def wait_for_the_end(researcher: Researcher, judge: str) -> dict:
    deadline = time.monotonic() + 30
    while (status := researcher.get(f"{PAGE}/{judge}.json").get_json())["state"] == "running":
        assert time.monotonic() < deadline, status
        time.sleep(0.05)
    return status


def test_a_probe_gives_the_form_a_time_before_any_run_and_says_where_it_came_from(judged_app):
    shared_parts(judged_app).pool.get("fake-a", timeout=30)  # loaded, as a probe needs
    researcher = Researcher(judged_app)
    researcher.login()
    probed = researcher.post(f"{PAGE}/probe", {"probe": "fake-a"})
    assert probed.status_code == 302
    page = researcher.get(PAGE).get_data(as_text=True)
    sentence = page.split('class="muted small judge-estimate">', 1)[1].split("</p>", 1)[0]
    assert re.search(
        r"28 prompts: about [\d,]+ tokens to read and at most [\d,]+ to write; about [\d.]+ "
        r"(s|min|h) \(at the speed of a probe at \d\d:\d\d UTC: one prompt, 8 tokens\)",
        sentence,
    ), sentence
    assert 'name="probe" value="fake-a"' not in page
    refused = researcher.post(f"{PAGE}/probe", {"probe": "gpt-9"})
    assert refused.status_code == 400 and "Choose the model to time" in refused.text


def test_the_run_page_links_its_experiment_words_its_sampling_and_says_why_verdicts_failed(
    make_app,
):
    app = tiny_study(make_app(options_a='answers = ["The keeper smiled at the sea."]'))
    researcher = Researcher(app)
    researcher.login()
    assert researcher.post(PAGE, {"model": "fake-a", "items": "1,13"}).status_code == 302
    status = wait_for_the_end(researcher, "fake-a")
    assert status["state"] == "done" and status["unparsed"] == status["done"] == 4
    page = researcher.get(f"{PAGE}/fake-a").get_data(as_text=True)
    assert 'id="judge-run-experiment" href="/research/ratings/tiny"' in page
    sampling = page.split('id="judge-run-sampling">', 1)[1].split("</span>", 1)[0]
    assert "{" not in sampling and "top-k" in sampling and "temperature" in sampling
    why = page.split('id="judge-unreadable"', 1)[1]
    assert "4 of 4: the answer did not start with the word Yes or No." in why
    assert why.count('<pre class="judge-answer">The keeper smiled at the sea.') == 3  # the first


def test_sampling_is_said_in_words():
    assert sampling_words(
        {"top_k": 40, "top_p": 1.0, "temperature": 1.0, "max_new_tokens": 256}
    ) == ("top-k 40, temperature 1.0, at most 256 tokens")
    assert sampling_words({"top_k": 0, "top_p": 0.9, "temperature": 0.7, "max_new_tokens": 1}) == (
        "nucleus p = 0.9, temperature 0.7, at most 1 token"
    )
    assert sampling_words({"top_k": 0, "top_p": 1.0, "temperature": 1.0}) == (
        "no top-k or nucleus filter, temperature 1.0"
    )
