"""The parts every study kind shares, built once per app by :func:`init_app`: the model cards
and the pool that runs them, this process's worker id, the limits on logins and on starts
per address, and the dashboards' background analyses. Each wing keeps its own parts beside
it (:mod:`cyoa.cowriting.parts`, :mod:`cyoa.rating.parts`); code reads these through
:func:`shared`.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from flask import Flask, current_app

from cyoa.analyses.jobs import BackgroundAnalyses
from cyoa.generation import ModelPool, configure_torch_threads
from cyoa.generation.engine import GENERATION_MODES, CoreShare
from cyoa.generation.types import ModelCard
from cyoa.web.auth import LoginLimiter
from cyoa.web.ratelimit import RateLimiter
from cyoa.web.workers import new_worker_id


@dataclass
class SharedParts:
    """``cards`` grows when a card file is dropped into the models folder while the app runs
    (:func:`cyoa.web.research.read_new_cards`); the rest is fixed at start."""

    cards: dict[str, ModelCard]
    pool: ModelPool
    worker_id: str
    start_limiter: RateLimiter
    login_limiter: LoginLimiter
    analyses: BackgroundAnalyses


def shared(app: Flask | None = None) -> SharedParts:
    """The shared parts of ``app`` (the current app when None)."""
    return (app or current_app).extensions[__name__]


def init_app(app: Flask, cards: dict[str, ModelCard], used: Collection[str]) -> SharedParts:
    """Build the shared parts: the pool knows every card and loads ``used`` (the models the
    stored experiments need) in the background unless ``LOAD_MODELS_AT_START`` is off."""
    pool = ModelPool(
        cards,
        Path(app.config["MODEL_CACHE"]),
        generation_mode=_generation_mode(app),
        cores=_core_share(app, cards),
        prompt_store_tokens=_prompt_store_tokens(app),
        load_at_start=used,
    )
    if app.config["LOAD_MODELS_AT_START"]:
        pool.start_loading()
    starts = RateLimiter(
        float(app.config["STARTS_PER_MINUTE"]) / 60, float(app.config["START_BURST"])
    )
    worker = new_worker_id()
    analyses = BackgroundAnalyses(app.config["DATABASE"], worker)
    parts = SharedParts(dict(cards), pool, worker, starts, LoginLimiter(), analyses)
    app.extensions[__name__] = parts
    return parts


def _generation_mode(app: Flask) -> str:
    mode = app.config["GENERATION_MODE"]
    if mode not in GENERATION_MODES:
        raise ValueError(
            f"CYOA_GENERATION_MODE is {mode!r}; use one of: {', '.join(GENERATION_MODES)}."
        )
    return mode


def _core_share(app: Flask, cards: dict[str, ModelCard]) -> CoreShare | None:
    """Batched: each model generates on its own scheduler thread, and the models working at a
    step share the cores equally (one alone gets them all; two on 2 cores get one each, which
    keeps them from fighting). ``CYOA_TORCH_THREADS`` fixes the threads per model instead.
    Naive: one generation at a time may use every core."""
    if not any(card.backend == "transformers" for card in cards.values()):
        return None
    mode = _generation_mode(app)
    cores = os.cpu_count() or 2
    fixed = int(app.config["TORCH_THREADS"])
    configure_torch_threads(fixed or (cores if mode == "naive" else max(1, cores // 2)))
    return CoreShare(cores) if mode == "batched" and not fixed else None


def _prompt_store_tokens(app: Flask) -> int:
    tokens = int(app.config["PROMPT_STORE_TOKENS"])
    if tokens < 0:
        raise ValueError(f"CYOA_PROMPT_STORE_TOKENS is {tokens}; use 0 (keep no prompts) or more.")
    return tokens
