"""The AI Story Scale v1 (AISS), read from its vendored text ``data/aiss_v1.md``.

22 statements rated from 1 ("Strongly disagree") to 5 ("Strongly agree") in five factors:
Coherence (7 items), Avoiding Repetition (5), Creativity/Quality (4), Pace (4) and Consistent
Characterization (2). Items are numbered 1–22 in the order the file lists them (the file
restarts its numbering at Pace and at Consistent Characterization).

Reverse keying: the file marks items 2, 10–12, 18–22 "(reverse)". Item 9 ("Many sentences in
the story had frequently repeated words and phrases.") is not marked, yet it measures
repetition: in the study's final factor table it loads +.70 on repetitiveness together with
items 10–12, and the factor was then turned round to mean *avoiding* repetition. So it is
reverse-coded here too; otherwise a story full of repeated phrases would score *higher* on
Avoiding Repetition.

Reference: Wiechmann, *The AI Story Scale (AISS): building a psychometric questionnaire for
AI-generated stories*, Study 1 (github.com/MWiechmann/ai_story_scale). CC BY-SA 4.0: the
licence text is ``data/aiss_v1.LICENSE``, and :data:`ATTRIBUTION` must be shown with the items.
"""

from __future__ import annotations

import re
from importlib import resources

from cyoa.rating.instruments.types import Instrument, InstrumentError, Item

ATTRIBUTION = (
    "AI Story Scale (AISS) v1 by M. Wiechmann (https://github.com/MWiechmann/ai_story_scale), "
    "licensed under CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/). "
    "Item wording unchanged; CYOA also reverse-codes item 9 when scoring."
)
# What raters read beside the items: the licence's credit without the scale's name or its
# scoring, which could prime them (the whole ATTRIBUTION is in the preview, card and exports).
RATER_CREDIT = (
    "Questions by M. Wiechmann, licensed under CC BY-SA 4.0 "
    "(https://creativecommons.org/licenses/by-sa/4.0/)."
)
REFERENCE = (
    "Wiechmann, M. The AI Story Scale (AISS): building a psychometric questionnaire for "
    "AI-generated stories, Study 1. https://github.com/MWiechmann/ai_story_scale"
)
# Items scored in reverse although v1 does not mark them, with their text as a check that
# the vendored file is the one this was decided for.
REVERSED_UNMARKED = {"9": "Many sentences in the story had frequently repeated words and phrases."}
ITEM_COUNT = 22

_REVERSE_MARK = re.compile(r"\s*_\(reverse\)_\s*$")
_ITEM = re.compile(r"^\d+\.\s+(?P<text>.+)$")


def parse_aiss(markdown: str) -> Instrument:
    """The AISS v1 instrument from the text of ``aiss_v1.md``.

    Reads the point labels (the table under "Rating Points"), the instructions (the fenced
    block under "Instructions") and, under each later "## " heading (a factor), its numbered
    items, numbering them 1, 2, … across the whole file; "_(reverse)_" marks a reverse-keyed
    item, and :data:`REVERSED_UNMARKED` adds item 9. Raises :class:`InstrumentError` if the
    text does not have this shape or item 9's wording changed.
    """
    labels: tuple[str, ...] = ()
    instructions: list[str] = []
    items: list[Item] = []
    section = ""
    in_fence = False
    after_separator = False
    for raw_line in markdown.splitlines():
        line = raw_line.strip()
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            if section == "Instructions":
                instructions.append(line)
            continue
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        if section == "Rating Points":
            if set(line) <= {"-", "|"} and line:
                after_separator = True
            elif after_separator and "|" in line and not labels:
                labels = tuple(cell.strip() for cell in line.split("|"))
            continue
        match = _ITEM.match(line)
        if match and section not in ("", "Rating Points", "Instructions"):
            text = match["text"]
            reverse = bool(_REVERSE_MARK.search(text))
            text = _REVERSE_MARK.sub("", text).strip()
            number = str(len(items) + 1)
            if number in REVERSED_UNMARKED:
                if text != REVERSED_UNMARKED[number]:
                    raise InstrumentError(
                        f"AISS item {number} reads {text!r}, not "
                        f"{REVERSED_UNMARKED[number]!r}: check the vendored aiss_v1.md and "
                        f"which items need reverse coding."
                    )
                reverse = True
            items.append(
                Item(
                    id=number,
                    text=text,
                    kind="likert",
                    points=len(labels),
                    labels=labels,
                    reverse=reverse,
                    factor=section,
                )
            )
    if len(labels) != 5 or len(items) != ITEM_COUNT:
        raise InstrumentError(
            f"aiss_v1.md gave {len(labels)} point labels and {len(items)} items, not 5 and "
            f"{ITEM_COUNT}: check the vendored file."
        )
    return Instrument(
        id="aiss-v1",
        name="AI Story Scale (AISS) v1",
        version="1",
        reference=REFERENCE,
        attribution=ATTRIBUTION,
        instructions="\n".join(instructions).strip(),
        items=tuple(items),
    )


def load_aiss() -> Instrument:
    """The AISS v1 instrument from the vendored ``cyoa/rating/instruments/data/aiss_v1.md``."""
    text = resources.files("cyoa.rating.instruments").joinpath("data/aiss_v1.md").read_text("utf-8")
    return parse_aiss(text)
