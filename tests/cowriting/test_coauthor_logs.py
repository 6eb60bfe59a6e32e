"""CoAuthor session logs out and in: the export's events against CoAuthor's event schema
(coauthor-interface, frontend/js/logging.js), and export → import gives the same texts."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from cyoa.cowriting.process.coauthor import read_session
from cyoa.cowriting.process.coauthor_record import log_record
from cyoa.cowriting.process.operations import reconstruct
from cyoa.cowriting.process.store import load_operations, store_operations
from cyoa.cowriting.research.coauthor import export_zip, import_logs
from tests.cowriting.test_process_measures import Log
from tests.study_builder import FIRST, SECOND, Turn, add_writer, make_experiment

# CoAuthor's logEvent fields and their JSON types (config.js names the events).
SCHEMA = {
    "eventName": str,
    "eventSource": str,
    "eventTimestamp": int,
    "textDelta": (str, dict),
    "cursorRange": (str, dict),
    "currentDoc": str,
    "currentCursor": int,
    "currentSuggestions": list,
    "currentSuggestionIndex": int,
    "currentHoverIndex": (str, int),
    "currentN": str,
    "currentMaxToken": str,
    "currentTemperature": str,
    "currentTopP": str,
    "currentPresencePenalty": str,
    "currentFrequencyPenalty": str,
    "originalSuggestions": list,
    "eventNum": int,
}
EVENT_NAMES = {
    "system-initialize", "text-insert", "text-delete", "cursor-backward", "cursor-forward",
    "cursor-select", "suggestion-get", "suggestion-open", "suggestion-reopen", "suggestion-up",
    "suggestion-down", "suggestion-hover", "suggestion-select", "suggestion-close",
}  # fmt: skip
ROUND_1 = {FIRST: "They dream.", SECOND: "Dogs bark."}
ROUND_2 = {FIRST: "Wet.", SECOND: "Puddles formed."}
TURNS = [
    Turn("Cats nap all day.", ROUND_1, FIRST, FIRST, "They dream of fish."),
    Turn("Then it rained 🌧.", ROUND_2, SECOND, SECOND, "Puddles formed."),
]


QUERY = (
    "SELECT r.writer_line, r.final_text, r.chosen_suggestion, r.chosen_system FROM rounds r"
    " JOIN sessions s ON s.id = r.session_id WHERE s.experiment_id = ?"
    " ORDER BY s.started_at, r.round"
)


@pytest.fixture
def study(tmp_path):
    db = store.connect(tmp_path / "study.sqlite")
    make_experiment(db, rounds=2)
    recorded = add_writer(db, "w1", TURNS, rounds=2)
    add_writer(db, "w2", TURNS, rounds=2)
    log = Log(1)
    for i, char in enumerate("Cats nap all day. "):
        log.text(100 * i, "line", i, char)
    log.view(5000, 1, "visible").view(5000, 2, "visible").view(5200, 2, "focus")
    log.text(6000, "edit", 0, "", "Dogs ", slot=2)
    log.text(7000, "edit", 10, " of fish.", ".", slot=1)
    store_operations(db, recorded, log.ops)
    yield db
    db.close()


def logs(db) -> dict[str, list[dict]]:
    with zipfile.ZipFile(io.BytesIO(export_zip(db, "exp"))) as archive:
        return {
            name: [json.loads(line) for line in archive.read(name).decode().splitlines()]
            for name in archive.namelist()
        }


def test_every_exported_event_has_coauthors_fields_and_types(study):
    files = logs(study)
    assert len(files) == 2 and all(name.endswith(".jsonl") for name in files)
    for events in files.values():
        assert events[0]["eventName"] == "system-initialize"
        for number, event in enumerate(events):
            assert set(event) == set(SCHEMA)
            assert event["eventName"] in EVENT_NAMES
            assert event["eventSource"] in ("user", "api")
            assert event["eventNum"] == number
            for name, kind in SCHEMA.items():
                assert isinstance(event[name], kind), (event["eventName"], name)
            if isinstance(event["textDelta"], dict):
                assert all(
                    set(op) <= {"retain", "insert", "delete"} for op in event["textDelta"]["ops"]
                )


def test_the_recorded_session_is_exported_keystroke_by_keystroke_and_ends_as_the_story(study):
    recorded = max(logs(study).values(), key=len)
    names = [e["eventName"] for e in recorded]
    assert names.count("text-insert") >= 18
    assert "suggestion-hover" in names and names.count("suggestion-select") >= 2
    story = " ".join(text for t in TURNS for text in (t.line, t.final))
    assert read_session(recorded).rounds[-1].final_text == "Puddles formed."
    doc = ""
    for event in recorded:
        at = 0
        for op in event["textDelta"]["ops"] if isinstance(event["textDelta"], dict) else []:
            if "retain" in op:
                at += op["retain"]
            elif "insert" in op:
                units = doc.encode("utf-16-le")
                doc = (units[: 2 * at] + op["insert"].encode("utf-16-le") + units[2 * at :]).decode(
                    "utf-16-le"
                )
                at += len(op["insert"].encode("utf-16-le")) // 2
            else:
                units = doc.encode("utf-16-le")
                doc = (units[: 2 * at] + units[2 * (at + op["delete"]) :]).decode("utf-16-le")
    assert doc == story


def test_export_then_import_gives_the_same_texts(study, tmp_path):
    files = [
        (name, "".join(json.dumps(e) + "\n" for e in events))
        for name, events in logs(study).items()
    ]
    summary = import_logs(study, files, "back")
    assert (summary.sessions, summary.rounds, summary.left_out) == (2, 4, 0)
    original = [tuple(r.values()) for r in study.query(QUERY, ["exp"])]
    back = [tuple(r.values()) for r in study.query(QUERY, ["back"])]
    assert sorted(back) == sorted(original)


def round_trip(db) -> tuple[list[tuple], list[tuple]]:
    files = [(n, "".join(json.dumps(e) + "\n" for e in ev)) for n, ev in logs(db).items()]
    import_logs(db, files, "back")
    return tuple(sorted(tuple(r.values()) for r in db.query(QUERY, [e])) for e in ("exp", "back"))


def test_an_edit_of_the_suggestion_not_taken_leaves_nothing_of_it_in_the_story(study):
    session = study.execute("SELECT session_id FROM text_operations").fetchone()[0]
    edit = Log(2).text(9000, "edit", 0, "Nope", slot=2).ops[0] | {"seq": 50}
    store_operations(study, session, [edit])
    original, back = round_trip(study)
    assert back == original


def test_a_round_whose_record_does_not_replay_goes_out_at_turn_grain(study):
    session = study.execute("SELECT session_id FROM text_operations").fetchone()[0]
    before = [e["eventName"] for e in max(logs(study).values(), key=len)]
    broken = Log(2).text(9000, "edit", 0, "", "Nope", slot=2).ops[0] | {"seq": 50}
    store_operations(study, session, [broken])
    assert [e["eventName"] for e in max(logs(study).values(), key=len)] == before
    original, back = round_trip(study)
    assert back == original


def test_a_file_that_is_not_a_coauthor_log_is_refused_with_a_sentence(tmp_path):
    path = tmp_path / "study.sqlite"
    bad = tmp_path / "notes.jsonl"
    bad.write_text('{"hello": 1}\n', encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--db", str(path), "import-coauthor", str(bad), "--name", "x"]
    )
    assert result.exit_code == 1
    assert "notes.jsonl is not a CoAuthor session log" in result.output


def test_the_verbs_and_the_research_page_carry_the_logs(app, researcher, tmp_path):
    db = store.connect(app.config["DATABASE"])
    make_experiment(db, rounds=2)
    add_writer(db, "w1", TURNS, rounds=2)
    db.close()
    page = researcher.get("/research/experiments/exp").get_data(as_text=True)
    assert "/research/experiments/exp/coauthor.zip" in page
    reply = researcher.get("/research/experiments/exp/coauthor.zip")
    with zipfile.ZipFile(io.BytesIO(reply.data)) as archive:
        (name,) = archive.namelist()
        (tmp_path / name).write_bytes(archive.read(name))
    runner = CliRunner()
    args = [
        "--db",
        app.config["DATABASE"],
        "import-coauthor",
        str(tmp_path / name),
        "--name",
        "back",
    ]
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "Imported 1 CoAuthor sessions (2 rounds) as experiment 'back', with " in result.output
    db = store.connect(app.config["DATABASE"])
    participant = db.execute(
        "SELECT p.id FROM participants p JOIN sessions s ON s.participant_id = p.id"
        " WHERE s.experiment_id = 'back'"
    ).fetchone()[0]
    db.close()
    replay = researcher.get(f"/research/experiments/back/writers/{participant}")
    assert replay.status_code == 200
    page = replay.get_data(as_text=True)
    assert "They dream of fish." in page
    assert 'id="ks-summary"' in page and "cannot be played back" not in page


def event(name, source="user", delta="", **fields):
    return {"eventName": name, "eventSource": source, "textDelta": delta, **fields}


def test_a_log_as_coauthors_interface_writes_it_reads_as_rounds():
    offered = [
        {"index": 1, "original": " It hid.", "trimmed": "It hid.", "source": ""},
        {"index": 0, "original": " It sang.", "trimmed": "It sang.", "source": ""},
    ]
    log = [
        event("system-initialize", "api", currentDoc="A prompt.\n"),
        event("text-insert", delta={"ops": [{"retain": 9}, {"insert": " A fox ran."}]}),
        event("suggestion-get"),
        event("suggestion-open", "api", currentSuggestions=offered),
        event("suggestion-select", currentSuggestionIndex=0),
        event("suggestion-close", "api"),
        event("text-insert", "api", {"ops": [{"retain": 20}, {"insert": " It sang."}]}),
        event("text-insert", delta={"ops": [{"retain": 28}, {"insert": "!"}, {"delete": 1}]}),
        event("text-insert", delta={"ops": [{"retain": 29}, {"insert": " The end"}]}),
    ]
    session = read_session(log)
    assert session.prompt == "A prompt."
    (round_,) = session.rounds
    assert round_.writer_line == "A fox ran."
    assert round_.suggestions == ["It hid.", "It sang."] and round_.chosen_slot == 2
    # Without a system-put space after it, the turn ends at the suggestion's last character.
    assert round_.final_text == "It sang"
    assert session.left_out == 1


def submitted_turns(db, exp_id) -> dict[str, list[tuple[str, str]]]:
    """Each writer's rounds as the keystroke record replays them: (line, turn) per round."""
    out = {}
    for s in db.query(
        "SELECT s.id, p.external_id FROM sessions s JOIN participants p ON p.id ="
        " s.participant_id WHERE s.experiment_id = ?",
        [exp_id],
    ):
        rounds = db.query(
            "SELECT round, chosen_slot, chosen_suggestion FROM rounds WHERE session_id = ?"
            " ORDER BY round",
            [s["id"]],
        )
        suggestions = {
            (e["payload"]["round"], e["payload"]["slot"]): e["payload"]["text"]
            for e in (
                {"payload": json.loads(row["payload"])}
                for row in db.query(
                    "SELECT payload FROM events WHERE session_id = ? AND type ="
                    " 'suggestion_completed'",
                    [s["id"]],
                )
            )
        }
        texts = reconstruct(load_operations(db, s["id"]), suggestions)
        out[s["external_id"]] = [
            (
                texts.get((r["round"], "line", None), "").strip(),
                texts.get((r["round"], "edit", r["chosen_slot"]), r["chosen_suggestion"]).strip(),
            )
            for r in rounds
        ]
    return out


def test_an_exported_record_imports_keystroke_by_keystroke_and_replays_to_the_same_turns(
    study, tmp_path
):
    files = [(n, "".join(json.dumps(e) + "\n" for e in ev)) for n, ev in logs(study).items()]
    summary = import_logs(study, files, "back")
    assert summary.record_problems == ()
    assert summary.operations > 18  # the line typed key by key comes back as its keys
    replayed = submitted_turns(study, "back")
    expected = [(t.line, t.final) for t in TURNS]
    assert sorted(replayed.values()) == [expected, expected]
    imported = list(
        study.query(
            "SELECT o.* FROM text_operations o JOIN sessions s ON s.id = o.session_id"
            " WHERE s.experiment_id = 'back' AND o.box = 'line' AND o.round = 1 ORDER BY o.seq"
        )
    )
    typed = [o for o in imported if o["inserted"] in set("Cats nap all day.")]
    assert len(typed) >= 17 and {o["source"] for o in imported} == {"typed"}


def test_a_log_as_coauthors_interface_writes_it_imports_with_its_keystrokes(tmp_path):
    offered = [
        {"index": 1, "original": " It hid.", "trimmed": "It hid.", "source": ""},
        {"index": 0, "original": " It sang.", "trimmed": "It sang.", "source": ""},
    ]

    def at(ms, *args, **kwargs):
        return event(*args, **kwargs) | {"eventTimestamp": ms}

    log = [
        at(0, "system-initialize", "api", currentDoc="A prompt.\n"),
        at(100, "text-insert", delta={"ops": [{"retain": 9}, {"insert": " A fox"}]}),
        at(200, "text-insert", delta={"ops": [{"retain": 15}, {"insert": " ran."}]}),
        at(300, "suggestion-get"),
        at(900, "suggestion-open", "api", currentSuggestions=offered),
        at(1500, "suggestion-select", currentSuggestionIndex=0),
        at(1500, "suggestion-close", "api"),
        at(1500, "text-insert", "api", {"ops": [{"retain": 20}, {"insert": " It sang."}]}),
        # "sang" made "sung": a replacement inside the suggestion
        at(2000, "text-insert", delta={"ops": [{"retain": 24}, {"insert": "su"}, {"delete": 2}]}),
    ]
    session = read_session(log)
    assert [(r.writer_line, r.final_text) for r in session.rounds] == [("A fox ran.", "It sung.")]
    record = log_record(log, session)
    assert record.problems == []
    assert [(o["box"], o["slot"], o["position"], o["deleted"], o["inserted"], o["at_ms"])
            for o in record.rows] == [
        ("line", None, 0, "", " A fox", 100),
        ("line", None, 6, "", " ran.", 200),
        ("edit", 2, 3, "sa", "su", 2000),
    ]  # fmt: skip
    db = store.connect(tmp_path / "imported.sqlite")
    summary = import_logs(db, [("fox.jsonl", json.dumps(log))], "fox")
    assert summary.operations == 3
    assert submitted_turns(db, "fox") == {"fox": [("A fox ran.", "It sung.")]}
    db.close()


def test_an_edit_the_log_leaves_outside_the_turn_is_named_in_the_imports_output(tmp_path):
    offered = [{"index": 0, "original": " It sang.", "trimmed": "It sang.", "source": ""}]
    log = [
        event("system-initialize", "api", currentDoc="A prompt.\n"),
        event("text-insert", delta={"ops": [{"retain": 9}, {"insert": " A fox ran."}]}),
        event("suggestion-open", "api", currentSuggestions=offered),
        event("suggestion-select", currentSuggestionIndex=0),
        event("text-insert", "api", {"ops": [{"retain": 20}, {"insert": " It sang."}]}),
        event("text-insert", delta={"ops": [{"retain": 28}, {"insert": "!"}, {"delete": 1}]}),
    ]
    record = log_record(log, read_session(log))
    assert record.rows == []
    assert any(p.startswith("Round 1 is left out of the record:") for p in record.problems)
    assert "3 text events have no eventTimestamp" in " ".join(record.problems)
    (tmp_path / "fox.jsonl").write_text(json.dumps(log), encoding="utf-8")
    result = CliRunner().invoke(
        cli,
        ["--db", str(tmp_path / "s.sqlite"), "import-coauthor", str(tmp_path / "fox.jsonl")]
        + ["--name", "fox"],
    )
    assert result.exit_code == 0, result.output
    assert "with 0 keystroke record rows." in result.output
    assert "Not in the keystroke record: fox.jsonl: Round 1 is left out of the record" in (
        result.output
    )


def test_a_fix_in_an_earlier_turn_keeps_the_later_rounds_keystrokes_in_place():
    def offer(text):
        return event("suggestion-open", "api", currentSuggestions=[{"index": 0, "original": text}])

    def typed(at, text):
        return event("text-insert", delta={"ops": [{"retain": at}, {"insert": text}]})

    log = [
        event("system-initialize", "api", currentDoc="P.\n"),
        typed(2, " A fox ran."),
        offer(" It sang."),
        event("suggestion-select", currentSuggestionIndex=0),
        event("text-insert", "api", {"ops": [{"retain": 13}, {"insert": " It sang."}]}),
        typed(22, " Then"),
        event("text-delete", delta={"ops": [{"retain": 3}, {"delete": 2}]}),  # "A " of round 1
        typed(25, " it rained."),
        offer(" Puddles."),
        event("suggestion-select", currentSuggestionIndex=0),
        event("text-insert", "api", {"ops": [{"retain": 36}, {"insert": " Puddles."}]}),
    ]
    session = read_session(log)
    assert [r.writer_line for r in session.rounds] == ["fox ran.", "Then it rained."]
    record = log_record(log, session)
    assert [(o["round"], o["position"], o["inserted"]) for o in record.rows] == [
        (2, 0, " Then"),
        (2, 5, " it rained."),
    ]
    assert record.problems[0].startswith("Event 6 (counted from 0) changes the document outside")
    assert record.problems[-1].startswith("Round 1 is left out of the record")
