"""Write synthetic studies into a database the way the study does: through the store's
events (``create_session`` + ``record_event``), with the phases of ``flow.apply``.

A tiny helper for the analysis tests: each writer is a list of :class:`Turn`s.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from cyoa import store
from cyoa.cowriting import flow
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.analysis.tsv import WriterRow
from cyoa.cowriting.recording import SessionRecorder
from cyoa.cowriting.spec import DEFAULT_LIKERT, DEFAULT_OPEN, LIKERT_LABELS

FIRST, SECOND = "alpha", "beta"


@dataclass(frozen=True)
class Turn:
    """One round: the writer's line, each system's suggestion (``None``: it failed), which
    system sits in slot 1, which system the writer takes, and the final text (``None``: the
    round stops before the turn is added)."""

    line: str
    suggestions: dict[str, str | None]
    slot1: str
    chosen: str
    final: str | None


def make_experiment(
    db: Database, exp_id: str = "exp", rounds: int = 5, systems: tuple[str, ...] = (FIRST, SECOND)
) -> None:
    store.init_db(db)
    store.upsert_experiment(
        db,
        exp_id,
        "A synthetic study",
        {
            "id": exp_id,
            "title": "A synthetic study",
            "rounds": rounds,
            "systems": [{"name": name, "model": f"m-{name}"} for name in systems],
        },
    )


def add_writer(
    db: Database,
    writer: str,
    turns: list[Turn],
    survey: dict[str, Any] | None = None,
    exp_id: str = "exp",
    rounds: int = 5,
    pair: tuple[str, str] = (FIRST, SECOND),
    session_id: str | None = None,
) -> str:
    """Record ``writer``'s session comparing ``pair`` (``system_a``, ``system_b``); ``survey``
    (item id → answer) is submitted after the last round when given. Returns the session
    id (``session_id``, or a random one)."""
    session_id = session_id or secrets.token_hex(8)
    cowriting_store.create_session(
        db,
        session_id=session_id,
        exp_id=exp_id,
        participant={"external_id": writer, "id_source": "pid"},
        pair=pair,
        completion_code=secrets.token_hex(6),
        user_agent="test",
        first_event={"experiment": exp_id, "systems": list(pair), "limits": {}},
    )
    session = cowriting_store.get_session(db, session_id)
    record = SessionRecorder(db, session, flow.State(limits=flow.Limits(rounds=rounds)))
    models = {name: f"m-{name}" for name in pair}
    with store.write_transaction(db):
        for number, turn in enumerate(turns, start=1):
            order = [turn.slot1, pair[1] if turn.slot1 == pair[0] else pair[0]]
            record(
                "line_submitted",
                {
                    "round": number,
                    "text": turn.line,
                    "slot_systems": order,
                    "slot_models": [models[s] for s in order],
                    "seeds": [1, 2],
                },
            )
            for slot, system in enumerate(order, start=1):
                text = turn.suggestions[system]
                if text is None:
                    record(
                        "suggestion_failed",
                        {
                            "round": number,
                            "slot": slot,
                            "attempt": 1,
                            "system": system,
                            "model": models[system],
                            "error": "timeout",
                        },
                    )
                    continue
                record(
                    "suggestion_completed",
                    {
                        "round": number,
                        "slot": slot,
                        "attempt": 1,
                        "system": system,
                        "model": models[system],
                        "text": text,
                        "raw_text": text,
                    },
                )
            if turn.final is None:
                break
            slot = order.index(turn.chosen) + 1
            extra = {
                "system": turn.chosen,
                "model": models[turn.chosen],
                "suggestion": turn.suggestions[turn.chosen],
            }
            record("suggestion_chosen", {"round": number, "slot": slot, "switch": False}, extra)
            record("turn_submitted", {"round": number, "slot": slot, "text": turn.final}, extra)
        if survey is not None and record.state.phase == flow.Phase.SURVEY:
            questions = {item: ("likert", text, LIKERT_LABELS) for item, text in DEFAULT_LIKERT}
            questions |= {item: ("open", text, LIKERT_LABELS) for item, text in DEFAULT_OPEN}
            record("survey_submitted", survey, {"questions": questions})
    return session_id


def story(pair: tuple[str, str], chosen: str, writer: str) -> list[Turn]:
    """Five rounds comparing ``pair`` in which the writer always takes ``chosen``, unedited
    but for a final "!"."""
    return [
        Turn(
            line=f"{writer} line {n}.",
            suggestions={system: f"{system} suggests {n} to {writer}." for system in pair},
            slot1=pair[n % 2],
            chosen=chosen,
            final=f"{chosen} suggests {n} to {writer}!",
        )
        for n in range(1, 6)
    ]


def tsv_rows() -> list[WriterRow]:
    """Four writers in the original script's layout; the model is accepted 11 times of 20."""
    flags = ["TTFTF", "FFFFT", "TTTTT", "FTFTF"]
    result = []
    for index, pattern in enumerate(flags):
        model = tuple(f"The knight {index} rode to the castle in part {n}." for n in range(5))
        baseline = tuple(f"A dragon {index} slept by the sea, part {n}." for n in range(5))
        accepted = tuple("true" if c == "T" else "false" for c in pattern)
        edits = tuple(
            (m if a == "true" else b).replace("the", "a dark", n % 2)
            for n, (m, b, a) in enumerate(zip(model, baseline, accepted, strict=True))
        )
        result.append(
            WriterRow(
                writer=f"w{index}",
                model_lines=model,
                baseline_lines=baseline,
                user_lines=tuple(f"I wrote about the river {index} {n}." for n in range(5)),
                user_edits=edits,
                is_model_accepted=accepted,
                likert=(4, 5, None if index == 0 else 3, 2, index % 5 + 1),
            )
        )
    return result
