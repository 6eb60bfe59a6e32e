"""A researcher previews a rating study as a rater sees it, story by story and in any status,
and nothing about the preview is recorded; the rater's and writer's pages take no more text
in a box than the server accepts for it, and cannot send answers natively."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from cyoa.cli import cli
from cyoa.cowriting.flow import DRAFT_MAX_CHARS
from cyoa.rating.flow import RATIONALE_MAX_CHARS, TEXT_MAX_CHARS
from cyoa.rating.research.preview import story_number
from cyoa.web.participants import storage_key
from tests.paths import ROOT
from tests.rating.test_rating_journey import Rater, rows, study, write_spec  # noqa: F401 - `study` is a fixture
from tests.web.test_research_access import RESEARCHER_URLS

PREVIEW = "/research/ratings/aiss-pilot/preview"


def counts(app) -> dict[str, int]:
    return {
        table: rows(app, f"SELECT count(*) AS n FROM {table}")[0]["n"]
        for table in ("raters", "rating_events", "assignments", "judgements", "check_answers")
    }


def set_status(app, status: str) -> None:
    base = ["--db", app.config["DATABASE"]]
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    done = CliRunner().invoke(cli, [*base, "experiment", status, "aiss-pilot"], env=env)
    assert done.exit_code == 0, done.output


def test_the_preview_is_one_of_the_researcher_urls_that_need_a_login(study):  # noqa: F811
    assert ("research_rating_preview.preview", "/research/ratings/<exp_id>/preview", "GET") in (
        RESEARCHER_URLS
    )
    assert study.test_client().get(PREVIEW).headers["Location"].startswith("/research/login")


@pytest.mark.parametrize("status", ["open", "pause", "close"])
def test_a_researcher_previews_every_story_in_any_status_and_nothing_is_recorded(
    study,  # noqa: F811
    researcher,
    status,
):
    Rater(study, "?PROLIFIC_PID=real1&STUDY_ID=s&SESSION_ID=x").start()  # a real rater
    if status != "open":
        set_status(study, status)
    before = counts(study)
    pages = [researcher.get(f"{PREVIEW}?story={n}") for n in (1, 2, 3, 4)]
    assert [page.status_code for page in pages] == [200] * 4
    texts = [page.get_data(as_text=True) for page in pages]
    for n, text in enumerate(texts, start=1):
        assert "Preview — nothing you answer is saved" in text
        assert f"Story {n} of 4" in text and f"lighthouse number {n}." in text
        assert 'data-preview="1"' in text
        assert text.count('class="question"') == 22  # the AISS's items, as a rater sees them
    assert 'href="/research/ratings/aiss-pilot/preview?story=2"' in texts[0]  # next
    assert "Previous story" not in texts[0]
    assert 'href="/research/ratings/aiss-pilot/preview?story=3"' in texts[3]  # previous
    assert 'data-preview-next="/research/ratings/aiss-pilot"' in texts[3]  # finish: back
    assert counts(study) == before


def test_a_story_number_out_of_range_shows_the_nearest_story():
    assert [story_number(n, 4) for n in (None, 0, -3, 1, 3, 4, 99)] == [1, 1, 1, 1, 3, 4, 4]
    assert story_number(None, 1) == 1


def test_a_preview_asked_with_a_word_for_a_story_shows_the_first(study, researcher):  # noqa: F811
    page = researcher.get(f"{PREVIEW}?story=last")
    assert page.status_code == 200 and "Story 1 of 4" in page.get_data(as_text=True)


def test_the_rating_dashboard_links_to_the_preview(study, researcher):  # noqa: F811
    page = researcher.get("/research/ratings/aiss-pilot").get_data(as_text=True)
    assert f'id="preview-as-rater" href="{PREVIEW}"' in page


def test_the_rater_form_cannot_submit_natively_nor_name_the_rater(study):  # noqa: F811
    rater = Rater(study)
    rater.start()
    page = rater.page()
    assert re.search(r'<form class="card questions" id="questions" method="post"', page)
    assert 'type="submit"' not in page  # nothing a key press or a failed script could submit
    rater_id, _ = rater.state()
    assert f'data-rater="{storage_key(rater_id)}"' in page and rater_id not in page


def test_the_rater_page_box_limits_are_the_servers(study, researcher, tmp_path):  # noqa: F811
    spec = write_spec(tmp_path, id="ttcw-pilot", instrument="ttcw")
    base = ["--db", study.config["DATABASE"]]
    env = {"CYOA_MODELS_DIR": study.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    created = CliRunner().invoke(cli, [*base, "experiment", "create", str(spec)], env=env)
    assert created.exit_code == 0, created.output
    page = researcher.get("/research/ratings/ttcw-pilot/preview").get_data(as_text=True)
    assert f'data-part="why" rows="3" maxlength="{RATIONALE_MAX_CHARS}"' in page
    # Free-text answers come with custom instruments only: read from the template itself.
    template = (ROOT / "templates" / "rate.html").read_text()
    assert f'data-part="answer" rows="3" maxlength="{TEXT_MAX_CHARS}"' in template


def test_the_writers_boxes_take_no_more_than_the_server_keeps_of_a_draft(writer):
    page = writer.http.get("/s/fake-ab/write").get_data(as_text=True)
    assert page.count(f'maxlength="{DRAFT_MAX_CHARS}"') == 2  # the sentence and the edit
    assert f'data-box-max="{DRAFT_MAX_CHARS}"' in page  # the survey's boxes, made by write.js
