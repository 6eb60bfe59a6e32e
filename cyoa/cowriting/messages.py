"""The writing page's Socket.IO messages, read at the edge: their shape, before any rule.

The page sends ``join`` with one argument, ``{"experiment": id}``, and ``action`` with one
argument, ``{"type": t, "payload": {...}, "action_id": id}``. Anything else (no argument,
null, a second argument, a type that is a list, …) is refused with a sentence the page shows,
never with an error, so every message gets an answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cyoa.cowriting.flow import RuleError
from cyoa.cowriting.service import WRITER_ACTIONS
from cyoa.web.language import sentence

MALFORMED = sentence("The request was malformed. Please reload the page.")
NOT_POSSIBLE = sentence("That action is not possible. Please reload the page.")


@dataclass(frozen=True)
class Action:
    type: str
    payload: dict[str, Any]
    action_id: Any  # checked by Study.act, which records it


def join_experiment(args: tuple[Any, ...]) -> str:
    """The experiment a ``join`` names; RuleError when the message is not a join."""
    data = _only_argument(args)
    experiment = data.get("experiment")
    if not isinstance(experiment, str):
        raise RuleError(MALFORMED)
    return experiment


def action(args: tuple[Any, ...]) -> Action:
    """The writer's action an ``action`` message carries; RuleError when it carries none
    (an action the browser may not send, such as a suggestion's result, included)."""
    data = _only_argument(args)
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in WRITER_ACTIONS:
        raise RuleError(NOT_POSSIBLE)
    payload = data.get("payload", {})
    if not isinstance(payload, dict):
        raise RuleError(MALFORMED)
    return Action(kind, payload, data.get("action_id"))


def _only_argument(args: tuple[Any, ...]) -> dict[str, Any]:
    if len(args) != 1 or not isinstance(args[0], dict):
        raise RuleError(MALFORMED)
    return args[0]
