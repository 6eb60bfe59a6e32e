"""An instrument in another language: its translations, which ones a study lacks, and the
instrument as raters read it in their language.

A custom instrument's definition carries its translations beside its English fields, keyed
like them (see :mod:`cyoa.rating.instruments.custom`)::

    [translations.es]
    translator = "Ana Pérez"              # who translated; required
    source = "Translated for this study"  # the publication, or how it was made
    validated = false                     # true only for a published, validated translation
    name = "Escala de relatos"            # optional
    instructions = "Piense en el relato." # required when the instrument has instructions

    [translations.es.items.fun]           # one table per item, by the item's id
    text = "El relato fue divertido."
    labels = ["Muy en desacuerdo", "…"]    # required when the item's points are named

A study in a language (:func:`missing_parts`) whose translation lacks an item, a label or
the instructions is refused with a sentence naming them (:func:`translation_problem`); the
rater page shows :func:`in_language`. A translation is not the validated instrument:
exports and the evaluation card say so (:func:`translation_note`). The validated
instruments (AISS, TTCW, FEI) have no licensed published translation and stay English.

Reference: Beaton, D. E., Bombardier, C., Guillemin, F. and Ferraz, M. B. (2000).
Guidelines for the Process of Cross-Cultural Adaptation of Self-Report Measures. Spine
25(24): a translated questionnaire needs its own validation before it is the instrument.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from cyoa.languages import language_name, primary_language
from cyoa.rating.instruments.types import (
    BUILT_IN_IDS,
    Instrument,
    InstrumentError,
    Item,
    ItemTranslation,
    Translation,
)
from cyoa.words import counted

# A BCP 47 tag as studies name them: a language, then optional subtags ("es", "es-MX").
LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$")
TRANSLATION_KEYS = {"translator", "source", "validated", "name", "instructions", "items"}
ITEM_KEYS = {"text", "labels"}
# Where the researcher reads how to add a translation.
HOW_TO = 'docs/research.md, "Instruments in other languages"'


def _same_language(a: str, b: str) -> bool:
    return a == b or primary_language(a) == primary_language(b)


def translation_for(instrument: Instrument, language: str) -> Translation | None:
    """``instrument``'s translation into ``language`` (BCP 47): the one with that very tag,
    else one of the same primary language ("es" for "es-MX"); None if it has none."""
    exact = [t for t in instrument.translations if t.language == language]
    close = [t for t in instrument.translations if _same_language(t.language, language)]
    return (exact or close or [None])[0]


def _named_labels(item: Item) -> bool:
    """Whether a Likert item's points carry words (which need translating), not numbers."""
    return item.kind == "likert" and item.labels != tuple(str(point) for point in item.scale)


def missing_parts(instrument: Instrument, language: str) -> tuple[str, ...]:
    """What raters reading ``instrument`` in ``language`` would miss, in the instrument's
    order, as a sentence names it: "item 'pace'", "the labels of item 'fun'", "the
    instructions". Empty when nothing is missing, or ``language`` is the instrument's own."""
    if _same_language(instrument.language, language):
        return ()
    translation = translation_for(instrument, language)
    if translation is None:
        return ("every item",)
    texts = {item.id: item for item in translation.items}
    missing = []
    for item in instrument.items:
        translated = texts.get(item.id)
        if translated is None:
            missing.append(f"item {item.id!r}")
        elif _named_labels(item) and not translated.labels:
            missing.append(f"the labels of item {item.id!r}")
    if instrument.instructions and not translation.instructions:
        missing.append("the instructions")
    return tuple(missing)


def _listed(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def translation_problem(instrument: Instrument, languages: Sequence[str]) -> str | None:
    """Why ``instrument`` cannot be used in a study shown in ``languages`` (its language
    first, then any the browser may pick), as a sentence naming the missing items; None
    when it has every item, label and instruction in each of them."""
    for language in languages:
        missing = missing_parts(instrument, language)
        if not missing:
            continue
        name = language_name(language)
        own = language_name(instrument.language)
        if instrument.id in BUILT_IN_IDS:
            return (
                f"The instrument {instrument.id!r} is validated in {own} only (no licensed "
                f"published {name} translation exists), and the study is shown in {name}: "
                f"run the study in {own}, or use a custom instrument with a {name} "
                f"translation of every item, label and instruction ({HOW_TO})."
            )
        if translation_for(instrument, language) is None:
            return (
                f"The instrument {instrument.id!r} has no {name} translation, and the study is "
                f"shown in {name}: none of its {counted(len(instrument.items), 'item')} "
                f"can be shown. Add [translations.{language}] to its definition with every "
                f"item, label and instruction ({HOW_TO}), or run the study in {own}."
            )
        return (
            f"The {name} translation of the instrument {instrument.id!r} lacks "
            f"{_listed(missing)}: add {'it' if len(missing) == 1 else 'them'} to "
            f"[translations.{language}] in its definition ({HOW_TO})."
        )
    return None


def in_language(instrument: Instrument, language: str) -> Instrument:
    """``instrument`` as raters read it in ``language``: each item's text and labels, and the
    instructions and name where translated, from its translation (``translation`` set to
    it); the instrument itself in its own language. Ids, kinds, scales and keying are the
    original's, so answers are read and scored the same way. :class:`InstrumentError` with
    :func:`translation_problem`'s sentence when a part is missing."""
    problem = translation_problem(instrument, [language])
    if problem:
        raise InstrumentError(problem)
    translation = translation_for(instrument, language)
    if _same_language(instrument.language, language) or translation is None:
        return instrument
    texts = {item.id: item for item in translation.items}
    items = tuple(
        replace(item, text=texts[item.id].text, labels=texts[item.id].labels or item.labels)
        for item in instrument.items
    )
    return replace(
        instrument,
        name=translation.name or instrument.name,
        instructions=translation.instructions or instrument.instructions,
        items=items,
        language=translation.language,
        translations=(),
        translation=translation,
    )


def as_read(instrument: Instrument, language: str) -> Instrument:
    """``instrument`` as a rater whose page is in ``language`` reads it: in that language
    where its translation is complete (:func:`in_language`), else the original. A study
    whose instrument lacks one of its languages is refused at creation and at Open; one
    stored before that check shows its raters the original instead of an error, and its
    exports say so (the items' ``language`` is the original's)."""
    if missing_parts(instrument, language):
        return instrument
    return in_language(instrument, language)


def translation_note(translation: Translation) -> str:
    """How exports and the evaluation card mark items read in translation: "items translated
    to Spanish by Ana Pérez (Translated for this study); not the validated instrument", or
    "…; a validated translation" when ``validated``."""
    source = f" ({translation.source})" if translation.source else ""
    verdict = "a validated translation" if translation.validated else "not the validated instrument"
    return (
        f"items translated to {language_name(translation.language)} by "
        f"{translation.translator}{source}; {verdict}"
    )


def _string(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InstrumentError(f"{what} must be a non-empty string, not {value!r}.")
    return value.strip()


def _item_translation(item: Item, spec: object, where: str) -> ItemTranslation:
    name = f"{where} item {item.id!r}"
    if not isinstance(spec, Mapping):
        raise InstrumentError(f"{name} must be a table with text (and labels), not {spec!r}.")
    unknown = sorted(set(spec) - ITEM_KEYS)
    if unknown:
        raise InstrumentError(
            f"{name} has unknown field(s) {', '.join(unknown)}: use text and labels."
        )
    labels = spec.get("labels")
    if labels is not None:
        if item.kind != "likert":
            raise InstrumentError(f"{name} is {item.kind}: labels belong to Likert items only.")
        if (
            not isinstance(labels, list)
            or len(labels) != item.points
            or not all(isinstance(label, str) and label.strip() for label in labels)
        ):
            raise InstrumentError(
                f"{name} has {item.points} points: give labels as a list of {item.points} "
                f"non-empty strings from low to high."
            )
    return ItemTranslation(
        id=item.id,
        text=_string(spec.get("text"), f"{name}: text"),
        labels=tuple(label.strip() for label in labels or ()),
    )


def _translation(language: str, spec: object, items: Sequence[Item], where: str) -> Translation:
    name = f"{where}: [translations.{language}]"
    if not isinstance(spec, Mapping):
        raise InstrumentError(f"{name} must be a table, not {spec!r}.")
    unknown = sorted(set(spec) - TRANSLATION_KEYS)
    if unknown:
        raise InstrumentError(
            f"{name} has unknown field(s) {', '.join(unknown)}: use "
            f"{', '.join(sorted(TRANSLATION_KEYS))}."
        )
    validated = spec.get("validated", False)
    if not isinstance(validated, bool):
        raise InstrumentError(f"{name}: validated must be true or false, not {validated!r}.")
    source = spec.get("source", "")
    if not isinstance(source, str):
        raise InstrumentError(f"{name}: source must be text, not {source!r}.")
    if validated and not source.strip():
        raise InstrumentError(
            f"{name} is validated: give its source, the publication of the validation."
        )
    texts = spec.get("items", {})
    if not isinstance(texts, Mapping):
        raise InstrumentError(
            f"{name}: items must be tables by item id ([translations.{language}.items.ID])."
        )
    known = {item.id: item for item in items}
    strangers = sorted(str(key) for key in texts if str(key) not in known)
    if strangers:
        raise InstrumentError(
            f"{name} translates item(s) {', '.join(strangers)}, which the instrument does not "
            f"have: its items are {', '.join(known)}."
        )
    optional = {}
    for field in ("name", "instructions"):
        value = spec.get(field, "")
        if not isinstance(value, str):
            raise InstrumentError(f"{name}: {field} must be text, not {value!r}.")
        optional[field] = value.strip()
    return Translation(
        language=language,
        translator=_string(spec.get("translator"), f"{name}: translator (who translated)"),
        items=tuple(
            _item_translation(item, texts[item.id], name) for item in items if item.id in texts
        ),
        source=source.strip(),
        validated=validated,
        **optional,
    )


def translations_from_spec(
    spec: object, items: Sequence[Item], own_language: str, where: str
) -> tuple[Translation, ...]:
    """The ``[translations.LANG]`` tables of a custom instrument's spec (the module
    docstring shows their fields), checked against its ``items``; ``where`` starts every
    error. A language tag is the BCP 47 one the study names ("es", "ar")."""
    if spec is None:
        return ()
    if not isinstance(spec, Mapping):
        raise InstrumentError(f"{where}: translations must be tables ([translations.es]).")
    translations = []
    for language, table in spec.items():
        if not isinstance(language, str) or not LANGUAGE_TAG.match(language):
            raise InstrumentError(
                f"{where}: [translations.{language}] is not a language tag: use a BCP 47 "
                f'one such as "es" or "ar".'
            )
        if _same_language(language, own_language):
            raise InstrumentError(
                f"{where}: [translations.{language}] is the instrument's own language "
                f"({language_name(own_language)}): its items are already in it."
            )
        translations.append(_translation(language, table, items, where))
    return tuple(translations)
