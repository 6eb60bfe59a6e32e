"""One suggestion: prompt a backend with the story so far, stream its text, stop at the end of
the first sentence, and record everything needed to reproduce it."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing

from cyoa.generation.openai_backend import sent_settings
from cyoa.generation.stopping import GenerationStopped, stop_when
from cyoa.generation.text import build_prompt, display_text, sentence_complete, trim_suggestion
from cyoa.generation.types import Backend, Suggestion, System


class SuggestionError(RuntimeError):
    """The model produced no usable suggestion (e.g. too short); trying again with another
    seed usually works."""


class SuggestionCancelled(RuntimeError):
    """The caller's ``should_stop`` asked generation to stop; nothing was suggested."""


def generate_suggestion(
    backend: Backend,
    system: System,
    story_turns: list[str],
    seed: int,
    *,
    min_chars: int = 20,
    max_chars: int = 260,
    on_text: Callable[[str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> Suggestion:
    """Continue the story with one sentence from ``backend``, sampled as ``system`` says.

    ``on_text`` is called with the text as the writer should see it so far, each time it
    changes (cleaned, at most ``max_chars`` characters; the last call gives the final text).
    ``should_stop`` is asked after every piece, and while the backend waits for one where
    it can (:mod:`cyoa.generation.stopping`); when it returns true generation stops and
    :class:`SuggestionCancelled` is raised. Generation stops as soon as the first sentence
    of at least ``min_chars`` characters is complete.

    Times in the result are seconds of wall-clock time from the call: ``first_token_seconds``
    until the first piece with text, ``generation_seconds`` until the suggestion was ready.
    ``token_count`` is the number of pieces the backend produced, which for the transformers
    backend is exactly the number of generated tokens (the fake backend's pieces are words).

    Raises :class:`SuggestionError` when the trimmed text is shorter than ``min_chars``.
    """
    if backend.card.name != system.model.name:
        raise ValueError(
            f"System {system.name!r} runs model {system.model.name!r}, "
            f"but the backend given is {backend.card.name!r}."
        )
    started = time.perf_counter()
    prompt = build_prompt(story_turns, system.model.prompt_template)
    raw = ""
    shown = ""
    first_token_seconds: float | None = None
    token_count = 0
    stop = should_stop or (lambda: False)
    try:
        with stop_when(stop), closing(backend.stream(prompt, system.sampling, seed)) as pieces:
            for piece in pieces:
                token_count += 1
                raw += piece
                if piece and first_token_seconds is None:
                    first_token_seconds = time.perf_counter() - started
                if stop():
                    raise GenerationStopped
                if sentence_complete(raw, min_chars, max_chars):
                    break
                partial = display_text(raw, max_chars)
                if on_text is not None and partial != shown:
                    shown = partial
                    on_text(partial)
    except GenerationStopped:
        raise SuggestionCancelled(f"Generation for {system.name!r} was stopped.") from None
    text = trim_suggestion(raw, min_chars, max_chars)
    if len(text) < min_chars:
        raise SuggestionError(
            f"{system.name!r} wrote only {len(text)} characters ({text!r}), fewer than the "
            f"{min_chars} a turn needs; try again with another seed."
        )
    if on_text is not None and text != shown:
        on_text(text)
    return Suggestion(
        text=text,
        raw_text=raw,
        system=system.name,
        model=system.model.name,
        model_version=system.model.version,
        weights_file=system.model.weights_file,
        sampling=system.sampling.to_dict(),
        seed=seed,
        generation_seconds=time.perf_counter() - started,
        first_token_seconds=first_token_seconds,
        token_count=token_count,
        sent_settings=sent_settings(backend, system.sampling, seed),
    )
