"""Pure text helpers: the prompt a model continues, and trimming its output to one sentence.

All lengths are in characters (Python ``str`` code points), the unit the writer's limits use.
"""

from __future__ import annotations

import re

# A sentence ends with ., ! or ? (or an ellipsis character), possibly doubled ("?!"), possibly
# followed by closing quotes or brackets, which belong to the sentence.
_CLOSERS = "\"'”’»)]"
_TERMINATOR = re.compile(r"(?:[.!?]+|…)[\"'”’»)\]]*")
# Title abbreviations that are followed by a name, not by a new sentence.
_ABBREVIATIONS = frozenset({"Mr", "Mrs", "Ms", "Dr", "St", "Mt", "Prof", "Jr", "Sr"})
_ABBREVIATION_BEFORE = re.compile(r"(?:^|[\s(\"'“‘])(\w+)$")
# What a cut at a word boundary should not leave dangling at the end.
_DANGLING = " ,;:-–—(“‘"


def clean_text(raw: str) -> str:
    """``raw`` with every run of whitespace (spaces, tabs, newlines, non-breaking spaces)
    replaced by one space, and no leading or trailing whitespace."""
    return " ".join(raw.split())


def _sentence_ends(text: str, *, confirmed_only: bool) -> list[tuple[int, bool]]:
    """Each sentence end in ``text`` (already cleaned): the offset just past it, and whether
    every double quote opened before it is closed by then.

    A terminator counts only when whitespace follows it, so "3.5" and "e.g.," are not ends;
    at the very end of the text it counts unless ``confirmed_only`` (while text is still
    streaming, the next piece could turn "3." into "3.5").
    """
    ends = []
    for match in _TERMINATOR.finditer(text):
        end = match.end()
        if end < len(text):
            if not text[end].isspace():
                continue
        elif confirmed_only:
            continue
        if match.group().rstrip(_CLOSERS) == ".":
            before = _ABBREVIATION_BEFORE.search(text, 0, match.start())
            if before and before.group(1) in _ABBREVIATIONS:
                continue
        ends.append((end, _quotes_closed(text[:end])))
    return ends


def _quotes_closed(text: str) -> bool:
    # Single quotes are left out: they are also apostrophes ("don't", "Mara's").
    return text.count('"') % 2 == 0 and text.count("“") <= text.count("”")


def _first_end(text: str, min_chars: int, max_chars: int, *, confirmed_only: bool) -> int | None:
    """Where the suggestion ends: the first sentence end within ``[min_chars, max_chars]``
    outside any quotation, else the first one inside a quotation (a model may never close
    the quote), else None."""
    ends = [
        (end, closed)
        for end, closed in _sentence_ends(text, confirmed_only=confirmed_only)
        if min_chars <= end <= max_chars
    ]
    closed_ends = [end for end, closed in ends if closed]
    if closed_ends:
        return closed_ends[0]
    return ends[0][0] if ends else None


def _cut_at_word(text: str, max_chars: int) -> str:
    """The longest prefix of ``text`` of at most ``max_chars`` characters that ends at a word
    boundary, without a trailing comma, dash or opening quote."""
    if len(text) <= max_chars:
        return text
    if text[max_chars].isspace():
        cut = text[:max_chars]
    else:
        space = text.rfind(" ", 0, max_chars + 1)
        # A single word longer than the limit cannot be cut at a boundary; the limit wins.
        cut = text[:space] if space > 0 else text[:max_chars]
    return cut.rstrip(_DANGLING) or cut


def trim_suggestion(raw: str, min_chars: int = 20, max_chars: int = 260) -> str:
    """Cut a model's raw continuation down to what the writer is shown.

    Whitespace is collapsed to single spaces. The result ends at the first sentence end that
    lies at or beyond ``min_chars`` characters (so a too-short first sentence such as "Yes."
    runs on to the next sentence end), preferring an end outside double quotes (so a quoted
    speech of several sentences is kept whole) unless the quote never closes. When no
    sentence ends within ``max_chars`` characters, the text is cut at the last word boundary
    at or before ``max_chars``; a text that simply stops (no sentence end, within the limit)
    is returned whole. The result is never longer than ``max_chars`` characters; it may be
    shorter than ``min_chars`` if the model wrote too little, which the caller must check.
    """
    text = clean_text(raw)
    end = _first_end(text, min_chars, max_chars, confirmed_only=False)
    return text[:end] if end is not None else _cut_at_word(text, max_chars)


def sentence_complete(partial: str, min_chars: int, max_chars: int) -> bool:
    """Whether streaming can stop: ``partial`` already holds a sentence end outside double
    quotes at or beyond ``min_chars`` characters (confirmed by the whitespace after it), or
    is longer than ``max_chars`` characters, so :func:`trim_suggestion` would not change
    with more text."""
    text = clean_text(partial)
    if len(text) > max_chars:
        return True
    return any(
        end >= min_chars and closed for end, closed in _sentence_ends(text, confirmed_only=True)
    )


def display_text(partial: str, max_chars: int) -> str:
    """What the writer sees while a suggestion streams in: ``partial`` cleaned and cut at a
    word boundary to at most ``max_chars`` characters."""
    return _cut_at_word(clean_text(partial), max_chars)


def story_as_models_see_it(story_turns: list[str]) -> str:
    """The story so far as a model is given it (before the model card's template): the
    turns joined by one space and cleaned (:func:`clean_text`), ending right after the last
    sentence; "" for an empty story.

    A story whose last turn does not end a sentence gets a full stop, so the model starts a
    new sentence instead of finishing the writer's. No trailing space: both tokenizers attach
    the space to the next word (" The"), so a trailing space would force an unusual token and
    worse text. The preference data's ``prompt`` is this text, so that it is what the models
    saw."""
    story = clean_text(" ".join(story_turns))
    if not story:
        return ""
    ends = _sentence_ends(story, confirmed_only=False)
    if not ends or ends[-1][0] != len(story):
        story = story.rstrip(" ,;:-–—") + "."
    return story


def build_prompt(story_turns: list[str], template: str) -> str:
    """The text a model continues: the story so far (:func:`story_as_models_see_it`: turns
    joined by one space, ending with a full stop) put into the model card's ``template`` at
    ``{story}``."""
    story = story_as_models_see_it(story_turns)
    if not story:
        raise ValueError("The story is empty: write at least one line before asking a model.")
    if "{story}" not in template:
        raise ValueError("A prompt template must contain {story}.")
    return template.replace("{story}", story).rstrip()
