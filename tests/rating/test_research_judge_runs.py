"""Judge runs from the researcher's pages: the form shows each card's estimate and the prompt
templates as they will be sent, starts a run in the background, and the run's page follows
it to the end; a run that cannot start says why, on the form."""

from __future__ import annotations

import time

import pytest
from conftest import Researcher

from cyoa import store
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement, Story
from cyoa.rating.instruments import TTCW

PAGE = "/research/ratings/tiny/judges/run"


@pytest.fixture
def judged_app(make_app):
    """An app whose fake card 'fake-a' answers Yes or No, and an imported TTCW study 'tiny'
    of two stories with their texts."""
    app = make_app(options_a='answers = ["Yes", "No"]')
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
    assert "28 prompts: about" in page and "measured when the run starts" in page
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
