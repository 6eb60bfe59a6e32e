"""Stories of a set length, as the TTCW study made them (pure rules and the loop).

Length confounds judgements of text (evaluators prefer longer summaries: Stiennon et al.,
NeurIPS 2020), and models asked for a length write 20–50% less. So TTCW had each model write a
story from a plot, then asked it again and again to rewrite the story longer, until its word
count was less than 200 words from the paired human story's (Chakrabarty, Laban, Agarwal,
Muresan & Wu, CHI 2024, *Art or Artifice?*, §5.1; the prompts are Table 11, kept verbatim
here, typos included, so that a study repeats theirs).

A **round** is one model call: the first writes the story (:func:`first_prompt`), each later
one rewrites it longer (:func:`expansion_prompt`); the story is each call's whole response.
Words are counted as runs of characters between whitespace (:func:`word_count`). The loop
stops (:func:`stop_reason`) when the story is within the tolerance (``|words − target| <
tolerance``, the paper's "less than 200"), when it overshoots the target by the tolerance or
more (the expansion prompt can only lengthen it), or after ``max_rounds`` rounds; a story that
ends outside the tolerance is kept and flagged (:attr:`LengthResult.within_tolerance`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

# Table 11, row 1; the paper prints no place for the plot, so it follows the instruction.
FIRST_PROMPT = (
    "Write a New Yorker-style story given the plot below. Make sure it is atleast "
    "{word_count} words. Directly start with the story, do not say things like "
    "‘Here’s the story […]:’\nPlot: {plot}"
)
# Table 11, row 2.
EXPANSION_PROMPT = (
    "You wrote the story I gave you below. I requested a story with {word_count} words, but "
    "the story only has {current_word_count} words. Can you rewrite the story to make it "
    "longer, and closer to the {word_count} word target I gave you. Directly start with the "
    "story, do not say things like ‘Here’s the story […]:‘\nCurrent story: {story}"
)
# The tokens a round may write, per word of the longest story within tolerance: English runs
# about 1.3 tokens a word, so a model is never cut off short of the target.
TOKENS_PER_WORD = 2


class LengthError(ValueError):
    """A prompt file row whose target cannot be read; the message names the line."""


@dataclass(frozen=True)
class LengthControl:
    """How close is close enough (``tolerance``, in words) and how many model calls a story
    may take (``max_rounds``, counting the first)."""

    tolerance: int = 200
    max_rounds: int = 5

    def __post_init__(self) -> None:
        if self.tolerance < 1 or self.max_rounds < 1:
            raise ValueError("tolerance and max_rounds must be at least 1.")


@dataclass(frozen=True)
class PlotPrompt:
    """One row of a prompt file: the plot, the target length in words, and where the target
    came from (``"reference"``: the paired story's word count; ``"target_words"``: given)."""

    prompt: str
    target_words: int
    target_from: str


@dataclass(frozen=True)
class LengthResult:
    """A story written to length: its text, its final and per-round word counts, the rounds
    taken, why the loop stopped (``"within"``, ``"too_long"``, ``"max_rounds"``)."""

    story: str
    words: int
    rounds: int
    round_words: list[int]
    stopped: str

    @property
    def within_tolerance(self) -> bool:
        return self.stopped == "within"


def word_count(text: str) -> int:
    """The number of words in ``text``: runs of characters between whitespace."""
    return len(text.split())


def first_prompt(plot: str, target_words: int) -> str:
    """The first round's prompt (Table 11, row 1)."""
    return FIRST_PROMPT.format(word_count=target_words, plot=plot)


def expansion_prompt(target_words: int, current_words: int, story: str) -> str:
    """A later round's prompt: rewrite ``story`` longer (Table 11, row 2)."""
    return EXPANSION_PROMPT.format(
        word_count=target_words, current_word_count=current_words, story=story
    )


def round_tokens(target_words: int, control: LengthControl) -> int:
    """The most tokens one round may write: :data:`TOKENS_PER_WORD` per word of the longest
    story still within the tolerance."""
    return TOKENS_PER_WORD * (target_words + control.tolerance)


def stop_reason(words: int, target_words: int, rounds: int, control: LengthControl) -> str | None:
    """Why the loop stops after ``rounds`` rounds with a story of ``words`` words: ``"within"``
    (``|words − target| < tolerance``), ``"too_long"`` (longer than that: asking for more
    would not help), ``"max_rounds"``; ``None``: ask for a longer story."""
    if abs(words - target_words) < control.tolerance:
        return "within"
    if words > target_words:
        return "too_long"
    if rounds >= control.max_rounds:
        return "max_rounds"
    return None


def write_to_length(
    write: Callable[[str, int], str], plot: str, target_words: int, control: LengthControl
) -> LengthResult:
    """Write a story from ``plot`` and lengthen it until :func:`stop_reason` says stop.
    ``write(prompt, round)`` is one model call (rounds from 1) and returns the whole story."""
    prompt = first_prompt(plot, target_words)
    counts: list[int] = []
    while True:  # stop_reason stops at max_rounds, at least 1
        story = write(prompt, len(counts) + 1).strip()
        counts.append(word_count(story))
        stopped = stop_reason(counts[-1], target_words, len(counts), control)
        if stopped is not None:
            return LengthResult(story, counts[-1], len(counts), counts, stopped)
        prompt = expansion_prompt(target_words, counts[-1], story)


def plot_prompts(
    records: Iterable[tuple[int, dict[str, Any]]], filename: str
) -> list[PlotPrompt] | None:
    """The plots of a prompt file's records ((line, record) pairs), each with its target:
    ``target_words`` (a positive whole number) or ``reference`` (a story, whose word count is
    the target). ``None`` when no record has either field (a CSV: neither column): the
    prompts are openings to continue.
    Raises :class:`LengthError` naming the line of a record without a prompt, with a bad
    target, with both, or without a target when others have one."""
    rows = list(records)
    if all(record.get(key) is None for _, record in rows for key in _TARGETS):
        return None
    return [_plot_prompt(record, f"{filename}, line {line}") for line, record in rows]


_TARGETS = ("reference", "target_words")


def _given(value: Any) -> bool:
    """A field counts as given unless missing, null or blank (a CSV's empty cell)."""
    return value is not None and not (isinstance(value, str) and not value.strip())


def _plot_prompt(record: dict[str, Any], where: str) -> PlotPrompt:
    prompt = record.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise LengthError(f"{where}: give the plot in a prompt field.")
    reference, target = record.get("reference"), record.get("target_words")
    if _given(reference) and _given(target):
        raise LengthError(
            f"{where}: gives both reference and target_words; keep one (the target is the "
            "reference's word count, or the number given)."
        )
    if _given(target):
        return PlotPrompt(prompt.strip(), _positive_words(target, where), "target_words")
    if reference is not None and not isinstance(reference, str):
        raise LengthError(f"{where}: reference must be the paired story's text.")
    if not _given(reference):
        raise LengthError(
            f"{where}: no target: its reference is empty and it gives no target_words. Give "
            "the paired story's text as reference, or a number of words as target_words."
        )
    return PlotPrompt(prompt.strip(), word_count(reference), "reference")


def _positive_words(value: Any, where: str) -> int:
    number = None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or number <= 0 or number != int(number):
        raise LengthError(
            f"{where}: target_words must be a positive whole number of words (found {value!r})."
        )
    return int(number)
