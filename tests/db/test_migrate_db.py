"""``python -m cyoa migrate-db --to TARGET``: a study moves from SQLite to PostgreSQL and back
whole, and the move checks itself (rows per table, every experiment's analysis, every
session's story); a target that is not empty or cannot be reached, or a missing source, is
refused with a sentence."""

from __future__ import annotations

import functools
import json
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import SURVEY_ANSWERS, Writer

from cyoa import migrate_db, store
from cyoa.cli import cli
from cyoa.cowriting import store as cowriting_store
from cyoa.rating.analysis import report as rating_report
from tests.paths import DATA, ROOT
from tests.rating.test_rating_dashboard import open_study, rate_everything
from tests.rating.test_rating_journey import write_spec
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment, story

SCALES = DATA / "scales"


@pytest.fixture(autouse=True)
def few_replicates(monkeypatch):
    """Rating analyses here draw 50 bootstrap replicates, not the verb's 1,000 (about half a
    minute for this study's 14 items): the data compared are the same either way."""
    monkeypatch.setattr(
        rating_report, "rating_report", functools.partial(rating_report.rating_report, bootstrap=50)
    )


def run(db: str | Path, *args: str):
    return CliRunner().invoke(cli, ["--db", str(db), *args])


def analysis(db_path: Path, experiment: str) -> list:
    result = run(db_path, "analyze", experiment, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def edited(pair: tuple[str, str], chosen: str, writer: str) -> list[Turn]:
    """A story whose writer rewrites each kept suggestion in their own words."""
    return [
        Turn(
            line=turn.line,
            suggestions=turn.suggestions,
            slot1=turn.slot1,
            chosen=chosen,
            final=f"In round {n} {writer} rewrote it: {turn.suggestions[chosen]}",
        )
        for n, turn in enumerate(story(pair, chosen, writer), start=1)
    ]


def add_cowriting(path: Path) -> None:
    """A co-writing experiment ``exp`` in the database at ``path``: four writers who edit
    what they keep and answer the survey, and one who stopped after two rounds."""
    db = store.connect(path)
    make_experiment(db, "exp")
    for n, chosen in enumerate((FIRST, SECOND, FIRST, FIRST)):
        add_writer(db, f"w{n}", edited((FIRST, SECOND), chosen, f"w{n}"), survey=SURVEY_ANSWERS)
    add_writer(db, "quitter", story((FIRST, SECOND), SECOND, "quitter")[:2])


@pytest.fixture(scope="module")
def small_study(tmp_path_factory) -> Path:
    """A SQLite database with the co-writing experiment ``exp`` and an imported crowd
    rating ``crowd`` (three items on a 4-point scale), built once for the file."""
    path = tmp_path_factory.mktemp("small") / "small.sqlite"
    add_cowriting(path)
    args = ["--format", "long", "--instrument", str(SCALES / "crowd-1-4.toml"), "--name", "crowd"]
    result = run(path, "import-ratings", str(SCALES / "crowd-1-4.csv"), *args)
    assert result.exit_code == 0, result.output
    return path


@pytest.fixture
def small(small_study, tmp_path) -> Path:
    """The test's own copy of :func:`small_study` (SQLite's online backup: one file, whole)."""
    path = tmp_path / "small.sqlite"
    with closing(sqlite3.connect(small_study)) as source, closing(sqlite3.connect(path)) as copy:
        source.backup(copy)
    return path


@pytest.fixture
def study(app, tmp_path) -> Path:
    """The app's SQLite database holding the co-writing experiment ``exp``, a rating study
    ``aiss-pilot`` with four raters (one excluded by its attention check), and a writer of
    ``fake-ab`` who wrote two rounds through the app."""
    open_study(
        app,
        tmp_path,
        attention_checks=[{"builtin": "aiss"}],
        exclusions=[{"rule": "failed_attention_checks", "at_least": 1}],
    )
    for pid, value in (("careful", "4"), ("second", "4"), ("third", "3")):
        rate_everything(app, pid, value=value)
    rate_everything(app, "careless", check_answer="5", value="2")
    path = Path(app.config["DATABASE"])
    add_cowriting(path)
    writer = Writer(app, "?PROLIFIC_PID=live-writer")
    writer.write_round(1, edit="A line the writer typed over the suggestion.")
    writer.write_round(2)
    writer.runner.wait_idle(timeout=20)
    return path


def test_a_study_moves_to_postgresql_and_back_with_the_same_rows_analyses_and_stories(
    study, postgres_url, tmp_path
):
    to_postgresql = run(study, "migrate-db", "--to", postgres_url)
    assert to_postgresql.exit_code == 0, to_postgresql.output
    assert "events: " in to_postgresql.output
    assert "Checked: the rows of every table" in to_postgresql.output
    assert re.search(r"the analysis of each of \d+ experiments", to_postgresql.output)

    back = tmp_path / "back" / "cyoa.sqlite"
    back.parent.mkdir()
    to_sqlite = run(postgres_url, "migrate-db", "--to", str(back))
    assert to_sqlite.exit_code == 0, to_sqlite.output
    assert "Checked: the rows of every table" in to_sqlite.output

    for experiment in ("exp", "aiss-pilot"):
        assert analysis(back, experiment) == analysis(study, experiment)
    source, copy = sqlite3.connect(study), sqlite3.connect(back)
    for table in ("events", "rating_events", "judgements", "survey_answers", "participants"):
        sql = f"SELECT * FROM {table}"
        copied, kept = copy.execute(sql).fetchall(), source.execute(sql).fetchall()
        assert sorted(copied, key=repr) == sorted(kept, key=repr), table
    source.close(), copy.close()


def test_a_rating_study_without_ratings_yet_moves_and_compares_as_not_yet_analysable(tmp_path):
    source = tmp_path / "source.sqlite"
    created = run(source, "experiment", "create", str(write_spec(tmp_path)))
    assert created.exit_code == 0, created.output
    analysed = run(source, "analyze", "aiss-pilot")
    assert analysed.exit_code == 1
    assert "'aiss-pilot' has no ratings yet" in analysed.output
    copy = tmp_path / "copy.sqlite"
    moved = run(source, "migrate-db", "--to", str(copy))
    assert moved.exit_code == 0, moved.output
    assert "Checked: the rows of every table" in moved.output
    stories = store.connect(copy).execute("SELECT count(*) FROM stories").fetchone()[0]
    assert stories == 4


def moves(path: Path) -> list[dict]:
    db = store.connect(path)
    return list(db.query("SELECT * FROM database_moves ORDER BY id"))


def test_each_move_is_recorded_in_its_copy_with_its_check_and_travels_with_the_study(
    small, tmp_path
):
    first, second = tmp_path / "first.sqlite", tmp_path / "second.sqlite"
    assert run(small, "migrate-db", "--to", str(first)).exit_code == 0
    assert run(first, "migrate-db", "--to", str(second)).exit_code == 0
    recorded = moves(second)
    assert [m["source"] for m in recorded] == [str(small), str(first)]
    assert all(m["checked_at"] is not None and m["differences"] == 0 for m in recorded)
    assert recorded[1]["copied_rows"] == sum(
        store.connect(first).execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in migrate_db.TABLES
    )


KILLED_DURING_CHECK = """
import sys, time
from cyoa import migrate_db
from cyoa.cli import cli

def hang(*args, **kwargs):
    print("checking", flush=True)
    time.sleep(600)

migrate_db.check_copy = hang
cli(sys.argv[1:])
"""


def test_a_move_killed_during_its_check_says_so_and_its_copy_can_be_checked_again(small, tmp_path):
    copy = tmp_path / "copy.sqlite"
    args = ["--db", str(small), "migrate-db", "--to", str(copy)]
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_DURING_CHECK, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:  # wait for the event: the copy is committed and its check has begun
        lines = iter(process.stdout.readline, "")
        assert any(line.strip() == "checking" for line in lines), "the check never began"
    finally:
        process.kill()  # kill -9 while the check runs
        process.wait(timeout=60)
    (unchecked,) = moves(copy)
    assert unchecked["checked_at"] is None and unchecked["source"] == str(small)
    again = run(small, "migrate-db", "--to", str(copy))
    assert again.exit_code == 1
    assert "never checked" in again.output
    assert f"migrate-db --to {copy} --check-only" in again.output
    checked = run(small, "migrate-db", "--to", str(copy), "--check-only")
    assert checked.exit_code == 0, checked.output
    assert "Checked: the rows of every table" in checked.output
    (done,) = moves(copy)
    assert done["checked_at"] is not None and done["differences"] == 0


def test_a_session_started_after_the_move_gets_a_fresh_participant_id(small, postgres_url):
    assert run(small, "migrate-db", "--to", postgres_url).exit_code == 0
    db = store.connect(postgres_url)
    copied = {row["id"] for row in db.query("SELECT id FROM participants")}
    session = add_writer(db, "newcomer", story((FIRST, SECOND), FIRST, "newcomer"), exp_id="exp")
    new_id = cowriting_store.get_session(db, session)["participant_id"]
    assert new_id not in copied
    assert new_id > max(copied)


def test_the_check_names_the_table_experiment_and_session_that_differ(small, tmp_path):
    copy = tmp_path / "copy.sqlite"
    assert run(small, "migrate-db", "--to", str(copy)).exit_code == 0
    source, target = store.connect(small), store.connect(copy)
    session = next(source.query("SELECT id FROM sessions WHERE experiment_id = 'exp'"))["id"]
    target.execute(
        "DELETE FROM events WHERE session_id = ? AND seq = (SELECT max(seq) FROM events "
        "WHERE session_id = ? AND type = 'turn_submitted')",
        [session, session],
    )
    target.execute(
        "UPDATE judgements SET value = 1 WHERE rater_id IN (SELECT rater_id FROM raters)"
    )
    found = {m.where for m in migrate_db.check_copy(source, target).mismatches}
    assert {"table events", "experiment crowd", f"session {session}"} <= found


def test_a_mismatch_is_reported_and_the_exit_code_is_1(small, tmp_path, monkeypatch):
    def differs(source, target, before=None):
        return migrate_db.Check(1, 0, [migrate_db.Mismatch("table events", "2 rows, 1 copied")])

    monkeypatch.setattr(migrate_db, "check_copy", differs)
    result = run(small, "migrate-db", "--to", str(tmp_path / "copy.sqlite"))
    assert result.exit_code == 1
    assert "table events: 2 rows, 1 copied" in result.output


def test_a_target_that_holds_a_study_is_refused_and_left_as_it_was(small, postgres_url):
    assert run(small, "migrate-db", "--to", postgres_url).exit_code == 0
    db = store.connect(postgres_url)
    events = db.execute("SELECT count(*) FROM events").fetchone()[0]
    again = run(small, "migrate-db", "--to", postgres_url)
    assert again.exit_code == 1
    assert "already holds CYOA data" in again.output
    assert "dropdb" in again.output and "createdb" in again.output
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == events


def test_a_sqlite_target_that_holds_a_study_is_refused(small, tmp_path):
    other = tmp_path / "other.sqlite"
    db = store.connect(other)
    make_experiment(db, "mine")
    result = run(small, "migrate-db", "--to", str(other))
    assert result.exit_code == 1
    assert "already holds CYOA data" in result.output


def test_a_postgresql_database_with_the_schema_but_no_rows_is_an_empty_target(small, postgres_url):
    store.init_db(store.connect(postgres_url))
    result = run(small, "migrate-db", "--to", postgres_url)
    assert result.exit_code == 0, result.output


def test_an_older_sqlite_study_is_upgraded_in_a_copy_and_moved(tmp_path, postgres_url):
    old = tmp_path / "old.sqlite"
    dump = DATA / "cyoa-schema-v1.sql"
    conn = sqlite3.connect(old)
    conn.executescript(dump.read_text(encoding="utf-8"))
    conn.close()
    result = run(old, "migrate-db", "--to", postgres_url)
    assert result.exit_code == 0, result.output
    assert "upgraded from schema version 1 in a copy" in result.output
    assert store.schema_version(store.connect(old)) == 1
    assert store.connect(postgres_url).execute("SELECT count(*) FROM sessions").fetchone()[0] == 2


@pytest.mark.parametrize(
    ("source", "target", "sentence"),
    [
        ("{small}", "postgresql://cyoa:secret@127.0.0.1:1/nowhere", "Cannot reach"),
        ("{tmp}/missing.sqlite", "{tmp}/copy.sqlite", "There is no database at"),
        ("{small}", "{tmp}/no-folder/copy.sqlite", "does not exist: create it first"),
        ("{small}", "mysql://db/x", "which CYOA cannot use"),
        ("{small}", "{small}", "is the source itself"),
        ("{small}", "{tmp}", "is a folder: give --to a new file's name"),
        ("{small}", "postgresql://cyoa:secret@[::1/db", "write an IPv6 address in brackets"),
    ],
)
def test_a_bad_source_or_target_is_refused_with_a_sentence(
    small, tmp_path, source, target, sentence
):
    names = {"small": small, "tmp": tmp_path}
    result = run(source.format(**names), "migrate-db", "--to", target.format(**names))
    assert result.exit_code == 1, result.output
    assert sentence in result.output
    assert "Traceback" not in result.output
    assert "secret" not in result.output
    assert not (tmp_path / "copy.sqlite").exists()


def test_a_row_postgresql_refuses_is_named_and_the_target_stays_empty(small, postgres_url):
    db = store.connect(small)
    db.execute("UPDATE experiments SET title = ? WHERE id = 'exp'", ["Lighthouse\x00 stories"])
    result = run(small, "migrate-db", "--to", postgres_url)
    assert result.exit_code == 1
    assert "The target refused a row of experiments" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    target = store.connect(postgres_url)
    assert target.execute("SELECT count(*) FROM experiments").fetchone()[0] == 0
