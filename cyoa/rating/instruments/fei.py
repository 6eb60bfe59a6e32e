"""Fabula Entropy Indexing (FEI) probes: true/false questions written for each story.

Unlike the AISS and the TTCW, FEI has no fixed items: for every story someone writes 10–15
true/false questions, either about the transitions between its plot points (ETC, "transitional")
or about static facts of its world (EWC, "world"). Readers answer plainly true or false (the
paper asked "yes or no questions", §5.4; no confidence is collected), and the agreement of their
answers is what FEI measures (:mod:`cyoa.rating.analysis.fei`).

Reference: Castricato, L. et al. (2021). Fabula Entropy Indexing: Objective Measures of Story
Coherence. Third Workshop on Narrative Understanding, §4.3 and §5.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cyoa.rating.instruments.types import FEI_KINDS, Instrument, InstrumentError, Item

REFERENCE = (
    "Castricato, L. et al. (2021). Fabula Entropy Indexing: Objective Measures of Story "
    "Coherence. Third Workshop on Narrative Understanding."
)
INSTRUCTIONS = (
    "Read the story, then answer each statement about it with true or false. There are no "
    "right answers: answer as the story makes you believe."
)
# Other spellings of the two kinds, lower-cased.
_KIND_ALIASES = {"etc": "transitional", "ewc": "world"}


@dataclass(frozen=True)
class FeiQuestion:
    """A probe about one story: ``kind`` is ``"transitional"`` (ETC) or ``"world"`` (EWC)."""

    story_id: str
    question_id: str
    kind: str
    text: str


def fei_kind(kind: object, question_id: str) -> str:
    """The canonical FEI kind of ``kind`` ("transitional"/"ETC" or "world"/"EWC", any case);
    :class:`InstrumentError` naming the question otherwise."""
    text = str(kind or "").strip().lower()
    text = _KIND_ALIASES.get(text, text)
    if text not in FEI_KINDS:
        raise InstrumentError(
            f"FEI question {question_id!r} has kind {kind!r}: use 'transitional' (ETC) or "
            f"'world' (EWC)."
        )
    return text


def fei_instrument(questions: Iterable[FeiQuestion]) -> Instrument:
    """The FEI instrument of a study: one ``true_false`` item per question, in the order given.

    Item id = ``question_id`` (unique across the study), ``fei_kind`` and ``story_id`` from the
    question. Raises :class:`InstrumentError` for a question without a valid kind, an empty
    text, a repeated id, or no question at all.
    """
    items = tuple(
        Item(
            id=str(question.question_id),
            text=question.text,
            kind="true_false",
            fei_kind=fei_kind(question.kind, str(question.question_id)),
            story_id=str(question.story_id),
        )
        for question in questions
    )
    if not items:
        raise InstrumentError("An FEI study needs questions: give at least one per story.")
    return Instrument(
        id="fei",
        name="Fabula Entropy Indexing (FEI) probes",
        version="2021",
        reference=REFERENCE,
        attribution="",
        instructions=INSTRUCTIONS,
        items=items,
    )
