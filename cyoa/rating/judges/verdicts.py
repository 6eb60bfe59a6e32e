"""A judge model's verdicts read from files (pure).

``ttcw-llm``: the TTCW release's LLM verdict files (salesforce/creativity_eval,
``Art_or_Artifice/data/annotations_<model>.jsonl``; Chakrabarty et al., CHI 2024, §6), one
JSON object per line, ``{"id": "story_<n>_<source>_test<k>", "response": "…"}``: the judge's
whole answer to TTCW test ``k`` (1–14) about the story ``<n>_<source>``.

The verdict rule (:func:`parse_verdict`): the release's notebook counts a response as Yes iff
it starts with "yes"; here a response whose first word is "yes" (any case) is Yes, one whose
first word is "no" is No, and any other is *unparsed*: stored without a value, its response
kept as the rationale, and counted wherever the judge is calibrated, never taken for a No.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from cyoa.rating.importing import Judgement, RatingImportError, read_records
from cyoa.rating.instruments import TTCW

_ID = re.compile(r"story_([^_]+)_(.+)_test(\d+)")
_YES = re.compile(r"yes\b", re.IGNORECASE)
_NO = re.compile(r"no\b", re.IGNORECASE)


def parse_verdict(response: str) -> float | None:
    """1.0 when ``response``'s first word is "yes", 0.0 when it is "no" (any case, from the
    first character: the release's rule), else None (unparsed)."""
    if _YES.match(response):
        return 1.0
    return 0.0 if _NO.match(response) else None


def ttcw_llm_judgements(
    text: str, filename: str, judge: str, stories: Mapping[str, str], experiment: str
) -> list[Judgement]:
    """The judgements of one judge's TTCW verdict file (see the module), as rater ``judge``,
    each about a story of ``stories`` (id → source) of ``experiment``. A line that is not a
    verdict, names a story or test the experiment does not have, or repeats an id stops the
    import with a :class:`RatingImportError` naming the file and line."""
    judgements: list[Judgement] = []
    seen: dict[str, int] = {}
    for number, record in read_records(text, filename):
        where = f"{filename}, line {number}"
        story_id, test = _story_and_test(record, where)
        if story_id not in stories:
            raise RatingImportError(
                f"{where}: story {story_id!r} is not in {experiment!r}; add verdicts only about "
                "its stories."
            )
        key = f"{story_id}/{test}"
        if key in seen:
            raise RatingImportError(
                f"{where}: test {test} of story {story_id!r} has a verdict already on line "
                f"{seen[key]}; keep one verdict per story and test."
            )
        seen[key] = number
        response = record.get("response")
        if not isinstance(response, str) or not response.strip():
            raise RatingImportError(f"{where}: the field 'response' is missing or empty.")
        judgements.append(
            Judgement(
                story_id=story_id,
                source=stories[story_id],
                rater_id=judge,
                item_id=str(test),
                value=parse_verdict(response),
                text=None,
                rationale=response,
            )
        )
    if not judgements:
        raise RatingImportError(f"{filename}: no verdicts found.")
    return judgements


def _story_and_test(record: dict, where: str) -> tuple[str, int]:
    """The story id (``<n>_<source>``) and TTCW test of a verdict's ``id``."""
    raw = str(record.get("id") or "").strip()
    match = _ID.fullmatch(raw)
    if match is None:
        raise RatingImportError(
            f"{where}: id {raw!r} is not 'story_<n>_<source>_test<k>' (e.g. 'story_0_GPT4_test1')."
        )
    test = int(match.group(3))
    if not 1 <= test <= len(TTCW.items):
        raise RatingImportError(f"{where}: test{test} is not a TTCW test (test1 to test14).")
    return f"{match.group(1)}_{match.group(2)}", test
