"""Stories written by the systems themselves, from a list of prompts: how a rating study
compares generators (the AISS and FEI studies rate whole generated stories).

Every system continues every prompt sentence by sentence through the same backends and
:func:`~cyoa.generation.suggest.generate_suggestion` as the co-writing study, with the same
seeds for every system (a seed per prompt, story and sentence), so systems differ only in
their model and sampling. A sentence too short for a turn is drawn again with the next seed,
up to five draws, as the co-writing runner does. Each story records its model, version,
sampling and seeds, so it can be reproduced on the same machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict

from cyoa.generation import SuggestionError, System, generate_suggestion
from cyoa.generation.types import Backend
from cyoa.rating.stories import StoryRecord

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
