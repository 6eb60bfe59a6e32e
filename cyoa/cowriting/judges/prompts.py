"""What a judge of the writers' choices is asked, and how its answer is read (pure).

Each round in which the writer chose between two suggestions is asked twice: ``AB`` shows
the suggestions in the slots the writer saw them in (slot 1 as A), ``BA`` swaps them, so a
judge that prefers a slot rather than a text shows it (:mod:`cyoa.pairwise`). The prompt is
written from a **template** (data: the default :data:`TEMPLATE`, or one given to
``python -m cyoa judge-rounds --template FILE``, stored with the run) with three
placeholders: ``{story}``, the story so far as the writer had it when the suggestions came
(every earlier round's writer line and final text, then this round's writer line, joined by
one space), and ``{a}`` and ``{b}``, the suggestions in slots A and B.

The answer is read by :func:`parse_choice`: a lone ``A`` or ``B`` (capital) at the start of
the response, after any spaces, quotes, brackets or asterisks, followed by the end or by a
character that is neither a letter, digit nor space ("A.", "**B**", "(A)"); "A gull …"
(the article) and anything else is *unparsed*: stored with its response and counted, never
taken for a choice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cyoa.cowriting.analysis.data import RoundRecord
from cyoa.generation.text import clean_text
from cyoa.judging.templates import TemplateError, placeholders

TEMPLATE = (
    "Here is the beginning of a story:\n\n{story}\n\n"
    "Two sentences could come next:\n\nA: {a}\nB: {b}\n\n"
    "Which one continues the story better? Begin your answer with 'A' or 'B', then give "
    "your reasoning.\nAnswer:"
)
PLACEHOLDERS = ("story", "a", "b")
_CHOICE = re.compile(r"[\s\"'“‘(\[*]*([AB])(?![\w ])")


class RoundPromptError(ValueError):
    """A template that cannot be filled; the message says what to change."""


@dataclass(frozen=True)
class RoundPrompt:
    """One question to a judge: a writer's round shown in one ``order``, the systems in
    slots A and B, and the prompt's whole text."""

    session_id: str
    round: int
    order: Literal["AB", "BA"]
    slot_a_system: str
    slot_b_system: str
    text: str


def check_template(text: str) -> None:
    """Raise :class:`RoundPromptError` unless ``text`` is a template naming ``{story}``,
    ``{a}`` and ``{b}``, each written plainly, and no other placeholder
    (:func:`cyoa.judging.templates.placeholders`)."""
    try:
        names = placeholders(text, PLACEHOLDERS)
    except TemplateError as error:
        raise RoundPromptError(str(error)) from None
    missing = [name for name in PLACEHOLDERS if name not in names]
    if missing:
        raise RoundPromptError(
            f"The template must contain {', '.join('{' + n + '}' for n in missing)}: the judge "
            "must see the story and both suggestions."
        )


def round_prompts(rounds: Sequence[RoundRecord], template: str) -> list[RoundPrompt]:
    """Both prompts (``AB`` then ``BA``) of each round of ``rounds`` in which the writer
    chose between two suggestions, in ``rounds``' order; the story so far is read from the
    same session's earlier rounds in ``rounds``."""
    check_template(template)
    turns: dict[str, list[str]] = {}
    prompts = []
    for record in sorted(rounds, key=lambda r: (r.session_id, r.round)):
        story = turns.setdefault(record.session_id, [])
        story.append(record.writer_line)
        if record.counts_for_preference:
            prompts += _both_orders(record, clean_text(" ".join(story)), template)
        story.append(record.final_text)
    order = {(r.session_id, r.round): index for index, r in enumerate(rounds)}
    return sorted(prompts, key=lambda p: (order[(p.session_id, p.round)], p.order))


def _both_orders(record: RoundRecord, story: str, template: str) -> list[RoundPrompt]:
    first, second = record.suggestions
    systems = record.slot_systems
    shown = {"AB": (first, second, systems), "BA": (second, first, systems[::-1])}
    return [
        RoundPrompt(
            session_id=record.session_id,
            round=record.round,
            order=order,
            slot_a_system=slots[0],
            slot_b_system=slots[1],
            text=template.format_map({"story": story, "a": a, "b": b}),
        )
        for order, (a, b, slots) in shown.items()
    ]


def parse_choice(response: str) -> Literal["A", "B"] | None:
    """The slot a judge's ``response`` chose, read from its start (see the module), or None
    (unparsed)."""
    match = _CHOICE.match(response)
    return match.group(1) if match else None  # type: ignore[return-value]
