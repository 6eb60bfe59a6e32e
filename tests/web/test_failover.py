"""Several app processes, one killed: a writer and a rater working on process A go on with
process B after ``kill -9`` of A, and every action acknowledged to them is stored exactly once.

Two ``python app.py`` processes share one database (a SQLite file, or PostgreSQL) and a Redis
message queue (bench/deployment.py starts them). The writer speaks Socket.IO over websocket,
the rater posts JSON; both resend an unacknowledged action with its client action id on the
other process, as the pages do (bench/participants.py).
"""

from __future__ import annotations

import pytest
from conftest import SURVEY_ANSWERS

from bench.deployment import RATING, WRITING, app_processes, write_studies
from bench.participants import Ledger, Rater, Writer
from cyoa import store
from cyoa.cowriting import flow
from cyoa.cowriting import store as cowriting_store

ROUNDS = 3


@pytest.fixture(
    params=[
        "sqlite",
        "postgresql",
    ]
)
def database(request, tmp_path) -> str:
    """The deployment's database: a SQLite file, or a new database on the tests' PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "cyoa.sqlite")
    return request.getfixturevalue("postgres_url")


@pytest.fixture
def deployment(tmp_path, database):
    """Processes A and B; the fake models take 0.1 s a word, so a suggestion takes seconds."""
    setup = write_studies(tmp_path, database, rounds=ROUNDS, delay=0.1, stories=6)
    with app_processes(tmp_path, setup, 2) as processes:
        yield database, processes


def rows(database: str, sql: str, *args) -> list[dict]:
    db = store.connect(database)
    try:
        return list(db.query(sql, list(args)))
    finally:
        db.close()


def write_round(writer: Writer, number: int) -> list[str]:
    """One whole round; returns the turns it added (the writer's line, the kept suggestion)."""
    line = f"The keeper's own line for round {number}."
    assert writer.act("line_submitted", {"text": line})["ok"]
    return [line, *finish_round(writer, number)]


def finish_round(writer: Writer, number: int) -> list[str]:
    writer.wait_for("choosing", number)
    writer.act("suggestion_chosen", {"slot": 1})
    kept = f"The suggestion the writer kept and edited in round {number}."
    writer.act("turn_submitted", {"text": kept})
    return [kept]


def answer(rater: Rater, items: list[tuple[str, str]], story: str) -> None:
    for item, value in items:
        rater.act("answer_given", {"story": story, "item": item, "value": value})


def test_a_writer_and_a_rater_continue_on_another_process_after_kill_9(deployment):
    database, (a, b) = deployment
    ledger = Ledger()
    writer = Writer([a.url, b.url], WRITING, "writer-1", ledger)
    rater = Rater([a.url, b.url], RATING, "rater-1", ledger)
    story = write_round(writer, 1)
    rater.load_page()
    first, items = rater.task()
    answer(rater, items[:10], first)
    (rater_row,) = rows(database, "SELECT rater_id FROM raters")
    assigned = rows(database, "SELECT story_id, position FROM assignments ORDER BY position")

    line = "The keeper's own line for round 2."
    assert writer.act("line_submitted", {"text": line})["ok"]
    assert writer.state["phase"] == "suggesting"  # the suggestions are pending on A
    a.kill()

    story += [line, *finish_round(writer, 2)]  # the writer joins the story on B
    assert writer.urls[writer.at] == b.url
    answer(rater, items[10:], first)  # the rater's next answer goes to B, same cookie
    assert rater.url == b.url
    rater.act("story_finished", {"story": first})
    rater.load_page()
    second, items = rater.task()
    answer(rater, items, second)
    assert rater.act("story_finished", {"story": second})["next"].endswith("/done")
    story += write_round(writer, 3)
    assert writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})["state"]["phase"] == "done"
    writer.close()

    assert_stored_exactly_once(database, ledger)
    assert_story_replays_whole(database, story)
    assert_pending_generation_was_taken_over(database, b.pid)
    assert rows(database, "SELECT story_id, position FROM assignments ORDER BY position") == (
        assigned
    )
    finished = rows(database, "SELECT finished_at FROM assignments WHERE rater_id = ?",
                    rater_row["rater_id"])  # fmt: skip
    assert len(finished) == 2 and all(row["finished_at"] for row in finished)
    assert "Traceback" not in b.log()


def assert_stored_exactly_once(database: str, ledger: Ledger) -> None:
    """Every acknowledged action is in the events (writer) or rating events (rater), once."""
    assert all(sent.latency is not None for sent in ledger.sent)
    for table, prefix in (("events", "writer/"), ("rating_events", "rater/")):
        stored = [
            row["client_action_id"]
            for row in rows(database, f"SELECT client_action_id FROM {table}")
            if row["client_action_id"]
        ]
        acknowledged = ledger.acknowledged(prefix)
        assert acknowledged
        assert sorted(stored) == sorted(acknowledged)  # none lost, none duplicated


def assert_story_replays_whole(database: str, story: list[str]) -> None:
    (session,) = rows(database, "SELECT id, phase FROM sessions")
    assert session["phase"] == "done"
    db = store.connect(database)
    try:
        events = cowriting_store.load_events(db, session["id"])
    finally:
        db.close()
    state = flow.replay(
        flow.Limits(rounds=ROUNDS), [flow.Event(e["type"], e["payload"]) for e in events]
    )
    assert state.phase == flow.Phase.DONE
    assert state.story() == story
    completed = [
        (e["payload"]["round"], e["payload"]["slot"])
        for e in events
        if e["type"] == "suggestion_completed"
    ]
    assert sorted(completed) == [(r, s) for r in range(1, ROUNDS + 1) for s in (1, 2)]


def assert_pending_generation_was_taken_over(database: str, b_pid: int) -> None:
    """Round 2's suggestions, pending on A when it died, were generated by B."""
    claims = rows(database, "SELECT round, worker_id FROM generation_claims WHERE round = 2")
    assert len(claims) == 2
    assert {claim["worker_id"].split("/")[1] for claim in claims} == {str(b_pid)}
