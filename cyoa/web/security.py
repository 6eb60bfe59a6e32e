"""What keeps writers' and researchers' pages, forms and downloads safe: response headers,
CSRF tokens for every form, and spreadsheet-formula neutralisation of exported text.

- **Headers**: scripts and styles only from this server, no framing (:data:`CSP`).
- **CSRF**: every form carries a random token kept in the signed session cookie
  (``secrets.token_urlsafe``), compared in constant time (:func:`csrf_valid`). The cookie is
  SameSite=Lax, so a page on another site cannot read the token, and a form it submits
  arrives without the cookie.
- **Formulas**: a text cell that a spreadsheet would run as a formula gets a leading ``'``
  (:func:`neutralize_cell`; OWASP, "CSV Injection").
"""

from __future__ import annotations

import logging
import secrets
import threading
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
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


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
    """A text cell that a spreadsheet would run as a formula (starting with = + - @, a tab
    or a carriage return) gets a leading single quote; anything else is returned as is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


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
