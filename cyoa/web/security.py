"""What keeps writers' and researchers' pages, forms and downloads safe: response headers,
CSRF tokens for every form, and spreadsheet-formula neutralisation of exported text.

- **Headers**: scripts and styles only from this server, no framing (:data:`CSP`).
- **CSRF**: every form carries a random token kept in the signed session cookie
  (``secrets.token_urlsafe``), compared in constant time (:func:`csrf_valid`). The cookie is
  SameSite=Lax, so a page on another site cannot read the token, and a form it submits
  arrives without the cookie.
- **Formulas**: a text cell that a spreadsheet would run as a formula gets a leading ``'``
  (:func:`neutralize_cell`; OWASP, "CSV Injection").
- **Direction controls**: in a CSV cell or a page title, a bidirectional embedding, override
  or isolate control is written as its code point (:func:`visible_controls`), so that an id
  or text a participant sent cannot reorder what is shown after it (Boucher & Anderson 2021,
  "Trojan Source"); on a page, templates and scripts isolate ids instead (``<bdi>``, or
  ``dir="auto"`` on the link or cell that holds one).
"""

from __future__ import annotations

import logging
import secrets
import threading
import unicodedata
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, request, session
from werkzeug.middleware.proxy_fix import ProxyFix

# Scripts and styles only from this server: nothing typed by a writer can run as code.
log = logging.getLogger(__name__)
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
)
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
CSRF_SESSION_KEY = "csrf"
# A cell starting with one of these is run as a formula (OWASP, "CSV Injection")...
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# ... and so is one whose first visible character is one of these signs, after spaces or
# invisible format characters, or as its full-width form (＝ ＋ － ＠, which NFKC makes ASCII).
FORMULA_SIGNS = frozenset("=+-@")
# The controls that embed, override or isolate a run of text's direction (U+202A–U+202E,
# U+2066–U+2069): one left open reverses everything after it on the line. Marks (U+200E,
# U+200F, U+061C) are kept: they change no more than the characters beside them.
BIDI_CONTROLS = {
    code: f"<U+{code:04X}>" for code in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
}


def csrf_token() -> str:
    """This session's CSRF token (created on first use); templates put it in every form."""
    token = session.get(CSRF_SESSION_KEY)
    if not isinstance(token, str):
        token = renew_csrf_token()
    return token


def renew_csrf_token() -> str:
    """A fresh CSRF token for this session (at a login: a new privilege level)."""
    token = secrets.token_urlsafe(32)
    session[CSRF_SESSION_KEY] = token
    return token


def csrf_valid() -> bool:
    """Whether this request may change something: a safe method (GET, HEAD, OPTIONS), or one
    that carries this session's token (form field ``csrf_token`` or header
    ``X-CSRF-Token``). Never changes the session, so a refused request from another site
    cannot replace the cookie the browser holds."""
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return True
    expected = session.get(CSRF_SESSION_KEY)
    sent = request.form.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER) or ""
    return isinstance(expected, str) and secrets.compare_digest(
        expected.encode("utf-8"), sent.encode("utf-8", "surrogatepass")
    )


def neutralize_cell(value: Any) -> Any:
    """A text cell as a spreadsheet may safely open it. One it would run as a formula gets a
    leading single quote: starting with = + - @, a tab or a carriage return, or with one of
    the four signs (or its full-width form ＝ ＋ － ＠) after spaces or invisible format
    characters (zero-width space, byte-order mark, bidirectional controls). Each bidirectional
    embedding, override or isolate control is then written as its code point (``<U+202E>``),
    visible and inert. Anything but text is returned as is."""
    if not isinstance(value, str):
        return value
    if value.startswith(FORMULA_STARTS) or _starts_with_formula_sign(value):
        value = "'" + value
    return visible_controls(value)


def visible_controls(text: str) -> str:
    """``text`` with each bidirectional embedding, override or isolate control written as its
    code point (``<U+202E>``): for plain text that no ``<bdi>`` can isolate (a CSV cell, a
    page's ``<title>``, as the template filter ``visible_controls``)."""
    return text.translate(BIDI_CONTROLS)


def _starts_with_formula_sign(text: str) -> bool:
    """Whether the first character of ``text`` that is neither a space nor an invisible format
    character (Unicode category Cf) is a formula sign, in ASCII or its NFKC-equivalent form."""
    for character in text:
        if character.isspace() or unicodedata.category(character) == "Cf":
            continue
        return unicodedata.normalize("NFKC", character) in FORMULA_SIGNS
    return False


def init_app(app: Flask) -> None:
    """Every response's security headers, the CSRF token in every template, and, behind
    ``CYOA_PROXIES`` proxies, the client's address as the nearest proxies saw it (by which
    starts and logins are limited), not the proxy's own."""
    proxies = int(app.config["PROXIES"])
    if proxies < 0:
        raise ValueError(f"CYOA_PROXIES is {proxies}; use 0 (no proxy in front) or more.")
    if proxies:
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)
    else:
        app.before_request(_warn_of_an_unused_proxy())
    app.jinja_env.globals["csrf_token"] = csrf_token
    app.jinja_env.filters["visible_controls"] = visible_controls

    @app.after_request
    def _headers(response: Response) -> Response:
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response


def _warn_of_an_unused_proxy() -> Callable[[], None]:
    """A check, run before each request, that logs one warning (once per app: once per
    process) when a request carries ``X-Forwarded-For`` while ``CYOA_PROXIES`` is 0: behind a
    proxy every client then shares the proxy's address, and the start limit stops them all."""
    warned = threading.Event()

    def check() -> None:
        if not warned.is_set() and "X-Forwarded-For" in request.headers:
            warned.set()
            log.warning(
                "A request came through a proxy (it has X-Forwarded-For) but CYOA_PROXIES is 0: "
                "every client shares the proxy's address, so the start limit counts them "
                "together. Set CYOA_PROXIES to the number of proxies in front of the app."
            )

    return check
