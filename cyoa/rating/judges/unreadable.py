"""Why a judge's verdicts were unreadable, as its run page says it (pure): the unparsed
responses grouped by the reason the verdict rule gives for their item
(:func:`~cyoa.rating.judges.prompts.why_unparsed`), each group with how many of the verdicts
it holds ("18 of 22: the answer did not start with the word Yes or No") and its first few
responses as the model wrote them, so a researcher sees at once whether the model answered
in another form (a base model continuing the story, say) or the template asks for the wrong
word."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from cyoa.rating.instruments import Item
from cyoa.rating.judges.prompts import why_unparsed

# How many raw responses each reason shows, and how many characters of each.
EXAMPLES = 3
EXAMPLE_CHARS = 400


@dataclass(frozen=True)
class Unreadable:
    """``count`` of ``done`` verdicts unreadable for ``reason``; ``examples``: the first
    responses (at most :data:`EXAMPLE_CHARS` characters each, "…" where cut)."""

    reason: str
    count: int
    done: int
    examples: tuple[str, ...]

    @property
    def sentence(self) -> str:
        return f"{self.count} of {self.done}: {self.reason}."


def unreadable(
    responses: Iterable[tuple[str, str | None]], item_of: Callable[[str], Item], done: int
) -> list[Unreadable]:
    """The unparsed ``responses`` (item id, response as stored, in the order they were
    answered) of a run with ``done`` verdicts, grouped by reason, the largest group first."""
    groups: dict[str, list[str]] = {}
    for item_id, response in responses:
        groups.setdefault(why_unparsed(item_of(item_id)), []).append(response or "")
    found = [
        Unreadable(reason, len(texts), done, tuple(_cut(text) for text in texts[:EXAMPLES]))
        for reason, texts in groups.items()
    ]
    return sorted(found, key=lambda group: -group.count)


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS].rstrip() + "…"
