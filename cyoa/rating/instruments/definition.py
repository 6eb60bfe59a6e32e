"""An instrument as JSON: what a rating experiment stores, so its answers are always read
with the very instrument (items, keying, labels) the raters saw."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from cyoa.rating.instruments.types import Instrument, Item

_FIELDS = ("id", "name", "version", "reference", "attribution", "instructions")


def instrument_to_dict(instrument: Instrument) -> dict[str, Any]:
    """Every field of ``instrument`` and of its items, as JSON-ready values."""
    return {
        **{name: getattr(instrument, name) for name in _FIELDS},
        "items": [asdict(item) for item in instrument.items],
    }


def instrument_from_dict(data: dict[str, Any]) -> Instrument:
    """The instrument :func:`instrument_to_dict` wrote (labels back to tuples)."""
    items = tuple(Item(**{**item, "labels": tuple(item["labels"])}) for item in data["items"])
    return Instrument(**{name: data[name] for name in _FIELDS}, items=items)
