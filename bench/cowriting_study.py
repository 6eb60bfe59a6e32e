"""A co-writing study for benchmarks, written into a database the way the study writes one:
the store's events (``create_session`` + :class:`~cyoa.cowriting.recording.SessionRecorder`,
the phases of ``flow.apply``) and each writer's keystroke record (``text_operations``, typed
key by key by :class:`bench.typist.Typist` and stored in the page's batches).

Each writer compares the two systems for ``rounds`` rounds: types a line of their own (one
of :data:`LINES`), sees both suggestions, hovers each, chooses one, takes back its last word
and types a clause of their own, adds it; then answers the survey. Seeded, so two runs build
the same study.
"""

from __future__ import annotations

import random
import secrets

from bench.typist import Typist
from cyoa import store
from cyoa.cowriting import flow
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.process.store import COLUMNS, store_operations
from cyoa.cowriting.recording import SessionRecorder
from cyoa.cowriting.spec import DEFAULT_LIKERT, DEFAULT_OPEN, LIKERT_LABELS
from cyoa.db.facade import Db

SYSTEMS = ("alpha", "beta")
LINES = (
    "The lighthouse keeper found a letter wedged under the door that morning.",
    "Nobody in the village remembered when the clock tower had last struck noon.",
    "She packed the map, the compass and the last of the bread before dawn.",
    "The river rose all night, and by morning the bridge was gone.",
    "He had promised his sister he would never open the blue box.",
)
CLAUSES = (
    " and the wind carried it far away",
    " while the others slept by the fire",
    " but nobody ever asked why",
    " as the bells rang out over the hills",
)


def _suggestion(system: str, writer: int, number: int, rng: random.Random) -> str:
    words = rng.sample(("silver", "quiet", "broken", "distant", "warm", "hidden"), 2)
    return f"The {words[0]} road {system} saw led writer {writer} to a {words[1]} gate {number}."


def add_writer(db: Db, exp_id: str, writer: int, rounds: int, rng: random.Random) -> str:
    """One writer's whole session with its keystroke record; its session id."""
    pair = SYSTEMS if writer % 2 else SYSTEMS[::-1]
    session_id = secrets.token_hex(8)
    cowriting_store.create_session(
        db,
        session_id=session_id,
        exp_id=exp_id,
        participant={"external_id": f"w{writer}", "id_source": "pid"},
        pair=pair,
        completion_code=secrets.token_hex(6),
        user_agent="bench",
        first_event={"experiment": exp_id, "systems": list(pair), "limits": {}},
    )
    session = cowriting_store.get_session(db, session_id)
    record = SessionRecorder(db, session, flow.State(limits=flow.Limits(rounds=rounds)))
    typist = Typist(rng, 1_780_000_000_000 + writer * 3_600_000)
    models = {name: f"m-{name}" for name in pair}
    with store.write_transaction(db):
        for number in range(1, rounds + 1):
            line = typist.type_text(number, "line", None, "", rng.choice(LINES), pause_ms=4000)
            order = list(pair) if number % 2 else list(pair[::-1])
            record(
                "line_submitted",
                {"round": number, "text": line, "slot_systems": order,
                 "slot_models": [models[s] for s in order], "seeds": [1, 2]},
            )  # fmt: skip
            texts = {}
            for slot, system in enumerate(order, start=1):
                texts[slot] = _suggestion(system, writer, number, rng)
                record(
                    "suggestion_completed",
                    {"round": number, "slot": slot, "attempt": 1, "system": system,
                     "model": models[system], "text": texts[slot], "raw_text": texts[slot]},
                )  # fmt: skip
                typist.view(number, slot, "visible")
            for slot in (1, 2):
                typist.view(number, slot, "focus")
                typist.view(number, slot, "blur")
            slot = 1 if rng.random() < (0.6 if order[0] == SYSTEMS[0] else 0.4) else 2
            system = order[slot - 1]
            extra = {"system": system, "model": models[system], "suggestion": texts[slot]}
            typist.view(number, slot, "focus")
            record("suggestion_chosen", {"round": number, "slot": slot, "switch": False}, extra)
            kept = texts[slot].rstrip(".")
            cut = kept.rsplit(" ", 1)[0]
            typist.change(number, "edit", slot, texts[slot], cut)
            final = typist.type_text(number, "edit", slot, cut, rng.choice(CLAUSES) + ".")
            record("turn_submitted", {"round": number, "slot": slot, "text": final}, extra)
        questions = {item: ("likert", text, LIKERT_LABELS) for item, text in DEFAULT_LIKERT}
        questions |= {item: ("open", text, LIKERT_LABELS) for item, text in DEFAULT_OPEN}
        answers = {item: rng.randint(1, 5) for item, _ in DEFAULT_LIKERT}
        answers |= {item: "The one that fit my story." for item, _ in DEFAULT_OPEN}
        record("survey_submitted", answers, {"questions": questions})
        for batch in typist.batches():
            rows = [dict(zip(COLUMNS, row, strict=True)) for row in batch]
            store_operations(db, session_id, rows)
    return session_id


def build(db: Db, exp_id: str, writers: int, rounds: int = 5, seed: int = 46) -> None:
    """A study of ``writers`` writers × ``rounds`` rounds, two systems, the record on."""
    rng = random.Random(seed)
    spec = {
        "id": exp_id,
        "title": "A synthetic co-writing study",
        "rounds": rounds,
        "record_keystrokes": True,
        "systems": [{"name": name, "model": f"m-{name}"} for name in SYSTEMS],
    }
    store.upsert_experiment(db, exp_id, spec["title"], spec)
    for writer in range(1, writers + 1):
        add_writer(db, exp_id, writer, rounds, rng)
