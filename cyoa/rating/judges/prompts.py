"""What a judge model is asked, and how its answer is read (pure).

A judge administers the study's own instrument: one prompt per story × item, written from a
**prompt template** per kind of item. Templates are data: the defaults below are shown on the
judge page, a run stores the ones it used (``judge_runs.templates``), and ``python -m cyoa
judge --templates FILE`` gives others, so a published run can be repeated word for word.

A template is text with placeholders in braces, filled for each story × item:

- ``{story}``: the story's text; ``{question}``: the item's question or statement;
- ``{context}``: the text shown with the item (TTCW's expanded expert measure);
- ``{full_prompt}`` (TTCW only): the test's released prompt, verbatim: the expanded measure,
  the instruction given to LLMs (list the relevant elements, decide, give reasons) and the
  question (Chakrabarty et al., CHI 2024, §6 and Table 3 row 4);
- ``{scale}``: a Likert item's points, one per line (``1 = Strongly disagree``); ``{points}``:
  their number; ``{instructions}``: the instrument's instructions to raters.

The kinds (:func:`template_kind`): ``ttcw`` (the TTCW tests), ``yes_no``, ``true_false`` (FEI
probes) and ``likert`` (AISS and custom scales). Text items are not administered.

Each default ends by asking for the answer first ("Begin your answer with …") and then the
reasoning, and with ``Answer:``, so that the answer is read by the first word of the response,
the TTCW release's rule (:func:`parse_answer`); the reasoning that follows is stored as the
verdict's rationale.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cyoa.judging.templates import TemplateError, placeholders
from cyoa.rating.instruments import Instrument, Item
from cyoa.rating.instruments.ttcw import released_prompts
from cyoa.rating.judges.verdicts import parse_verdict

TEMPLATES: dict[str, str] = {
    "ttcw": (
        "{story}\n\n{full_prompt}\n\n"
        "Begin your answer with 'Yes' or 'No', then give your reasoning.\nAnswer:"
    ),
    "yes_no": (
        "{story}\n\n{context}\n\nGiven the story above, answer the following question.\n"
        "Q) {question}\n\nBegin your answer with 'Yes' or 'No', then give your reasoning.\n"
        "Answer:"
    ),
    "true_false": (
        "{story}\n\nGiven the story above, is the following statement true or false?\n"
        "Statement: {question}\n\n"
        "Begin your answer with 'True' or 'False', then give your reasoning.\nAnswer:"
    ),
    "likert": (
        "{story}\n\n{instructions}\n\nGiven the story above, rate the following statement.\n"
        "Statement: {question}\n\nScale:\n{scale}\n\n"
        "Begin your answer with the number of your rating (1 to {points}), then give your "
        "reasoning.\nAnswer:"
    ),
}
PLACEHOLDERS = ("story", "question", "context", "full_prompt", "scale", "points", "instructions")
_TRUE_FALSE = re.compile(r"(true|false)\b", re.IGNORECASE)
_NUMBER = re.compile(r"([0-9]{1,2})(?![0-9.,]?[0-9])")


class PromptError(ValueError):
    """A template that cannot be filled, or a study with nothing a judge can be asked; the
    message says what to change."""


@dataclass(frozen=True)
class JudgePrompt:
    """One question to a judge: the story, the item, and the prompt's whole text."""

    story_id: str
    item_id: str
    text: str


def template_kind(instrument: Instrument, item: Item) -> str | None:
    """Which template asks ``item``: ``ttcw`` for a TTCW test, else the item's kind; None for
    a text item (not administered)."""
    if item.kind == "text":
        return None
    if instrument.id == "ttcw" and item.kind == "yes_no":
        return "ttcw"
    return item.kind


def templates_for(instrument: Instrument, given: Mapping[str, str] | None = None) -> dict[str, str]:
    """The templates a judge of ``instrument`` uses, by kind: ``given`` where it names the
    kind, the default otherwise; only the kinds the instrument has. Raises
    :class:`PromptError` for a template that names a kind the instrument does not use, lacks
    ``{story}`` or ``{question}`` (or, for TTCW, ``{full_prompt}`` instead of the question),
    or has a placeholder not in :data:`PLACEHOLDERS` or one not written plainly
    (:func:`cyoa.judging.templates.placeholders`)."""
    kinds = {template_kind(instrument, item) for item in instrument.items} - {None}
    given = dict(given or {})
    extra = sorted(set(given) - kinds)
    if extra:
        raise PromptError(
            f"Templates for {', '.join(extra)}: {instrument.name} has no such items (its kinds: "
            f"{', '.join(sorted(kinds))})."
        )
    chosen = {kind: given.get(kind, TEMPLATES[kind]) for kind in sorted(kinds)}
    for kind, text in chosen.items():
        _check_template(kind, text)
    return chosen


def _check_template(kind: str, text: str) -> None:
    try:
        names = placeholders(text, PLACEHOLDERS, f"The {kind} template")
    except TemplateError as error:
        raise PromptError(str(error)) from None
    question = "full_prompt" if kind == "ttcw" else "question"
    if "story" not in names or not names & {question, "question"}:
        raise PromptError(
            f"The {kind} template must contain {{story}} and {{{question}}}: the judge must "
            "see the story and what it is asked."
        )


def judge_prompts(
    instrument: Instrument, stories: Mapping[str, str], templates: Mapping[str, str]
) -> list[JudgePrompt]:
    """Every prompt of a judge run, story by story (in ``stories``' order, id → text) and item
    by item (in the instrument's order): text items are skipped, and an item about one story
    (an FEI probe) is asked of that story only. Raises :class:`PromptError` when no story has
    a text."""
    texts = {story_id: text for story_id, text in stories.items() if text.strip()}
    if not texts:
        raise PromptError(
            "No story of this experiment has a text stored (only links, or none): a judge "
            "reads the text; import the stories' texts (--stories) first."
        )
    full = released_prompts() if instrument.id == "ttcw" else {}
    prompts = []
    for story_id, story in texts.items():
        for item in instrument.items:
            kind = template_kind(instrument, item)
            if kind is None or item.story_id not in (None, story_id):
                continue
            fields = {
                "story": story.strip(),
                "question": item.text,
                "context": item.context,
                "full_prompt": full.get(item.id, item.text),
                "scale": _scale(item),
                "points": str(item.points or ""),
                "instructions": instrument.instructions,
            }
            prompts.append(JudgePrompt(story_id, item.id, templates[kind].format_map(fields)))
    return prompts


def _scale(item: Item) -> str:
    if item.kind != "likert":
        return ""
    labels = item.labels or tuple(str(point) for point in range(1, item.points + 1))
    return "\n".join(f"{point} = {label}" for point, label in enumerate(labels, start=1))


def parse_answer(item: Item, response: str) -> float | None:
    """The value of a judge's ``response`` to ``item``, read from its start (leading spaces
    skipped), or None (unparsed: stored without a value and counted, never taken as No):

    - yes_no: first word "yes" → 1.0, "no" → 0.0 (:func:`~cyoa.rating.judges.verdicts.
      parse_verdict`, the TTCW release's rule);
    - true_false: first word "true" → 1.0, "false" → 0.0;
    - likert: a whole number from 1 to the item's points, standing alone (not "3.5", not
      "10" on a 7-point scale), → that number.
    """
    text = response.strip()
    if item.kind == "yes_no":
        return parse_verdict(text)
    if item.kind == "true_false":
        match = _TRUE_FALSE.match(text)
        return None if match is None else float(match.group(1).lower() == "true")
    if item.kind == "likert":
        match = _NUMBER.match(text)
        number = int(match.group(1)) if match else 0
        return float(number) if 1 <= number <= (item.points or 0) else None
    return None


def why_unparsed(item: Item) -> str:
    """Why a response to ``item`` that :func:`parse_answer` could not read was unreadable, as
    the judge's page says it: what the response had to start with."""
    if item.kind == "yes_no":
        return "the answer did not start with the word Yes or No"
    if item.kind == "true_false":
        return "the answer did not start with the word True or False"
    if item.kind == "likert":
        return f"the answer did not start with a whole number from 1 to {item.points}"
    return f"a {item.kind} item's answer is not read as a verdict"


def prompt_kinds(prompts: Sequence[JudgePrompt], instrument: Instrument) -> dict[str, int]:
    """How many prompts each template kind has (for the judge page's summary)."""
    counts: dict[str, int] = {}
    for prompt in prompts:
        kind = template_kind(instrument, instrument.item(prompt.item_id)) or ""
        counts[kind] = counts.get(kind, 0) + 1
    return counts
