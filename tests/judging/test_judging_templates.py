"""A judge's prompt template, both kinds': its placeholders read, and a template that cannot
be filled refused with a sentence that says what to change."""

from __future__ import annotations

import pytest

from cyoa.judging.templates import TemplateError, listed, placeholders


def test_a_template_s_placeholders_are_read_and_literal_braces_are_not_placeholders():
    assert placeholders("{story} {{not}} {a}", ("story", "a", "b")) == {"story", "a"}


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("{story:d}", "The template writes {story:d}: write its placeholders plainly, as "
                      "{story}, {a} and {b}."),
        ("{story!r}", "The template writes {story!r}:"),
        ("{story!s:>9}", "The template writes {story!s:>9}:"),
        ("{story} {writer}", "The template has placeholder(s) {writer}; use only {story}, {a} "
                             "and {b}."),
        ("{story", "The template is not a template ("),
        ("story}", "write a literal brace as {{ or }}."),
    ],
)  # fmt: skip
def test_a_template_that_cannot_be_filled_as_text_is_refused_with_a_sentence(text, sentence):
    with pytest.raises(TemplateError) as refused:
        placeholders(text, ("story", "a", "b"))
    assert sentence in str(refused.value)


def test_the_refusal_names_what_was_checked_and_lists_the_known_placeholders():
    with pytest.raises(TemplateError, match=r"^The likert template has .* use only \{story\}\.$"):
        placeholders("{scale}", ("story",), "The likert template")
    assert listed(("story", "a")) == "{story} and {a}"
