"""``CYOA_DATABASE`` names a SQLite file or a PostgreSQL server; anything else, a server that
does not answer, and a PostgreSQL URL given to what needs a file, is answered with a sentence
that never shows the password."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa import create_app, store
from cyoa.cli import cli
from cyoa.database_url import DatabaseSettingError, parse_database, redacted
from tests.paths import ROOT

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
        ("postgresql://cyoa:s3cret@[::1/study", "write an IPv6 address in brackets"),
    ],
)
def test_a_value_that_names_no_usable_database_is_answered_with_a_sentence(value, sentence):
    with pytest.raises(DatabaseSettingError) as error:
        parse_database(value)
    assert sentence in str(error.value)
    assert "s3cret" not in str(error.value)


def test_the_app_runs_on_a_postgresql_url_and_creates_its_schema(postgres_url):
    app = create_app({"DATABASE": postgres_url, "LOAD_MODELS_AT_START": False})
    db = store.connect(app.config["DATABASE"])
    assert db.dialect == "postgresql"
    assert "experiments" in db.table_names()
    assert app.test_client().get("/").status_code in (200, 302)


def test_the_app_reads_a_sqlite_url_as_its_file(tmp_path):
    path = tmp_path / "study.sqlite"
    app = create_app({"DATABASE": f"sqlite:///{path}", "LOAD_MODELS_AT_START": False})
    assert app.config["DATABASE"] == str(path)
    assert path.exists()


def test_the_app_on_a_server_that_does_not_answer_says_which_and_what_to_check():
    with pytest.raises(DatabaseSettingError) as error:
        create_app({"DATABASE": closed_port_url(), "LOAD_MODELS_AT_START": False})
    message = str(error.value)
    assert "cyoa:***@127.0.0.1" in message and "is the server running" in message
    assert "s3cret" not in message


@pytest.mark.parametrize(
    "verb",
    [["links"], ["analyze", "demo"], ["export", "demo", "--format", "csv", "--out", "x.csv"]],
    ids=["links", "analyze", "export"],
)
def test_a_verb_on_a_server_that_does_not_answer_says_so_without_a_traceback(verb):
    result = CliRunner().invoke(cli, ["--db", closed_port_url(), *verb])
    assert result.exit_code == 1
    assert "is the server running" in result.output
    assert "Traceback" not in result.output and "s3cret" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("verb", [["links"], ["init-db"], ["experiment", "list"]])
def test_a_verb_whose_db_is_a_text_file_says_it_is_not_a_sqlite_database(tmp_path, verb):
    notes = tmp_path / "notes.txt"
    notes.write_text("Things to ask the writers.\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["--db", str(notes), *verb])
    assert result.exit_code == 1
    assert f"{notes} is not a SQLite database" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert notes.read_text(encoding="utf-8") == "Things to ask the writers.\n"


def test_a_verb_on_a_postgresql_database_without_cyoa_s_tables_says_so(postgres_url):
    result = CliRunner().invoke(
        cli, ["--db", postgres_url, "export", "x", "--format", "csv", "--out", "-"]
    )
    assert result.exit_code == 1
    assert "has no CYOA tables" in result.output
    assert "Traceback" not in result.output


def test_the_app_started_on_a_server_that_does_not_answer_says_so_without_a_traceback():
    env = {**os.environ, "CYOA_DATABASE": closed_port_url(), "CYOA_LOAD_MODELS_AT_START": "false"}
    done = subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "is the server running" in done.stderr
    assert "Traceback" not in done.stderr and "s3cret" not in done.stderr


def closed_port_url() -> str:
    """A PostgreSQL URL with a password, to a port of 127.0.0.1 nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql://cyoa:s3cret@127.0.0.1:{port}/study"


def test_a_verb_on_a_postgresql_url_works_and_never_shows_the_password(postgres_url):
    with_password = postgres_url.replace("postgres@", "postgres:s3cret@")  # the test server trusts
    result = CliRunner().invoke(cli, ["--db", with_password, "init-db"])
    assert result.exit_code == 0, result.output
    assert "Database ready: postgresql+psycopg://postgres:***@127.0.0.1" in result.output
    assert "s3cret" not in result.output


@pytest.mark.parametrize("delimiter", ["/", "#", "?"])
def test_a_password_holding_a_url_s_delimiters_is_hidden_and_asked_to_be_encoded(delimiter):
    url = f"postgresql://cyoa:zq{delimiter}xv9@db.example.org:5432/cyoa"
    assert "xv9" not in redacted(url)
    with pytest.raises(DatabaseSettingError) as error:
        parse_database(url)
    assert "percent-encode" in str(error.value) and "xv9" not in str(error.value)


def test_a_password_given_as_a_parameter_is_hidden():
    shown = redacted("postgresql://cyoa@db/cyoa?sslmode=require&password=s3cret")
    assert shown == "postgresql://cyoa@db/cyoa?sslmode=require&password=***"
