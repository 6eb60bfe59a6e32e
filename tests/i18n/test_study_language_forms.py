"""Researchers choose a study's language on both new-study forms; the experiment's page and
its evaluation card say which language participants' pages were in."""

import html
import io

from tests.cowriting.test_research_form_fixes import form as cowriting_form
from tests.paths import DATA
from tests.rating.test_research_rating_admin import form as rating_form
from tests.rating.test_research_rating_admin import stored_spec


def test_a_co_writing_study_made_on_the_form_is_in_spanish_and_its_card_says_so(app, researcher):
    form = researcher.get("/research/experiments/new").get_data(as_text=True)
    assert '<option value="ar" >ar: Arabic (العربية)</option>' in form
    made = researcher.post("/research/experiments/new", data=cowriting_form(language="es"))
    assert made.status_code == 302, made.get_data(as_text=True)
    assert stored_spec(app, "new-study")["language"] == "es"
    page = html.unescape(researcher.get("/research/experiments/new-study").get_data(as_text=True))
    assert "The participants' interface was in Spanish (es)." in page
    card = researcher.get("/research/experiments/new-study/evaluation-card.md")
    assert "The participants' interface was in Spanish (es)." in card.get_data(as_text=True)
    consent = app.test_client().get("/s/new-study")  # paused: the closed page, in Spanish
    assert '<html lang="es" dir="ltr">' in consent.get_data(as_text=True)


def test_a_rating_study_made_on_the_form_is_in_arabic_or_the_browsers_choice_of_spanish(
    app, researcher
):
    # The AISS is English only: the example crowd scale has Arabic and Spanish translations.
    crowd = (io.BytesIO((DATA / "scales" / "crowd-1-4.toml").read_bytes()), "crowd-1-4.toml")
    data = rating_form(language="ar", languages="es", instrument="custom", instrument_file=crowd)
    made = researcher.post("/research/ratings/new", data=data)
    assert made.status_code == 302, made.get_data(as_text=True)
    spec = stored_spec(app, "aiss-pilot")
    assert (spec["language"], spec["languages"]) == ("ar", ["ar", "es"])
    expected = (
        "The participants' interface was in Arabic (ar, written right to left), or in Spanish "
        "(es) for a participant whose browser preferred it (the language each participant saw "
        "is recorded when they start)."
    )
    page = html.unescape(researcher.get("/research/ratings/aiss-pilot").get_data(as_text=True))
    assert expected in page
    card = researcher.get("/research/ratings/aiss-pilot/evaluation-card.md")
    assert expected in card.get_data(as_text=True)
    edit = researcher.get("/research/ratings/aiss-pilot/edit").get_data(as_text=True)
    assert 'value="es"' in edit and '<option value="ar" selected>' in edit


def test_a_language_the_app_has_no_catalogue_for_is_refused_on_the_forms(researcher):
    for path, data in (
        ("/research/experiments/new", cowriting_form(language="fr")),
        ("/research/ratings/new", rating_form(languages="de")),
    ):
        reply = researcher.post(path, data=data)
        assert reply.status_code == 400, path
        assert "the app has" in html.unescape(reply.get_data(as_text=True)), path
