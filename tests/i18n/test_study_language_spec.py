"""A study's language in its spec: English by default, a language the app has a catalogue for,
several for the browser to choose among, and a sentence naming the available ones otherwise."""

from pathlib import Path

import pytest

from cyoa.cowriting.spec import SpecError, experiment_from_dict
from cyoa.generation import load_model_cards
from cyoa.languages import available_languages, text_direction
from cyoa.rating.spec import RatingSpecError, parse_rating_spec
from tests.paths import DATA, ROOT

CARDS = load_model_cards(ROOT / "models")
COWRITING = {
    "id": "demo",
    "title": "Demo",
    "systems": [{"name": "a", "model": "gemma-3-270m"}, {"name": "b", "model": "gemma-3-270m"}],
}


def rating(tmp_path: Path, **fields) -> dict:
    (tmp_path / "stories.jsonl").write_text(
        '{"story_id": "s1", "source": "human", "text": "Once."}\n', encoding="utf-8"
    )
    return {
        "id": "pilot",
        "title": "Stories",
        "kind": "rating",
        "instrument": "aiss-v1",
        "consent": "c",
        "instructions": "i",
        "stories": {"file": "stories.jsonl"},
        **fields,
    }


def test_the_app_has_english_spanish_and_arabic_and_arabic_is_right_to_left():
    assert available_languages() == ("en", "ar", "es")
    assert [text_direction(code) for code in ("en", "es", "ar")] == ["ltr", "ltr", "rtl"]


def test_a_study_without_a_language_is_in_english(tmp_path):
    exp = experiment_from_dict(COWRITING, CARDS)
    spec = parse_rating_spec(rating(tmp_path), "spec", tmp_path)
    assert (exp.language, exp.languages) == (spec.language, spec.languages) == ("en", ("en",))


def test_a_study_in_arabic_may_let_the_browser_choose_spanish_too(tmp_path):
    fields = {"language": "ar", "languages": ["es", "ar"]}
    exp = experiment_from_dict({**COWRITING, **fields}, CARDS)
    # The AISS is English only: the example crowd scale has Arabic and Spanish translations.
    crowd = str(DATA / "scales" / "crowd-1-4.toml")
    spec = parse_rating_spec(rating(tmp_path, **fields, instrument=crowd), "spec", tmp_path)
    assert (exp.language, exp.languages) == (spec.language, spec.languages) == ("ar", ("ar", "es"))


@pytest.mark.parametrize(
    ("fields", "sentence"),
    [
        ({"language": "fr"}, '\'language\' must be one of .*"en", "ar", "es"'),
        ({"language": 3}, "'language' must be one of"),
        ({"languages": ["en", "de"]}, '\'languages\' lists \'de\'.*use "en", "ar", "es"'),
        ({"languages": "es"}, "'languages' must be a list"),
        ({"language": "ar", "languages": ["es"]}, "must be among 'languages'"),
    ],
)
def test_a_language_without_a_catalogue_is_refused_naming_the_available_ones(
    tmp_path, fields, sentence
):
    with pytest.raises(SpecError, match=sentence):
        experiment_from_dict({**COWRITING, **fields}, CARDS)
    with pytest.raises(RatingSpecError, match=sentence):
        parse_rating_spec(rating(tmp_path, **fields), "spec", tmp_path)
