"""Stories written by the systems themselves, from a list of prompts: how a rating study
compares generators (the AISS and FEI studies rate whole generated stories).

Every system continues every prompt sentence by sentence through the same backends and
:func:`~cyoa.generation.suggest.generate_suggestion` as the co-writing study, with the same
seeds for every system (a seed per prompt, story and sentence), so systems differ only in
their model and sampling. A sentence too short for a turn is drawn again with the next seed,
up to five draws, as the co-writing runner does. Each story records its model, version,
sampling and seeds, so it can be reproduced on the same machine.

With a target length per prompt (:func:`generate_stories_to_length`), each prompt is a plot
instead: the model writes a whole story and is asked to lengthen it, as the TTCW study did
(:mod:`cyoa.rating.stories.length`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import asdict, replace

from cyoa.generation import SuggestionError, System, generate_suggestion
from cyoa.generation.types import Backend, Sampling
from cyoa.rating.stories import StoryRecord
from cyoa.rating.stories.length import (
    LengthControl,
    LengthResult,
    PlotPrompt,
    round_tokens,
    write_to_length,
)

DRAWS = 5


class GenerationFailed(RuntimeError):
    """A system could not write a sentence in :data:`DRAWS` draws."""


class GenerationCancelled(RuntimeError):
    """``stop`` said to stop before the next story was begun."""


def sentence_seed(seed: int, prompt: int, story: int, sentence: int, draw: int) -> int:
    """The seed of one draw: a hash of the study's ``seed`` and the position, the same for
    every system (31 bits, as the study's seeds)."""
    key = f"{seed}:{prompt}:{story}:{sentence}:{draw}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:4], "big") >> 1


def generate_stories(
    systems: Sequence[System],
    backends: Mapping[str, Backend],
    prompts: Sequence[str],
    *,
    stories_per_prompt: int = 1,
    sentences: int = 5,
    seed: int = 0,
    min_chars: int = 20,
    max_chars: int = 260,
    log: Callable[[str], None] = print,
    stop: Callable[[], bool] = lambda: False,
) -> list[StoryRecord]:
    """``stories_per_prompt`` stories per prompt and system, each the prompt followed by
    ``sentences`` generated sentences; ``backends`` maps a model card's name to its backend.
    ``log`` is told of each story as it is done. Story ids: ``"<system>-p<prompt>-<n>"``
    (1-based); source: the system's name; ``origin``: the prompt, model, version, sampling
    and every sentence's seed. Raises :class:`GenerationFailed` naming the system and prompt
    when no draw gives a sentence, and :class:`GenerationCancelled` when ``stop()`` is true
    before a story (asked before each, so a story begun is finished first)."""
    total = len(systems) * len(prompts) * stories_per_prompt
    stories: list[StoryRecord] = []
    for p, prompt in enumerate(prompts, start=1):
        for n in range(1, stories_per_prompt + 1):
            for system in systems:
                if stop():
                    raise GenerationCancelled(f"Stopped after {len(stories)}/{total} stories.")
                turns, seeds = [prompt.strip()], []
                for s in range(1, sentences + 1):
                    text, used = _sentence(
                        backends[system.model.name], system, turns, (seed, p, n, s),
                        min_chars, max_chars,
                    )  # fmt: skip
                    turns.append(text)
                    seeds.append(used)
                stories.append(
                    StoryRecord(
                        story_id=f"{system.name}-p{p}-{n}",
                        source=system.name,
                        title="",
                        text=" ".join(turns),
                        origin={
                            "generated": True,
                            "prompt_index": p,
                            "prompt": prompt,
                            "model": system.model.name,
                            "model_version": system.model.version,
                            "sampling": asdict(system.sampling),
                            "seeds": seeds,
                        },
                    )
                )
                log(f"Generated {len(stories)}/{total} stories ({system.name}, prompt {p}).")
    return stories


def _sentence(
    backend: Backend,
    system: System,
    turns: list[str],
    where: tuple[int, int, int, int],
    min_chars: int,
    max_chars: int,
) -> tuple[str, int]:
    for draw in range(DRAWS):
        used = sentence_seed(*where, draw)
        try:
            suggestion = generate_suggestion(
                backend, system, turns, used, min_chars=min_chars, max_chars=max_chars
            )
        except SuggestionError:
            continue
        return suggestion.text, used
    raise GenerationFailed(
        f"{system.name} wrote no sentence of {min_chars} characters or more in {DRAWS} draws "
        f"(prompt {where[1]}); try another seed or prompt."
    )


def generate_stories_to_length(
    systems: Sequence[System],
    backends: Mapping[str, Backend],
    plots: Sequence[PlotPrompt],
    control: LengthControl,
    *,
    stories_per_prompt: int = 1,
    seed: int = 0,
    log: Callable[[str], None] = print,
    stop: Callable[[], bool] = lambda: False,
) -> list[StoryRecord]:
    """``stories_per_prompt`` stories per plot and system, each written to the plot's target
    length by :func:`~cyoa.rating.stories.length.write_to_length`; ids, sources, ``stop`` and
    ``log`` as :func:`generate_stories`. A round may write up to
    :func:`~cyoa.rating.stories.length.round_tokens` tokens (or the card's ``max_new_tokens``
    if more); round ``r`` is seeded ``sentence_seed(seed, prompt, story, r, 0)``, the same for
    every system. ``origin`` adds ``length_control``: the target, where it came from, the
    tolerance and rounds allowed, the final and per-round word counts, the rounds taken and
    whether the story ended within the tolerance (a story that did not is kept)."""
    total = len(systems) * len(plots) * stories_per_prompt
    stories: list[StoryRecord] = []
    for p, plot in enumerate(plots, start=1):
        for n in range(1, stories_per_prompt + 1):
            for system in systems:
                if stop():
                    raise GenerationCancelled(f"Stopped after {len(stories)}/{total} stories.")
                budget = max(
                    system.sampling.max_new_tokens, round_tokens(plot.target_words, control)
                )
                sampling = replace(system.sampling, max_new_tokens=budget)
                result = write_to_length(
                    _writer(backends[system.model.name], sampling, (seed, p, n)),
                    plot.prompt,
                    plot.target_words,
                    control,
                )
                seeds = [sentence_seed(seed, p, n, r, 0) for r in range(1, result.rounds + 1)]
                if not result.story:
                    raise GenerationFailed(
                        f"{system.name} wrote nothing for prompt {p} in {result.rounds} "
                        "round(s); try another seed or model."
                    )
                stories.append(
                    _story_to_length(system, sampling, plot, p, n, result, control, seeds)
                )
                log(
                    f"Generated {len(stories)}/{total} stories ({system.name}, prompt {p}): "
                    + _length_note(result, plot, control)
                )
    return stories


def _writer(
    backend: Backend, sampling: Sampling, where: tuple[int, int, int]
) -> Callable[[str, int], str]:
    """One round of :func:`write_to_length`: the model's whole response to the prompt."""

    def write(prompt: str, round_: int) -> str:
        with closing(backend.stream(prompt, sampling, sentence_seed(*where, round_, 0))) as pieces:
            return "".join(pieces)

    return write


def _story_to_length(
    system: System,
    sampling: Sampling,
    plot: PlotPrompt,
    p: int,
    n: int,
    result: LengthResult,
    control: LengthControl,
    seeds: list[int],
) -> StoryRecord:
    return StoryRecord(
        story_id=f"{system.name}-p{p}-{n}",
        source=system.name,
        title="",
        text=result.story,
        origin={
            "generated": True,
            "prompt_index": p,
            "prompt": plot.prompt,
            "model": system.model.name,
            "model_version": system.model.version,
            "sampling": asdict(sampling),
            "seeds": seeds,
            "length_control": {
                "target_words": plot.target_words,
                "target_from": plot.target_from,
                "tolerance": control.tolerance,
                "max_rounds": control.max_rounds,
                "words": result.words,
                "rounds": result.rounds,
                "round_words": result.round_words,
                "within_tolerance": result.within_tolerance,
                "stopped": result.stopped,
            },
        },
    )


def _length_note(result: LengthResult, plot: PlotPrompt, control: LengthControl) -> str:
    rounds = f"{result.rounds} round{'s' if result.rounds != 1 else ''}"
    told = f"{result.words} words in {rounds} (target {plot.target_words})"
    if result.within_tolerance:
        return told + "."
    why = "too long" if result.stopped == "too_long" else "rounds used up"
    return f"{told}: NOT within {control.tolerance} words ({why}); kept and flagged."
