"""Counts in sentences: "1 story", "3 stories", never "1 sources" (one rule for every page,
report and message that names a count)."""

from __future__ import annotations

# Nouns whose plural is not the noun with an "s".
IRREGULAR = {"story": "stories", "entry": "entries", "reply": "replies", "person": "people"}


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless ``count`` is 1: ``counted(1,
    "source")`` is "1 source", ``counted(3, "story")`` "3 stories". ``plural`` names an
    irregular plural the table lacks."""
    word = noun if count == 1 else plural or IRREGULAR.get(noun, noun + "s")
    return f"{count} {word}"
