"""The Torrance Test of Creative Writing (TTCW), read from ``data/ttcw_all_tests.json``.

14 binary tests in the four Torrance dimensions (Fluency 1–5, Flexibility 6–8, Originality
9–11, Elaboration 12–14). Each is a Yes/No question asked with its expanded expert measure and
a written rationale, as the experts answered them (Chakrabarty et al., CHI 2024, §5.4 and
Table 3, "Human Instruction": the measure, "Based on the story that you just read, answer the
following question.", the question, Yes/No, "Reasoning:").

The released ``full_prompt`` is the measure followed by the instruction given to LLMs ("Given
the story above, … give an answer between 'Yes' or 'No' only", then "Q) <question>"). An
item's ``context`` is the measure alone, i.e. ``full_prompt`` up to that last paragraph, since
human raters get the human instruction instead.

Reference: Chakrabarty, T., Laban, P., Agarwal, D., Muresan, S. and Wu, C.-S. (2024). Art or
Artifice? Large Language Models and the False Promise of Creativity. CHI. Test texts from
salesforce/creativity_eval, BSD-3-Clause (``data/ttcw.LICENSE``).
"""

from __future__ import annotations

import json
from importlib import resources

from cyoa.rating.instruments.types import Instrument, InstrumentError, Item

ATTRIBUTION = (
    "TTCW tests from salesforce/creativity_eval (Chakrabarty et al., CHI 2024), "
    "Copyright (c) 2023, Salesforce, BSD-3-Clause."
)
# What raters read beside the tests: the licence's credit without the battery's name.
RATER_CREDIT = "Questions Copyright (c) 2023, Salesforce, BSD-3-Clause."
REFERENCE = (
    "Chakrabarty, T., Laban, P., Agarwal, D., Muresan, S. and Wu, C.-S. (2024). Art or "
    "Artifice? Large Language Models and the False Promise of Creativity. CHI."
)
INSTRUCTIONS = (
    "Based on the story that you just read, answer the following question: Yes or No. "
    "Then give your reasoning."
)
TEST_COUNT = 14
# The paragraph of each full_prompt that instructs an LLM, not a person, starts so.
_LLM_INSTRUCTION = "\n\nGiven the story"


def expanded_measure(full_prompt: str) -> str:
    """The expanded expert measure of a released ``full_prompt``: the text before its last
    paragraph starting "Given the story" (the instruction for LLMs and the question)."""
    measure, found, _ = full_prompt.rpartition(_LLM_INSTRUCTION)
    if not found:
        raise InstrumentError(
            "A TTCW full_prompt has no paragraph starting 'Given the story': check the "
            "vendored ttcw_all_tests.json."
        )
    return measure.strip()


def parse_ttcw(tests: list[dict]) -> Instrument:
    """The TTCW instrument from the released list of tests (``ttcw_all_tests.json``).

    Item id ``str(ttcw_idx)``, ``text`` the question, ``factor`` the Torrance dimension,
    ``category`` the test's name, ``context`` its expanded measure, kind ``yes_no`` with a
    rationale asked; in ``ttcw_idx`` order.
    """
    items = tuple(
        Item(
            id=str(test["ttcw_idx"]),
            text=test["question"].strip(),
            kind="yes_no",
            factor=test["torrance_dimension"],
            rationale=True,
            context=expanded_measure(test["full_prompt"]),
            category=test["category"],
        )
        for test in sorted(tests, key=lambda test: int(test["ttcw_idx"]))
    )
    if len(items) != TEST_COUNT:
        raise InstrumentError(
            f"ttcw_all_tests.json holds {len(items)} tests, not {TEST_COUNT}: check the file."
        )
    return Instrument(
        id="ttcw",
        name="Torrance Test of Creative Writing (TTCW)",
        version="CHI 2024",
        reference=REFERENCE,
        attribution=ATTRIBUTION,
        instructions=INSTRUCTIONS,
        items=items,
    )


def load_ttcw() -> Instrument:
    """The TTCW instrument from the vendored
    ``cyoa/rating/instruments/data/ttcw_all_tests.json``."""
    path = resources.files("cyoa.rating.instruments").joinpath("data/ttcw_all_tests.json")
    return parse_ttcw(json.loads(path.read_text("utf-8")))


def released_prompts() -> dict[str, str]:
    """Each test's released ``full_prompt`` by item id (``"1"``–``"14"``): the expanded
    measure, the instruction given to LLMs and the question, verbatim, as the paper's LLM
    judges were asked (§6)."""
    path = resources.files("cyoa.rating.instruments").joinpath("data/ttcw_all_tests.json")
    tests = json.loads(path.read_text("utf-8"))
    return {str(test["ttcw_idx"]): test["full_prompt"].strip() for test in tests}
