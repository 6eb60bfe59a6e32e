"""What an instrument is: its items, how an answer is read, and how it is scored.

An :class:`Instrument` is plain, frozen data (built from a vendored file or a researcher's
spec), so a rating study can store which instrument it used and read every answer back the
same way. :meth:`Instrument.parse_value` turns what a rater submitted into the number stored
for analysis; :meth:`Instrument.coded` applies reverse keying when a score is computed.
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

Kind = Literal["likert", "yes_no", "true_false", "text"]
KINDS: tuple[str, ...] = ("likert", "yes_no", "true_false", "text")
FEI_KINDS: tuple[str, ...] = ("transitional", "world")
# The validated instruments this project ships; none has a licensed published translation.
BUILT_IN_IDS: tuple[str, ...] = ("aiss-v1", "ttcw", "fei")
MIN_POINTS = 2
MAX_POINTS = 11
# The lowest point a Likert scale may start at: 1 (the usual 1–5 or 1–7), 0 (a 0–10
# rubric) or below zero (a −3…3 semantic differential).
MIN_LOW = -100
MAX_LOW = 100

# Spellings accepted for a binary answer, lower-cased.
_BINARY = {"yes": 1.0, "no": 0.0, "true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0}


class InstrumentError(ValueError):
    """An instrument, or an answer to it, that cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Item:
    """One question of an instrument.

    ``id``: the item's identifier within its instrument (AISS "1".."22", TTCW "1".."14", FEI
    the question id). ``kind``: ``"likert"`` (a whole number from ``low`` to ``high`` =
    ``low + points − 1``, with ``labels`` naming the points from low to high; ``low`` is 1
    unless the scale starts elsewhere, e.g. 0 for a 0–10 rubric), ``"yes_no"``,
    ``"true_false"`` or ``"text"`` (a free answer, not scored). ``reverse``: a reverse-keyed
    Likert item, scored ``low + high − answer``. ``factor``: the AISS factor or TTCW
    dimension it belongs to.
    ``rationale``: the rater is asked to explain the answer in writing (TTCW). ``context``:
    the text shown with the question (TTCW's expanded expert measure). ``category``: the TTCW
    test's name. ``fei_kind``: ``"transitional"`` or ``"world"`` for an FEI probe;
    ``story_id``: the story an FEI probe is about.
    """

    id: str
    text: str
    kind: str
    points: int | None = None
    low: int = 1
    labels: tuple[str, ...] = ()
    reverse: bool = False
    factor: str | None = None
    rationale: bool = False
    context: str = ""
    category: str = ""
    fei_kind: str | None = None
    story_id: str | None = None

    def __post_init__(self) -> None:
        name = f"Item {self.id!r}"
        if not self.id:
            raise InstrumentError("Every item needs a non-empty id.")
        if not self.text.strip():
            raise InstrumentError(f"{name} has no text: give the question or statement.")
        if self.kind not in KINDS:
            raise InstrumentError(f"{name} has kind {self.kind!r}: use one of {', '.join(KINDS)}.")
        if self.kind == "likert":
            if not isinstance(self.points, int) or not MIN_POINTS <= self.points <= MAX_POINTS:
                raise InstrumentError(
                    f"{name} is a Likert item: give points as a whole number from "
                    f"{MIN_POINTS} to {MAX_POINTS}, not {self.points!r}."
                )
            if (
                isinstance(self.low, bool)
                or not isinstance(self.low, int)
                or not MIN_LOW <= self.low <= MAX_LOW
            ):
                raise InstrumentError(
                    f"{name}: low must be a whole number from {MIN_LOW} to {MAX_LOW} (the "
                    f"scale's lowest point), not {self.low!r}."
                )
            if self.labels and len(self.labels) != self.points:
                raise InstrumentError(
                    f"{name} has {self.points} points but {len(self.labels)} labels: give "
                    f"one label per point, from low to high, or none for numbered points."
                )
        else:
            if self.points is not None or self.labels:
                raise InstrumentError(
                    f"{name} is {self.kind}: points and labels belong to Likert items only."
                )
            if self.low != 1:
                raise InstrumentError(f"{name} is {self.kind}: low belongs to Likert items only.")
            if self.reverse:
                raise InstrumentError(
                    f"{name} is {self.kind}: only Likert items can be reverse-keyed."
                )
        if self.fei_kind is not None and self.fei_kind not in FEI_KINDS:
            raise InstrumentError(
                f"{name} has FEI kind {self.fei_kind!r}: use one of {', '.join(FEI_KINDS)}."
            )

    def parse(self, raw: object, owner: str = "") -> float | str:
        """The stored value of an answer ``raw`` to this item (see
        :meth:`Instrument.parse_value`); ``owner`` names the instrument in errors."""
        name = f"Item {self.id} of {owner}" if owner else f"Item {self.id}"
        if self.kind == "text":
            if raw is None:
                raise InstrumentError(f"{name} expects a written answer; got none.")
            return str(raw)
        if self.kind == "likert":
            number = _whole_number(raw)
            if number is None or number not in self.scale:
                raise InstrumentError(
                    f"{name} takes a whole number from {self.low} to {self.high}; got {raw!r}."
                )
            return float(number)
        value = _binary(raw)
        if value is None:
            accepted = "Yes or No" if self.kind == "yes_no" else "true or false"
            raise InstrumentError(
                f"{name} takes {accepted} (also yes/no, true/false or 1/0, in any case); "
                f"got {raw!r}."
            )
        return value

    @property
    def high(self) -> int | None:
        """The highest point of a Likert item, ``low + points − 1``; None for other kinds."""
        return self.low + self.points - 1 if self.kind == "likert" else None

    @property
    def scale(self) -> range:
        """The points a Likert answer can take, low to high (empty for other kinds)."""
        return range(self.low, self.high + 1) if self.kind == "likert" else range(0)

    def bounds(self) -> tuple[float, float]:
        """The lowest and highest value an answer (and so a mean of answers) can take:
        ``(low, high)`` for a Likert item, ``(0, 1)`` for yes/no and true/false."""
        return (float(self.low), float(self.high)) if self.kind == "likert" else (0.0, 1.0)

    @property
    def scored(self) -> bool:
        """Whether answers are numbers that enter the statistics (every kind but text)."""
        return self.kind != "text"


@dataclass(frozen=True)
class ItemTranslation:
    """One item's words in another language: its ``text`` and, for a Likert item whose points
    are named, its ``labels`` (low to high; empty for numbered points)."""

    id: str
    text: str
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Translation:
    """An instrument's items, labels and instructions in ``language`` (BCP 47), and where
    they come from: ``translator`` (who translated), ``source`` (the publication or how it
    was made), ``validated`` (whether this translation was itself validated, as published in
    ``source``; a plain translation is not the validated instrument). ``name`` and
    ``instructions`` are "" when not translated."""

    language: str
    translator: str
    items: tuple[ItemTranslation, ...]
    source: str = ""
    validated: bool = False
    name: str = ""
    instructions: str = ""


@dataclass(frozen=True)
class Instrument:
    """A questionnaire or test battery: identity, citation, licence, instructions, items.

    ``attribution`` is the licence notice that must be shown wherever the items are shown or
    shipped ("" when the items need none). ``language``: the language (BCP 47) its items
    are written in. ``translations``: its items in other languages (see
    :mod:`cyoa.rating.instruments.translation`); ``translation``: on an instrument shown in
    another language, the translation its items come from (None on the original).
    """

    id: str
    name: str
    version: str
    reference: str
    attribution: str
    instructions: str
    items: tuple[Item, ...]
    language: str = "en"
    translations: tuple[Translation, ...] = ()
    translation: Translation | None = None

    def __post_init__(self) -> None:
        if not self.items:
            raise InstrumentError(f"Instrument {self.id!r} has no items: give at least one.")
        seen: set[str] = set()
        for item in self.items:
            if item.id in seen:
                raise InstrumentError(
                    f"Instrument {self.id!r} has two items with id {item.id!r}: "
                    f"give each item its own id."
                )
            seen.add(item.id)

    @cached_property
    def _by_id(self) -> dict[str, Item]:
        return {item.id: item for item in self.items}

    def item(self, item_id: str) -> Item:
        """The item with this id; :class:`InstrumentError` naming the instrument if none."""
        try:
            return self._by_id[str(item_id)]
        except KeyError:
            raise InstrumentError(
                f"Instrument {self.id!r} has no item {item_id!r}: its items are "
                f"{', '.join(self._by_id)}."
            ) from None

    def factors(self) -> dict[str, tuple[str, ...]]:
        """Factor (or dimension) → the ids of its items, both in the instrument's order."""
        groups: dict[str, list[str]] = {}
        for item in self.items:
            if item.factor is not None:
                groups.setdefault(item.factor, []).append(item.id)
        return {factor: tuple(ids) for factor, ids in groups.items()}

    def parse_value(self, item_id: str, raw: object) -> float | str:
        """The stored value of a rater's answer ``raw`` to item ``item_id``.

        - likert: a whole number from the item's ``low`` to ``high``, as int, integral float
          or string (``"4"``) → that number as a float, *not* reverse-coded (see
          :meth:`coded`);
        - yes_no and true_false: ``Yes``/``No``, ``true``/``false``, ``1``/``0`` in any
          case, or a bool or 0/1 → 1.0 (yes, true) or 0.0 (no, false);
        - text: the answer as a string.

        Anything else (out of range, unparseable, missing) raises :class:`InstrumentError`
        naming the item and the accepted values.
        """
        return self.item(item_id).parse(raw, self.id)

    def coded(self, item_id: str, value: float) -> float:
        """The score of a stored ``value`` (see :meth:`parse_value`): ``low + high − value``
        for a reverse-keyed Likert item (``points + 1 − value`` on a scale from 1), ``value``
        otherwise; NaN (no answer) stays NaN.

        Raises :class:`InstrumentError` for a text item or a value outside the item's range.
        """
        item = self.item(item_id)
        if item.kind == "text":
            raise InstrumentError(f"Item {item.id} of {self.id} is a text item: it has no score.")
        number = float(value)
        if math.isnan(number):
            return number
        if item.kind == "likert":
            if not number.is_integer() or int(number) not in item.scale:
                raise InstrumentError(
                    f"Item {item.id} of {self.id} takes a whole number from {item.low} to "
                    f"{item.high}; got {value!r}."
                )
            return item.low + item.high - number if item.reverse else number
        if number not in (0.0, 1.0):
            raise InstrumentError(f"Item {item.id} of {self.id} takes 0 or 1; got {value!r}.")
        return number


# ASCII digits only (str.isdigit also takes "²" and "①", which int() refuses, and float()
# takes "٣"), and few enough that int() never meets Python's limit on digits: no scale has a
# billion points. A number written otherwise ("4.0", "1e3") is at most 32 ASCII characters.
_WHOLE = re.compile(r"[0-9]{1,9}")
_LONGEST_NUMBER = 32


def _whole_number(raw: object) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, numbers.Integral):
        return int(raw)
    if isinstance(raw, numbers.Real):
        number = float(raw)
        return int(number) if number.is_integer() else None
    if isinstance(raw, str):
        text = raw.strip()
        if _WHOLE.fullmatch(text):
            return int(text)
        if not text.isascii() or len(text) > _LONGEST_NUMBER:
            return None
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if number.is_integer() else None
    return None


def _binary(raw: object) -> float | None:
    if isinstance(raw, bool):
        return 1.0 if raw else 0.0
    if isinstance(raw, numbers.Real):
        return float(raw) if raw in (0, 1) else None
    if isinstance(raw, str):
        return _BINARY.get(raw.strip().lower())
    return None
