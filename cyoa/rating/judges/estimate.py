"""What a judge run will cost before it starts: tokens and time (pure).

Tokens are counted the way the rest of the world prices them, without loading a tokenizer:
about four characters of English text a token (OpenAI's rule of thumb, "What are tokens and
how to count them"; the packaged models' tokenizers give 3.5–4.5 on the TTCW stories), so
the counts are estimates. Output tokens are the run's ``max_new_tokens`` per prompt: an upper
bound (a model may stop earlier).

Time needs the model's speed on this machine, a :class:`Speed`: the seconds it takes to read a
prompt token and to write an answer token. It comes from the last run of the same model on
this experiment's database when there is one (``judge_runs.speed``), else from a short
warm-up: the first prompt with a few answer tokens (:data:`WARM_UP_TOKENS`), timed, then thrown
away. The time until the first token is the reading of the prompt; the time between the later
tokens the writing. Seconds = Σ over prompts (prompt tokens × read + max_new_tokens × write) /
concurrency.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import asdict, dataclass
from typing import Any

from cyoa.generation.types import Backend, Sampling

CHARS_PER_TOKEN = 4.0
WARM_UP_TOKENS = 8


@dataclass(frozen=True)
class Speed:
    """A model's speed here, in seconds per token: reading the prompt, writing the answer."""

    read_seconds: float
    write_seconds: float

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Estimate:
    """A run's size before it starts: ``prompts`` to ask, ``prompt_tokens`` to read and at
    most ``output_tokens`` to write (estimates, see the module), and ``seconds`` of wall
    time (None when no speed is known yet), with where the speed came from (``basis``)."""

    prompts: int
    prompt_tokens: int
    output_tokens: int
    seconds: float | None
    basis: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def sentence(self) -> str:
        """The estimate as the page and the command line say it."""
        size = (
            f"{self.prompts:,} prompts: about {self.prompt_tokens:,} tokens to read and at most "
            f"{self.output_tokens:,} to write"
        )
        if self.seconds is None:
            return f"{size}; the time is not known yet (no run or probe of this model here)."
        return f"{size}; about {format_duration(self.seconds)} ({self.basis})."


def tokens(text: str) -> int:
    """The estimated number of tokens of ``text`` (:data:`CHARS_PER_TOKEN` characters each)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def estimate(
    prompts: Sequence[str],
    max_new_tokens: int,
    speed: Speed | None,
    concurrency: int = 1,
    basis: str = "",
) -> Estimate:
    """The :class:`Estimate` of asking ``prompts`` with answers of at most ``max_new_tokens``
    tokens, ``concurrency`` at a time, at ``speed`` (None: time unknown)."""
    read = [tokens(prompt) for prompt in prompts]
    seconds = None
    if speed is not None:
        total = sum(n * speed.read_seconds + max_new_tokens * speed.write_seconds for n in read)
        seconds = total / max(1, concurrency)
    return Estimate(len(prompts), sum(read), len(prompts) * max_new_tokens, seconds, basis)


def measure_speed(backend: Backend, prompt: str, sampling: Sampling, seed: int) -> Speed:
    """A short warm-up: :data:`WARM_UP_TOKENS` answer tokens of ``prompt``, timed (see the
    module). The answer is thrown away."""
    short = Sampling(
        top_k=sampling.top_k,
        top_p=sampling.top_p,
        temperature=sampling.temperature,
        max_new_tokens=WARM_UP_TOKENS,
    )
    started = time.perf_counter()
    stamps = []
    with closing(backend.stream(prompt, short, seed)) as pieces:
        for _ in pieces:
            stamps.append(time.perf_counter())
    if not stamps:
        return Speed(read_seconds=(time.perf_counter() - started) / tokens(prompt), write_seconds=0)
    first = stamps[0] - started
    write = (stamps[-1] - stamps[0]) / (len(stamps) - 1) if len(stamps) > 1 else first
    return Speed(read_seconds=max(0.0, first - write) / tokens(prompt), write_seconds=write)


def format_duration(seconds: float) -> str:
    """``seconds`` as a person reads it: "40 s", "12 min", "3.5 h"."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
