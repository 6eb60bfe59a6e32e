"""Reading a participant page as its reader does: the text the page itself says, without
what the study, its instrument or the writer wrote (marked ``dir`` or ``<bdi>``) and the
completion code."""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Written the same in every language: the app's name, the paper cited, platforms' names.
SAME_IN_EVERY_LANGUAGE = {"CYOA", "Choose", "Your", "Own", "Adventure", "Clark", "Smith"}
SAME_IN_EVERY_LANGUAGE |= {"NAACL", "Prolific", "NUL"}
LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z'’]+")


class _PageText(HTMLParser):
    SKIPPED = {"script", "style", "head", "bdi", "textarea"}
    VOID = {"meta", "link", "input", "br", "img", "hr"}
    READ = ("placeholder", "alt", "aria-label", "title")

    def __init__(self) -> None:
        super().__init__()
        self.open: list[bool] = []  # per open element: whether its text is skipped
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        skipped = (
            (self.open and self.open[-1])
            or tag in self.SKIPPED
            or "dir" in values
            or values.get("id") == "completion-code"
        )
        if not skipped:
            self.text += [values[name] for name in self.READ if values.get(name)]
        if tag not in self.VOID:
            self.open.append(bool(skipped))

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.open:
            self.open.pop()

    def handle_data(self, data):
        if not (self.open and self.open[-1]):
            self.text.append(data)


def page_text(html: str) -> str:
    """The words the page shows of its own (and its attributes read aloud), joined."""
    body = html.split("<body>", 1)[-1]
    parser = _PageText()
    parser.feed(body)
    return " ".join(" ".join(parser.text).split())


def english_words(html: str) -> list[str]:
    """The Latin-script words a page shows of its own that are not the same in every
    language: in an Arabic page, each is English text no catalogue translated."""
    return [w for w in LATIN_WORD.findall(page_text(html)) if w not in SAME_IN_EVERY_LANGUAGE]


def html_language(html: str) -> tuple[str, str]:
    """The page's ``<html lang dir>``."""
    found = re.search(r'<html lang="([^"]+)" dir="([^"]+)">', html)
    return (found[1], found[2]) if found else ("", "")
