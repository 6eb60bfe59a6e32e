"""Trying a model before it goes into an experiment: a few suggestions for one story, each
with the times a writer would wait, through the same :func:`generate_suggestion` as the study
(so a researcher sees what writers will see), and, for a model on a server, whether that
server samples as the card says."""

from __future__ import annotations

from dataclasses import dataclass

from cyoa.generation.openai_backend import ModelServerError, OpenAIBackend
from cyoa.generation.suggest import SuggestionError, generate_suggestion
from cyoa.generation.types import Backend, ModelCard, Suggestion, System

DEFAULT_STORY = "The lighthouse keeper found a letter on the rocks, written in her own hand."
STORY_MAX_CHARS = 4000


@dataclass(frozen=True)
class Trial:
    """One draw: the suggestion, or why there is none (``error``), and its ``seed``."""

    seed: int
    suggestion: Suggestion | None
    error: str = ""


def try_model(
    backend: Backend, card: ModelCard, story: str, n: int = 3, seed: int = 1
) -> list[Trial]:
    """``n`` suggestions continuing ``story`` (one turn; at most :data:`STORY_MAX_CHARS`
    characters) with the card's default sampling, seeds ``seed``, ``seed + 1``, … A draw
    too short for a turn, or one its model server failed, is reported with its error, not
    dropped."""
    story = story.strip() or DEFAULT_STORY
    if len(story) > STORY_MAX_CHARS:
        raise ValueError(f"The story is longer than {STORY_MAX_CHARS} characters; shorten it.")
    system = System(card.name, card, card.sampling)
    trials = []
    for draw in range(seed, seed + n):
        try:
            trials.append(Trial(draw, generate_suggestion(backend, system, [story], draw)))
        except (SuggestionError, ModelServerError) as exc:
            trials.append(Trial(draw, None, str(exc)))
    return trials


def sampling_problems(backend: Backend, card: ModelCard, story: str = DEFAULT_STORY) -> list[str]:
    """Sentences saying how the server of a served model (backend ``openai``) does not
    sample as ``card`` says: a setting it refuses, or one its reply shows it replaced
    (:meth:`~cyoa.generation.openai_backend.OpenAIBackend.check_sampling`). Empty for a
    model run in this process, which samples as its card says. Raises
    :class:`~cyoa.generation.openai_backend.ModelServerError` when the server fails the
    request otherwise, so a Try of a server that hangs waits for one deadline, not four."""
    if not isinstance(backend, OpenAIBackend):
        return []
    return backend.check_sampling(card.sampling, story.strip() or DEFAULT_STORY)
