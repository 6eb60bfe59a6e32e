"""The language participant pages are shown in, through Flask-Babel: which one a request gets,
the compiled catalogues, and the translated strings a page's script needs.

- A participant page of a study is in the study's ``language``, or, when its spec allows
  several (``languages``), in the one the browser prefers among them (Accept-Language,
  RFC 9110 §12.5.4); :func:`use_study_language` is called where the page finds its study.
- A participant page without a study (an unknown link) is in the browser's preferred
  language among all the app has; a Socket.IO event is in the language its page connected
  with (the ``lang`` query of the connection, one of the app's languages).
- Researchers' pages stay in English.

The catalogues (``cyoa/translations/<code>/LC_MESSAGES/messages.po``) are the only source:
their compiled ``.mo`` files are not committed but written at start (and by ``make``) when
missing or older than the ``.po`` (:func:`compile_catalogues`). The page's script looks its
strings up by their English text in a JSON table the page embeds (:func:`script_strings`);
plural forms are keyed by CLDR plural category so the script picks one with
``Intl.PluralRules``. Numbers are formatted with Babel (CLDR): Arabic keeps Western digits,
CLDR's default numbering system for ``ar``.
"""

from __future__ import annotations

import os
import tempfile
from functools import lru_cache
from gettext import c2py
from pathlib import Path
from typing import Any

from babel import Locale, negotiate_locale
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from flask import Blueprint, Flask, g, request
from flask_babel import Babel, format_number, get_locale, get_translations, gettext, refresh
from flask_babel.speaklater import LazyString

from cyoa.languages import (
    SOURCE_LANGUAGE,
    TRANSLATIONS,
    available_languages,
    described,
    text_direction,
)

# The files whose strings a page's script shows: looked up in the page's table, not on the
# server (the writing page draws the default survey and its scale itself).
SCRIPT_SOURCES = ("static/js/", "cyoa/cowriting/spec.py")


def init_app(app: Flask) -> None:
    """Compile the catalogues if needed and bind Flask-Babel to ``app``; templates get
    ``page_language`` (``lang``, ``dir``), ``script_strings`` and the ``number`` filter
    (a number in the page's language)."""
    compile_catalogues()
    Babel(
        app,
        locale_selector=_select_locale,
        default_translation_directories=str(TRANSLATIONS),
    )
    app.jinja_env.filters["number"] = format_number
    app.context_processor(
        lambda: {
            "page_language": page_language,
            "script_strings": script_strings,
            "language_choices": language_choices,
            "study_language": described,
        }
    )


def for_participants(bp: Blueprint) -> None:
    """Mark ``bp``'s pages as participants' pages: without a study they follow the
    browser's language (see the module's description)."""

    @bp.before_request
    def _participant_page() -> None:
        g.participant_page = True


def use_study_language(default: str, allowed: tuple[str, ...] | list[str]) -> str:
    """Show this request in the study's language: ``default``, or the browser's preferred
    one among ``allowed``. Returns the code chosen."""
    usable = [code for code in allowed if code in available_languages()] or [SOURCE_LANGUAGE]
    best = _browsers_choice(usable) if len(usable) > 1 else None
    g.study_language = best or (default if default in usable else usable[0])
    refresh()
    return g.study_language


def sentence(message: str, **values: Any) -> LazyString:
    """``message`` (with ``%(name)s`` placeholders for ``values``) in the language of the
    request it is shown in, English outside one; numbers among ``values`` are written for
    that language. It is translated when it becomes text, so a rule can raise it before any
    request has chosen a language."""
    return LazyString(_shown, message, None, None, values)


def plural_sentence(singular: str, plural: str, num: int, **values: Any) -> LazyString:
    """:func:`sentence` with the plural form for ``num`` (``%(num)s`` in the text)."""
    return LazyString(_shown, singular, plural, num, values)


def _shown(singular: str, plural: str | None, num: int | None, values: dict[str, Any]) -> str:
    numbers = {**values, **({} if num is None else {"num": num})}
    shown = {
        key: _number(value)
        if isinstance(value, int | float) and not isinstance(value, bool)
        else value
        for key, value in numbers.items()
    }
    if plural is None:
        return gettext(singular, **shown) if shown else gettext(singular)
    return get_translations().ngettext(singular, plural, num) % shown


def _number(value: float) -> str:
    return format_number(value) if get_locale() is not None else f"{value:,}"


def _browsers_choice(usable: list[str]) -> str | None:
    """The first of the browser's languages, in its order of preference, that is among
    ``usable``, a regional one (``ar-EG``) counting as its language (``ar``); None if none."""
    preferred = [code for code, _quality in request.accept_languages]
    return negotiate_locale(preferred, usable, sep="-")


def _select_locale() -> str:
    if "study_language" in g:
        return g.study_language
    languages = available_languages()
    if hasattr(request, "sid"):  # a Socket.IO event: the connection's own language
        lang = request.args.get("lang", SOURCE_LANGUAGE)
        return lang if lang in languages else SOURCE_LANGUAGE
    if g.get("participant_page"):
        return _browsers_choice(list(languages)) or SOURCE_LANGUAGE
    return SOURCE_LANGUAGE


def language_choices() -> list[tuple[str, str]]:
    """Each language a study can be in: its code and its name, in English and in itself
    ("es", "Spanish (español)"), for the researchers' forms and pages."""
    choices = []
    for code in available_languages():
        locale = Locale.parse(code)
        english, own = locale.get_display_name("en"), locale.get_display_name(code)
        choices.append((code, english if english == own else f"{english} ({own})"))
    return choices


def page_language() -> dict[str, str]:
    """The ``lang`` and ``dir`` of the page being drawn."""
    code = str(get_locale() or SOURCE_LANGUAGE)
    return {"lang": code, "dir": text_direction(code)}


def script_strings() -> dict[str, Any]:
    """The current language's translations of the strings the page's script shows, by their
    English text: a string, or for a plural message ``{"plural": English plural, "forms":
    {CLDR category: text}}``; ``"_lang"`` names the language."""
    code = str(get_locale() or SOURCE_LANGUAGE)
    return {"_lang": code, **_script_table(code)}


@lru_cache(maxsize=16)
def _script_table(code: str) -> dict[str, Any]:
    path = TRANSLATIONS / code / "LC_MESSAGES" / "messages.po"
    if not path.is_file():
        return {}
    with path.open("rb") as file:
        catalog = read_po(file, locale=code)
    locale = Locale.parse(code)
    table: dict[str, Any] = {}
    for message in catalog:
        if not message.id or message.fuzzy or not _in_script(message.locations):
            continue
        if isinstance(message.id, tuple):
            forms = _plural_forms(catalog, locale, message.string)
            table[message.id[0]] = {"plural": message.id[1], "forms": forms}
        elif message.string:
            table[message.id] = message.string
    return table


def _in_script(locations: list[tuple[str, int | None]]) -> bool:
    return any(path.startswith(SCRIPT_SOURCES) for path, _ in locations)


def _plural_forms(catalog: Any, locale: Locale, strings: tuple[str, ...]) -> dict[str, str]:
    """The catalogue's plural forms by CLDR category (``one``, ``few``, …): the gettext index
    of each category is found by evaluating the catalogue's plural rule on numbers of that
    category (0–200 covers every category of every language here)."""
    rule = c2py(catalog.plural_expr)
    forms: dict[str, str] = {}
    for n in range(201):
        category = locale.plural_form(n)
        index = rule(n)
        if category not in forms and index < len(strings) and strings[index]:
            forms[category] = strings[index]
    return forms


def compile_catalogues(folder: Path = TRANSLATIONS) -> list[Path]:
    """Write each catalogue's ``messages.mo`` when it is missing or older than its
    ``messages.po``, atomically (several workers may start at once). Returns the files
    written."""
    written = []
    for po in sorted(folder.glob("*/LC_MESSAGES/messages.po")):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as file:
            catalog = read_po(file, locale=po.parent.parent.name)
        handle, temporary = tempfile.mkstemp(dir=po.parent, suffix=".mo.tmp")
        with os.fdopen(handle, "wb") as out:
            write_mo(out, catalog)
        os.replace(temporary, mo)
        written.append(mo)
    return written
