"""Recording an event: the rules' next state, and the event stored with the phase it leads to.

The live study (:mod:`cyoa.cowriting.service`), the import of the original script's TSV
(:mod:`cyoa.cowriting.analysis.tsv`) and the tests' study builder all record events this one way, so
the convenient tables of an imported or built session are what a live one would have.
"""

from __future__ import annotations

from typing import Any

from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.flow import SLOTS, Event, Phase, State, apply
from cyoa.db.facade import Db

SUGGESTION_OUTCOMES = ("suggestion_completed", "suggestion_failed")


def record(
    db: Db,
    session: dict[str, Any],
    seq: int,
    state: State,
    event: Event,
    *,
    client_action_id: str | None = None,
    extra: dict[str, Any] | None = None,
) -> State:
    """Apply ``event`` (already checked) to ``state``, store it as event number ``seq`` of
    ``session`` with the phase and round it leads to, and return the new state. Call inside
    :func:`cyoa.store.write_transaction`.

    The event that ends a round's generation is marked ``one_suggestion_only`` (1 when the
    writer must choose from a single suggestion because the other failed, else 0)."""
    new_state = apply(state, event)
    if event.type in SUGGESTION_OUTCOMES:
        event.payload["one_suggestion_only"] = int(
            new_state.phase == Phase.CHOOSING and len(new_state.current.suggestions) < len(SLOTS)
        )
    cowriting_store.record_event(
        db,
        session,
        seq,
        event.type,
        event.payload,
        phase=new_state.phase.value,
        current_round=new_state.current.number,
        client_action_id=client_action_id,
        extra=extra,
    )
    return new_state


class SessionRecorder:
    """Records a whole session's events in order, from its first (``seq`` 1, written by
    :func:`cyoa.cowriting.store.create_session`) on: for imports and built test data."""

    def __init__(self, db: Db, session: dict[str, Any], state: State) -> None:
        self.db = db
        self.session = session
        self.state = state
        self.seq = 1

    def __call__(
        self, event_type: str, payload: dict[str, Any], extra: dict[str, Any] | None = None
    ) -> None:
        self.seq += 1
        self.state = record(
            self.db, self.session, self.seq, self.state, Event(event_type, payload), extra=extra
        )
