"""The participant interface's catalogues: every string a writer or rater reads is in them,
and the Spanish and Arabic translations are complete, keep each placeholder and have every
plural form (Arabic: six)."""

import ast
import re
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po

from cyoa.languages import TRANSLATIONS
from tests.paths import ROOT

# The same keywords as `make messages` (Makefile: BABEL_EXTRACT).
KEYWORDS = {
    "_": None,
    "gettext": None,
    "ngettext": (1, 2),
    "sentence": None,
    "plural_sentence": (1, 2),
    "marked": None,
}
METHODS = [
    ("cyoa/**.py", "python"),
    ("templates/**.html", "jinja2"),
    ("static/js/*.js", "javascript"),
]
PLACEHOLDER = re.compile(r"%\(\w+\)s|\{\w+\}")
# In a plural form the count may be said in words ("one question", "two questions").
COUNTS = {"%(num)s", "{n}"}


def catalogue(path: Path):
    with path.open("rb") as file:
        return read_po(file)


def messages(cat) -> dict:
    return {message.id: message for message in cat if message.id}


def extracted() -> set:
    found = set()
    for _file, _line, message, _comments, _context in extract_from_dir(
        ROOT, METHODS, keywords=KEYWORDS, options_map={"**.html": {"extensions": "jinja2.ext.i18n"}}
    ):
        found.add(message if isinstance(message, str) else tuple(message))
    return found


def test_the_committed_template_holds_every_string_marked_for_translation():
    committed = set(messages(catalogue(TRANSLATIONS / "messages.pot")))
    marked = extracted()
    assert marked - committed == set(), "run `make messages` and translate the new strings"
    assert committed - marked == set(), "run `make messages`: the template has stale strings"


@pytest.mark.parametrize("code", ["es", "ar"])
def test_every_string_is_translated_with_its_placeholders(code):
    template = messages(catalogue(TRANSLATIONS / "messages.pot"))
    cat = catalogue(TRANSLATIONS / code / "LC_MESSAGES" / "messages.po")
    translated = messages(cat)
    assert set(template) - set(translated) == set(), f"run `make messages` for {code}"
    for msgid in template:
        message = translated[msgid]
        assert not message.fuzzy, f"{code}: fuzzy translation of {msgid!r}"
        if isinstance(msgid, tuple):
            assert len(message.string) == cat.num_plurals, f"{code}: plural forms of {msgid!r}"
            wanted = set(PLACEHOLDER.findall(msgid[1]))
            for form in message.string:
                assert form.strip(), f"{code}: an empty plural form of {msgid!r}"
                assert wanted - COUNTS <= set(PLACEHOLDER.findall(form)) <= wanted, (code, form)
        else:
            assert message.string.strip(), f"{code}: no translation of {msgid!r}"
            assert sorted(PLACEHOLDER.findall(message.string)) == sorted(
                PLACEHOLDER.findall(msgid)
            ), f"{code}: placeholders of {msgid!r}"


def test_arabic_has_six_plural_forms_and_spanish_three():
    ar = catalogue(TRANSLATIONS / "ar" / "LC_MESSAGES" / "messages.po")
    es = catalogue(TRANSLATIONS / "es" / "LC_MESSAGES" / "messages.po")
    assert (ar.num_plurals, es.num_plurals) == (6, 3)


def _raised_sentences(path: Path) -> list[str]:
    """Each ``RuleError(...)`` in ``path`` given a bare string or f-string: a sentence a
    participant reads that no catalogue holds."""
    bare = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "RuleError"
            and node.args
            and isinstance(node.args[0], ast.Constant | ast.JoinedStr)
        ):
            bare.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return bare


def test_no_sentence_refused_to_a_participant_is_a_bare_string():
    files = [*ROOT.glob("cyoa/cowriting/*.py"), *ROOT.glob("cyoa/rating/*.py")]
    bare = [where for path in files for where in _raised_sentences(path)]
    assert bare == [], "wrap these sentences in sentence(...) (cyoa/web/language.py)"


# A string literal in a page script that reads as English words: "Saved", "Not connected".
ENGLISH_LITERAL = re.compile(r"""(?<![\w.])(["'`])([A-Z][a-z]+(?:[ ,.…—:;?!'][^"'`]*)?)\1""")
# The English text given to gettext or ngettext: looked up in the catalogue.
TRANSLATED = re.compile(r"""n?gettext\(\s*(?:(["'`])(?:\\.|(?!\1).)*\1\s*,?\s*){1,2}""", re.S)
# What the scripts name that is not read by a participant: headers, tags, methods, events.
NOT_READ = {"POST", "Content-Type", "Accept-Language", "Retry-After", "X-CYOA-Action", "TEXTAREA"}


# Every participant page's script (the researchers' ones, under research/, stay English).
PARTICIPANT_SCRIPTS = sorted(path.name for path in (ROOT / "static" / "js").glob("*.js"))


@pytest.mark.parametrize("script", PARTICIPANT_SCRIPTS)
def test_the_page_scripts_show_no_english_text_outside_the_catalogue(script):
    source = (ROOT / "static" / "js" / script).read_text(encoding="utf-8")
    code = re.sub(r"//[^\n]*", "", source)  # comments are not shown
    code = TRANSLATED.sub("gettext(", code)
    found = [
        text for match in ENGLISH_LITERAL.finditer(code) if (text := match.group(2)) not in NOT_READ
    ]
    assert found == [], f"wrap these in gettext(...) ({script})"
