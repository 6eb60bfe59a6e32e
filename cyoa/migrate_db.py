"""Moving a study database between SQLite and PostgreSQL (``python -m cyoa migrate-db``), and
the check that the copy holds the same study.

The target must hold no CYOA data: a new SQLite file, or a PostgreSQL database without CYOA
tables (or with CYOA's empty tables only, e.g. those an app created at its start). Its schema
is made by :func:`cyoa.store.init_db`, at the version of this CYOA; a SQLite source at an
older version is upgraded first in a temporary copy (the source file is left as it was).
Every table is then copied in foreign-key order (parents first: the schema's
``sorted_tables``), in primary-key order, in batches, from one snapshot of the source and
inside one write transaction on the target, so a failure leaves the target without data.
PostgreSQL's sequences are set past the copied keys afterwards, so the next insert gets a
new one. The same transaction adds a row to the target's ``database_moves`` (where from, how
many rows, when), and the check's outcome is written into that row when the check ends: a
copy whose check never finished (the move was killed) says so, and
:func:`check_again` (``migrate-db --to TARGET --check-only``) runs the check on it again.

The check compares what a researcher reads: the rows of every table, the ``analyze`` result
of every experiment (its JSON, floats to :data:`FLOAT_TOLERANCE`), and the story every
co-writing session replays to from its events (the research replay page's
:func:`~cyoa.cowriting.research.replay.build_replay`). Run it with the app stopped: rows
written meanwhile show as differences.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from cyoa import backup, backup_postgresql, kinds, store
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.research.replay import build_replay
from cyoa.database_url import DatabaseLocation
from cyoa.db.facade import Db
from cyoa.db.schema import METADATA, continue_sequences
from cyoa.db.transactions import read_snapshot, write_transaction
from cyoa.errors import AnalysisError, SchemaError

BATCH_ROWS = 1000
FLOAT_TOLERANCE = 1e-9
# Every CYOA table but the version record, which init_db writes: parents before children.
TABLES = [table.name for table in METADATA.sorted_tables if table.name != "schema_version"]
# The moves that made a database: copied with the rest, plus one row for the move itself.
MOVES = "database_moves"
EMPTYING = (
    "migrate into a new database, or empty this one first (PostgreSQL: dropdb NAME && "
    "createdb NAME; SQLite: choose a new file name)"
)


class MigrationError(ValueError):
    """The move cannot be made as asked; the message says what to do next."""


@dataclass(frozen=True)
class Mismatch:
    """One difference between the source and the copy: ``where`` names the table,
    experiment or session, ``what`` says how they differ."""

    where: str
    what: str

    def __str__(self) -> str:
        return f"{self.where}: {self.what}"


@dataclass(frozen=True)
class Check:
    """What the check compared (experiments analysed, sessions replayed) and what differed."""

    experiments: int
    sessions: int
    mismatches: list[Mismatch]


@dataclass(frozen=True)
class Moved:
    """A finished move: rows copied per table (in copy order), the source's schema version
    before any upgrade, and the check."""

    copied: dict[str, int]
    source_version: int
    check: Check


def migrate(
    source: DatabaseLocation,
    target: DatabaseLocation,
    progress: Callable[[str, int], None] = lambda table, rows: None,
    copied: Callable[[dict[str, int]], None] = lambda rows: None,
) -> Moved:
    """Copy the study database ``source`` into the empty ``target`` and check the copy;
    ``progress(table, rows)`` is called after each table, ``copied(rows per table)`` once the
    copy is committed, before the check. :class:`MigrationError` with a sentence when the
    source is missing or not CYOA's, or the target cannot be reached or holds data."""
    if str(source) == str(target):
        raise MigrationError(f"{target} is the source itself: {EMPTYING}.")
    with _opened_source(source) as (source_db, version):
        target_db, created = _empty_target(target)
        before = analyses(source_db)
        try:
            rows = copy_tables(source_db, target_db, progress, (str(source), version))
        except BaseException:
            if created and target.path is not None:
                store.forget(target.path)
                backup.remove_database(target.path)
            raise
        copied(rows)
        check = check_copy(source_db, target_db, before)
        record_check(target_db, check)
        return Moved(rows, version, check)


def check_again(source: DatabaseLocation, target: DatabaseLocation) -> Check:
    """Check the copy ``target`` (a CYOA database at this schema version) against
    ``source`` again, as :func:`migrate` checks it, and record the outcome in the target's
    latest move: for a copy whose check never finished. :class:`MigrationError` with a
    sentence when either cannot be opened or is not CYOA's."""
    if str(source) == str(target):
        raise MigrationError(f"{target} is the source itself: give --to the copy to check.")
    with _opened_source(source) as (source_db, _):
        target_db = _copy_to_check(target)
        check = check_copy(source_db, target_db)
        record_check(target_db, check)
        return check


def copy_tables(
    source: Db,
    target: Db,
    progress: Callable[[str, int], None],
    move: tuple[str, int] | None = None,
) -> dict[str, int]:
    """Copy every CYOA table of ``source`` into ``target`` (whose tables are empty), in one
    write transaction; rows copied per table. With ``move`` (the source as shown, its schema
    version) the same transaction adds the move's row to ``database_moves``, unchecked."""
    present = set(source.table_names())
    copied: dict[str, int] = {}
    with read_snapshot(source), write_transaction(target):
        for name in TABLES:
            rows = 0
            if name in present:
                for batch in source.batches_in_key_order(name, BATCH_ROWS):
                    try:
                        target.insert_all(name, batch)
                    except sa.exc.DBAPIError as error:  # a row the target refuses
                        reason = str(error.orig).strip().splitlines()[0]
                        raise MigrationError(
                            f"The target refused a row of {name} ({reason}): fix that row in "
                            "the source, then move it again into an empty target."
                        ) from None
                    rows += len(batch)
            copied[name] = rows
            progress(name, rows)
        continue_sequences(target)
        if move is not None:
            target.insert(MOVES, {
                "source": move[0], "source_version": move[1],
                "copied_rows": sum(copied.values()), "copied_at": store.now(),
            })  # fmt: skip
    return copied


def record_check(db: Db, check: Check) -> None:
    """Write ``check``'s outcome (when it ended, how many places differ) into the latest
    move of ``db``'s ``database_moves``; nothing when no move made ``db``."""
    db.execute(
        f"UPDATE {MOVES} SET checked_at = ?, differences = ?"
        f" WHERE id = (SELECT max(id) FROM {MOVES})",
        [store.now(), len(check.mismatches)],
    )


def check_copy(source: Db, target: Db, before: dict[str, Any] | None = None) -> Check:
    """Compare ``target`` with ``source``: rows per table, each experiment's analysis
    (``before``: the source's, when already computed) and each session's replayed story;
    ``database_moves`` has a row more in the copy (its own move) and is not counted."""
    mismatches = [
        Mismatch(f"table {name}", f"{a:,} rows in the source, {b:,} in the copy")
        for name in TABLES
        if name != MOVES and (a := _count(source, name)) != (b := _count(target, name))
    ]
    expected = analyses(source) if before is None else before
    found = analyses(target)
    for experiment, result in expected.items():
        differing = differences(result, found.get(experiment))
        if differing:
            mismatches.append(Mismatch(f"experiment {experiment}", differing[0]))
    sessions = [row["id"] for row in source.query("SELECT id FROM sessions ORDER BY id")]
    for session in sessions:
        if replayed_story(source, session) != replayed_story(target, session):
            mismatches.append(Mismatch(f"session {session}", "replays to another story"))
    return Check(len(expected), len(sessions), mismatches)


def analyses(db: Db) -> dict[str, Any]:
    """Each experiment's ``analyze`` result as JSON data (the ``analyze`` verb's, default
    options), or ``{"error": sentence}`` when it has none yet."""
    found: dict[str, Any] = {}
    for row in db.query("SELECT id, kind FROM experiments ORDER BY id"):
        try:
            text = kinds.KINDS[row["kind"]].report(db, row["id"], "json")
            found[row["id"]] = json.loads(text)
        except AnalysisError as error:
            found[row["id"]] = {"error": str(error)}
    return found


def replayed_story(db: Db, session_id: str) -> list[tuple[Any, ...]]:
    """The story a session's events replay to: each round's number, the writer's line and
    the text they kept."""
    turns = build_replay(cowriting_store.load_events(db, session_id)).turns
    return [(turn.round, turn.writer_line, turn.final_text) for turn in turns]


def differences(expected: Any, found: Any, path: str = "$") -> list[str]:
    """Where ``found`` differs from ``expected`` (JSON data), each a sentence naming the
    place (``$.key[index]``); floats count as equal within :data:`FLOAT_TOLERANCE`
    (relative or absolute), and NaN equals NaN."""
    if isinstance(expected, dict) and isinstance(found, dict):
        if expected.keys() != found.keys():
            return [f"the analysis has other entries at {path}"]
        return [
            d for key in expected for d in differences(expected[key], found[key], f"{path}.{key}")
        ]
    if isinstance(expected, list) and isinstance(found, list):
        if len(expected) != len(found):
            return [f"the analysis has {len(found)} entries at {path}, not {len(expected)}"]
        pairs = zip(expected, found, strict=True)
        return [d for i, (a, b) in enumerate(pairs) for d in differences(a, b, f"{path}[{i}]")]
    if _numbers(expected, found) and _close(float(expected), float(found)):
        return []
    if expected != found or type(expected) is not type(found):
        return [
            f"the analysis differs at {path}: {found!r} in the copy, {expected!r} in the source"
        ]
    return []


def _numbers(a: Any, b: Any) -> bool:
    return all(isinstance(x, int | float) and not isinstance(x, bool) for x in (a, b))


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)


def _count(db: Db, table: str) -> int:
    if table not in db.table_names():
        return 0
    return db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


@contextmanager
def _opened_source(location: DatabaseLocation) -> Iterator[tuple[Db, int]]:
    """The source database and its schema version; a SQLite source at an older version is
    upgraded in a temporary copy, which is removed at the end."""
    if location.path is None:
        db = _reachable(location)
        yield db, _postgresql_version(db, location)
        return
    if not location.path.is_file():
        raise MigrationError(f"There is no database at {location}: check --db or CYOA_DATABASE.")
    try:
        version = backup.check_database(location.path)
    except backup.BackupError as error:
        raise MigrationError(str(error)) from None
    if version == store.SCHEMA_VERSION:
        yield store.connect(location.path), version
        return
    with tempfile.TemporaryDirectory(prefix="cyoa-migrate-") as folder:
        upgraded = Path(folder) / "upgraded.sqlite"
        backup.upgraded_copy(location.path, upgraded)
        try:
            yield store.connect(upgraded), version
        finally:
            store.forget(upgraded)  # the folder is removed next


def _postgresql_version(db: Db, location: DatabaseLocation) -> int:
    """The schema version of the CYOA database at ``location``; it must be this CYOA's."""
    if not {"experiments", "schema_version"} <= set(db.table_names()):
        raise MigrationError(f"{location} holds no CYOA database: check --db or CYOA_DATABASE.")
    version = db.execute("SELECT max(version) FROM schema_version").fetchone()[0] or 0
    if version != store.SCHEMA_VERSION:
        raise MigrationError(
            f"{location} has schema version {version} and this CYOA has "
            f"{store.SCHEMA_VERSION}: move it with the CYOA that wrote it."
        )
    return version


def _empty_target(location: DatabaseLocation) -> tuple[Db, bool]:
    """The target with this CYOA's schema, and whether it is a SQLite file made now;
    :class:`MigrationError` when it holds CYOA data."""
    created = False
    if location.path is not None:
        path = location.path
        if path.is_dir():
            raise MigrationError(
                f"{path} is a folder: give --to a new file's name, e.g. {path / 'cyoa.sqlite'}."
            )
        if not path.parent.is_dir():
            raise MigrationError(f"The folder {path.parent} does not exist: create it first.")
        if path.exists():
            try:
                backup.check_database(path)
            except backup.BackupError as error:
                raise MigrationError(f"{error} The target must be a new file.") from None
        created = not path.exists()
        db = store.connect(path)
    else:
        db = _reachable(location)
    for name in TABLES:
        rows = _count(db, name)
        if rows:
            raise MigrationError(
                f"{location} already holds CYOA data ({rows:,} rows in {name})"
                f"{_unchecked(db, location)}: {EMPTYING}."
            )
    try:
        store.init_db(db)
    except SchemaError as error:
        raise MigrationError(f"{location}: {error}") from None
    return db, created


def _unchecked(db: Db, location: DatabaseLocation) -> str:
    """For a database whose latest move was never checked: the clause that says so and how
    to check it; else nothing."""
    if MOVES not in db.table_names():
        return ""
    latest = next(db.query(f"SELECT * FROM {MOVES} ORDER BY id DESC LIMIT 1"), None)
    if latest is None or latest["checked_at"] is not None:
        return ""
    return (
        f"; it was copied from {latest['source']} at {latest['copied_at']} and never checked "
        "(the move stopped during its check): check it with `python -m cyoa --db "
        f"{latest['source']} migrate-db --to {location} --check-only`, or"
    )


def _copy_to_check(location: DatabaseLocation) -> Db:
    """The copy to check again: an existing CYOA database at this schema version."""
    if location.path is None:
        db = _reachable(location)
        _postgresql_version(db, location)
        return db
    if not location.path.is_file():
        raise MigrationError(f"There is no database at {location}: give --to the copy to check.")
    try:
        version = backup.check_database(location.path)
    except backup.BackupError as error:
        raise MigrationError(str(error)) from None
    if version != store.SCHEMA_VERSION:
        raise MigrationError(
            f"{location} has schema version {version} and this CYOA has "
            f"{store.SCHEMA_VERSION}: a copy made by migrate-db has this CYOA's."
        )
    return store.connect(location.path)


def _reachable(location: DatabaseLocation) -> Db:
    try:
        return backup_postgresql.reachable(location)
    except backup.BackupError as error:
        raise MigrationError(str(error)) from None
