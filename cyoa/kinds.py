"""The table of study kinds: what the app needs of each wing, looked up by the kind stored with
an experiment (``experiments.kind``). A third kind is a third wing plus one entry here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from cyoa import store
from cyoa.cowriting import pages as cowriting_pages
from cyoa.cowriting.research import exports as cowriting_exports
from cyoa.rating import pages as rating_pages
from cyoa.rating.research import exports as rating_exports
from cyoa.web.tables import ExportError


@dataclass(frozen=True)
class Kind:
    """One study kind: its name as stored, the first segment of its participants' links,
    what a participant resumes by one (for the links' notes), the names of its export
    tables, and its exports (``export(db, row, fmt, **options)``: the stored experiment's
    ``row``, a format of :data:`cyoa.cowriting.research.exports.FORMATS`)."""

    name: str
    start_path: str
    work: str
    tables: tuple[str, ...]
    export: Callable[..., bytes]


KINDS: dict[str, Kind] = {
    "cowriting": Kind(
        name="cowriting",
        start_path=cowriting_pages.START_PATH,
        work=cowriting_pages.WORK,
        tables=tuple(cowriting_exports.TABLES),
        export=cowriting_exports.export,
    ),
    "rating": Kind(
        name="rating",
        start_path=rating_pages.START_PATH,
        work=rating_pages.WORK,
        tables=tuple(rating_exports.RATING_TABLES),
        export=rating_exports.export,
    ),
}


def export(db: Database, exp_id: str, fmt: str, **options: Any) -> bytes:
    """Every export of a stored experiment of any kind (the ``export`` verb's): its kind's
    :attr:`Kind.export`; :class:`~cyoa.web.tables.ExportError` when there is no such
    experiment or the kind cannot make it."""
    row = store.get_experiment(db, exp_id)
    if row is None:
        raise ExportError(f"There is no experiment '{exp_id}' in this database.")
    return KINDS[row["kind"]].export(db, row, fmt, **options)
