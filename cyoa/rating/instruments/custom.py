"""A researcher's own instrument, from a TOML-able spec.

```toml
id = "my-scale"                 # letters, digits, '.', '_' or '-'
name = "My story scale"
instructions = "Think of the story you just read."   # optional
version = "1"                   # optional
reference = ""                  # optional: what to cite
attribution = ""                # optional: a licence notice to show with the items
language = "en"                 # optional: the language (BCP 47) the items are written in

[[items]]
id = "fun"
text = "The story was fun to read."
kind = "likert"                 # likert | yes_no | text
points = 5                      # likert: 2 to 11
low = 1                         # optional, likert only: the lowest point (0 for a 0–10 rubric)
labels = ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
reverse = false                 # optional, likert only
factor = "Enjoyment"            # optional
rationale = false               # optional: ask for a written reason
```

Translations of the items, labels and instructions follow as ``[translations.LANG]`` tables
(:mod:`cyoa.rating.instruments.translation`); ``tests/data/scales/crowd-1-4.toml``
carries Spanish and Arabic ones.

``labels`` may be left out for numbered points ("1" … "5"). A scale that starts elsewhere
gives its lowest point: a 0–10 rubric is ``low = 0`` with ``points = 11``, answered and
reported as 0 … 10.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cyoa.rating.instruments.translation import LANGUAGE_TAG, translations_from_spec
from cyoa.rating.instruments.types import (
    BUILT_IN_IDS,
    MAX_LOW,
    MIN_LOW,
    Instrument,
    InstrumentError,
    Item,
)

SPEC_KINDS = ("likert", "yes_no", "text")
_SPEC_KEYS = {
    "id", "name", "instructions", "version", "reference", "attribution", "items", "language",
    "translations",
}  # fmt: skip
_ITEM_KEYS = {"id", "text", "kind", "points", "low", "labels", "reverse", "factor", "rationale"}
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _text(value: object, what: str, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise InstrumentError(f"{what} must be a non-empty string, not {value!r}.")
    return value.strip()


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise InstrumentError(f"{what} must be true or false, not {value!r}.")
    return value


def _likert_scale(spec: Mapping[str, object], name: str) -> tuple[int, int, tuple[str, ...]]:
    """A Likert item's ``points``, lowest point ``low`` (1 unless given) and labels (the
    numbers ``low`` … ``high`` unless given), checked; ``name`` starts every error."""
    points = spec.get("points")
    if isinstance(points, bool) or not isinstance(points, int) or not 2 <= points <= 11:
        raise InstrumentError(f"{name} is a Likert item: give points from 2 to 11, not {points!r}.")
    low = spec.get("low", 1)
    if isinstance(low, bool) or not isinstance(low, int) or not MIN_LOW <= low <= MAX_LOW:
        raise InstrumentError(
            f"{name}: low must be a whole number from {MIN_LOW} to {MAX_LOW} (the scale's "
            f"lowest point, e.g. 0 for a 0–10 rubric), not {low!r}."
        )
    raw_labels = spec.get("labels")
    if raw_labels is None:
        return points, low, tuple(str(point) for point in range(low, low + points))
    if (
        not isinstance(raw_labels, list)
        or len(raw_labels) != points
        or not all(isinstance(label, str) and label.strip() for label in raw_labels)
    ):
        raise InstrumentError(
            f"{name} has {points} points: give labels as a list of {points} non-empty "
            f"strings from low to high, or leave labels out for numbered points."
        )
    return points, low, tuple(label.strip() for label in raw_labels)


def _item(spec: object, where: str, number: int) -> Item:
    if not isinstance(spec, Mapping):
        raise InstrumentError(f"{where}: item {number} must be a table ([[items]]), not {spec!r}.")
    raw_id = spec.get("id")
    item_id = str(raw_id) if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) else ""
    name = f"{where}: item {number}" + (f" ({item_id!r})" if item_id else "")
    if not item_id.strip():
        raise InstrumentError(f"{name} needs an id (a string or a number).")
    unknown = sorted(set(spec) - _ITEM_KEYS)
    if unknown:
        raise InstrumentError(
            f"{name} has unknown field(s) {', '.join(unknown)}: use "
            f"{', '.join(sorted(_ITEM_KEYS))}."
        )
    kind = spec.get("kind")
    if kind not in SPEC_KINDS:
        raise InstrumentError(f"{name} has kind {kind!r}: use one of {', '.join(SPEC_KINDS)}.")
    points, low, labels = None, 1, ()
    if kind == "likert":
        points, low, labels = _likert_scale(spec, name)
    elif spec.get("points") is not None or spec.get("labels") is not None:
        raise InstrumentError(f"{name} is {kind}: points and labels belong to Likert items only.")
    elif spec.get("low") is not None:
        raise InstrumentError(f"{name} is {kind}: low belongs to Likert items only.")
    reverse = _flag(spec.get("reverse", False), f"{name}: reverse")
    if reverse and kind != "likert":
        raise InstrumentError(f"{name} is {kind}: only Likert items can be reverse-keyed.")
    factor = spec.get("factor")
    try:
        return Item(
            id=item_id.strip(),
            text=_text(spec.get("text"), f"{name}: text"),
            kind=kind,
            points=points,
            low=low,
            labels=labels,
            reverse=reverse,
            factor=None if factor is None else _text(factor, f"{name}: factor"),
            rationale=_flag(spec.get("rationale", False), f"{name}: rationale"),
        )
    except InstrumentError as error:
        raise InstrumentError(f"{where}: {error}") from None


def instrument_from_spec(spec: Mapping[str, object], where: str) -> Instrument:
    """A custom :class:`Instrument` from ``spec`` (the module docstring shows its fields).

    ``where`` names the spec's origin (a file path, "the form") and starts every error
    message, which also names the item at fault. Checks: a valid ``id`` that is not a
    built-in one, a ``name``, at least one item, no unknown fields, unique item ids, a known
    kind, 2–11 points, a whole-number ``low`` (default 1) and one label per point for Likert
    items, ``reverse`` on Likert items only; a BCP 47 ``language`` (default "en") and
    translations of known items only, each with its translator.
    """
    if not isinstance(spec, Mapping):
        raise InstrumentError(f"{where}: an instrument spec must be a table of fields.")
    unknown = sorted(set(spec) - _SPEC_KEYS)
    if unknown:
        raise InstrumentError(
            f"{where}: unknown field(s) {', '.join(unknown)}: use {', '.join(sorted(_SPEC_KEYS))}."
        )
    instrument_id = spec.get("id")
    if not isinstance(instrument_id, str) or not _ID.match(instrument_id):
        raise InstrumentError(
            f"{where}: id must be letters, digits, '.', '_' or '-' (starting with a letter or "
            f"digit), not {instrument_id!r}."
        )
    if instrument_id in BUILT_IN_IDS:
        raise InstrumentError(
            f"{where}: id {instrument_id!r} is a built-in instrument: choose another id."
        )
    items = spec.get("items")
    if not isinstance(items, list) or not items:
        raise InstrumentError(f"{where}: give at least one item ([[items]]).")
    built = tuple(_item(item, where, number) for number, item in enumerate(items, start=1))
    seen: set[str] = set()
    for number, item in enumerate(built, start=1):
        if item.id in seen:
            raise InstrumentError(
                f"{where}: item {number} ({item.id!r}) repeats an earlier item's id: give each "
                f"item its own id."
            )
        seen.add(item.id)
    language = spec.get("language", "en")
    if not isinstance(language, str) or not LANGUAGE_TAG.match(language):
        raise InstrumentError(
            f'{where}: language must be a BCP 47 tag such as "en" or "es" (the language its '
            f"items are written in), not {language!r}."
        )
    return Instrument(
        id=instrument_id,
        name=_text(spec.get("name"), f"{where}: name"),
        version=_text(spec.get("version", "1"), f"{where}: version"),
        reference=_text(spec.get("reference"), f"{where}: reference", required=False),
        attribution=_text(spec.get("attribution"), f"{where}: attribution", required=False),
        instructions=_text(spec.get("instructions"), f"{where}: instructions", required=False),
        items=built,
        language=language,
        translations=translations_from_spec(spec.get("translations"), built, language, where),
    )
