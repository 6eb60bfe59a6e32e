"""``Db``: what CYOA reads and writes through, the same calls on SQLite and PostgreSQL.

SQL stays text in SQLite's spelling: ``?`` placeholders (translated once per statement to
named ones, ``:p0, :p1…``; a ``?`` inside a quoted string or name is left alone) or named
``:name`` parameters. Table writes are built with SQLAlchemy Core on the table as the database
describes it (reflected once per ``Db``), so INSERT OR IGNORE and INSERT OR REPLACE have one
spelling for both databases: ``on_conflict="ignore"`` (``ON CONFLICT DO NOTHING``) and
``on_conflict="replace"`` (``ON CONFLICT (primary key) DO UPDATE`` of every other column).

Outside :func:`cyoa.db.transactions.write_transaction` each call is its own transaction,
committed before it returns; inside one, every call of the same thread joins it. One ``Db``
may be shared by threads: each thread's transaction runs on its own pooled connection.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

Params = Sequence[Any] | Mapping[str, Any] | None
OnConflict = Literal["ignore", "replace"] | None
INSERTS = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}


@dataclass(frozen=True)
class Executed:
    """What a statement did, read like a DB-API cursor: the rows it returned (tuples) and
    how many rows it changed (``rowcount``; -1 where the driver does not say, e.g. SELECT)."""

    rowcount: int
    rows: list[tuple[Any, ...]] = field(default_factory=list)

    def fetchone(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self.rows)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.rows)


@lru_cache(maxsize=1024)
def named_placeholders(sql: str) -> tuple[str, int]:
    """``sql`` with each ``?`` outside quotes replaced by ``:p0``, ``:p1``… and each colon
    inside quotes escaped (``\\:``, so that SQLAlchemy takes no ``'12:30'`` for a parameter);
    and how many placeholders it had. Quotes are SQL's: ``'…'`` strings and ``"…"`` names,
    a doubled quote standing for itself."""
    out: list[str] = []
    quote = ""
    count = 0
    for char in sql:
        if quote:
            if char == quote:
                quote = ""
            out.append("\\:" if char == ":" else char)
        elif char in "'\"":
            quote = char
            out.append(char)
        elif char == "?":
            out.append(f":p{count}")
            count += 1
        else:
            out.append(char)
    return "".join(out), count


def statement(sql: str, params: Params) -> tuple[sa.TextClause, dict[str, Any]]:
    """The SQLAlchemy statement and parameters for ``sql`` with ``params`` (a sequence for
    ``?`` placeholders, a mapping for ``:name`` ones); ValueError when they do not match."""
    translated, count = named_placeholders(sql)
    if isinstance(params, Mapping):
        if count:
            raise ValueError("Give a list of values for ? placeholders, not a mapping.")
        return _clause(translated), dict(params)
    values = list(params or ())
    if len(values) != count:
        raise ValueError(
            f"The statement has {count} placeholders but {len(values)} values were given: "
            f"{sql[:80]}"
        )
    return _clause(translated), {f"p{i}": value for i, value in enumerate(values)}


@lru_cache(maxsize=1024)
def _clause(sql: str) -> sa.TextClause:
    """``sql`` as a text clause, made once per statement: SQLAlchemy reads its bind
    parameters with a regular expression, which costs more than many a query it runs. A
    clause holds no values, so one serves every execution and thread."""
    return sa.text(sql)


class Db:
    """A CYOA database on ``engine`` (see :func:`cyoa.db.engine.engine_for`)."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self._local = threading.local()
        self._tables: dict[str, sa.Table] = {}

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    def current_connection(self) -> sa.Connection | None:
        """This thread's open write transaction's connection, if it is in one."""
        return getattr(self._local, "connection", None)

    @contextmanager
    def bound_to(self, connection: sa.Connection) -> Iterator[None]:
        """Run this thread's calls on ``connection`` (a transaction's) until the block ends."""
        previous = self.current_connection()
        self._local.connection = connection
        try:
            yield
        finally:
            self._local.connection = previous

    @contextmanager
    def connection(self) -> Iterator[sa.Connection]:
        """The thread's transaction's connection, or a new transaction committed at the end."""
        bound = self.current_connection()
        if bound is not None:
            yield bound
            return
        with self.engine.begin() as conn:
            yield conn

    def execute(self, sql: str, params: Params = None) -> Executed:
        """Run one statement; its rows (if any) and row count."""
        clause, values = statement(sql, params)
        with self.connection() as conn:
            result = conn.execute(clause, values)
            rows = [tuple(row) for row in result] if result.returns_rows else []
            return Executed(result.rowcount, rows)

    def query(self, sql: str, params: Params = None) -> Iterator[dict[str, Any]]:
        """The rows of a SELECT, each a dict by column name (read at once)."""
        clause, values = statement(sql, params)
        with self.connection() as conn:
            rows = [dict(row) for row in conn.execute(clause, values).mappings()]
        return iter(rows)

    def close(self) -> None:
        """End a unit of work: nothing to do, as every call gives its connection back to the
        pool when it ends. The pooled connections stay open for the next unit of work (a new
        connection per request would cost a connect, and on PostgreSQL a login, each time);
        :meth:`dispose` closes them."""

    def dispose(self) -> None:
        """Close the connections waiting idle in the pool (e.g. before the database file is
        replaced). The handle stays usable: its next call connects again, and a transaction
        running meanwhile in another thread keeps its connection until it ends."""
        self.engine.dispose()

    def forget_tables(self) -> None:
        """Read the tables' descriptions again at their next use (after a schema change)."""
        self._tables = {}

    def table_names(self) -> list[str]:
        """The names of the database's tables, sorted."""
        with self.connection() as conn:
            return sorted(sa.inspect(conn).get_table_names())

    def table(self, name: str) -> sa.Table:
        """The table ``name`` as the database describes it (read once, then remembered);
        LookupError if there is none. Two threads may both read it the first time: the
        first to finish is kept, and no thread waits on another for it."""
        found = self._tables.get(name)
        if found is None:
            with self.connection() as conn:
                try:
                    found = sa.Table(name, sa.MetaData(), autoload_with=conn)
                except sa.exc.NoSuchTableError:
                    raise LookupError(f"There is no table '{name}' in this database.") from None
            found = self._tables.setdefault(name, found)
        return found

    def insert(self, table: str, row: Mapping[str, Any], on_conflict: OnConflict = None) -> Any:
        """Insert ``row``; its primary key (the new id for an integer key; a tuple for a
        composite key), or None when ``on_conflict="ignore"`` skipped it."""
        with self.connection() as conn:
            key = conn.execute(self._insert(table, on_conflict), dict(row)).first()
        if key is None:
            return None
        return key[0] if len(key) == 1 else tuple(key)

    def insert_all(
        self, table: str, rows: Sequence[Mapping[str, Any]], on_conflict: OnConflict = None
    ) -> int:
        """Insert ``rows`` in order (rows may name different columns); how many were written."""
        with self.connection() as conn:
            stmt = self._insert(table, on_conflict)
            return sum(conn.execute(stmt, dict(row)).first() is not None for row in rows)

    def upsert(self, table: str, row: Mapping[str, Any], pk: str | Sequence[str]) -> None:
        """Insert ``row``, or, when a row with its key ``pk`` exists, set the columns ``row``
        names and leave the others as they are (sqlite-utils' ``upsert``)."""
        keys = [pk] if isinstance(pk, str) else list(pk)
        described = self.table(table)
        stmt = INSERTS[self.dialect](described)
        changed = {name: stmt.excluded[name] for name in row if name not in keys}
        stmt = (
            stmt.on_conflict_do_update(index_elements=keys, set_=changed)
            if changed
            else stmt.on_conflict_do_nothing(index_elements=keys)
        )
        with self.connection() as conn:
            conn.execute(stmt, dict(row))

    def update(self, table: str, key: Any, values: Mapping[str, Any]) -> int:
        """Set ``values`` in the row whose primary key is ``key`` (a tuple for a composite
        key); how many rows changed (0 when there is no such row)."""
        described = self.table(table)
        stmt = sa.update(described).where(self._key_matches(described, key)).values(**values)
        with self.connection() as conn:
            return conn.execute(stmt).rowcount

    def get(self, table: str, key: Any) -> dict[str, Any] | None:
        """The row whose primary key is ``key`` (a tuple for a composite key), or None."""
        described = self.table(table)
        stmt = sa.select(described).where(self._key_matches(described, key))
        with self.connection() as conn:
            row = conn.execute(stmt).mappings().first()
        return dict(row) if row is not None else None

    def rows_where(
        self,
        table: str,
        where: str | None = None,
        params: Params = None,
        order_by: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """The rows of ``table`` matching the SQL condition ``where`` (all without one), in
        the SQL order ``order_by`` (the database's own order without one)."""
        name = self.engine.dialect.identifier_preparer.quote(self.table(table).name)
        sql = f"SELECT * FROM {name}"
        sql += f" WHERE {where}" if where else ""
        sql += f" ORDER BY {order_by}" if order_by else ""
        return self.query(sql, params)

    def batches_in_key_order(self, table: str, size: int) -> Iterator[list[dict[str, Any]]]:
        """The rows of ``table`` in primary-key order, ``size`` at a time, each a dict by
        column name: one statement whose rows are streamed (a server-side cursor on
        PostgreSQL), so the table is never held whole. Inside a transaction of this thread
        (:func:`cyoa.db.transactions.read_snapshot`) every batch comes from its snapshot."""
        described = self.table(table)
        stmt = sa.select(described).order_by(*described.primary_key)
        with self.connection() as conn:
            result = conn.execution_options(stream_results=True, yield_per=size).execute(stmt)
            for part in result.mappings().partitions(size):
                yield [dict(row) for row in part]

    def _insert(self, table: str, on_conflict: OnConflict) -> Any:
        """The INSERT for ``table``, returning the key of each row it writes (``RETURNING``:
        psycopg reports no row count for an INSERT run through SQLAlchemy Core)."""
        described = self.table(table)
        keys = [c.name for c in described.primary_key]
        stmt = INSERTS[self.dialect](described)
        others = {c.name: stmt.excluded[c.name] for c in described.columns if c.name not in keys}
        if on_conflict == "ignore":
            stmt = stmt.on_conflict_do_nothing()
        elif on_conflict == "replace" and others:
            stmt = stmt.on_conflict_do_update(index_elements=keys, set_=others)
        elif on_conflict == "replace":
            stmt = stmt.on_conflict_do_nothing(index_elements=keys)
        return stmt.returning(*described.primary_key)

    @staticmethod
    def _key_matches(table: sa.Table, key: Any) -> sa.ColumnElement[bool]:
        columns = list(table.primary_key)
        values = key if isinstance(key, tuple | list) else (key,)
        if len(values) != len(columns):
            names = ", ".join(c.name for c in columns)
            raise ValueError(f"The key of '{table.name}' is ({names}): give {len(columns)} values.")
        return sa.and_(*(column == value for column, value in zip(columns, values, strict=True)))
