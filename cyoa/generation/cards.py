"""Model cards: one TOML file per model in ``models/``, read into :class:`ModelCard`.

A card is checked for its form here (fields, types, which combinations make sense); whether
its weights are on this machine, fit in memory and run on its device is checked when the
model is loaded (:mod:`cyoa.generation.checkpoints`, :mod:`cyoa.generation.local`), so that
one missing model does not stop the app from starting.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from cyoa.generation.checkpoints import content_version
from cyoa.generation.local import DEFAULT_SYSTEM_PROMPT, options_problem
from cyoa.generation.openai_backend import OPTIONS as OPENAI_OPTIONS
from cyoa.generation.types import ModelCard, Sampling

BACKENDS = ("transformers", "fake", "openai")
_TEXT_FIELDS = (
    "display_name",
    "package",
    "weights_file",
    "version",
    "prompt_template",
    "license",
    "path",
    "gguf",
    "system_prompt",
)
# The ways a transformers card names its weights; exactly one is given.
WEIGHT_SOURCES = ("package", "path", "gguf")
_TOP_LEVEL = {"name", "backend", "sampling", "options", "chat", *_TEXT_FIELDS}
_SAMPLING_TYPES: dict[str, tuple[type, ...]] = {
    "top_k": (int,),
    "top_p": (int, float),
    "temperature": (int, float),
    "max_new_tokens": (int,),
}


class ModelCardError(ValueError):
    """A model card file that cannot be used; the message names the file and the field."""


def load_model_card(path: Path | str) -> ModelCard:
    """The model card in the TOML file at ``path``.

    ``name`` defaults to the file name without ``.toml``. A relative ``path`` or ``gguf`` is
    read from the card file's folder. A ``path`` or ``gguf`` card without ``version`` gets
    the weights' content version (:func:`~cyoa.generation.checkpoints.content_version`;
    empty while the weights are missing, which loading then reports). Raises
    :class:`ModelCardError` naming the file and the field when the card is incomplete or
    malformed.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ModelCardError(f"{path}: cannot read the model card ({exc.strerror}).") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ModelCardError(f"{path}: not valid TOML ({exc}).") from exc
    return _card_from_dict(path, data)


def load_model_cards(folder: Path | str) -> dict[str, ModelCard]:
    """Every ``*.toml`` model card in ``folder``, by card name (files in name order)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ModelCardError(f"{folder}: the model card folder does not exist.")
    cards: dict[str, ModelCard] = {}
    for path in sorted(folder.glob("*.toml")):
        card = load_model_card(path)
        if card.name in cards:
            raise ModelCardError(
                f"{path}: name {card.name!r} is already used by another card in {folder}; "
                "give each model a unique name."
            )
        cards[card.name] = card
    return cards


def new_model_cards(
    folder: Path | str, known: dict[str, ModelCard]
) -> tuple[dict[str, ModelCard], list[str]]:
    """The cards in ``folder`` that ``known`` lacks (card files added while the app runs),
    each read on its own, and a sentence for each card file that cannot be used: it cannot
    be read, its name is taken by another file, or it changed since ``known`` was read (the
    running app keeps the card it read: restart it to use the change)."""
    new: dict[str, ModelCard] = {}
    problems: list[str] = []
    seen: dict[str, Path] = {}
    for path in sorted(Path(folder).glob("*.toml")):
        try:
            card = load_model_card(path)
        except ModelCardError as exc:
            problems.append(str(exc))
            continue
        if card.name in seen:
            problems.append(
                f"{path}: name {card.name!r} is already used by {seen[card.name].name}; give "
                "each model a unique name."
            )
            continue
        seen[card.name] = path
        if card.name not in known:
            new[card.name] = card
        elif card != known[card.name]:
            problems.append(
                f"{path} changed since the app read it; the app keeps the card it read "
                "until it restarts."
            )
    return new, problems


def _card_from_dict(path: Path, data: dict[str, Any]) -> ModelCard:
    def fail(field: str, problem: str) -> ModelCardError:
        return ModelCardError(f"{path}: field {field!r} {problem}")

    unknown = sorted(set(data) - _TOP_LEVEL)
    if unknown:
        known = ", ".join(sorted(_TOP_LEVEL))
        raise fail(unknown[0], f"is not a model card field (known: {known}).")

    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise fail("name", "must be a non-empty string.")
    backend = data.get("backend")
    if backend not in BACKENDS:
        raise fail("backend", f"must be one of {', '.join(BACKENDS)} (found {backend!r}).")
    text = _text_fields(path, data, backend, fail)
    chat = _chat_setting(data, backend, text, fail)
    template = text.get("prompt_template", "{story}")
    if "{story}" not in template:
        raise fail("prompt_template", "must contain {story}, where the story so far goes.")

    if backend == "openai" and not text.get("version"):
        raise fail(
            "version",
            "is required for the openai backend: say which weights the server runs (e.g. "
            "the model's name and revision); it is recorded with every suggestion.",
        )
    options = _backend_options(data, backend, fail)
    card = ModelCard(
        name=name,
        display_name=text.get("display_name", name),
        backend=backend,
        sampling=_sampling_from_dict(path, data.get("sampling"), fail),
        package=text.get("package", ""),
        # A gguf card's file name is recorded with its suggestions, as a packaged one's is.
        weights_file=Path(text["gguf"]).name if "gguf" in text else text.get("weights_file", ""),
        version=text.get("version", ""),
        prompt_template=template,
        license=text.get("license", ""),
        options=dict(options),
        path=text.get("path", ""),
        gguf=text.get("gguf", ""),
        chat=chat,
        system_prompt=text.get("system_prompt", DEFAULT_SYSTEM_PROMPT if chat else ""),
        card_file=str(path),
    )
    if (card.path or card.gguf) and not card.version:
        card = replace(card, version=content_version(card), version_from_content=True)
    return card


def _text_fields(
    path: Path, data: dict[str, Any], backend: str, fail: Callable[[str, str], ModelCardError]
) -> dict[str, str]:
    """The card's text fields, checked; ``path`` and ``gguf`` (transformers only) resolved
    against the card's folder."""
    text: dict[str, str] = {}
    for key in _TEXT_FIELDS:
        if key in data:
            if not isinstance(data[key], str):
                raise fail(key, "must be a string.")
            text[key] = data[key]
    if backend == "transformers":
        _check_weight_source(text, fail)
    else:
        for key in ("path", "gguf"):
            if key in text:
                raise fail(key, "is for the transformers backend only (weights run here).")
    for key in ("path", "gguf"):
        if key in text:
            if not text[key].strip():
                raise fail(key, "must not be empty.")
            text[key] = str((path.parent / Path(text[key]).expanduser()).resolve())
    return text


def _chat_setting(
    data: dict[str, Any],
    backend: str,
    text: dict[str, str],
    fail: Callable[[str, str], ModelCardError],
) -> bool:
    """Whether the card's model is prompted as a chat (transformers only); a system prompt
    needs it."""
    chat = data.get("chat", False)
    if not isinstance(chat, bool):
        raise fail("chat", f"must be true or false (found {chat!r}).")
    if chat and backend != "transformers":
        raise fail(
            "chat",
            "is for the transformers backend only (the openai backend sends the raw text).",
        )
    if "system_prompt" in text and not chat:
        hint = "add chat = true or remove it" if backend == "transformers" else "remove it"
        raise fail("system_prompt", f"is used only with chat = true: {hint}.")
    return chat


def _backend_options(
    data: dict[str, Any], backend: str, fail: Callable[[str, str], ModelCardError]
) -> dict[str, Any]:
    """The card's ``[options]`` table, checked for its backend."""
    options = data.get("options", {})
    if not isinstance(options, dict):
        raise fail("options", "must be a table ([options]).")
    if backend == "openai":
        _check_openai_options(options, fail)
    if backend == "transformers":
        problem = options_problem(options)
        if problem is not None:
            raise fail(*problem)
    return options


def _check_weight_source(text: dict[str, str], fail: Callable[[str, str], ModelCardError]) -> None:
    """A transformers card names its weights in exactly one way (:data:`WEIGHT_SOURCES`)."""
    given = [key for key in WEIGHT_SOURCES if key in text]
    if not given:
        raise fail(
            "package",
            "is required for the transformers backend, or instead 'path' (a local checkpoint "
            "folder) or 'gguf' (a local GGUF file): name the weights in one of these ways.",
        )
    if len(given) > 1:
        raise fail(
            given[1],
            f"cannot be given with {given[0]!r}: name the weights in exactly one way, package "
            "(with weights_file and version), path (a checkpoint folder) or gguf (a GGUF file).",
        )
    if given == ["package"]:
        for key in ("package", "weights_file", "version"):
            if not text.get(key):
                raise fail(key, "is required for the transformers backend.")
    elif "weights_file" in text:
        raise fail(
            "weights_file",
            f"is for packaged weights only: {given[0]} names the weights itself; leave "
            "weights_file out.",
        )


def _check_openai_options(
    options: dict[str, Any], fail: Callable[[str, str], ModelCardError]
) -> None:
    if "api_key" in options:
        raise fail(
            "options.api_key",
            "must not be in a model card: put the key in an environment variable and name "
            "that variable in options.api_key_env.",
        )
    for key, value in options.items():
        if key not in OPENAI_OPTIONS:
            known = ", ".join(OPENAI_OPTIONS)
            raise fail(f"options.{key}", f"is not an option of the openai backend ({known}).")
        default = OPENAI_OPTIONS[key]
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise fail(f"options.{key}", f"must be true or false (found {value!r}).")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise fail(f"options.{key}", f"must be a number of seconds > 0 (found {value!r}).")
        elif not isinstance(value, str):
            raise fail(f"options.{key}", f"must be a string (found {value!r}).")
    for key in ("base_url", "model"):
        if not options.get(key):
            raise fail(f"options.{key}", "is required for the openai backend.")
    if not re.match(r"https?://[^/\s]+", options["base_url"]):
        raise fail(
            "options.base_url",
            f"must be an http:// or https:// address, e.g. http://127.0.0.1:8000 "
            f"(found {options['base_url']!r}).",
        )
    env = options.get("api_key_env", "")
    if env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env):
        raise fail(
            "options.api_key_env",
            f"must be the name of an environment variable, e.g. VLLM_API_KEY (found {env!r}); "
            "never the key itself.",
        )


def _sampling_from_dict(
    path: Path, table: Any, fail: Callable[[str, str], ModelCardError]
) -> Sampling:
    if table is None:
        raise fail("sampling", "is missing: add a [sampling] table with the default settings.")
    if not isinstance(table, dict):
        raise fail("sampling", "must be a table ([sampling]).")
    known = {f.name for f in fields(Sampling)}
    for key, value in table.items():
        if key not in known:
            names = ", ".join(sorted(known))
            raise fail(f"sampling.{key}", f"is not a sampling setting (known: {names}).")
        # bool is an int in Python, but `top_k = true` is a typo, not a setting.
        if isinstance(value, bool) or not isinstance(value, _SAMPLING_TYPES[key]):
            kind = "a number" if float in _SAMPLING_TYPES[key] else "a whole number"
            raise fail(f"sampling.{key}", f"must be {kind} (found {value!r}).")
    try:
        return Sampling(**table)
    except ValueError as exc:
        raise ModelCardError(f"{path}: [sampling] {exc}") from exc
