"""``CYOA_DATABASE`` names a SQLite file or a PostgreSQL server; anything else, and for now a
PostgreSQL URL given to the app or the verbs, is answered with a sentence."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa import create_app
from cyoa.cli import cli
from cyoa.database_url import DatabaseSettingError, parse_database, redacted, sqlite_path

ROOT = Path(__file__).resolve().parent.parent
URL = "postgresql://cyoa:s3cret@db.example.org:5432/study"


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("instance/cyoa.sqlite", Path("instance/cyoa.sqlite")),
        ("/srv/cyoa/study.sqlite", Path("/srv/cyoa/study.sqlite")),
        (Path("a b/c.sqlite"), Path("a b/c.sqlite")),
        (":memory:", Path(":memory:")),
        ("sqlite:///instance/cyoa.sqlite", Path("instance/cyoa.sqlite")),
        ("sqlite:////srv/study.sqlite", Path("/srv/study.sqlite")),
    ],
)
def test_a_path_or_a_sqlite_url_names_a_sqlite_file(value, path):
    location = parse_database(value)
    assert (location.kind, location.path) == ("sqlite", path)
    assert sqlite_path(value) == path


@pytest.mark.parametrize(
    "value",
    [URL, URL.replace("postgresql", "postgresql+psycopg"), URL.replace("postgresql", "postgres")],
)
def test_each_spelling_of_a_postgresql_url_gives_the_psycopg_dialect(value):
    location = parse_database(value)
    assert location.kind == "postgresql"
    assert location.url == "postgresql+psycopg://cyoa:s3cret@db.example.org:5432/study"


def test_a_postgresql_url_may_name_a_socket_folder_instead_of_a_host():
    location = parse_database("postgresql:///study?host=/var/run/postgresql")
    assert location.url == "postgresql+psycopg:///study?host=/var/run/postgresql"


def test_a_shown_url_hides_its_password():
    assert redacted(URL) == "postgresql://cyoa:***@db.example.org:5432/study"
    assert str(parse_database(URL)) == "postgresql+psycopg://cyoa:***@db.example.org:5432/study"
    assert redacted("postgresql://cyoa@host/db") == "postgresql://cyoa@host/db"


@pytest.mark.parametrize(
    ("value", "sentence"),
    [
        ("", "CYOA_DATABASE is empty"),
        ("   ", "CYOA_DATABASE is empty"),
        ("mysql://u:p@host/db", "starts with 'mysql://', which CYOA cannot use"),
        ("sqlite://", "names no file"),
        ("postgresql://cyoa:s3cret@db.example.org:5432/", "names no database"),
        ("postgresql://cyoa:s3cret@:5432/study", "names no server"),
        ("postgresql://cyoa:s3cret@db.example.org:port/study", "is not a number"),
    ],
)
def test_a_value_that_names_no_usable_database_is_answered_with_a_sentence(value, sentence):
    with pytest.raises(DatabaseSettingError) as error:
        parse_database(value)
    assert sentence in str(error.value)
    assert "s3cret" not in str(error.value)


def test_a_postgresql_url_is_refused_for_now_with_a_sentence():
    with pytest.raises(DatabaseSettingError) as error:
        sqlite_path(URL)
    message = str(error.value)
    assert "PostgreSQL support is still being built" in message
    assert "s3cret" not in message


def test_the_app_refuses_a_postgresql_url_with_a_sentence(tmp_path):
    with pytest.raises(DatabaseSettingError, match="PostgreSQL support is still being built"):
        create_app({"DATABASE": URL, "LOAD_MODELS_AT_START": False})


def test_the_app_reads_a_sqlite_url_as_its_file(tmp_path):
    path = tmp_path / "study.sqlite"
    app = create_app({"DATABASE": f"sqlite:///{path}", "LOAD_MODELS_AT_START": False})
    assert app.config["DATABASE"] == str(path)
    assert path.exists()


def test_a_verb_refuses_a_postgresql_url_with_a_sentence_not_a_traceback():
    result = CliRunner().invoke(cli, ["--db", URL, "links"])
    assert result.exit_code == 1
    assert "PostgreSQL support is still being built" in result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_the_app_started_on_a_postgresql_url_says_so_without_a_traceback(tmp_path):
    env = {**os.environ, "CYOA_DATABASE": URL, "CYOA_LOAD_MODELS_AT_START": "false"}
    done = subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "PostgreSQL support is still being built" in done.stderr
    assert "Traceback" not in done.stderr
