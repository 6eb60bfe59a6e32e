"""A co-writing study in Arabic: distinct-n and the edit metrics count its words, and the
English-only metrics say why they are left out instead of being computed on Arabic."""

import json
from datetime import UTC, datetime

import pytest

from cyoa import store
from cyoa.cowriting.analysis.data import load_study
from cyoa.cowriting.analysis.results import HUMAN
from cyoa.cowriting.analysis.tables import analyze
from cyoa.cowriting.analysis.tag_cache import tag_experiment
from cyoa.cowriting.research.dashboard import compute_results
from cyoa.cowriting.research.exports import card_text, preference_rows, session_rows
from cyoa.cowriting.spec import experiment_from_dict
from cyoa.errors import AnalysisError
from cyoa.generation import load_model_cards
from tests.paths import ROOT
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment

NOT_COMPUTED = (
    "Noun and verb concreteness: not computed: English-only (Brysbaert et al. norms / spaCy "
    "en_core_web_sm) and this study is in Arabic."
)


def arabic_turns() -> list[Turn]:
    return [
        Turn(
            line="ذهب الولد إلى السوق.",
            suggestions={FIRST: "ذهب الولد إلى البيت.", SECOND: "نامت القطة."},
            slot1=FIRST,
            chosen=FIRST,
            final="ذهب الولد إلى المدرسة.",
        )
        for _ in range(5)
    ]


@pytest.fixture
def db(tmp_path):
    database = store.connect(tmp_path / "ar.sqlite")
    make_experiment(database)
    spec = store.experiment_row(database, "exp")["spec"]
    store.upsert_experiment(
        database, "exp", "A synthetic study", {**json.loads(spec), "language": "ar"}
    )
    add_writer(database, "w1", arabic_turns())
    yield database
    database.close()


def test_the_analysis_of_an_arabic_study_says_concreteness_is_english_only(db):
    analysis = analyze(load_study(db, "exp"), resamples=200)
    rows = {row.metric: row for row in analysis.text.rows}
    assert set(rows) == {
        "distinct_1",
        "distinct_2",
        "distinct_3",
        "corpus_distinct_1",
        "corpus_distinct_2",
        "corpus_distinct_3",
    }
    assert NOT_COMPUTED in analysis.text.not_computed
    assert NOT_COMPUTED in analysis.notes
    # The writer's five lines: ذهب الولد إلى السوق five times -> 4 distinct words of 20.
    assert rows["distinct_1"].values[HUMAN] == pytest.approx(4 / 20)


def test_the_edit_metrics_of_an_arabic_study_count_its_words(db):
    analysis = analyze(load_study(db, "exp"), resamples=200)
    user = next(row for row in analysis.edits.rows if row.metric == "user")
    jaccard = next(row for row in analysis.edits.rows if row.metric == "jaccard")
    # ذهب الولد إلى البيت -> ذهب الولد إلى المدرسة: 3 of 4 words kept in one block, 3 of 5
    # distinct words shared.
    assert user.overall[FIRST].mean == pytest.approx(75.0)
    assert jaccard.overall[FIRST].mean == pytest.approx(60.0)


def test_the_english_scripts_compatibility_mode_refuses_an_arabic_study(db):
    with pytest.raises(AnalysisError, match="English-only.*is in Arabic: analyse it without"):
        analyze(load_study(db, "exp"), compat="cyoa-2021")


def test_an_arabic_studys_sentences_are_never_tagged_by_the_english_model(db):
    assert tag_experiment(db, "exp") == 0
    assert db.execute("SELECT COUNT(*) FROM sentence_tags").fetchone()[0] == 0


def arabic_experiment():
    return experiment_from_dict(
        {
            "id": "exp",
            "title": "A synthetic study",
            "language": "ar",
            "systems": [
                {"name": FIRST, "model": "gemma-3-270m"},
                {"name": SECOND, "model": "gemma-3-270m"},
            ],
        },
        load_model_cards(ROOT / "models"),
    )


def test_the_evaluation_card_of_an_arabic_study_says_what_was_left_out(db):
    exp = arabic_experiment()
    now = datetime.now(UTC)
    card = card_text(db, exp, {}, now, session_rows(db, "exp", now), preference_rows(db, "exp"))
    assert "The text is in Arabic: distinct-n, Jaccard and USER count its words" in card
    assert f"- {NOT_COMPUTED}" in card


def test_the_dashboard_of_an_arabic_study_says_what_was_left_out(db):
    results = compute_results(db, arabic_experiment(), resamples=200)
    (text,) = [table for table in results.tables if table.key.startswith("text:")]
    assert NOT_COMPUTED in text.notes
    assert [row[0] for row in text.rows] == [
        "distinct-1 (fraction)",
        "distinct-2 (fraction)",
        "distinct-3 (fraction)",
        *(f"Corpus distinct-{n} (Li et al. 2016, per token)" for n in (1, 2, 3)),
    ]
    # The chart's edit metrics count Arabic words too: Jaccard 60 for every accepted round.
    assert set(results.edit_values[FIRST]["jaccard"]) == {60.0}
