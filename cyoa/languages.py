"""Which languages a study's participant pages can be shown in, and a spec's choice among them.

A language is available when the app has a catalogue for it (``cyoa/translations/<code>/
LC_MESSAGES/messages.po``); English, the language of the source strings, always is. A spec
names its ``language`` (a BCP 47 code, default ``"en"``) and may allow several with
``languages = [...]``, among which the participant's browser (its Accept-Language header)
picks; ``language`` is then the one used when the browser asks for none of them.

Reference: Phillips, A. & Davis, M. (2009). Tags for Identifying Languages. BCP 47 (RFC 5646).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from babel import Locale, UnknownLocaleError

TRANSLATIONS = Path(__file__).resolve().parent / "translations"
SOURCE_LANGUAGE = "en"
ENGLISH = SOURCE_LANGUAGE
# Written right to left (Unicode CLDR's character order for these languages).
RIGHT_TO_LEFT = frozenset({"ar", "fa", "he", "ur"})


@dataclass(frozen=True)
class StudyLanguages:
    """A study's language (``default``) and every language its pages may be shown in
    (``allowed``, ``default`` first)."""

    default: str = SOURCE_LANGUAGE
    allowed: tuple[str, ...] = (SOURCE_LANGUAGE,)


def marked(message: str) -> str:
    """``message`` unchanged, marked for the catalogue (``pybabel extract -k marked``): for a
    string translated where it is shown, not where it is written."""
    return message


@lru_cache(maxsize=4)
def available_languages(folder: Path = TRANSLATIONS) -> tuple[str, ...]:
    """The codes the app can show pages in: English first, then every catalogue in
    ``folder``, sorted (read once per process: a new catalogue needs a restart)."""
    found = sorted(p.parent.parent.name for p in folder.glob("*/LC_MESSAGES/messages.po"))
    return (SOURCE_LANGUAGE, *(code for code in found if code != SOURCE_LANGUAGE))


def text_direction(code: str) -> str:
    """``"rtl"`` for a language written right to left, else ``"ltr"`` (the value of HTML's
    ``dir`` attribute)."""
    return "rtl" if code.split("-")[0].lower() in RIGHT_TO_LEFT else "ltr"


def spec_fields(language: str, others: str) -> dict[str, Any]:
    """The spec fields for a new-study form's choice: ``language`` (left out for English,
    the default) and, when ``others`` names more codes (separated by commas or spaces),
    ``languages``. Checked when the spec is read (:func:`study_languages`)."""
    language = language.strip() or SOURCE_LANGUAGE
    more = [code for code in others.replace(",", " ").split() if code != language]
    fields: dict[str, Any] = {} if language == SOURCE_LANGUAGE else {"language": language}
    if more:
        fields["languages"] = [language, *dict.fromkeys(more)]
    return fields


def form_fields(spec: dict[str, Any]) -> dict[str, str]:
    """The form's values for a spec's language fields: the inverse of :func:`spec_fields`."""
    language = spec.get("language", SOURCE_LANGUAGE)
    others = [code for code in spec.get("languages", []) if code != language]
    return {"language": language, "languages": ", ".join(others)}


def language_name(code: str) -> str:
    """The English name of the language ``code``, as a researcher reads it in a sentence:
    "Arabic" for "ar", "Spanish (Mexico)" for "es-MX" (Unicode CLDR's names, through Babel);
    a code CLDR does not know is named by itself ("tlh")."""
    try:
        return Locale.parse(code, sep="-").get_display_name(ENGLISH) or code
    except (UnknownLocaleError, ValueError):
        return code


def described(spec: Mapping[str, Any]) -> str:
    """A sentence for the evaluation card and the experiment page: the language(s) the
    participants' interface was in. The study's own texts (consent, instructions, prompt,
    survey, stories) are as the researcher wrote them."""
    default = spec.get("language", SOURCE_LANGUAGE)
    allowed = [code for code in spec.get("languages", [default]) if code != default]
    way = ", written right to left" if text_direction(default) == "rtl" else ""
    shown = f"{language_name(default)} ({default}{way})"
    if not allowed:
        return f"The participants' interface was in {shown}."
    others = ", ".join(f"{language_name(code)} ({code})" for code in allowed)
    return (
        f"The participants' interface was in {shown}, or in {others} for a participant whose "
        "browser preferred it (the language each participant saw is recorded when they start)."
    )


def study_languages(raw: dict[str, Any]) -> StudyLanguages:
    """A spec's ``language`` and ``languages`` fields, checked against the available
    catalogues. ValueError with a sentence naming the field and the available languages."""
    available = available_languages()
    names = ", ".join(f'"{code}"' for code in available)
    default = raw.get("language", SOURCE_LANGUAGE)
    if not isinstance(default, str) or default not in available:
        raise ValueError(
            f"'language' must be one of the languages the app has catalogues for: {names} "
            f"(not {default!r})."
        )
    allowed = raw.get("languages", [default])
    if not isinstance(allowed, list) or not allowed:
        raise ValueError(f"'languages' must be a list of language codes, e.g. [{names}].")
    for code in allowed:
        if not isinstance(code, str) or code not in available:
            raise ValueError(
                f"'languages' lists {code!r}, which the app has no catalogue for; use {names}."
            )
    if default not in allowed:
        raise ValueError(
            f"'language' ({default!r}) must be among 'languages', since it is shown to a "
            "participant whose browser asks for none of them."
        )
    rest = tuple(dict.fromkeys(code for code in allowed if code != default))
    return StudyLanguages(default, (default, *rest))


def primary_language(code: str) -> str:
    """The primary language subtag of ``code``, lower-cased: "es" for "es-MX"."""
    return code.split("-")[0].lower()


def is_english(code: str) -> bool:
    """Whether ``code`` is English ("en", "en-GB", …)."""
    return primary_language(code) == ENGLISH
