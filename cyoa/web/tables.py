"""Tables as files, for every study kind: CSV (safe to open in a spreadsheet), JSON Lines and
Parquet (typed columns), from rows and their :class:`~cyoa.web.columns.Column` list; and a
download's file name."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cyoa.paths import ROOT
from cyoa.web.columns import Column
from cyoa.web.security import neutralize_cell

TABLE_FORMATS = ("csv", "jsonl", "parquet")
_ARROW = {"string": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}


class ExportError(ValueError):
    """An export that cannot be made; the message says what to do instead."""


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> bytes:
    """CSV (UTF-8, header line, RFC 4180 quoting) with formula-like text neutralised
    (:func:`neutralize_cell`). Empty cells are nulls; booleans are ``true``/``false``."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([c.name for c in columns])
    for row in rows:
        cells = []
        for c in columns:
            value = row.get(c.name)
            if isinstance(value, bool):
                value = "true" if value else "false"
            cells.append("" if value is None else neutralize_cell(value))
        writer.writerow(cells)
    return out.getvalue().encode("utf-8")


def to_jsonl(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> bytes:
    """One JSON object per line, keys in column order, nulls as ``null``."""
    lines = [
        json.dumps({c.name: row.get(c.name) for c in columns}, ensure_ascii=False) for row in rows
    ]
    return ("\n".join(lines) + ("\n" if lines else "")).encode("utf-8")


def to_parquet(rows: Sequence[dict[str, Any]], columns: Sequence[Column]) -> bytes:
    """Parquet with one typed column per :class:`Column` (pyarrow)."""
    schema = pa.schema([pa.field(c.name, _ARROW[c.type]) for c in columns])
    table = pa.Table.from_pylist(
        [{c.name: row.get(c.name) for c in columns} for row in rows], schema
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


_WRITERS = {"csv": to_csv, "jsonl": to_jsonl, "parquet": to_parquet}


def write_table(rows: Sequence[dict[str, Any]], columns: Sequence[Column], fmt: str) -> bytes:
    """``rows`` in one of :data:`TABLE_FORMATS`; :class:`ExportError` for another format."""
    if fmt not in _WRITERS:
        raise ExportError(f"Unknown format '{fmt}': use one of {', '.join(TABLE_FORMATS)}.")
    return _WRITERS[fmt](rows, columns)


def data_dictionary() -> bytes:
    """docs/data-dictionary.md, which every bundle carries beside its tables."""
    return (ROOT / "docs" / "data-dictionary.md").read_bytes()


def filename(exp_id: str, table: str, fmt: str, now: datetime | None = None) -> str:
    """A download's file name, e.g. ``short-story-1-preference-20261121.csv``."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d")
    extension = {"jsonl": "jsonl", "cyoa-tsv": "tsv", "bundle": "zip"}.get(fmt, fmt)
    what = f"-{table}" if fmt in TABLE_FORMATS else ("-cyoa" if fmt == "cyoa-tsv" else "")
    return f"{exp_id}{what}-{stamp}.{extension}"
