"""Backing up and restoring a PostgreSQL study database with PostgreSQL's own tools:
``pg_dump --format=custom`` and ``pg_restore --clean --if-exists --no-owner`` (Debian's
``postgresql-client``; found on ``PATH`` or in ``/usr/lib/postgresql/VERSION/bin``).

``pg_dump`` reads one snapshot of the database (a ``REPEATABLE READ`` transaction), so the app
may go on writing while it runs: every transaction committed before the dump began is in it,
and none after. A restore first checks that the file is a dump of a CYOA database at a schema
version this code knows (``pg_restore --list`` and the dumped ``schema_version`` row), then
replaces the target's tables in one transaction (``--single-transaction``: all or nothing),
then brings it to this CYOA's schema (:func:`cyoa.store.init_db`). The password never appears
on a command line or in a message: the tools get a libpq URL without it
(``postgresql://USER@HOST/NAME``) and the password in ``PGPASSWORD``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import sqlalchemy as sa

from cyoa import store
from cyoa.backup import SQLITE_HEADER, BackupError, check_new_file
from cyoa.database_url import DatabaseLocation
from cyoa.db.facade import Db

DEBIAN_BINARIES = Path("/usr/lib/postgresql")
DUMP_HEADER = b"PGDMP"

# The schema version PostgreSQL support began at; the migrations bring later ones up to date.
FIRST_POSTGRESQL_VERSION = 10


def backup_postgresql(location: DatabaseLocation, target: Path) -> int:
    """Dump the CYOA database at ``location`` into the new file ``target`` while the app may
    write; returns the schema version dumped. A failed dump leaves no file."""
    check_new_file(target)
    version = _cyoa_version(reachable(location), location)
    url, env = libpq_url(location)
    partial = target.with_name(target.name + ".partial")
    command = [str(tool("pg_dump")), "--format=custom", f"--file={partial}", f"--dbname={url}"]
    try:
        _run(command, env, f"pg_dump could not back up {location}")
        partial.rename(target)
    finally:
        partial.unlink(missing_ok=True)
    return version


def restore_postgresql(
    source: Path, location: DatabaseLocation, force: bool = False
) -> tuple[int, int]:
    """Replace the CYOA tables of the PostgreSQL database at ``location`` by the dump
    ``source``, then bring them to this CYOA's schema; returns the dump's schema version and
    the version restored. A database that holds CYOA tables is replaced only with ``force``."""
    version = dump_version(source)
    db = reachable(location)
    if "experiments" in db.table_names() and not force:
        raise BackupError(
            f"{location} already holds a CYOA database: add --force to replace it (back it up "
            "first with python -m cyoa backup FILE), or restore into another --db."
        )
    url, env = libpq_url(location)
    command = [str(tool("pg_restore")), "--clean", "--if-exists", "--no-owner"]
    command += ["--single-transaction", f"--dbname={url}", str(source)]
    db.dispose()  # pg_restore --clean drops tables: this process's idle connections go first
    _run(command, env, f"pg_restore could not restore {source} into {location}")
    db.forget_tables()
    store.init_db(db)
    return version, store.SCHEMA_VERSION


def dump_version(path: Path) -> int:
    """The schema version of the CYOA database dumped in ``path``, or :class:`BackupError`
    with a sentence when it is no PostgreSQL dump, not of a CYOA database, or newer than
    this code (or older than any migration it has)."""
    if not path.is_file():
        raise BackupError(f"There is no backup at {path}: check the file name.")
    with path.open("rb") as file:
        header = file.read(len(SQLITE_HEADER))
    if header == SQLITE_HEADER:
        raise BackupError(f"{path} is a SQLite database: restore it into a SQLite --db.")
    if not header.startswith(DUMP_HEADER):
        raise BackupError(
            f"{path} is not a PostgreSQL backup (pg_dump --format=custom): choose a file made "
            "by python -m cyoa backup."
        )
    unreadable = f"{path} cannot be read as a PostgreSQL backup; choose another file"
    listing = _run([str(tool("pg_restore")), "--list", str(path)], None, unreadable)
    if not {"TABLE public experiments", "TABLE DATA public schema_version"} <= _entries(listing):
        raise BackupError(
            f"{path} is a PostgreSQL backup but not of a CYOA database: choose a CYOA backup."
        )
    data = [str(tool("pg_restore")), "--data-only", "--table=schema_version", "--file=-"]
    version = _copied_version(_run([*data, str(path)], None, unreadable))
    if version > store.SCHEMA_VERSION:
        raise BackupError(
            f"{path} has schema version {version}, newer than this CYOA's "
            f"({store.SCHEMA_VERSION}): update CYOA (git pull) before restoring it."
        )
    if version < FIRST_POSTGRESQL_VERSION:
        raise BackupError(
            f"{path} has schema version {version}, older than any CYOA that ran on "
            f"PostgreSQL ({FIRST_POSTGRESQL_VERSION}): choose a CYOA backup."
        )
    return version


def libpq_url(location: DatabaseLocation) -> tuple[str, dict[str, str]]:
    """The URL libpq's tools read (``postgresql://USER@HOST:PORT/NAME``, no password) and
    the environment to run them in (the password in ``PGPASSWORD``)."""
    parts = urlsplit(location.url or "")
    env = dict(os.environ)
    netloc = parts.netloc
    if "@" in netloc:
        user_info, host = netloc.rsplit("@", 1)
        user, _, password = user_info.partition(":")
        if password:
            env["PGPASSWORD"] = unquote(password)
        netloc = f"{user}@{host}"
    return urlunsplit(parts._replace(scheme="postgresql", netloc=netloc)), env


def tool(name: str) -> Path:
    """PostgreSQL's client program ``name``: on ``PATH``, else Debian's newest."""
    found = shutil.which(name)
    if found:
        return Path(found)
    versions = sorted(
        DEBIAN_BINARIES.glob(f"*/bin/{name}"),
        key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0,
    )
    if versions:
        return versions[-1]
    raise BackupError(
        f"{name} is missing: install Debian's postgresql-client package "
        "(sudo apt-get install postgresql-client), then try again."
    )


def _run(command: list[str], env: dict[str, str] | None, failure: str) -> str:
    """Run one of PostgreSQL's tools; its output, or :class:`BackupError` starting with
    ``failure`` and ending with the tool's last line of error."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()] or ["no message"]
        raise BackupError(f"{failure} ({lines[-1].strip()}).")
    return done.stdout


def _entries(listing: str) -> set[str]:
    """The kinds and names of ``pg_restore --list``'s entries (``TABLE public events``)."""
    found = set()
    for line in listing.splitlines():
        if line.startswith(";") or ";" not in line:
            continue
        words = line.split(";", 1)[1].split()
        # "ID; OID OID KIND SCHEMA NAME OWNER": the kind may be two words (TABLE DATA).
        words = words[2:]
        kind = " ".join(words[:2]) if words[:2] == ["TABLE", "DATA"] else words[0]
        rest = words[2:] if kind == "TABLE DATA" else words[1:]
        found.add(" ".join([kind, *rest[:2]]))
    return found


def _copied_version(sql: str) -> int:
    """The version in the ``COPY public.schema_version … FROM stdin;`` block of ``sql``."""
    lines = sql.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("COPY ") and "schema_version" in line:
            value = lines[number + 1].strip() if number + 1 < len(lines) else ""
            if value.isdigit():
                return int(value)
    raise BackupError("The backup records no schema version: choose a CYOA backup.")


def reachable(location: DatabaseLocation) -> Db:
    """The PostgreSQL database at ``location``, after a first query has reached it."""
    db = store.connect(location.url or "")
    try:
        db.table_names()
    except sa.exc.OperationalError as error:
        reason = str(error.orig or error).strip().splitlines()[0]
        raise BackupError(
            f"Cannot reach {location} ({reason}): check the URL, that the server runs and "
            "that the database exists (createdb NAME)."
        ) from None
    return db


def _cyoa_version(db: Db, location: DatabaseLocation) -> int:
    if not {"experiments", "schema_version"} <= set(db.table_names()):
        raise BackupError(f"{location} holds no CYOA database: check --db or CYOA_DATABASE.")
    return db.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0
