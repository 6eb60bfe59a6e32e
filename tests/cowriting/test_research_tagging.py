"""The app tags a study's new sentences in a background process while writers write, so
that the analysis finds them tagged; a failed run is logged and changes nothing else."""

from __future__ import annotations

import logging
import time

from conftest import Writer, write_setup

from cyoa import create_app, store
from cyoa.cowriting.analysis.tag_cache import tag_experiment
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.research.tagging import NICENESS, BackgroundTagger, tag_command


def wait_until(condition, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def test_a_submitted_round_is_tagged_in_the_background(tmp_path):
    config = write_setup(tmp_path) | {"TAG_SENTENCES": True, "TAG_DELAY_SECONDS": 0.1}
    app = create_app(config)
    tagger = cowriting_parts(app).tagger
    assert tagger in cowriting_parts(app).study.listeners
    writer = Writer(app)
    writer.write_round(1)
    try:
        assert wait_until(lambda: tagger.runs + tagger.failures >= 1), "no run finished"
    finally:
        tagger.stop()
    assert (tagger.runs, tagger.failures) == (1, 0)
    db = store.connect(config["DATABASE"])
    sentences = {row["sentence"] for row in db.rows_where("sentence_tags")}
    line = db.execute(
        "SELECT json_extract(payload, '$.text') FROM events WHERE type = 'line_submitted'"
    ).fetchone()[0]
    assert line in sentences
    assert tag_experiment(db, "fake-ab") == 0, "the background run left nothing to tag"


def test_only_new_text_starts_a_run(tmp_path):
    tagger = BackgroundTagger(str(tmp_path / "cyoa.sqlite"), delay=0)
    for event in ("line_submitted", "suggestion_completed", "draft_saved", "suggestion_chosen"):
        tagger("fake-ab", "session", event)
    assert tagger._thread is None
    tagger.stop()
    tagger("fake-ab", "session", "turn_submitted")
    assert tagger._thread is None, "a stopped tagger starts nothing"


def test_the_run_is_a_lower_priority_process_on_the_same_database(tmp_path):
    command, environment = tag_command(str(tmp_path / "cyoa.sqlite"), "fake-ab")
    assert command[1:] == [
        "-m", "cyoa", "tag", "fake-ab", "--workers", "1", "--nice", str(NICENESS),
    ]  # fmt: skip
    assert environment["CYOA_DATABASE"] == str(tmp_path / "cyoa.sqlite")


def test_a_postgresql_password_stays_off_the_run_s_command_line():
    url = "postgresql+psycopg://cyoa:s3cret@db.example.org:5432/study"
    command, environment = tag_command(url, "fake-ab")
    assert not any("s3cret" in part for part in command)
    assert environment["CYOA_DATABASE"] == url


def test_a_failed_run_is_logged_and_the_next_one_still_runs(tmp_path, caplog):
    db = store.connect(tmp_path / "cyoa.sqlite")
    store.init_db(db)
    tagger = BackgroundTagger(str(tmp_path / "cyoa.sqlite"), delay=0)
    with caplog.at_level(logging.WARNING, logger="cyoa.cowriting.research.tagging"):
        tagger("no-such-experiment", "session", "turn_submitted")
        assert wait_until(lambda: tagger.failures == 1)
        tagger("no-such-experiment", "session", "survey_submitted")
        assert wait_until(lambda: tagger.failures == 2)
    tagger.stop()
    assert tagger.runs == 0
    assert "no-such-experiment" in caplog.text and "failed (exit 1)" in caplog.text
