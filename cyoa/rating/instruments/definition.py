"""An instrument as JSON: what a rating experiment stores, so its answers are always read
with the very instrument (items, keying, labels) the raters saw."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cyoa.rating.instruments.types import Instrument, Item, ItemTranslation, Translation

_FIELDS = ("id", "name", "version", "reference", "attribution", "instructions")


def instrument_to_dict(instrument: Instrument) -> dict[str, Any]:
    """Every field of ``instrument``, of its items and of its translations, as JSON-ready
    values."""
    return {
        **{name: getattr(instrument, name) for name in _FIELDS},
        "items": [asdict(item) for item in instrument.items],
        "language": instrument.language,
        "translations": [asdict(translation) for translation in instrument.translations],
        "translation": asdict(instrument.translation) if instrument.translation else None,
    }


def _translation(data: dict[str, Any]) -> Translation:
    items = tuple(
        ItemTranslation(**{**item, "labels": tuple(item["labels"])}) for item in data["items"]
    )
    return Translation(**{**data, "items": items})


def instrument_from_dict(data: dict[str, Any]) -> Instrument:
    """The instrument :func:`instrument_to_dict` wrote (labels back to tuples); one stored
    before instruments had translations is in English, with none."""
    items = tuple(Item(**{**item, "labels": tuple(item["labels"])}) for item in data["items"])
    applied = data.get("translation")
    return Instrument(
        **{name: data[name] for name in _FIELDS},
        items=items,
        language=data.get("language", "en"),
        translations=tuple(_translation(t) for t in data.get("translations", ())),
        translation=_translation(applied) if applied else None,
    )
