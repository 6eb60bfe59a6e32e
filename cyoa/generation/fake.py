"""A fake backend FOR FAST TESTS ONLY: deterministic made-up sentences, no model, no weights.

It is chosen only by a model card that says ``backend = "fake"``; nothing falls back to it.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

from cyoa.generation.types import ModelCard, Sampling

_SUBJECTS = ("the keeper", "a gull", "the old woman", "the stranger", "her brother", "the fox")
_VERBS = ("watched", "carried", "remembered", "followed", "opened", "buried", "found")
_OBJECTS = ("the lantern", "a wet letter", "the broken oar", "an iron key", "the map", "a song")
_TAILS = (
    "before the tide came in",
    "without a word",
    "as the fog rolled over the rocks",
    "while the bell rang twice",
    "under the pale moon",
    "until morning",
)


FAULTS = ("", "raise", "flaky", "hang", "empty", "terse", "long")
TERSE_STREAMS = 3  # how many streams the "terse" fault keeps short


class FakeBackend:
    """Deterministic text for fast tests only (never a default).

    The sentence depends only on the prompt and the seed; it comes word by word, one word
    per piece (the stand-in for a token), and is 30–120 characters long. Options from the
    card's ``[options]`` table: ``delay_seconds`` (float, seconds to wait before each
    piece, default 0) and ``fail``, the fault to act out (default: none):

    - ``"raise"``: every stream raises :class:`RuntimeError`;
    - ``"flaky"``: the first stream of this backend raises, later ones work;
    - ``"hang"``: the stream blocks for an hour before its first piece;
    - ``"empty"``: the stream ends at once, with no text;
    - ``"terse"``: the first :data:`TERSE_STREAMS` streams write only "Why?", later ones work;
    - ``"long"``: 400 characters of words with no sentence end.

    ``answers`` (a list of words, default none): each sentence begins with one of them,
    chosen by the same seeded draw, as a judge's verdict does ("Yes, the keeper …").

    ``expand_words`` (a whole number, default 0: off): the fake acts as a writer asked to
    lengthen its story (:mod:`cyoa.rating.stories.length`): it gives back the text after the
    prompt's last ``Current story:`` (nothing in a first prompt) and ``expand_words`` more
    made-up words, word by word.
    """

    def __init__(self, card: ModelCard) -> None:
        self.card = card
        self.delay_seconds = float(card.options.get("delay_seconds", 0.0))
        if self.delay_seconds < 0:
            raise ValueError(f"Model card {card.name!r}: options.delay_seconds must be >= 0.")
        self.fail = card.options.get("fail", "")
        if self.fail not in FAULTS:
            raise ValueError(
                f"Model card {card.name!r}: options.fail must be one of "
                f"{', '.join(repr(f) for f in FAULTS if f)} or left out (found {self.fail!r})."
            )
        self.answers = [str(word) for word in card.options.get("answers", [])]
        self.expand_words = card.options.get("expand_words", 0)
        if type(self.expand_words) is not int or self.expand_words < 0:
            raise ValueError(
                f"Model card {card.name!r}: options.expand_words must be a whole number, 0 "
                "(off) or more."
            )
        self._streams = 0

    def load(self, log: Callable[[str], None] = print) -> None:
        """Nothing to load; present so the pool treats every backend alike."""

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield a made-up sentence word by word (each word with its leading space), at most
        ``sampling.max_new_tokens`` words."""
        self._streams += 1
        if self.fail == "raise" or (self.fail == "flaky" and self._streams == 1):
            raise RuntimeError(f"Fake model {self.card.name!r} failed on purpose (option fail).")
        if self.fail == "hang":
            time.sleep(3600)
        if self.fail == "empty":
            return
        if self.fail == "terse" and self._streams <= TERSE_STREAMS:
            yield " Why?"
            return
        if self.fail == "long":
            for _ in range(50):
                yield " and then"
            return
        # A string seed is hashed with SHA-512 by random.Random: stable across processes.
        rng = random.Random(f"{self.card.name}\n{seed}\n{prompt}")
        if self.expand_words > 0:
            yield from self._expanded(prompt, rng, sampling)
            return
        words = _sentence(rng)
        if self.answers:
            words[0:0] = [rng.choice(self.answers) + ","]
        words[0] = words[0].capitalize()
        for word in words[: sampling.max_new_tokens]:
            if self.delay_seconds:
                time.sleep(self.delay_seconds)
            yield " " + word

    def _expanded(self, prompt: str, rng: random.Random, sampling: Sampling) -> Iterator[str]:
        """The story after the prompt's last ``Current story:``, then ``expand_words`` words."""
        _, marker, story = prompt.rpartition("Current story:")
        more: list[str] = []
        while len(more) < self.expand_words:
            more += _sentence(rng)
        words = (story.split() if marker else []) + more[: self.expand_words]
        for word in words[: sampling.max_new_tokens]:
            yield " " + word


def _sentence(rng: random.Random) -> list[str]:
    """A made-up sentence's words."""
    return (
        f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_TAILS)}."
    ).split()
