"""Backing up and restoring a SQLite study database, through SQLite's online backup API
(``sqlite3.Connection.backup``; https://www.sqlite.org/backup.html).

A backup is one consistent snapshot taken while the app goes on writing: the copy is made in
one step under one read transaction, and in WAL mode readers do not block writers, so every
transaction the app committed before the copy started is in it and none after it, whole or
not at all. A restore checks that the file is a CYOA database at a schema version this code
knows, brings a copy of it up to date through the migrations (:func:`cyoa.store.init_db`),
and only then writes it over the target, so a file that cannot be restored changes nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from cyoa import store

SQLITE_HEADER = b"SQLite format 3\x00"


class BackupError(ValueError):
    """A backup or restore cannot be made as asked; the message says what to do next."""


def backup_database(source: Path, target: Path) -> int:
    """Copy the CYOA database at ``source`` into the new file ``target`` while others may
    write to it; returns the schema version copied. ``target`` must not exist yet."""
    if not source.is_file():
        raise BackupError(f"There is no database at {source}: check --db or CYOA_DATABASE.")
    check_new_file(target)
    version = check_database(source)
    try:
        _copy(source, target)
    except BackupError:
        remove_database(target)
        raise
    return version


def check_new_file(target: Path) -> None:
    """Refuse a backup file name that exists, or whose folder does not."""
    if target.exists():
        raise BackupError(
            f"{target} already exists: a backup never overwrites a file, choose a new name."
        )
    if not target.parent.is_dir():
        raise BackupError(f"The folder {target.parent} does not exist: create it first.")


def restore_database(source: Path, target: Path, force: bool = False) -> tuple[int, int]:
    """Replace the database at ``target`` (created when missing) by the backup ``source``,
    upgraded through the migrations; returns the backup's schema version and the version
    restored. An existing ``target`` is replaced only with ``force``, and the sentence says
    whether another process has it open."""
    if not source.is_file():
        raise BackupError(f"There is no backup at {source}: check the file name.")
    version = check_database(source)
    if target.exists():
        _check_replaceable(target, force)
    target.parent.mkdir(parents=True, exist_ok=True)
    upgraded = target.with_name(target.name + ".restoring")
    remove_database(upgraded)
    try:
        upgraded_copy(source, upgraded)
        store.forget(target)  # this process's connections would go on reading the old file
        _copy(upgraded, target)
    finally:
        remove_database(upgraded)
    return version, store.SCHEMA_VERSION


def upgraded_copy(source: Path, target: Path) -> None:
    """Copy the CYOA database at ``source`` into the new file ``target`` and bring the copy
    to this CYOA's schema through the migrations; ``source`` stays as it was."""
    try:
        _copy(source, target)
        try:
            store.init_db(store.connect(target))
        finally:
            store.forget(target)  # the copy is about to be moved or removed
    except BaseException:
        remove_database(target)
        raise


def check_database(path: Path) -> int:
    """The schema version of the CYOA database at ``path``, or :class:`BackupError` with a
    sentence when it is not a SQLite file, not CYOA's, or newer than this code."""
    with path.open("rb") as file:
        if file.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
            raise BackupError(f"{path} is not a SQLite database: choose a CYOA backup file.")
    conn = _open_read_only(path)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{path} cannot be read as a database ({error}).") from None
    finally:
        conn.close()
    if version < 1 or "experiments" not in tables:
        raise BackupError(
            f"{path} is a SQLite database but not CYOA's (it has no experiments table or "
            "schema version): choose a CYOA database or backup."
        )
    if version > store.SCHEMA_VERSION:
        raise BackupError(
            f"{path} has schema version {version}, newer than this CYOA's "
            f"({store.SCHEMA_VERSION}): update CYOA (git pull) before restoring it."
        )
    return version


def in_use(path: Path) -> bool:
    """Whether another connection, in this process or another, has the database at ``path``
    open: a WAL-mode connection holds a shared lock on the file from its first read until
    it closes, so an exclusive lock cannot be had at once."""
    conn = sqlite3.connect(str(path), timeout=0, isolation_level=None)
    try:
        conn.execute("PRAGMA locking_mode = EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


def _check_replaceable(target: Path, force: bool) -> None:
    """Refuse to replace ``target`` without ``force``, saying why; refuse a file that is not
    a SQLite database even with it."""
    with target.open("rb") as file:
        if file.read(len(SQLITE_HEADER)) not in (SQLITE_HEADER, b""):
            raise BackupError(
                f"{target} is not a SQLite database: restore only replaces a CYOA database, "
                "choose another --db."
            )
    if force:
        return
    if in_use(target):
        raise BackupError(
            f"The database at {target} is open in another process (is the app running?): "
            "stop it first, or add --force to replace the database under it."
        )
    raise BackupError(
        f"{target} already holds a database: add --force to replace it (back it up first "
        f"with python -m cyoa backup FILE), or restore into another --db."
    )


def _copy(source: Path, target: Path) -> None:
    """Copy ``source`` over ``target`` in one step of SQLite's backup API."""
    src = _open_read_only(source)
    try:
        dst = sqlite3.connect(str(target), timeout=store.BUSY_TIMEOUT_SECONDS)
        try:
            src.backup(dst)
        finally:
            dst.close()
    except sqlite3.Error as error:
        raise BackupError(
            f"Copying {source} to {target} failed ({error}): check the disk and try again."
        ) from None
    finally:
        src.close()


def _open_read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)


def remove_database(path: Path) -> None:
    """Delete a database file and its WAL and shared-memory files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
