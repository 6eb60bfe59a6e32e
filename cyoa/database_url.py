"""What ``CYOA_DATABASE`` (or ``--db``) names: a SQLite file, the embedded default, or a
PostgreSQL server by its URL. Pure: it reads the text only, it opens nothing.

Accepted forms:

- a file path (``instance/cyoa.sqlite``, ``/srv/cyoa/study.sqlite``, ``:memory:``), or
  SQLAlchemy's ``sqlite:///PATH`` (``sqlite:////srv/study.sqlite`` for an absolute path);
- ``postgresql://USER:PASSWORD@HOST:PORT/DATABASE``, also written ``postgresql+psycopg://…``
  or ``postgres://…``; :attr:`DatabaseLocation.url` gives it in the form SQLAlchemy's psycopg 3
  dialect reads (``postgresql+psycopg://``).

The app and every verb work on either (:attr:`DatabaseLocation.setting` is what they keep
and connect with).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

POSTGRESQL_SCHEMES = ("postgresql", "postgresql+psycopg", "postgres")
EXAMPLE_URL = "postgresql://cyoa:PASSWORD@db.example.org:5432/cyoa"


class DatabaseSettingError(ValueError):
    """The database setting names no database CYOA can use; the message says what to write."""


@dataclass(frozen=True)
class DatabaseLocation:
    """Where the data lives: ``kind`` is ``"sqlite"`` (then ``path`` is the file) or
    ``"postgresql"`` (then ``url`` is the SQLAlchemy URL, ``postgresql+psycopg://…``)."""

    kind: Literal["sqlite", "postgresql"]
    path: Path | None = None
    url: str | None = None

    def __str__(self) -> str:
        return str(self.path) if self.kind == "sqlite" else redacted(self.url or "")

    @property
    def setting(self) -> str:
        """The database as the app keeps it (``DATABASE``) and connects to it: the file's
        path, or the PostgreSQL URL with its password (never to be shown: use ``str``)."""
        return str(self.path) if self.kind == "sqlite" else self.url or ""


def parse_database(value: str | Path) -> DatabaseLocation:
    """The database ``value`` names, or :class:`DatabaseSettingError` with a sentence for
    an empty value, an unknown scheme, or a PostgreSQL URL without a host or database name
    or with a malformed host or port."""
    text = str(value).strip()
    if not text:
        raise DatabaseSettingError(
            "CYOA_DATABASE is empty: give a SQLite file path (the default is "
            f"instance/cyoa.sqlite) or a PostgreSQL URL such as {EXAMPLE_URL}."
        )
    if "://" not in text:
        return DatabaseLocation("sqlite", path=Path(text))
    scheme = text.split("://", 1)[0].lower()
    if scheme == "sqlite":
        return _sqlite_url(text)
    if scheme in POSTGRESQL_SCHEMES:
        return _postgresql_url(text)
    raise DatabaseSettingError(
        f"CYOA_DATABASE starts with '{scheme}://', which CYOA cannot use: give a SQLite file "
        f"path or a PostgreSQL URL such as {EXAMPLE_URL}."
    )


def redacted(url: str) -> str:
    """``url`` with its password replaced by ``***``, for messages and logs: the text between
    the user name and the last ``@`` (read from the text itself, so a password holding ``/``,
    ``#`` or ``?`` is hidden too), and a ``password=`` parameter."""
    scheme, sep, rest = url.partition("://")
    if sep and "@" in rest:
        userinfo, host = rest.rsplit("@", 1)
        if ":" in userinfo:
            url = f"{scheme}://{userinfo.split(':', 1)[0]}:***@{host}"
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", url)


def _sqlite_url(text: str) -> DatabaseLocation:
    """SQLAlchemy's ``sqlite:///relative/path`` or ``sqlite:////absolute/path``."""
    path = text.split("://", 1)[1]
    if not path.startswith("/") or len(path) == 1:
        raise DatabaseSettingError(
            f"'{text}' names no file: write sqlite:///relative/path.sqlite, "
            "sqlite:////absolute/path.sqlite, or the path alone."
        )
    return DatabaseLocation("sqlite", path=Path(path[1:]))


def _postgresql_url(text: str) -> DatabaseLocation:
    """A PostgreSQL URL with a host (or a socket folder in ``?host=``) and a database name."""
    shown = redacted(text)
    rest = text.split("://", 1)[1]
    if "@" in rest and any(c in rest.rsplit("@", 1)[0] for c in "/?#"):
        raise DatabaseSettingError(
            f"The user name or password in {shown} holds '/', '?' or '#': percent-encode them "
            "(%2F, %3F, %23), or leave the password out of the URL and give it in PGPASSWORD."
        )
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed "[" of an IPv6 address
        raise DatabaseSettingError(
            f"The host in {shown} is not a valid address: write an IPv6 address in brackets, "
            "as in postgresql://cyoa@[::1]:5432/cyoa."
        ) from None
    try:
        _ = parts.port  # urlsplit checks the port only when asked for it
    except ValueError:
        raise DatabaseSettingError(
            f"The port in {shown} is not a number: write it as HOST:5432."
        ) from None
    if not parts.hostname and "host=" not in parts.query:
        raise DatabaseSettingError(
            f"{shown} names no server: write the host after '//', as in {EXAMPLE_URL}."
        )
    if not parts.path.strip("/"):
        raise DatabaseSettingError(
            f"{shown} names no database: add '/NAME' after the host, as in {EXAMPLE_URL}."
        )
    return DatabaseLocation("postgresql", url="postgresql+psycopg" + text[len(parts.scheme) :])
