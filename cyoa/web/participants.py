"""How a participant comes in, for every study kind: the link's identifiers, the signed cookie
that holds each participant's id, resuming, the limit on starts per address, and the tokens
and completion codes they are given.

A participant's id (a writer's session, a rater) lives only in their signed cookie, never in a
URL, so the same browser comes back to the same work and nobody can act on another's by
guessing or pasting an id. A crowd-platform identifier in the link (``PROLIFIC_PID`` or
``pid``) is not a secret (a researcher, a co-worker or a screenshot may know it), so it
resumes silently only in the browser that holds the work; from another browser the link must
also carry the platform's per-submission ``SESSION_ID`` recorded when the participant started
(Prolific fills it in; only that participant's own link holds it). The threat model is in
docs/research.md.

Each kind describes its door once (:class:`Door`); :func:`enter` and :func:`admit` are the
consent page's and the start form's rules, the same for writers and raters.
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flask import Blueprint, Response, abort, make_response, render_template, request, session

from cyoa.web.language import for_participants, sentence
from cyoa.web.parts import shared as shared_parts
from cyoa.web.ratelimit import client_key
from cyoa.web.security import csrf_valid

LINK_KEYS = ("PROLIFIC_PID", "STUDY_ID", "SESSION_ID", "pid")
EXPIRED = sentence("This page had expired. Please tick the box and start again.")
_PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9._:@-]{1,128}$")


def pages(bp: Blueprint) -> None:
    """Make ``bp``'s pages participants' pages: in the study's or the browser's language
    (:mod:`cyoa.web.language`), and a study that does not exist answered with a page that
    says so in that language."""
    for_participants(bp)
    bp.register_error_handler(404, _not_found)


def _not_found(_error: Exception) -> tuple[str, int]:
    return render_template("404.html"), 404


class ResumeRefused(Exception):
    """The link names a participant whose work is held by another browser, without the
    platform session that proves it is theirs."""


def new_token() -> str:
    """An unguessable identifier (128 bits, URL-safe)."""
    return secrets.token_urlsafe(16)


def storage_key(participant_id: str) -> str:
    """The name a participant's page keeps its drafts and unsent actions under in the
    browser: one per writer's session or rater, so a second participant in the same browser
    never sends the first one's work, and not the id itself, which stays on the server's
    side (it is what the signed cookie holds)."""
    return hashlib.sha256(participant_id.encode()).hexdigest()[:16]


def new_completion_code() -> str:
    """A completion code a participant can copy by hand: 12 characters, about 60 bits."""
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    raw = "".join(secrets.choice(alphabet) for _ in range(12))
    return f"{raw[:4]}-{raw[4:8]}-{raw[8:]}"


def link_values(args: Mapping[str, str]) -> dict[str, str]:
    """The link's participant identifiers, to carry from the consent page to the start form."""
    return {key: value for key, value in args.items() if key in LINK_KEYS}


def participant_from_args(args: Mapping[str, str]) -> dict[str, str] | None:
    """The participant named by the link's identifiers, or None for an anonymous link.
    ``PROLIFIC_PID`` (with ``STUDY_ID`` and ``SESSION_ID``) wins over a generic ``pid``.
    An id no platform gives is answered with HTTP 400."""
    for key in ("PROLIFIC_PID", "pid"):
        value = (args.get(key) or "").strip()
        if value:
            if not _PARTICIPANT_ID.match(value):
                abort(
                    400, description=str(sentence("The participant id in this link is not valid."))
                )
            return {
                "external_id": value,
                "id_source": key,
                "study_id": (args.get("STUDY_ID") or "")[:128],
                "platform_session_id": (args.get("SESSION_ID") or "")[:128],
            }
    return None


def anonymous() -> dict[str, str]:
    """A participant who came by a link without a platform id."""
    return {"external_id": f"anon:{new_token()}", "id_source": "anonymous"}


def resumable(
    found: str, recorded_platform_session: str | None, held: str | None, participant: dict
) -> str:
    """``found`` (the id of the participant's session or rater) when this request may continue
    it: this browser holds it, or the link carries the platform session recorded when it
    began (compared in constant time). Raises :class:`ResumeRefused` otherwise."""
    if found == held:
        return found
    recorded = (recorded_platform_session or "").encode("utf-8")
    sent = participant.get("platform_session_id", "").encode("utf-8", "surrogatepass")
    if recorded and secrets.compare_digest(recorded, sent):
        return found
    raise ResumeRefused


@dataclass(frozen=True)
class Door:
    """How one study kind lets participants in: the cookie entry that holds their ids (one per
    experiment), whether an id is still stored, and the participant who started with a
    platform id (their id and the platform session recorded then), if any."""

    cookie: str
    exists: Callable[[str, str], bool]
    find: Callable[[str, str], tuple[str, str | None] | None]

    def cookie_id(self, exp_id: str) -> str | None:
        """The id this browser's cookie holds for the experiment, stored or not."""
        return (session.get(self.cookie) or {}).get(exp_id)

    def held(self, exp_id: str) -> str | None:
        """The participant this browser holds for the experiment, if still stored."""
        held = self.cookie_id(exp_id)
        return held if held and self.exists(exp_id, held) else None

    def remember(self, exp_id: str, participant_id: str) -> None:
        held = dict(session.get(self.cookie) or {})
        held[exp_id] = participant_id
        session[self.cookie] = held
        session.permanent = True

    def to_resume(self, exp_id: str, participant: dict[str, str] | None) -> str | None:
        """The participant this request continues, or None to start one: an anonymous link
        continues this browser's; a platform id continues theirs if this browser holds it or
        the link carries the platform session recorded when they started. Raises
        :class:`ResumeRefused` otherwise."""
        if participant is None:
            return self.held(exp_id)
        found = self.find(exp_id, participant["external_id"])
        if found is None:
            return None
        return resumable(found[0], found[1], self.cookie_id(exp_id), participant)


@dataclass(frozen=True)
class Entry:
    """Where a request to a study's consent page or start form goes: ``resume`` (the id to
    continue, already remembered), ``refused`` (the platform id is someone else's work),
    ``closed`` (the study is not open), ``expired`` (the form's CSRF token is stale),
    ``error`` (a sentence for the consent page), ``wait`` (too many starts from this
    address: the page to send), or on to the consent page (``enter``) or to start
    ``participant`` (``admit``). ``link`` holds the link's identifiers to carry on."""

    link: dict[str, str] = field(default_factory=dict)
    resume: str | None = None
    refused: bool = False
    closed: bool = False
    expired: bool = False
    error: str = ""
    wait: Response | None = None
    participant: dict[str, str] | None = None


def enter(door: Door, exp_id: str, is_open: bool, args: Mapping[str, str]) -> Entry:
    """The consent page's rule: resume who may resume, refuse who may not, else show the
    consent form of an open study."""
    link = link_values(args)
    try:
        resume = door.to_resume(exp_id, participant_from_args(args))
    except ResumeRefused:
        return Entry(link, refused=True)
    if resume:
        door.remember(exp_id, resume)
        return Entry(link, resume=resume)
    return Entry(link, closed=not is_open)


def admit(
    door: Door, exp_id: str, is_open: bool, form: Mapping[str, str], experiment: Any
) -> Entry:
    """The start form's rule: a fresh CSRF token, then as :func:`enter`, then the consent
    ticked and a start left for this address; the participant to start is the link's, or an
    anonymous one."""
    link = link_values(form)
    if not csrf_valid():
        return Entry(link, expired=True)
    participant = participant_from_args(form)
    try:
        resume = door.to_resume(exp_id, participant)
    except ResumeRefused:
        return Entry(link, refused=True)
    if resume:
        door.remember(exp_id, resume)
        return Entry(link, resume=resume)
    if not is_open:
        return Entry(link, closed=True)
    if form.get("consent") != "yes":
        return Entry(
            link, error=str(sentence("Please tick the box to say you agree before starting."))
        )
    if (wait := too_many_starts(experiment)) is not None:
        return Entry(link, wait=wait)
    return Entry(link, participant=participant or anonymous())


def too_many_starts(experiment: Any) -> Response | None:
    """None when this client (``request.remote_addr``: behind a proxy, see ``CYOA_PROXIES``)
    may start a new participant now, taking one of its starts; else the page that asks it to
    wait (HTTP 429, with ``Retry-After``). Writers' and raters' starts share one limit per
    address (an IPv6 address's /64), so no client can take a study's places faster than
    ``CYOA_STARTS_PER_MINUTE``."""
    wait = shared_parts().start_limiter.take(client_key(request.remote_addr or ""))
    if not wait:
        return None
    page = render_template(
        "too_many_starts.html", experiment=experiment, minutes=math.ceil(wait / 60)
    )
    response = make_response(page, 429)
    response.headers["Retry-After"] = str(math.ceil(wait))
    return response


NUL_SENTENCE = sentence("Your text holds a character that cannot be saved (NUL): please remove it.")


def holds_nul(value: Any) -> bool:
    """Whether a participant's message holds a NUL character anywhere (a string, or inside a
    list or mapping): PostgreSQL's text columns cannot store one (SQLite can), so the action
    is refused with a sentence on both databases rather than failing on one."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(holds_nul(v) for v in value)
    return False
