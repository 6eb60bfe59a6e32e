"""Researcher accounts, login sessions, CSRF and the login rate limit.

- Passwords are hashed with ``werkzeug.security`` (scrypt, salted); only the hash is stored.
  A login with an unknown name checks the password against a dummy hash of the same kind, so
  both answers take as long and the time does not tell which names exist.
- A logged-in researcher's id lives in the signed Flask session cookie (HttpOnly,
  SameSite=Lax) under ``researcher``, with a keyed digest of the account's stored credential
  (:func:`credential_digest`). Every researcher page and API checks both against the
  ``researchers`` table (:func:`login_required`), so a deleted account is logged out at once,
  and so is every copy of a cookie once the credential changes: a logout gives the account a
  new session stamp (:func:`end_sessions`), a password change a new hash.
- Every unsafe request carries the session's CSRF token (:mod:`cyoa.web.security`).
- Login attempts are limited per researcher name and client address (:class:`LoginLimiter`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import cache, wraps
from typing import Any, TypeVar

from flask import abort, current_app, g, redirect, request, session, url_for
from werkzeug.security import check_password_hash, generate_password_hash

from cyoa import store
from cyoa.web.security import CSRF_SESSION_KEY, csrf_valid, renew_csrf_token
from cyoa.web.security import csrf_token as csrf_token  # the researcher's templates use it

MAX_FAILURES = 5
WINDOW_SECONDS = 5 * 60
MIN_PASSWORD_CHARS = 10
NAME = re.compile(r"^[A-Za-z0-9._@-]{1,64}$")
# ``researchers.password_hash`` holds werkzeug's hash, then (after a logout) this mark and the
# account's session stamp; werkzeug's hashes never contain it.
STAMP_MARK = "#"
F = TypeVar("F", bound=Callable[..., Any])


class AccountError(ValueError):
    """A researcher account that cannot be created; the message says what to change."""


def validate_account(name: str, password: str) -> None:
    if not NAME.match(name or ""):
        raise AccountError(
            "A researcher name is 1–64 letters, digits, '.', '_', '@' or '-' (no spaces)."
        )
    if len(password or "") < MIN_PASSWORD_CHARS:
        raise AccountError(f"Please choose a password of at least {MIN_PASSWORD_CHARS} characters.")


def create_researcher(db, name: str, password: str) -> int:
    """Add an account with a hashed password; raises :class:`AccountError` if the name or
    password is not acceptable or the name is taken."""
    validate_account(name, password)
    try:
        return store.create_researcher(db, name, generate_password_hash(password))
    except ValueError as exc:
        raise AccountError(f"{exc} Choose another name.") from exc


@cache
def _dummy_hash() -> str:
    """A hash of a random password made like a real account's, for unknown names."""
    return generate_password_hash(secrets.token_urlsafe(16))


def _password_hash(credential: str) -> str:
    """werkzeug's hash from a stored credential (without the session stamp)."""
    return credential.partition(STAMP_MARK)[0]


def authenticate(db, name: str, password: str) -> dict[str, Any] | None:
    """The researcher whose name and password match, else None. Takes as long for an unknown
    name as for a wrong password: both verify one hash."""
    row = store.get_researcher(db, name or "")
    stored = _password_hash(row["password_hash"]) if row else _dummy_hash()
    matches = check_password_hash(stored, password or "")
    return row if row is not None and matches else None


def _set_credential(db, researcher_id: int, make: Callable[[str], str]) -> None:
    """Replace an account's stored credential by ``make(current)``, in one transaction."""
    with store.write_transaction(db):
        row = store.get_researcher_by_id(db, researcher_id)
        if row is not None:
            db.update("researchers", researcher_id, {"password_hash": make(row["password_hash"])})


def end_sessions(db, researcher_id: int) -> None:
    """End every login of an account, in every browser and server process: a new session
    stamp changes the credential digest that each login cookie must match."""
    stamp = secrets.token_urlsafe(16)
    _set_credential(db, researcher_id, lambda old: f"{_password_hash(old)}{STAMP_MARK}{stamp}")


def change_password(db, researcher_id: int, new: str) -> dict[str, Any]:
    """Give an account a new password, which ends its every login (the caller has checked
    the current one); returns the updated row. Raises :class:`AccountError` if ``new`` is
    not acceptable."""
    row = store.get_researcher_by_id(db, researcher_id)
    if row is None:
        raise AccountError("This account does not exist any more.")
    validate_account(row["name"], new)
    new_hash = generate_password_hash(new)
    _set_credential(db, researcher_id, lambda _old: new_hash)
    return store.get_researcher_by_id(db, researcher_id)


def credential_digest(credential: str) -> str:
    """A keyed digest (HMAC-SHA256 with the app's secret key) of a stored credential: what a
    login cookie holds, so the cookie reveals nothing of the hash and dies when it changes."""
    key = current_app.secret_key
    key = key.encode("utf-8") if isinstance(key, str) else key
    return hmac.new(key, credential.encode("utf-8"), hashlib.sha256).hexdigest()


class LoginLimiter:
    """At most ``max_failures`` failed logins per key (name, address) within ``window``
    seconds, in memory and thread-safe; ``clock`` is injectable for tests.

    An attempt counts as failed from the moment it starts (:meth:`begin`) until it succeeds
    (:meth:`succeeded`), so attempts sent in parallel cannot all pass the check before the
    first has failed. Keys whose failures are all older than the window are forgotten (swept
    once per window), so the memory holds only the recent failures."""

    def __init__(
        self,
        max_failures: int = MAX_FAILURES,
        window: float = WINDOW_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window = window
        self.clock = clock
        self._failures: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()
        self._next_sweep = clock() + window

    def __len__(self) -> int:
        """How many keys are remembered."""
        with self._lock:
            return len(self._failures)

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        cutoff = now - self.window
        for key in [k for k, times in self._failures.items() if times[-1] <= cutoff]:
            del self._failures[key]
        self._next_sweep = now + self.window

    def begin(self, key: tuple[str, str]) -> float:
        """Start an attempt for ``key``: 0 when it may go ahead (it now counts as a
        failure until :meth:`succeeded`), else the seconds until it may try again."""
        with self._lock:
            now = self.clock()
            self._sweep(now)
            failures = self._failures.setdefault(key, deque())
            while failures and failures[0] <= now - self.window:
                failures.popleft()
            if len(failures) >= self.max_failures:
                return failures[0] + self.window - now
            failures.append(now)
            return 0.0

    def succeeded(self, key: tuple[str, str]) -> None:
        """The attempt of ``key`` was right: forget its failures."""
        with self._lock:
            self._failures.pop(key, None)


def limiter_key(name: str) -> tuple[str, str]:
    return ((name or "").strip().lower(), request.remote_addr or "")


# --- sessions ----------------------------------------------------------------------------


def log_in(researcher: dict[str, Any]) -> None:
    session["researcher"] = {
        "id": researcher["id"],
        "name": researcher["name"],
        "credential": credential_digest(researcher["password_hash"]),
    }
    renew_csrf_token()  # a fresh token for the new privilege level


def log_out() -> None:
    session.pop("researcher", None)
    session.pop(CSRF_SESSION_KEY, None)


def current_researcher() -> dict[str, Any] | None:
    """The logged-in researcher (checked against the database), or None."""
    held = session.get("researcher")
    if not isinstance(held, dict) or not isinstance(held.get("id"), int):
        return None
    db = store.connect(current_app.config["DATABASE"])
    try:
        row = store.get_researcher_by_id(db, held["id"])
    finally:
        db.close()
    if row is None or row["name"] != held.get("name"):
        return None
    digest = held.get("credential")
    if not isinstance(digest, str):
        return None
    return row if hmac.compare_digest(digest, credential_digest(row["password_hash"])) else None


def login_required(view: F) -> F:
    """Refuse a view to anyone not logged in as a researcher: pages redirect to the login
    page (coming back afterwards)."""

    @wraps(view)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        researcher = current_researcher()
        if researcher is None:
            log_out()
            return redirect(url_for("research.login", next=request.path))
        g.researcher = researcher
        return view(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a researcher path on this server, never elsewhere."""
    if target and target.startswith("/research/") and "//" not in target and "\\" not in target:
        return target
    return url_for("research.experiments")


# --- CSRF --------------------------------------------------------------------------------


def check_csrf() -> None:
    """Abort with 400 unless an unsafe request carries this session's CSRF token."""
    if not csrf_valid():
        abort(
            400,
            description=(
                "This form has expired or did not come from this site. Go back, reload the "
                "page and try again."
            ),
        )
