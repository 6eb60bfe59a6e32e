"""A study in the participants' language: every page a writer or rater reads, the sentences
the server sends them, and the browser's choice when a study allows several languages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SURVEY_ANSWERS, Writer

from cyoa import create_app, store
from cyoa.cli import cli
from cyoa.cowriting.research.exports import session_rows
from tests.conftest import write_setup
from tests.i18n.pages import english_words, html_language, page_text
from tests.paths import DATA
from tests.rating.test_rating_journey import Rater, write_spec
from tests.web.test_web_outage import sqlite_outage

# The AISS is English only: the example crowd scale has Arabic and Spanish translations.
CROWD = str(DATA / "scales" / "crowd-1-4.toml")


def rating_study(app, tmp_path, **fields):
    """``app`` with the journey tests' study rated on the crowd scale (``fields`` added to
    its spec), open."""
    runner = CliRunner()
    env = {"CYOA_MODELS_DIR": app.config["MODELS_DIR"], "CYOA_EXPERIMENTS_DIR": "/nonexistent"}
    base = ["--db", app.config["DATABASE"]]
    spec = str(write_spec(tmp_path, **{"instrument": CROWD, **fields}))
    assert runner.invoke(cli, [*base, "experiment", "create", spec], env=env).exit_code == 0
    assert runner.invoke(cli, [*base, "experiment", "open", "aiss-pilot"], env=env).exit_code == 0
    return app


def assert_arabic(html: str) -> None:
    assert html_language(html) == ("ar", "rtl")
    assert english_words(html) == [], page_text(html)


def test_every_page_of_an_arabic_co_writing_study_is_arabic_and_right_to_left(make_app):
    app = make_app(rounds=1, top='language = "ar"')
    http = app.test_client()
    consent = http.get("/s/fake-ab").get_data(as_text=True)
    assert_arabic(consent)
    assert "أوافق على المشاركة" in consent
    token = re.search(r'name="csrf_token" value="([^"]+)"', consent)[1]
    unticked = http.post("/s/fake-ab/start", data={"csrf_token": token})
    assert "يُرجى تحديد المربع" in unticked.get_data(as_text=True)
    writer = Writer(app, lang="ar")
    write = writer.http.get("/s/fake-ab/write").get_data(as_text=True)
    assert_arabic(write)
    assert "أضف جملتي" in write
    too_short = writer.act("line_submitted", {"text": "قصير"})
    assert too_short["error"] == "قصير جدًا — 20 حرفًا على الأقل."
    writer.write_round(1)
    assert writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})["ok"]
    done = writer.http.get("/s/fake-ab/done").get_data(as_text=True)
    assert_arabic(done)
    assert "رمز الإكمال الخاص بك هو" in done
    assert "ستُعاد إلى هناك تلقائيًا بعد 15 ثانية." in done
    missing = http.get("/s/no-such-study", headers={"Accept-Language": "ar"})
    assert missing.status_code == 404
    assert_arabic(missing.get_data(as_text=True))


def test_a_writer_turned_away_is_told_so_in_the_studys_language(tmp_path):
    config = write_setup(tmp_path, top='language = "ar"')
    app = create_app({**config, "START_BURST": 1, "STARTS_PER_MINUTE": 0.001})
    Writer(app)
    late = app.test_client()
    consent = late.get("/s/fake-ab").get_data(as_text=True)
    token = re.search(r'name="csrf_token" value="([^"]+)"', consent)[1]
    waiting = late.post("/s/fake-ab/start", data={"csrf_token": token, "consent": "yes"})
    assert waiting.status_code == 429
    assert_arabic(waiting.get_data(as_text=True))


def test_every_page_of_an_arabic_rating_study_is_arabic_and_right_to_left(app, tmp_path):
    study = rating_study(app, tmp_path, language="ar", raters_per_story=1)
    rater = Rater(study)
    consent = rater.client.get("/r/aiss-pilot").get_data(as_text=True)
    assert_arabic(consent)
    rater.start()
    page = rater.page()
    assert_arabic(page)
    assert "القصة 1 من 2" in page
    rater_id, state = rater.state()
    early = rater.act("story_finished", {"story": state.current.story_id}).get_json()
    assert early["error"].startswith("يُرجى الإجابة عن كل الأسئلة أولًا")
    for _ in range(2):
        rater.page()  # the story is shown before it is answered
        rater.answer_all()
        _, state = rater.state()
        finished = rater.act("story_finished", {"story": state.current.story_id}).get_json()
        assert finished["ok"], finished
    done = rater.client.get("/r/aiss-pilot/done").get_data(as_text=True)
    assert_arabic(done)
    assert "حُفظت إجاباتك." in done
    assert Rater(study, "?pid=other").start().status_code == 302  # the other two stories
    full = Rater(study, "?pid=late").start()
    assert full.status_code == 403
    assert_arabic(full.get_data(as_text=True))


def test_a_spanish_co_writing_study_runs_end_to_end_in_spanish(make_app):
    app = make_app(rounds=2, top='language = "es"')
    writer = Writer(app, lang="es")
    page = writer.http.get("/s/fake-ab/write").get_data(as_text=True)
    assert html_language(page) == ("es", "ltr")
    assert "Su turno: escriba la siguiente frase" in page
    assert '"Chosen": "Elegida"' in page  # the script's strings, from the same catalogue
    too_long = writer.act("line_submitted", {"text": "x" * 300})
    assert too_long["error"] == "Demasiado largo: como máximo 260 caracteres."
    for n in (1, 2):
        writer.write_round(n)
    unanswered = writer.act("survey_submitted", {"answers": {"happy": 4}})
    assert unanswered["error"] == (
        "Responda a todas las afirmaciones, por favor (falta: «Sentí que el sistema y yo "
        "colaborábamos para escribir la historia.»)."
    )
    assert writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})["ok"]
    done = writer.http.get("/s/fake-ab/done").get_data(as_text=True)
    assert "Su historia y sus respuestas están guardadas." in done
    assert "Volverá allí automáticamente dentro de 15 segundos." in done


@pytest.mark.parametrize(
    ("accept", "shown"),
    [("es-MX", "es"), ("ar-EG,en;q=0.5", "ar"), ("fr-FR", "en"), ("", "en")],
)
def test_the_browser_picks_among_the_studys_languages_or_gets_its_default(make_app, accept, shown):
    app = make_app(top='language = "en"\nlanguages = ["en", "es", "ar"]')
    page = app.test_client().get("/s/fake-ab", headers={"Accept-Language": accept})
    assert html_language(page.get_data(as_text=True))[0] == shown


def test_the_sessions_export_says_which_language_each_writer_saw(make_app):
    app = make_app(top='language = "en"\nlanguages = ["en", "es", "ar"]')
    for pid, accept in (("w-es", "es-MX"), ("w-ar", "ar, en;q=0.5"), ("w-en", "fr-FR")):
        browser = app.test_client()
        headers = {"Accept-Language": accept}
        browser.get(f"/s/fake-ab?pid={pid}", headers=headers)
        with browser.session_transaction() as cookie:
            form = {"consent": "yes", "csrf_token": cookie["csrf"], "pid": pid}
        assert browser.post("/s/fake-ab/start", data=form, headers=headers).status_code == 302
    db = store.connect(app.config["DATABASE"])
    try:
        shown = {row["participant"]: row["language"] for row in session_rows(db, "fake-ab")}
    finally:
        db.close()
    assert shown == {"w-es": "es", "w-ar": "ar", "w-en": "en"}


def test_a_study_in_one_language_ignores_the_browsers(make_app):
    app = make_app(top='language = "es"')
    page = app.test_client().get("/s/fake-ab", headers={"Accept-Language": "ar, en"})
    assert html_language(page.get_data(as_text=True)) == ("es", "ltr")


def test_the_researchers_pages_stay_english_for_an_arabic_browser(researcher):
    researcher.login()
    page = researcher.get("/research/", headers={"Accept-Language": "ar"})
    assert '<html lang="en">' in page.get_data(as_text=True)


def test_during_an_outage_an_arabic_writer_and_rater_are_told_to_wait_in_arabic(make_app, tmp_path):
    app = rating_study(make_app(top='language = "ar"'), tmp_path, language="ar")
    writer = Writer(app, lang="ar")
    rater = Rater(app, "?pid=r0")
    rater.start()
    _, state = rater.state()
    payload = {"story": state.current.story_id, "item": state.current.questions[0], "value": "3"}
    body = {"action_id": "a1", "type": "answer_given", "payload": rater.as_shown(payload)}
    # As static/js/rate.js sends an answer: in the page's language.
    headers = {"X-CYOA-Action": "1", "Accept": "application/json", "Accept-Language": "ar"}
    with sqlite_outage(Path(app.config["DATABASE"]))():
        page = writer.http.get("/s/fake-ab/write")
        answered = rater.client.post("/r/aiss-pilot/action", json=body, headers=headers)
        joined = writer.io.emit("join", {"experiment": "fake-ab"}, callback=True)
    assert page.status_code == 503
    assert_arabic(page.get_data(as_text=True))
    assert "تعيد الدراسة الاتصال بقاعدة بياناتها." in page.get_data(as_text=True)
    assert answered.get_json()["error"].startswith("تعيد الدراسة الاتصال بقاعدة بياناتها.")
    assert joined == {
        "ok": False,
        "retry": True,
        "error": "تعيد الدراسة الاتصال بقاعدة بياناتها. نصك محفوظ؛ وسيُرسل مرة أخرى بعد لحظة.",
    }
