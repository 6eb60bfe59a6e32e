"""Participants cannot tell from their link or page which models they compare: the shipped
studies have neutral ids and titles, a researcher whose experiment id or title names a model
is warned on its page, and the writer's page names no model."""

from __future__ import annotations

import re

from conftest import Researcher, Writer, write_setup

from cyoa import ROOT, create_app, store
from cyoa.cowriting.spec import load_experiments
from cyoa.generation import load_model_cards
from cyoa.web.blinding import models_named, naming_warning
from tests.cli.test_cli_links import create_rating

CARDS = load_model_cards(ROOT / "models")


def test_an_id_naming_a_models_family_or_card_is_found():
    cards = list(CARDS.values())
    assert models_named("gemma-vs-smollm", cards) == ["gemma-3-270m", "smollm2-135m-instruct"]
    assert models_named("Stories by Gemma", cards) == ["gemma-3-270m"]
    assert models_named("pilot-smollm2-135m-instruct", cards) == ["smollm2-135m-instruct"]
    assert models_named("short-story-1", cards) == []
    assert models_named("Write a short story with an AI helper", cards) == []


def test_the_shipped_studies_name_no_model_in_their_ids_or_titles():
    for exp in load_experiments(ROOT / "experiments", CARDS).values():
        assert naming_warning(exp.id, exp.title, CARDS.values()) == "", exp.id
        for system in exp.systems:
            assert system.model.name.split("-")[0] not in exp.id


def test_a_study_whose_id_names_a_model_is_flagged_on_its_page(app, tmp_path):
    # The tests' fake cards are fake-a and fake-b: "fake-ab" names them.
    researcher = Researcher(app)
    researcher.login()
    page = researcher.get("/research/experiments/fake-ab").get_data(as_text=True)
    warning = re.search(r'id="naming-warning">([^<]+)<', page)
    assert warning and "they name fake-a, fake-b: clone this experiment" in warning[1]


def test_a_rating_study_whose_title_names_a_model_is_flagged_and_a_neutral_one_is_not(tmp_path):
    app = create_app(write_setup(tmp_path))
    create_rating(app, tmp_path)
    researcher = Researcher(app)
    researcher.login()
    page = researcher.get("/research/ratings/aiss-pilot").get_data(as_text=True)
    assert 'id="naming-warning"' not in page
    db = store.connect(app.config["DATABASE"])
    try:
        db.execute("UPDATE experiments SET title = 'Fake stories' WHERE id = 'aiss-pilot'")
    finally:
        db.close()
    page = researcher.get("/research/ratings/aiss-pilot").get_data(as_text=True)
    assert 'id="naming-warning"' in page


def test_the_writers_page_and_state_name_no_model(app):
    writer = Writer(app)
    writer.write_round(1)
    sent = writer.http.get("/s/fake-ab/write").get_data(as_text=True) + str(writer.state())
    for name in ("fake-a-topk", "fake-b-topk", "Fake model"):
        assert name not in sent
