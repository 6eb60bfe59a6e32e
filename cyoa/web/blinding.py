"""Whether what participants see of an experiment names a model: its id is in every
participant's link, its title on every page, so either would tell writers and raters which
systems they are comparing."""

from __future__ import annotations

import re
from collections.abc import Iterable

from cyoa.generation.types import ModelCard

_LETTERS = re.compile(r"[a-z]+")


def _family(card: ModelCard) -> str:
    """A model's family as people write it: the first run of letters of its card's name
    (``gemma`` for gemma-3-270m, ``smollm`` for smollm2-135m-instruct)."""
    found = _LETTERS.search(card.name.lower())
    return found.group() if found else card.name.lower()


def models_named(text: str, cards: Iterable[ModelCard]) -> list[str]:
    """The cards (by name) that ``text`` names, by their whole name or as a word of their
    family ("gemma-vs-smollm" names gemma-3-270m and smollm2-135m-instruct), in card order."""
    lowered = text.lower()
    words = set(_LETTERS.findall(lowered))
    return [card.name for card in cards if card.name.lower() in lowered or _family(card) in words]


def naming_warning(exp_id: str, title: str, cards: Iterable[ModelCard]) -> str:
    """A sentence for the researcher when the experiment's id or title names a model, else
    "": participants must not learn which systems they compare from their link or page."""
    cards = list(cards)
    named = sorted(set(models_named(exp_id, cards) + models_named(title, cards)))
    if not named:
        return ""
    return (
        f"Participants see the id in their link and the title on every page, and they name "
        f"{', '.join(named)}: clone this experiment under an id that does not name a model "
        "(and edit its title) before you open it."
    )
