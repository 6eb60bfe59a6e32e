"""What every researcher page shares: its blueprint (:func:`blueprint`: the CSRF check and
the template globals), a database handle for one request, the template globals (CSRF token,
the logged-in researcher), the response constants, and model cards added while the app
runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask import Blueprint, current_app, g, request

from cyoa import store
from cyoa.generation.cards import new_model_cards
from cyoa.web import auth
from cyoa.web.parts import shared

DETAILS_MAX_CHARS = 4000
MIMETYPES = {
    "csv": "text/csv",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
    "cyoa-tsv": "text/tab-separated-values",
    "bundle": "application/zip",
}
# matplotlib styles its SVG with style attributes; a chart can run no script.
CHART_CSP = "default-src 'none'; style-src 'unsafe-inline'"


def blueprint(
    name: str, import_name: str, url_prefix: str, before_csrf: Callable[[], None] | None = None
) -> Blueprint:
    """A researcher blueprint: every unsafe request must carry the session's CSRF token
    (checked before the view runs; ``before_csrf`` runs before that check, e.g. to limit
    what the check reads), and its templates get :func:`template_globals`."""
    bp = Blueprint(name, import_name, url_prefix=url_prefix)
    if before_csrf is not None:
        bp.before_request(before_csrf)
    bp.before_request(auth.check_csrf)
    bp.context_processor(template_globals)
    return bp


def template_globals() -> dict[str, Any]:
    """What every researcher template may use."""
    return {
        "csrf_token": auth.csrf_token,
        "researcher": g.get("researcher"),
        "format_seconds": format_seconds,
    }


def public_url() -> str:
    """The address participants reach the app at, for their links: the ``PUBLIC_URL``
    setting when the app sits behind a proxy or another name, else this request's host."""
    return current_app.config.get("PUBLIC_URL") or request.host_url


@contextmanager
def db() -> Iterator[Any]:
    """A database handle for the length of a ``with`` block."""
    handle = store.connect(current_app.config["DATABASE"])
    try:
        yield handle
    finally:
        handle.close()


def read_new_cards() -> list[str]:
    """Add the card files put in the models folder since the app started to the pool and to
    the app's cards (a new dict, so that a request reading the old one is not disturbed),
    and return the problems of card files that cannot be used. The pages that offer models
    call it, so a new card appears without a restart."""
    parts = shared()
    new, problems = new_model_cards(Path(current_app.config["MODELS_DIR"]), parts.cards)
    if new:
        parts.pool.add(new)
        parts.cards = {**parts.cards, **new}
    return problems


_DETAILS_FIELDS = (("pay", "Pay"), ("qualifications", "Qualifications and quality control"))


def evaluation_details(form: Mapping[str, str]) -> dict[str, str]:
    """The ``pay`` and ``qualifications`` a researcher entered for the evaluation card,
    stripped, each line break as ``\\n`` (one character, as a browser's ``maxlength`` counts
    it). Raises :class:`ValueError` with a sentence naming the field when one is longer than
    :data:`DETAILS_MAX_CHARS` characters."""
    details = {}
    for name, label in _DETAILS_FIELDS:
        text = (form.get(name) or "").replace("\r\n", "\n").strip()
        if len(text) > DETAILS_MAX_CHARS:
            raise ValueError(
                f"{label} is {len(text):,} characters long; the limit is {DETAILS_MAX_CHARS:,}."
                " Please shorten it and save again."
            )
        details[name] = text
    return details


def format_seconds(seconds: float | None) -> str:
    """``"1 min 05 s"``-style duration for pages; ``"–"`` for None."""
    if seconds is None:
        return "–"
    seconds = round(seconds)
    minutes, rest = divmod(seconds, 60)
    if minutes >= 60:
        hours, minutes = divmod(minutes, 60)
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"
