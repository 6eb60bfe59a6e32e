"""A rating study in Spanish with the example crowd scale, over HTTP: the researcher creates
and opens it, a rater reads the Spanish items and answers them, and the export and the
evaluation card say the items were read in translation. A study in a language its
instrument lacks is refused before it exists."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from tests.paths import DATA
from tests.rating.test_rating_journey import Rater, rows, write_spec
from tests.rating.test_research_rating_admin import form as rating_form

pytestmark = pytest.mark.both_databases

NOTE = (
    "items translated to Spanish by the CYOA maintainers (translated from the English items "
    "for this example; not back-translated); not the validated instrument"
)


def invoke(app, *args: str):
    return CliRunner().invoke(cli, ["--db", app.config["DATABASE"], *args])


@pytest.fixture
def spanish_study(app, tmp_path):
    spec = write_spec(tmp_path, instrument=str(DATA / "scales" / "crowd-1-4.toml"), language="es")
    created = invoke(app, "experiment", "create", str(spec))
    assert created.exit_code == 0, created.output
    opened = invoke(app, "experiment", "open", "aiss-pilot")
    assert opened.exit_code == 0, opened.output
    return app


def test_a_rater_in_a_spanish_study_reads_and_answers_the_spanish_items(spanish_study, researcher):
    rater = Rater(spanish_study)
    assert rater.start().status_code == 302
    page = rater.page()
    assert "El relato es fluido." in page and "The story is fluent." not in page
    assert "En gran parte" in page and "Mostly" not in page
    rater_id, state = rater.state()
    story = state.current.story_id
    replies = rater.answer_all(3)
    assert all(reply.get_json() == {"ok": True, "duplicate": False} for reply in replies)
    stored = rows(spanish_study, "SELECT item_id, value FROM judgements WHERE rater_id = ?",
                  rater_id)  # fmt: skip
    assert sorted(r["item_id"] for r in stored) == ["coherent", "fluent", "interesting"]
    assert {r["value"] for r in stored} == {3.0}

    export = researcher.get("/research/ratings/aiss-pilot/download/judgements.csv")
    assert export.status_code == 200
    exported = list(csv.DictReader(io.StringIO(export.get_data(as_text=True))))
    assert {(r["story_id"], r["items_language"], r["items_translation"]) for r in exported} == {
        (story, "es", NOTE)
    }
    card = researcher.get("/research/ratings/aiss-pilot/evaluation-card.md")
    text = card.get_data(as_text=True)
    assert f"- Shown in Spanish: {NOTE}." in text
    assert "- `fluent` El relato es fluido." in text


def test_a_spanish_study_with_the_aiss_is_refused_before_it_exists(app, tmp_path):
    created = invoke(app, "experiment", "create", str(write_spec(tmp_path, language="es")))
    assert created.exit_code != 0
    assert (
        "The instrument 'aiss-v1' is validated in English only (no licensed published Spanish "
        "translation exists)" in created.output
    )
    assert rows(app, "SELECT id FROM experiments WHERE id = 'aiss-pilot'") == []


def test_a_spanish_study_whose_instrument_lacks_an_item_is_refused(app, tmp_path):
    crowd = (DATA / "scales" / "crowd-1-4.toml").read_text(encoding="utf-8")
    start = crowd.index("[translations.es.items.interesting]")
    end = crowd.index("[translations.ar]")
    (tmp_path / "partial.toml").write_text(crowd[:start] + crowd[end:], encoding="utf-8")
    spec = json.loads(write_spec(tmp_path, language="es").read_text())
    (tmp_path / "rating.json").write_text(json.dumps({**spec, "instrument": "partial.toml"}))
    created = invoke(app, "experiment", "create", str(tmp_path / "rating.json"))
    assert created.exit_code != 0
    assert (
        "The Spanish translation of the instrument 'crowd-1-4' lacks item 'interesting': add "
        "it to [translations.es] in its definition" in created.output
    )


def test_a_stored_study_whose_instrument_lacks_its_language_is_not_opened(app, tmp_path):
    spec = write_spec(tmp_path, instrument=str(DATA / "scales" / "rubric-0-10.toml"))
    assert invoke(app, "experiment", "create", str(spec)).exit_code == 0
    # A study stored in English, its spec later changed to Spanish (as an older version
    # could store it): Open checks the stored instrument against the stored languages.
    db = store.connect(app.config["DATABASE"])
    try:
        stored = json.loads(store.experiment_row(db, "aiss-pilot")["spec"])
        store.upsert_experiment(db, "aiss-pilot", "Short stories", {**stored, "language": "es"})
    finally:
        db.close()
    opened = invoke(app, "experiment", "open", "aiss-pilot")
    assert opened.exit_code != 0
    assert (
        "'aiss-pilot' cannot be opened: The instrument 'rubric-0-10' has no Spanish "
        "translation, and the study is shown in Spanish: none of its 3 items can be shown."
    ) in " ".join(opened.output.split())
    assert rows(app, "SELECT status FROM experiments WHERE id = 'aiss-pilot'") == [
        {"status": "paused"}
    ]


def test_the_form_refuses_an_arabic_study_with_the_aiss_with_a_sentence(researcher):
    made = researcher.post("/research/ratings/new", data=rating_form(language="ar"))
    assert made.status_code == 400
    assert (
        "The instrument &#39;aiss-v1&#39; is validated in English only (no licensed published "
        "Arabic translation exists)"
    ) in made.get_data(as_text=True)
