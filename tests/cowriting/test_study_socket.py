"""Whole stories written through Socket.IO, as the browser does, checked in the database."""

import json

import pytest
from conftest import SURVEY_ANSWERS, Writer

from cyoa import store

pytestmark = pytest.mark.both_databases


def test_the_app_runs_on_the_database_of_its_kind(app, database_kind):
    assert store.connect(app.config["DATABASE"]).dialect == database_kind


def rows(app, sql, params=()):
    db = store.connect(app.config["DATABASE"])
    try:
        return list(db.query(sql, params))
    finally:
        db.close()


def test_a_writer_writes_a_whole_story_and_every_action_is_stored(app, writer):
    for n in range(1, 6):
        state = writer.write_round(n, slot=1 + n % 2)
    assert state["phase"] == "survey"
    assert len(state["story"]) == 10
    assert [t["author"] for t in state["story"]] == ["writer", "model"] * 5

    ack = writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})
    assert ack["ok"], ack
    assert ack["state"]["phase"] == "done"
    code = ack["state"]["completion_code"]

    sid = writer.session_id
    rounds = rows(app, "SELECT * FROM rounds WHERE session_id = ? ORDER BY round", [sid])
    assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5]
    for r in rounds:
        assert r["writer_line"] == f"The writer's own line for round {r['round']}."
        assert {r["slot1_system"], r["slot2_system"]} == {"fake-a-topk", "fake-b-topk"}
        assert r["chosen_slot"] == 1 + r["round"] % 2
        assert r["chosen_system"] == r[f"slot{r['chosen_slot']}_system"]
        assert r["chosen_model"] == r[f"slot{r['chosen_slot']}_model"]
        assert r["final_text"] == f"The edited suggestion kept in round {r['round']}."
        assert r["chosen_suggestion"]
        for stamp in (
            "line_submitted_at",
            "suggestions_ready_at",
            "first_choice_at",
            "turn_submitted_at",
        ):
            assert r[stamp], stamp

    suggestions = rows(app, "SELECT * FROM suggestions WHERE session_id = ?", [sid])
    assert len(suggestions) == 10
    for s in suggestions:
        assert s["status"] == "done"
        assert s["model"] in ("fake-a", "fake-b")
        assert s["model_version"] == "fake-1"
        assert 20 <= len(s["text"]) <= 260
        assert s["generation_seconds"] >= 0 and s["token_count"] > 0
        assert isinstance(s["seed"], int)
        sampling = json.loads(s["sampling"])
        assert sampling["top_k"] == (40 if s["system"] == "fake-a-topk" else 20)

    answers = rows(app, "SELECT * FROM survey_answers WHERE session_id = ?", [sid])
    by_item = {a["item_id"]: a for a in answers}
    assert by_item["happy"]["value"] == 4 and by_item["happy"]["label"] == "Agree"
    assert by_item["why_chosen"]["text"] == "The one that fit the mood."
    assert by_item["ideas"]["question"] == "The suggestions helped me come up with new ideas."

    events = rows(app, "SELECT seq, type FROM events WHERE session_id = ? ORDER BY seq", [sid])
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "session_started"
    assert events[-1]["type"] == "survey_submitted"

    session = rows(app, "SELECT * FROM sessions WHERE id = ?", [sid])[0]
    assert session["phase"] == "done" and session["finished_at"]
    assert session["completion_code"] == code

    page = writer.http.get("/s/fake-ab/done")
    assert code in page.get_data(as_text=True)
    html = page.get_data(as_text=True)
    assert f'href="https://example.org/complete?cc={code}"' in html
    # The page returns to the platform after 15 s unless the writer stays (countdown.js).
    assert f'data-seconds="15" data-go="https://example.org/complete?cc={code}"' in html


def test_suggestions_stream_to_the_writer_as_they_are_generated(make_app):
    app = make_app(options_a="delay_seconds = 0.01", options_b="delay_seconds = 0.01")
    writer = Writer(app)
    writer.io.get_received()
    writer.act("line_submitted", {"text": "A long time ago the sea was green."})
    writer.wait_for("choosing")
    progress = [
        m["args"][0] for m in writer.io.get_received() if m["name"] == "suggestion_progress"
    ]
    for slot in (1, 2):
        texts = [p["text"] for p in progress if p["slot"] == slot]
        assert len(texts) > 3
        assert all(a == b[: len(a)] for a, b in zip(texts, texts[1:], strict=False))


def test_a_line_holding_a_nul_character_gets_a_sentence_on_both_databases(writer):
    ack = writer.act("line_submitted", {"text": "The ferry\x00 left the island."})
    assert ack["ok"] is False and "cannot be saved (NUL)" in ack["error"]
    assert writer.act("line_submitted", {"text": "The ferry left the island."})["ok"]


def test_the_writer_never_sees_which_model_is_in_which_slot(writer):
    writer.act("line_submitted", {"text": "The clock struck thirteen at noon."})
    state = writer.wait_for("choosing")
    dumped = json.dumps(state)
    for secret in ("fake-a", "fake-b", "topk"):
        assert secret not in dumped


def test_slot_order_is_a_recorded_coin_flip(app):
    orders = set()
    for _ in range(6):
        w = Writer(app)
        w.write_round(1)
        w.write_round(2)
        for r in rows(
            app,
            "SELECT slot1_system FROM rounds WHERE session_id = ? AND slot1_system IS NOT NULL",
            [w.session_id],
        ):
            orders.add(r["slot1_system"])
    # 12 fair coin flips all landing the same way has probability 2 * 0.5**12.
    assert orders == {"fake-a-topk", "fake-b-topk"}


def test_reconnecting_brings_back_the_chosen_option_and_its_draft(writer):
    writer.act("line_submitted", {"text": "The lighthouse keeper found a letter."})
    writer.wait_for("choosing")
    writer.act("suggestion_chosen", {"slot": 2})
    writer.act("draft_saved", {"slot": 2, "text": "My half-edited draft of two"})
    writer.act("suggestion_chosen", {"slot": 1})
    writer.act("draft_saved", {"slot": 1, "text": "And a draft of one"})

    state = writer.reconnect()["state"]
    assert state["phase"] == "choosing"
    assert state["current"]["chosen_slot"] == 1
    assert state["current"]["drafts"] == {
        "1": "And a draft of one",
        "2": "My half-edited draft of two",
    }
    assert state["story"] == [{"author": "writer", "text": "The lighthouse keeper found a letter."}]


def test_a_new_tab_or_browser_with_the_same_participant_id_resumes_the_session(app):
    first = Writer(app, query="?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=x9")
    first.write_round(1)
    second = Writer(app, query="?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=x9")
    assert second.session_id == first.session_id
    assert second.joined["state"]["round"] == 2
    participants = rows(app, "SELECT * FROM participants")
    assert len(participants) == 1
    assert participants[0]["external_id"] == "abc123"
    assert participants[0]["id_source"] == "PROLIFIC_PID"
    assert participants[0]["study_id"] == "s1"
    assert len(rows(app, "SELECT * FROM sessions")) == 1


def test_the_same_browser_comes_back_to_its_anonymous_session(app):
    writer = Writer(app)
    writer.write_round(1)
    assert writer.http.get("/s/fake-ab").headers["Location"].endswith("/s/fake-ab/write")
    assert len(rows(app, "SELECT * FROM sessions")) == 1


def test_switching_is_recorded_with_server_timestamps(app, writer):
    writer.act("line_submitted", {"text": "Snow fell on the desert that morning."})
    writer.wait_for("choosing")
    for slot in (1, 2, 1):
        assert writer.act("suggestion_chosen", {"slot": slot})["ok"]
    writer.act("turn_submitted", {"text": "Everyone went outside to look at it."})
    choices = rows(app, "SELECT * FROM choices ORDER BY event_seq")
    assert [(c["slot"], c["is_switch"]) for c in choices] == [(1, 0), (2, 1), (1, 1)]
    assert all(c["chosen_at"].endswith("Z") for c in choices)
    assert rows(app, "SELECT switches FROM rounds WHERE round = 1")[0]["switches"] == 2


def test_a_turn_outside_the_limits_is_refused_and_nothing_is_stored(app, writer):
    ack = writer.act("line_submitted", {"text": "Too short."})
    assert not ack["ok"]
    assert ack["error"] == "Too short — at least 20 characters."
    assert ack["state"]["phase"] == "writing"
    ack = writer.act("line_submitted", {"text": "x" * 261})
    assert ack["error"] == "Too long — at most 260 characters."
    assert [e["type"] for e in rows(app, "SELECT type FROM events")] == ["session_started"]

    writer.act("line_submitted", {"text": "The twenty character minimum is met."})
    writer.wait_for("choosing")
    writer.act("suggestion_chosen", {"slot": 1})
    ack = writer.act("turn_submitted", {"text": ""})
    assert ack["error"] == "Too short — at least 20 characters."
    assert ack["state"]["phase"] == "choosing"


def test_a_double_submit_is_recorded_once(app, writer):
    line = {"text": "The cat learned to open the fridge."}
    first = writer.act("line_submitted", line, action_id="click-1")
    again = writer.act("line_submitted", line, action_id="click-1")
    assert first["ok"] and again["ok"] and again["duplicate"]
    other = writer.act("line_submitted", line, action_id="click-2")
    assert not other["ok"]
    writer.wait_for("choosing")
    types = [e["type"] for e in rows(app, "SELECT type FROM events")]
    assert types.count("line_submitted") == 1


def test_an_action_is_in_the_database_when_it_is_acknowledged(app, writer):
    ack = writer.act("line_submitted", {"text": "Acknowledged only after the commit."})
    assert ack["ok"]
    # A separate connection sees it: the transaction is committed, not just pending.
    line = rows(app, "SELECT writer_line FROM rounds WHERE session_id = ?", [writer.session_id])
    assert line[0]["writer_line"] == "Acknowledged only after the commit."


def test_survey_needs_every_statement_answered(writer):
    for n in range(1, 6):
        writer.write_round(n)
    partial = {k: v for k, v in SURVEY_ANSWERS.items() if k != "ideas"}
    ack = writer.act("survey_submitted", {"answers": partial})
    assert not ack["ok"] and "helped me come up with new ideas" in ack["error"]
    ack = writer.act("survey_submitted", {"answers": {**SURVEY_ANSWERS, "happy": 6}})
    assert not ack["ok"]
    assert writer.act("survey_submitted", {"answers": SURVEY_ANSWERS})["ok"]


def test_a_failing_model_leaves_the_round_playable_with_the_other(make_app):
    app = make_app(options_b='fail = "raise"')
    writer = Writer(app)
    writer.act("line_submitted", {"text": "Only one of the two will answer."})
    state = writer.wait_for("choosing")
    statuses = {s["status"] for s in state["current"]["suggestions"]}
    assert statuses == {"done", "failed"}
    good = next(s["slot"] for s in state["current"]["suggestions"] if s["status"] == "done")
    assert writer.act("suggestion_chosen", {"slot": good})["ok"]
    assert writer.act("turn_submitted", {"text": "The working model's sentence."})["ok"]
    failed = rows(app, "SELECT * FROM suggestions WHERE status = 'failed'")
    assert len(failed) == 1 and failed[0]["attempt"] == 2 and "RuntimeError" in failed[0]["error"]
    assert (
        rows(app, "SELECT one_suggestion_only FROM rounds WHERE round = 1")[0][
            "one_suggestion_only"
        ]
        == 1
    )


def test_when_both_models_fail_the_writer_can_retry(make_app):
    app = make_app(options_a='fail = "raise"', options_b='fail = "raise"')
    writer = Writer(app)
    writer.act("line_submitted", {"text": "Neither machine is working today."})
    writer.runner.wait_idle()
    state = writer.state()
    assert state["phase"] == "suggesting"
    assert [s["status"] for s in state["current"]["suggestions"]] == ["failed", "failed"]
    assert writer.act("suggestions_retried", {})["ok"]
    writer.runner.wait_idle()
    attempts = rows(app, "SELECT slot, attempt FROM suggestions ORDER BY slot, attempt")
    assert [(a["slot"], a["attempt"]) for a in attempts] == [(1, 2), (1, 4), (2, 2), (2, 4)]


def test_actions_need_a_joined_session(app):
    from cyoa.web.realtime import socketio

    stranger = socketio.test_client(app)
    ack = stranger.emit(
        "action", {"type": "line_submitted", "payload": {"text": "x" * 30}}, callback=True
    )
    assert not ack["ok"] and "reload" in ack["error"]
    ack = stranger.emit("join", {"experiment": "fake-ab"}, callback=True)
    assert not ack["ok"]


def test_server_only_events_cannot_be_sent_by_the_browser(writer):
    writer.act("line_submitted", {"text": "Trying to forge a suggestion now."})
    ack = writer.act("suggestion_completed", {"round": 1, "slot": 1, "text": "forged"})
    assert not ack["ok"]


def test_reloading_while_suggestions_stream_shows_the_text_so_far(make_app):
    app = make_app(options_a="delay_seconds = 0.05", options_b="delay_seconds = 0.05")
    writer = Writer(app)
    writer.act("line_submitted", {"text": "The train left without its driver."})
    state = writer.reconnect()["state"]
    assert state["phase"] == "suggesting"
    assert [s["status"] for s in state["current"]["suggestions"]] == ["pending", "pending"]
    assert state["current"]["writer_line"] == "The train left without its driver."
    assert writer.wait_for("choosing")["current"]["chosen_slot"] is None


def test_generation_cut_off_by_a_server_restart_starts_again_when_the_writer_returns(app):
    writer = Writer(app)
    study = writer.study
    # As if the server died right after committing the line: recorded, never generated.
    payload = {"text": "The power went out in the middle of it."}
    outcome = study.act(writer.session_id, "line_submitted", payload)
    assert outcome.state.phase.value == "suggesting"
    assert writer.runner.wait_idle()
    state = writer.reconnect()["state"]
    assert state["phase"] in ("suggesting", "choosing")
    state = writer.wait_for("choosing")
    assert [s["status"] for s in state["current"]["suggestions"]] == ["done", "done"]
    seeds = rows(app, "SELECT payload FROM events WHERE type = 'line_submitted'")
    recorded = json.loads(seeds[0]["payload"])["seeds"]
    used = rows(app, "SELECT slot, seed FROM suggestions ORDER BY slot")
    assert [u["seed"] for u in used] == recorded


def test_with_three_systems_each_writer_compares_one_balanced_pair(make_app):
    third = (
        '\n[[systems]]\nname = "fake-a-hot"\nmodel = "fake-a"\nsampling = { temperature = 1.5 }\n'
    )
    app = make_app(rounds=4, top='slot_order = "balanced"', systems=third)
    writers = [Writer(app) for _ in range(6)]
    for w in writers:
        for n in range(1, 5):
            w.write_round(n)
    sessions = rows(app, "SELECT id, system_a, system_b FROM sessions")
    pairs = [frozenset((s["system_a"], s["system_b"])) for s in sessions]
    # 6 writers over the 3 pairs: two each, once in each orientation.
    assert sorted(pairs.count(p) for p in set(pairs)) == [2, 2, 2]
    assert len({(s["system_a"], s["system_b"]) for s in sessions}) == 6
    for s in sessions:
        rs = rows(
            app, "SELECT slot1_system, slot2_system FROM rounds WHERE session_id = ?", [s["id"]]
        )
        assert all(
            {r["slot1_system"], r["slot2_system"]} == {s["system_a"], s["system_b"]} for r in rs
        )
        # Balanced slot order: each system of the pair is shown first in 2 of the 4 rounds.
        assert sum(r["slot1_system"] == s["system_a"] for r in rs) == 2


def test_an_empty_action_id_counts_as_none(app, writer):
    # Found by the fuzz test: two actions with action_id "" must not collide.
    assert not writer.act("line_submitted", {"text": ""}, action_id="")["ok"]
    assert writer.io.emit(
        "action",
        {"type": "line_submitted", "payload": {"text": "0" * 20}, "action_id": ""},
        callback=True,
    )["ok"]
    writer.wait_for("choosing")
    ack = writer.io.emit(
        "action",
        {"type": "suggestion_chosen", "payload": {"slot": 1}, "action_id": ""},
        callback=True,
    )
    assert ack["ok"] and not ack["duplicate"]


def system_seeds(app, pid):
    """(round, system, seed) of every suggestion the participant ``pid`` was shown."""
    sql = (
        "SELECT s.round, s.system, s.seed FROM suggestions s "
        "JOIN sessions ON sessions.id = s.session_id "
        "JOIN participants p ON p.id = sessions.participant_id WHERE p.external_id = ? "
        "ORDER BY s.round, s.system"
    )
    return [(r["round"], r["system"], r["seed"]) for r in rows(app, sql, [pid])]


@pytest.mark.sqlite_only  # three servers, each on its own database file
def test_with_a_seed_salt_the_same_writer_gets_the_same_seeds_from_another_server(tmp_path):
    from conftest import write_setup

    from cyoa import create_app
    from cyoa.cowriting.service import derived_seed

    def server(name, salt):
        (tmp_path / name).mkdir()
        app = create_app({**write_setup(tmp_path / name), "SEED_SALT": salt})
        for pid in ("w1", "w2"):
            writer = Writer(app, f"?pid={pid}")
            writer.write_round(1)
            writer.write_round(2)
        return app

    first, second, unsalted = server("a", "bench"), server("b", "bench"), server("c", "")
    # Each system's seed, whichever slot the server's coin flip showed it in.
    assert system_seeds(first, "w1") == system_seeds(second, "w1")
    assert system_seeds(first, "w2") == system_seeds(second, "w2")
    assert system_seeds(first, "w1") != system_seeds(first, "w2")
    assert system_seeds(first, "w1") == [
        (n, system, derived_seed("bench", "fake-ab", "w1", n, system))
        for n in (1, 2)
        for system in ("fake-a-topk", "fake-b-topk")
    ]
    # Without a salt (a study), seeds are drawn at random.
    assert system_seeds(unsalted, "w1") != system_seeds(first, "w1")


def test_derived_seeds_are_31_bit_and_differ_by_salt_writer_round_and_system():
    from cyoa.cowriting.service import derived_seed

    seed = derived_seed("salt", "exp", "w1", 1, "a")
    assert seed == derived_seed("salt", "exp", "w1", 1, "a")
    assert 0 <= seed < 2**31
    others = [
        ("pepper", "exp", "w1", 1, "a"),
        ("salt", "other", "w1", 1, "a"),
        ("salt", "exp", "w2", 1, "a"),
        ("salt", "exp", "w1", 2, "a"),
        ("salt", "exp", "w1", 1, "b"),
    ]
    assert all(derived_seed(*other) != seed for other in others)
