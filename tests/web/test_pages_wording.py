"""What a newcomer reads on the pages says what is so: a rater with nothing answered is not
told that everything is saved, a rater is not primed with the instrument's name and scoring,
counts are in the right number, costs carry their currency, the shipped studies are told apart,
every page has an icon, and the rating form shows a choice's fields under that choice."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from cyoa.paths import ROOT
from cyoa.planning_cost import money
from cyoa.words import counted
from tests.rating.test_rating_journey import Rater, study  # noqa: F401 - `study` is a fixture


def badge(page: str) -> str:
    return re.search(r'id="saving"[^>]*>([^<]*)<', page)[1]


def test_a_rater_who_has_answered_nothing_reads_no_answers_yet_not_all_saved(study):  # noqa: F811
    rater = Rater(study)
    rater.start()
    assert badge(rater.page()) == "No answers yet"
    rater_id, state = rater.state()
    task = state.current
    item = task.questions[0]
    assert rater.act("answer_given", {"story": task.story_id, "item": item, "value": "4"}).json[
        "ok"
    ]
    assert badge(rater.page()) == "All answers saved"


def test_the_rater_page_names_neither_the_instrument_nor_its_scoring(study, researcher):  # noqa: F811
    rater = Rater(study)
    rater.start()
    page = rater.page()
    assert "AI Story Scale" not in page and "reverse-codes" not in page
    assert "Questions by M. Wiechmann, licensed under CC BY-SA 4.0" in page  # the licence's due
    preview = researcher.get("/research/ratings/aiss-pilot/preview").get_data(as_text=True)
    assert "For researchers (raters do not see this)" in preview
    assert "AI Story Scale (AISS) v1" in preview


def test_a_count_of_one_is_singular_and_any_other_plural():
    assert counted(1, "source") == "1 source"
    assert counted(3, "source") == "3 sources"
    assert counted(0, "story") == "0 stories"
    assert counted(1, "story") == "1 story"
    assert counted(2, "child", "children") == "2 children"


def test_an_amount_is_written_with_its_currency():
    assert money(53.2, "GBP") == "£53.20"
    assert money(1234.5, "usd") == "$1,234.50"
    assert money(12, "EUR") == "€12.00"
    assert money(7, "CHF") == "CHF 7.00"


def test_the_shipped_studies_have_titles_of_their_own():
    titles = [
        tomllib.loads(path.read_text())["title"]
        for path in sorted(Path(ROOT / "experiments").glob("*.toml"))
    ]
    assert len(titles) >= 2 and len(set(titles)) == len(titles)


def test_every_page_names_its_icon_and_the_icon_is_served(client, researcher):
    for page in (client.get("/s/fake-ab"), researcher.get("/research/", follow_redirects=True)):
        assert 'rel="icon" href="/static/favicon.svg"' in page.get_data(as_text=True)
    for url in ("/favicon.ico", "/static/favicon.svg"):
        icon = client.get(url)
        assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"
        assert icon.data.startswith(b"<svg")


def test_the_rating_form_puts_each_choices_fields_under_that_choice(researcher):
    page = researcher.get("/research/ratings/new").get_data(as_text=True)

    def fields_of(choice: str) -> str:
        return page.split(f'id="{choice}-fields">', 1)[1].split("</div></div>", 1)[0]

    assert 'name="questions_file"' in fields_of("instrument-fei")
    assert 'name="instrument_file"' in fields_of("instrument-custom")
    assert 'name="stories_file"' in fields_of("stories_from-file")
    assert 'name="links"' in fields_of("stories_from-file")
    assert 'name="cowriting_experiment"' in fields_of("stories_from-cowriting")
    generated = page.split('id="stories_from-generated-fields">', 1)[1]
    assert 'name="prompts"' in generated.split("</fieldset>", 1)[0]
    assert 'name="prompts"' not in page.split('id="stories_from-generated-fields">', 1)[0]
