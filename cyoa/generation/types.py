"""The things that travel between the generation layer and the rest of the app."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol


@dataclass(frozen=True)
class Sampling:
    """How one suggestion is sampled.

    ``top_k`` of 0 disables top-k filtering; ``top_p`` of 1.0 disables nucleus sampling
    (Holtzman et al. 2020). ``max_new_tokens`` caps the generated tokens; the text is then
    trimmed to its first sentence (see :mod:`cyoa.generation.text`).
    """

    top_k: int = 40
    top_p: float = 1.0
    temperature: float = 1.0
    max_new_tokens: int = 60

    def __post_init__(self) -> None:
        if self.top_k < 0:
            raise ValueError("top_k must be 0 (off) or a positive number of tokens.")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError("top_p must be in (0, 1]; use 1.0 to switch nucleus sampling off.")
        if self.temperature <= 0.0:
            raise ValueError("temperature must be greater than 0.")
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be at least 1.")

    def with_overrides(self, overrides: dict[str, Any] | None) -> Sampling:
        """This sampling with some fields replaced (e.g. an experiment's override of a card)."""
        return replace(self, **(overrides or {}))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ModelCard:
    """One model, as described by a file in ``models/``.

    ``backend`` names the implementation: ``transformers`` (weights run in this process, see
    :mod:`cyoa.generation.local`), ``openai`` (a model served over HTTP by an
    OpenAI-compatible server, see :mod:`cyoa.generation.openai_backend`) or ``fake``
    (deterministic text for fast tests only).

    A ``transformers`` card names its weights in exactly one way: ``package`` and
    ``weights_file`` (a GGUF file shipped in a Python package), ``path`` (a local Hugging
    Face checkpoint folder) or ``gguf`` (a local GGUF file); ``path`` and ``gguf`` are
    absolute. ``version`` is recorded with every suggestion; ``version_from_content`` says
    the card gave none and it was computed from the weights' files
    (:mod:`cyoa.generation.checkpoints`). With ``chat`` the story is sent as the user's
    message after ``system_prompt``, in the tokenizer's chat template. ``card_file`` is the
    file the card was read from (empty for a card built in code), named in its errors.
    """

    name: str
    display_name: str
    backend: str
    sampling: Sampling
    package: str = ""
    weights_file: str = ""
    version: str = ""
    prompt_template: str = "{story}"
    license: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    gguf: str = ""
    version_from_content: bool = False
    chat: bool = False
    system_prompt: str = ""
    card_file: str = ""


@dataclass(frozen=True)
class System:
    """A system under evaluation: a model card plus the sampling it is run with."""

    name: str
    model: ModelCard
    sampling: Sampling


@dataclass(frozen=True)
class Suggestion:
    """A finished suggestion and everything needed to reproduce and audit it.

    ``text`` is what the writer sees (one trimmed sentence); ``raw_text`` is what the model
    produced before trimming. Times are in seconds; ``token_count`` counts generated tokens.
    ``sent_settings`` is every sampling setting sent to a model server with the request
    (the ``openai`` backend's; None for a model run in this process, which samples as
    ``sampling`` says).
    """

    text: str
    raw_text: str
    system: str
    model: str
    model_version: str
    weights_file: str
    sampling: dict[str, Any]
    seed: int
    generation_seconds: float
    first_token_seconds: float | None
    token_count: int
    sent_settings: dict[str, Any] | None = None


class Backend(Protocol):
    """A loaded model that continues a text."""

    card: ModelCard

    def stream(self, prompt: str, sampling: Sampling, seed: int) -> Iterator[str]:
        """Yield the continuation of ``prompt`` piece by piece (each piece a decoded token or
        a few), sampled with ``sampling`` and seeded with ``seed`` so the same call on the
        same machine gives the same text (for a remote backend, where its server honours the
        seed). The caller may stop iterating early (e.g. at a sentence end)."""
        ...
