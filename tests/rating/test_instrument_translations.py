"""Instruments in other languages: a custom instrument's translations, the sentence that
refuses a study in a language it lacks, the items raters read, and how a translation is
marked."""

import pytest

from cyoa.rating.form import custom_instrument_table
from cyoa.rating.instruments import (
    AISS_V1,
    InstrumentError,
    instrument_from_spec,
    load_instrument,
)
from cyoa.rating.instruments.definition import instrument_from_dict, instrument_to_dict
from cyoa.rating.instruments.translation import (
    as_read,
    in_language,
    missing_parts,
    translation_note,
    translation_problem,
)
from tests.paths import DATA

CROWD = DATA / "scales" / "crowd-1-4.toml"
AGREE = ["Disagree", "Neutral", "Agree"]


def scale(**translations) -> dict:
    """A two-item custom scale with instructions, and the given translations."""
    return {
        "id": "story-scale",
        "name": "Story scale",
        "instructions": "Think of the story you just read.",
        "items": [
            {"id": "fun", "text": "The story was fun.", "kind": "likert", "points": 3,
             "labels": AGREE},
            {"id": "pace", "text": "The pace was right.", "kind": "likert", "points": 3,
             "labels": AGREE},
        ],
        "translations": translations,
    }  # fmt: skip


DE_ACUERDO = ["En desacuerdo", "Neutral", "De acuerdo"]
SPANISH = {
    "translator": "Ana Pérez",
    "source": "translated for this study",
    "instructions": "Piense en el relato que acaba de leer.",
    "items": {
        "fun": {"text": "El relato fue divertido.", "labels": DE_ACUERDO},
        "pace": {"text": "El ritmo fue adecuado.", "labels": DE_ACUERDO},
    },
}


def test_the_example_crowd_scale_is_complete_in_spanish_and_arabic():
    crowd = load_instrument(str(CROWD))
    assert translation_problem(crowd, ["en", "es", "ar"]) is None
    arabic = in_language(crowd, "ar")
    assert arabic.item("fluent").text == "القصة سلسة."
    assert arabic.item("fluent").labels == ("لا على الإطلاق", "قليلًا", "في الغالب", "تمامًا")


def test_a_partial_translation_is_refused_with_a_sentence_naming_what_it_lacks():
    partial = {
        "translator": "Ana Pérez",
        "items": {"fun": {"text": "El relato fue divertido."}},
    }
    instrument = instrument_from_spec(scale(es=partial), "scale.toml")
    assert missing_parts(instrument, "es") == (
        "the labels of item 'fun'",
        "item 'pace'",
        "the instructions",
    )
    assert translation_problem(instrument, ["en", "es"]) == (
        "The Spanish translation of the instrument 'story-scale' lacks the labels of item "
        "'fun', item 'pace' and the instructions: add them to [translations.es] in its "
        'definition (docs/research.md, "Instruments in other languages").'
    )


def test_an_instrument_without_the_studys_language_is_refused_with_a_sentence():
    instrument = instrument_from_spec(scale(es=SPANISH), "scale.toml")
    assert translation_problem(instrument, ["ar"]) == (
        "The instrument 'story-scale' has no Arabic translation, and the study is shown in "
        "Arabic: none of its 2 items can be shown. Add [translations.ar] to its definition "
        'with every item, label and instruction (docs/research.md, "Instruments in other '
        'languages"), or run the study in English.'
    )
    # Every language the browser may pick is checked, not only the first.
    assert "no Arabic translation" in translation_problem(instrument, ["es", "ar"])


def test_the_validated_instruments_are_refused_in_another_language():
    assert translation_problem(AISS_V1, ["es"]) == (
        "The instrument 'aiss-v1' is validated in English only (no licensed published Spanish "
        "translation exists), and the study is shown in Spanish: run the study in English, "
        "or use a custom instrument with a Spanish translation of every item, label and "
        'instruction (docs/research.md, "Instruments in other languages").'
    )
    assert translation_problem(AISS_V1, ["en", "en-GB"]) is None


def test_raters_read_the_translated_items_scored_as_the_original():
    instrument = instrument_from_spec(scale(es=SPANISH), "scale.toml")
    spanish = in_language(instrument, "es-MX")  # a regional tag finds the Spanish one
    assert [item.text for item in spanish.items] == [
        "El relato fue divertido.",
        "El ritmo fue adecuado.",
    ]
    assert spanish.item("fun").labels == ("En desacuerdo", "Neutral", "De acuerdo")
    assert spanish.instructions == "Piense en el relato que acaba de leer."
    assert [(i.id, i.kind, i.scale) for i in spanish.items] == [
        (i.id, i.kind, i.scale) for i in instrument.items
    ]
    assert spanish.parse_value("fun", "3") == instrument.parse_value("fun", "3") == 3.0
    assert in_language(instrument, "en") is instrument


def test_a_study_stored_before_the_check_shows_its_raters_the_original_not_an_error():
    instrument = instrument_from_spec(scale(es=SPANISH), "scale.toml")
    with pytest.raises(InstrumentError, match="no Arabic translation"):
        in_language(instrument, "ar")
    assert as_read(instrument, "ar") is instrument
    assert as_read(instrument, "es").item("pace").text == "El ritmo fue adecuado."


def test_a_translation_is_marked_as_not_the_validated_instrument():
    spanish = in_language(instrument_from_spec(scale(es=SPANISH), "scale.toml"), "es")
    assert translation_note(spanish.translation) == (
        "items translated to Spanish by Ana Pérez (translated for this study); not the "
        "validated instrument"
    )
    validated = {**SPANISH, "validated": True, "source": "Pérez et al. (2024)"}
    published = in_language(instrument_from_spec(scale(es=validated), "s.toml"), "es")
    assert translation_note(published.translation).endswith(
        "(Pérez et al. (2024)); a validated translation"
    )


@pytest.mark.parametrize(
    ("translation", "message"),
    [
        ({**SPANISH, "translator": ""}, r"\[translations.es\]: translator \(who translated\)"),
        ({**SPANISH, "validated": True, "source": ""}, "is validated: give its source"),
        (
            {**SPANISH, "items": {**SPANISH["items"], "plot": {"text": "La trama."}}},
            "translates item\\(s\\) plot, which the instrument does not have",
        ),
        (
            {**SPANISH, "items": {"fun": {"text": "Divertido.", "labels": ["Sí", "No"]}}},
            "item 'fun' has 3 points: give labels as a list of 3",
        ),
        ({**SPANISH, "notes": "x"}, "unknown field\\(s\\) notes"),
    ],
)
def test_a_broken_translation_says_what_to_fix(translation, message):
    with pytest.raises(InstrumentError, match=message):
        instrument_from_spec(scale(es=translation), "scale.toml")


def test_a_translation_not_named_by_a_language_tag_is_refused():
    with pytest.raises(InstrumentError, match=r"\[translations.español\] is not a language tag"):
        instrument_from_spec(scale(español=SPANISH), "scale.toml")
    with pytest.raises(InstrumentError, match='language must be a BCP 47 tag such as "en"'):
        instrument_from_spec({**scale(), "language": "Spanish!"}, "scale.toml")


def test_a_translation_into_the_instruments_own_language_is_refused():
    with pytest.raises(InstrumentError, match="is the instrument's own language"):
        instrument_from_spec(scale(en=SPANISH), "scale.toml")


def test_an_instrument_written_in_spanish_needs_no_spanish_translation():
    spanish_first = {**scale(), "language": "es"}
    instrument = instrument_from_spec(spanish_first, "scale.toml")
    assert translation_problem(instrument, ["es"]) is None
    assert "no English translation" in translation_problem(instrument, ["en"])


def test_the_stored_instrument_keeps_its_translations():
    instrument = instrument_from_spec(scale(es=SPANISH), "scale.toml")
    assert instrument_from_dict(instrument_to_dict(instrument)) == instrument
    spanish = in_language(instrument, "es")
    assert instrument_from_dict(instrument_to_dict(spanish)) == spanish
    # The form keeps a custom instrument as a spec table when it is sent again.
    assert instrument_from_spec(custom_instrument_table(instrument), "the form") == instrument


def test_an_instrument_stored_before_translations_reads_as_english():
    stored = instrument_to_dict(instrument_from_spec(scale(), "scale.toml"))
    for key in ("language", "translations", "translation"):
        del stored[key]
    old = instrument_from_dict(stored)
    assert (old.language, old.translations, old.translation) == ("en", (), None)
