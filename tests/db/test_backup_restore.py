"""``python -m cyoa backup`` and ``restore``: a backup taken while writers keep writing is one
consistent snapshot, and the restored database gives the same analysis as the source."""

from __future__ import annotations

import json
import secrets
import sqlite3
import subprocess
import threading
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from bench.postgres_server import create_database
from cyoa import backup_postgresql as postgresql_backup
from cyoa import migrate_db, store
from cyoa.backup import in_use
from cyoa.cli import cli
from tests.paths import ROOT
from tests.study_builder import FIRST, SECOND, add_writer, make_experiment, story

V1_DUMP = ROOT / "tests" / "data" / "cyoa-schema-v1.sql"
SCALES = ROOT / "tests" / "data" / "scales"


def run(db_path: Path | str, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db_path), *args])


def analysis(db_path: Path, experiment: str) -> list:
    result = run(db_path, "analyze", experiment, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def events(db_path: Path, experiment: str) -> dict[str, list[tuple]]:
    """Each session of ``experiment``: its events in order."""
    conn = sqlite3.connect(db_path)
    try:
        rows = conn.execute(
            "SELECT e.session_id, e.seq, e.type, e.payload FROM events e "
            "JOIN sessions s ON s.id = e.session_id WHERE s.experiment_id = ? ORDER BY 1, 2",
            (experiment,),
        ).fetchall()
    finally:
        conn.close()
    sessions: dict[str, list[tuple]] = {}
    for row in rows:
        sessions.setdefault(row[0], []).append(row[1:])
    return sessions


@pytest.fixture(scope="module")
def built_study(tmp_path_factory) -> Path:
    """A database with a co-writing experiment ``exp`` (four writers), an empty one
    ``live``, and a rating experiment ``crowd`` (a 4-point crowd rating of three items),
    built once for the file; tests use their own copy (:func:`study`)."""
    path = tmp_path_factory.mktemp("study") / "study.sqlite"
    db = store.connect(path)
    make_experiment(db, "exp")
    make_experiment(db, "live")
    for n, chosen in enumerate((FIRST, FIRST, SECOND, FIRST)):
        add_writer(db, f"w{n}", story((FIRST, SECOND), chosen, f"w{n}"))
    db.close()
    args = ["--format", "long", "--instrument", str(SCALES / "crowd-1-4.toml"), "--name", "crowd"]
    result = run(path, "import-ratings", str(SCALES / "crowd-1-4.csv"), *args)
    assert result.exit_code == 0, result.output
    store.forget(path)
    return path


@pytest.fixture
def study(built_study, tmp_path) -> Path:
    """The test's own copy of :func:`built_study` (SQLite's online backup: one file, whole),
    which the test may write to, back up and restore over."""
    path = tmp_path / "study.sqlite"
    with closing(sqlite3.connect(built_study)) as source, closing(sqlite3.connect(path)) as copy:
        source.backup(copy)
    return path


def keep_writing(path: Path | str, stop: threading.Event, written: list[str]) -> None:
    """Add whole writers to experiment ``live`` until ``stop`` is set."""
    db = store.connect(path)
    try:
        while not stop.is_set():
            name = f"live{len(written)}"
            add_writer(db, name, story((FIRST, SECOND), FIRST, name), exp_id="live")
            written.append(name)
    finally:
        db.close()


def test_a_backup_taken_while_a_writer_writes_restores_to_the_same_analysis(study, tmp_path):
    before = {name: analysis(study, name) for name in ("exp", "crowd")}
    stop, written = threading.Event(), []
    writer = threading.Thread(target=keep_writing, args=(study, stop, written))
    writer.start()
    try:
        while len(written) < 3:
            threading.Event().wait(0.01)
        backed_up = run(study, "backup", str(tmp_path / "backup.sqlite"))
        at_backup = len(written)
        while len(written) < at_backup + 2:
            threading.Event().wait(0.01)
    finally:
        stop.set()
        writer.join()
    assert backed_up.exit_code == 0, backed_up.output
    assert "Backed up" in backed_up.output

    fresh = tmp_path / "fresh" / "cyoa.sqlite"
    restored = run(fresh, "restore", str(tmp_path / "backup.sqlite"))
    assert restored.exit_code == 0, restored.output
    assert {name: analysis(fresh, name) for name in ("exp", "crowd")} == before

    source_live, restored_live = events(study, "live"), events(fresh, "live")
    assert 3 <= len(restored_live) <= at_backup + 1 < len(source_live)
    for session, recorded in restored_live.items():
        assert recorded == source_live[session][: len(recorded)]
    conn = sqlite3.connect(fresh)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    conn.close()


def test_a_restored_version_1_database_is_upgraded_through_the_migrations(tmp_path):
    old = tmp_path / "old.sqlite"
    conn = sqlite3.connect(old)
    conn.executescript(V1_DUMP.read_text(encoding="utf-8"))
    conn.close()
    fresh = tmp_path / "cyoa.sqlite"
    result = run(fresh, "restore", str(old))
    assert result.exit_code == 0, result.output
    assert "upgraded from schema version 1" in result.output
    db = store.connect(fresh)
    assert store.schema_version(db) == store.SCHEMA_VERSION
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
    db.close()
    source = store.connect(old)
    assert store.schema_version(source) == 1
    source.close()


def test_restore_refuses_a_database_in_use_unless_forced(study, tmp_path):
    backup = tmp_path / "backup.sqlite"
    assert run(study, "backup", str(backup)).exit_code == 0
    target = tmp_path / "live.sqlite"
    assert run(target, "restore", str(backup)).exit_code == 0
    app = store.connect(target)
    app.execute("SELECT count(*) FROM experiments").fetchone()
    assert in_use(target)

    refused = run(target, "restore", str(backup))
    assert refused.exit_code == 1
    assert "is open in another process (is the app running?)" in refused.output
    assert "--force" in refused.output

    store.forget(target)  # the app stops: its pooled connections close
    assert not in_use(target)
    refused = run(target, "restore", str(backup))
    assert "already holds a database: add --force" in refused.output
    forced = run(target, "restore", str(backup), "--force")
    assert forced.exit_code == 0, forced.output


@pytest.mark.parametrize(
    ("database", "name"), [("study", "backup.sqlite"), ("postgres_study", "study.dump")]
)
def test_a_backup_never_overwrites_a_file(request, tmp_path, database, name):
    backup = tmp_path / name
    backup.write_text("precious")
    result = run(request.getfixturevalue(database), "backup", str(backup))
    assert result.exit_code == 1
    assert "already exists: a backup never overwrites a file" in result.output
    assert backup.read_text() == "precious"


@pytest.mark.parametrize(
    ("make", "sentence"),
    [
        (lambda p: None, "There is no backup at"),
        (lambda p: p.write_text("not a database"), "is not a SQLite database"),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.close(),
            "is a SQLite database but not CYOA's",
        ),
        (
            lambda p: sqlite3.connect(p).executescript(
                "CREATE TABLE experiments (id); PRAGMA user_version = 999;"
            ),
            "newer than this CYOA's",
        ),
    ],
)
def test_a_file_that_is_no_cyoa_backup_is_refused_with_a_sentence(tmp_path, make, sentence):
    backup = tmp_path / "backup.sqlite"
    make(backup)
    target = tmp_path / "cyoa.sqlite"
    result = run(target, "restore", str(backup))
    assert result.exit_code == 1
    assert sentence in result.output
    assert "Traceback" not in result.output
    assert not target.exists()


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["backup", "{tmp}/missing-folder/backup.sqlite"], "does not exist: create it first"),
        (["--db", "{tmp}/missing.sqlite", "backup", "{tmp}/b.sqlite"], "There is no database"),
    ],
)
def test_a_backup_to_or_from_a_bad_path_is_refused_with_a_sentence(study, tmp_path, args, sentence):
    args = [arg.format(tmp=tmp_path) for arg in args]
    if args[0] != "--db":
        args = ["--db", str(study), *args]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1
    assert sentence in result.output


# PostgreSQL: pg_dump's custom format and pg_restore behind the same verbs.


@pytest.fixture(scope="module")
def postgres_template(built_study, postgres_cluster) -> str:
    """The name of a PostgreSQL database holding :func:`built_study` moved with
    ``migrate-db``, moved once for the file; nothing stays connected to it, so that
    :func:`postgres_study` can copy it."""
    url = create_database(postgres_cluster, f"study_template_{secrets.token_hex(4)}")
    moved = run(built_study, "migrate-db", "--to", url)
    assert moved.exit_code == 0, moved.output
    store.forget(url)
    return url.rsplit("/", 1)[1]


@pytest.fixture
def postgres_study(postgres_template, postgres_cluster) -> str:
    """The test's own PostgreSQL copy of :func:`postgres_template` (``CREATE DATABASE …
    TEMPLATE``): the ``study`` database moved into PostgreSQL; its URL."""
    return create_database(
        postgres_cluster, f"study_{secrets.token_hex(4)}", template=postgres_template
    )


def postgres_events(url: str, experiment: str) -> dict[str, list[tuple]]:
    """Each session of ``experiment`` in the PostgreSQL database at ``url``: its events."""
    sessions: dict[str, list[tuple]] = {}
    rows = store.connect(url).query(
        "SELECT e.session_id, e.seq, e.type, e.payload FROM events e JOIN sessions s "
        "ON s.id = e.session_id WHERE s.experiment_id = ? ORDER BY 1, 2",
        [experiment],
    )
    for row in rows:
        sessions.setdefault(row["session_id"], []).append((row["seq"], row["type"], row["payload"]))
    return sessions


def with_password(url: str) -> str:
    """``url`` with a password, which the test server (trust authentication) ignores."""
    return url.replace("postgres@", "postgres:s3cret-word@")


def test_a_postgresql_backup_taken_while_a_writer_writes_restores_to_the_same_analysis(
    postgres_study, postgres_cluster, tmp_path
):
    source = store.connect(postgres_study)
    before = {name: migrate_db.analyses(source)[name] for name in ("exp", "crowd")}
    stop, written = threading.Event(), []
    writer = threading.Thread(target=keep_writing, args=(postgres_study, stop, written))
    writer.start()
    try:
        while len(written) < 3:
            threading.Event().wait(0.01)
        backed_up = run(with_password(postgres_study), "backup", str(tmp_path / "study.dump"))
        at_backup = len(written)
        while len(written) < at_backup + 2:
            threading.Event().wait(0.01)
    finally:
        stop.set()
        writer.join()
    assert backed_up.exit_code == 0, backed_up.output
    assert "Backed up postgresql+psycopg://postgres:***@" in backed_up.output
    assert "s3cret-word" not in backed_up.output

    fresh = create_database(postgres_cluster, f"restored_{secrets.token_hex(4)}")
    restored = run(with_password(fresh), "restore", str(tmp_path / "study.dump"))
    assert restored.exit_code == 0, restored.output
    assert "s3cret-word" not in restored.output
    found = migrate_db.analyses(store.connect(fresh))
    assert {name: found[name] for name in ("exp", "crowd")} == before

    source_live, restored_live = (
        postgres_events(postgres_study, "live"),
        postgres_events(fresh, "live"),
    )
    assert 3 <= len(restored_live) <= at_backup + 1 < len(source_live)
    for session, recorded in restored_live.items():
        assert recorded == source_live[session][: len(recorded)]
    db = store.connect(fresh)
    new = add_writer(db, "after-restore", story((FIRST, SECOND), FIRST, "x"), exp_id="exp")
    assert db.get("sessions", new)["participant_id"] > 0


def test_a_postgresql_restore_over_a_cyoa_database_needs_force(postgres_study, tmp_path):
    dump = tmp_path / "study.dump"
    assert run(postgres_study, "backup", str(dump)).exit_code == 0
    db = store.connect(postgres_study)
    db.execute("DELETE FROM judgements")

    refused = run(postgres_study, "restore", str(dump))
    assert refused.exit_code == 1
    assert "already holds a CYOA database: add --force" in refused.output
    assert db.execute("SELECT count(*) FROM judgements").fetchone()[0] == 0

    forced = run(postgres_study, "restore", str(dump), "--force")
    assert forced.exit_code == 0, forced.output
    assert db.execute("SELECT count(*) FROM judgements").fetchone()[0] > 0


@pytest.mark.parametrize(
    ("make", "sentence"),
    [
        (lambda p: None, "There is no backup at"),
        (lambda p: p.write_text("not a dump"), "is not a PostgreSQL backup"),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE t (x)").connection.close(),
            "is a SQLite database: restore it into a SQLite --db",
        ),
    ],
)
def test_a_file_that_is_no_postgresql_backup_is_refused_with_a_sentence(
    postgres_url, tmp_path, make, sentence
):
    dump = tmp_path / "study.dump"
    make(dump)
    result = run(postgres_url, "restore", str(dump))
    assert result.exit_code == 1
    assert sentence in result.output
    assert "Traceback" not in result.output
    assert "experiments" not in store.connect(postgres_url).table_names()


def test_a_dump_of_another_database_is_refused_as_not_cyoa(
    postgres_cluster, postgres_url, tmp_path
):
    other = create_database(postgres_cluster, f"other_{secrets.token_hex(4)}")
    store.connect(other).execute("CREATE TABLE notes (id INTEGER PRIMARY KEY)")
    dump = tmp_path / "other.dump"
    refused = run(other, "backup", str(dump))
    assert refused.exit_code == 1
    assert "holds no CYOA database" in refused.output
    subprocess.run(
        ["pg_dump", "--format=custom", f"--file={dump}", f"--dbname={other}"], check=True
    )
    result = run(postgres_url, "restore", str(dump))
    assert result.exit_code == 1
    assert "is a PostgreSQL backup but not of a CYOA database" in result.output


def test_without_the_postgresql_client_the_sentence_names_its_package(
    postgres_study, tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(postgresql_backup, "DEBIAN_BINARIES", tmp_path / "none")
    result = run(postgres_study, "backup", str(tmp_path / "study.dump"))
    assert result.exit_code == 1
    assert "pg_dump is missing: install Debian's postgresql-client" in result.output


def test_an_unreachable_postgresql_server_is_a_sentence(postgres_study, tmp_path):
    dump = tmp_path / "study.dump"
    assert run(postgres_study, "backup", str(dump)).exit_code == 0
    url = "postgresql://cyoa:s3cret-word@127.0.0.1:1/nowhere"
    for args in (["backup", str(tmp_path / "other.dump")], ["restore", str(dump)]):
        result = run(url, *args)
        assert result.exit_code == 1
        assert "Cannot reach postgresql+psycopg://cyoa:***@127.0.0.1:1/nowhere" in result.output
        assert "s3cret-word" not in result.output
    assert not (tmp_path / "other.dump").exists()


def test_a_truncated_dump_is_refused_with_a_sentence(postgres_url, tmp_path):
    dump = tmp_path / "study.dump"
    dump.write_bytes(b"PGDMP")
    result = run(postgres_url, "restore", str(dump))
    assert result.exit_code == 1
    assert "cannot be read as a PostgreSQL backup" in result.output
