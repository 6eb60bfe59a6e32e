"""A judge's prompt template read and checked (pure): text with placeholders in braces, each
written plainly (``{story}``, never ``{story:d}`` or ``{story!r}``: every value filled in is
text, which takes no format spec or conversion), each one the wing knows. Both kinds' judges
check their templates here before a run stores them, so a template that cannot be filled is
refused with a sentence before any verdict, never met as a traceback half way through."""

from __future__ import annotations

import string
from collections.abc import Sequence


class TemplateError(ValueError):
    """A template that cannot be filled; the message says what to change."""


def listed(names: Sequence[str]) -> str:
    """``("story", "a", "b")`` as words: ``{story}, {a} and {b}``."""
    braced = ["{" + name + "}" for name in names]
    return braced[0] if len(braced) == 1 else f"{', '.join(braced[:-1])} and {braced[-1]}"


def placeholders(text: str, known: Sequence[str], what: str = "The template") -> set[str]:
    """The placeholders of the template ``text``, each one of ``known``. Raises
    :class:`TemplateError`, its sentence starting with ``what``, for a text that is not a
    template (a lone brace), a placeholder with a ``!conversion`` or ``:format`` spec, or one
    not in ``known``."""
    try:
        fields = [
            (name, conversion, spec)
            for _, name, spec, conversion in string.Formatter().parse(text)
            if name is not None
        ]
    except ValueError as error:
        raise TemplateError(
            f"{what} is not a template ({error}); write a literal brace as {{{{ or }}}}."
        ) from None
    for name, conversion, spec in fields:
        if conversion is not None or spec:
            mark = (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
            raise TemplateError(
                f"{what} writes {{{name}{mark}}}: write its placeholders plainly, as "
                f"{listed(known)}."
            )
    names = {name for name, _, _ in fields}
    unknown = sorted(names - set(known))
    if unknown:
        raise TemplateError(
            f"{what} has placeholder(s) {', '.join('{' + n + '}' for n in unknown)}; use only "
            f"{listed(known)}."
        )
    return names
