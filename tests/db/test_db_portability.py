"""Every module reaches the database through ``cyoa.db``, in SQL that PostgreSQL speaks too.

Only the data-access layer (``cyoa/db/``), SQLite's migration chain (``cyoa/store.py``) and
SQLite's online backup (``cyoa/backup.py``) may open SQLite themselves; everything else gets a
:class:`cyoa.db.facade.Db` from :func:`cyoa.store.connect` and writes SQL that both databases
run (docs/deployment.md, "Appendix: what only SQLite speaks").
"""

import re

import sqlalchemy as sa

from cyoa import store
from cyoa.db.facade import Db
from tests.paths import ROOT

SQLITE_OWN = ("cyoa/db/", "cyoa/store.py", "cyoa/backup.py")
SQLITE_IMPORT = re.compile(r"^\s*(import sqlite3|import sqlite_utils|from sqlite_utils\b)", re.M)
SQLITE_ONLY_SQL = {
    "INSERT OR IGNORE / REPLACE": re.compile(r"INSERT\s+OR\s+(IGNORE|REPLACE)", re.I),
    "rowid": re.compile(r"\browid\b", re.I),
    "json_extract": re.compile(r"\bjson_extract\s*\("),
    "julianday": re.compile(r"\bjulianday\s*\("),
    "strftime in SQL": re.compile(r"(?<![.\w])strftime\s*\(\s*'"),
    "group_concat": re.compile(r"\bgroup_concat\s*\("),
    "PRAGMA": re.compile(r"\bPRAGMA\b"),
    "BEGIN IMMEDIATE": re.compile(r"BEGIN IMMEDIATE"),
}


def modules() -> list[tuple[str, str]]:
    """Each module of the app outside the modules that may speak SQLite: (path, text)."""
    paths = [*sorted((ROOT / "cyoa").rglob("*.py")), ROOT / "app.py"]
    found = []
    for path in paths:
        name = path.relative_to(ROOT).as_posix()
        if not name.startswith(SQLITE_OWN):
            found.append((name, path.read_text(encoding="utf-8")))
    return found


def test_no_module_outside_the_data_access_layer_opens_sqlite_itself():
    importing = [name for name, text in modules() if SQLITE_IMPORT.search(text)]
    assert importing == []


def test_no_module_outside_the_data_access_layer_writes_sql_only_sqlite_speaks():
    found = [
        f"{name}: {construct}"
        for name, text in modules()
        for construct, pattern in SQLITE_ONLY_SQL.items()
        if pattern.search(text)
    ]
    assert found == []


def test_the_store_hands_out_the_data_access_layer(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    store.init_db(db)
    assert isinstance(db, Db)
    assert db.dialect == "sqlite"
    assert "experiments" in sa.inspect(db.engine).get_table_names()


def test_one_process_shares_one_handle_per_database(tmp_path):
    first = store.connect(tmp_path / "study.sqlite")
    assert store.connect(str(tmp_path / "study.sqlite")) is first
    assert store.connect(tmp_path / "other.sqlite") is not first


def test_a_closed_handle_still_answers(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    store.init_db(db)
    db.close()
    assert db.execute("SELECT count(*) FROM experiments").fetchone() == (0,)
