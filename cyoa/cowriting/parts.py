"""The co-writing wing's parts, built once per app (:func:`cyoa.cowriting.wing.init_app`) and
read through :func:`parts`: the study and its suggestion runner, the writers' rate limits,
and the researcher side's pending openings and background tagger."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Flask, current_app

from cyoa.cowriting.research.opening import Openings
from cyoa.cowriting.research.tagging import BackgroundTagger
from cyoa.cowriting.runner import SuggestionRunner
from cyoa.cowriting.service import Study
from cyoa.web.ratelimit import RateLimiter


@dataclass(frozen=True)
class CowritingParts:
    """``limiter``: any message of a writer's session (its tabs together); ``draft_limiter``:
    drafts among them. ``dropout_minutes``: silence after which an unfinished writer counts
    as dropped out on the researcher's pages. ``tagger`` is None when ``TAG_SENTENCES`` is
    off."""

    study: Study
    runner: SuggestionRunner
    limiter: RateLimiter
    draft_limiter: RateLimiter
    openings: Openings
    dropout_minutes: float
    tagger: BackgroundTagger | None


def parts(app: Flask | None = None) -> CowritingParts:
    """The co-writing parts of ``app`` (the current app when None)."""
    return (app or current_app).extensions[__name__]


def serves(app: Flask, exp_id: str) -> bool:
    """Whether ``app`` serves the co-writing experiment ``exp_id`` (not when its spec or its
    models are missing: it was logged at start)."""
    return exp_id in parts(app).study.experiments
