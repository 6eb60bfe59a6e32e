"""What a participant who finished is shown to prove it, and where they are sent, for writers
and raters alike.

Every participant gets their own completion code when they start (kept in ``sessions`` or
``raters``): a researcher can check that the code a worker typed is theirs. Prolific checks a
study's one completion code instead (the study page's "completion code"), so a spec may set
``completion_code``: then every participant who finishes is shown that code, and sent back
with it. The completion URL's ``{code}`` is replaced by the code shown.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, urlsplit

# Prolific's codes are letters and digits (e.g. C1ABC2XY); - and _ serve other platforms.
STUDY_CODE = re.compile(r"[A-Za-z0-9_-]{1,64}")
PROLIFIC_COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"
PROLIFIC_HOSTS = ("app.prolific.com", "app.prolific.co")


def study_code_problem(value: Any) -> str:
    """Why ``value`` cannot be a spec's ``completion_code`` (a sentence), or "" when it can:
    1–64 letters, digits, - or _, as a participant copies it and a URL carries it."""
    if not isinstance(value, str) or not STUDY_CODE.fullmatch(value):
        return (
            "completion_code must be 1–64 letters, digits, - or _ (e.g. the code on "
            "Prolific's study page, such as C1ABC2XY); leave it out for a code per participant."
        )
    return ""


def is_prolific_completion(url: str) -> bool:
    """Whether ``url`` completes a submission on Prolific (its host, or its
    ``/submissions/complete`` path), which takes only the study's one completion code."""
    try:
        host = (urlsplit(url).hostname or "").lower()
    except ValueError:
        host = ""
    return host in PROLIFIC_HOSTS or "/submissions/complete" in url


def completion_url_problem(url: str, study_code: str) -> str:
    """Why a spec's ``completion_url`` cannot go with its ``completion_code`` (a sentence),
    or "" when it can: a Prolific completion URL needs the study-wide code, because Prolific
    rejects the per-participant code that each participant is otherwise sent back with."""
    if url and not study_code and is_prolific_completion(url):
        return (
            "a Prolific completion URL needs the study's completion code: copy it from your "
            "Prolific study page into completion_code (e.g. C1ABC2XY), as Prolific rejects "
            "the per-participant codes this app makes otherwise; or use another completion URL "
            f"(Prolific's is {PROLIFIC_COMPLETION_URL})."
        )
    return ""


def shown_code(study_code: str, own_code: str) -> str:
    """The code a finished participant is shown: the study-wide one when the spec sets it
    (what Prolific checks), else the participant's own."""
    return study_code or own_code


def completion_address(template: str, code: str) -> str:
    """The completion URL with ``{code}`` replaced by ``code`` (URL-quoted); "" when the spec
    gives no URL."""
    return template.replace("{code}", quote(code)) if template else ""
