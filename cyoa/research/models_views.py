"""The researcher's Models page (``/research/models``): every model card with its state
(loaded, loading, failed with the reason, not loaded), the time and memory its loading took,
which experiments use it, buttons to load or unload it while the app runs, and a "Try" box
that shows three suggestions for a typed story (:func:`cyoa.generation.trial.try_model`)
and, for a model on a server, each setting the server does not sample with as the card
says (:func:`cyoa.generation.trial.sampling_problems`).

Thin: the pool (:class:`cyoa.generation.pool.ModelPool`) loads and unloads; a model an open
experiment uses cannot be unloaded. The page reads the models folder again each time it is
shown, so a card file added while the app runs appears (not loaded) without a restart.
"""

from __future__ import annotations

from typing import Any

from flask import (
    flash,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)

from cyoa.generation.openai_backend import ModelServerError
from cyoa.generation.pool import ModelNotAvailable
from cyoa.generation.trial import DEFAULT_STORY, STORY_MAX_CHARS, sampling_problems, try_model
from cyoa.kinds import KINDS
from cyoa.web import auth
from cyoa.web import research as web
from cyoa.web.parts import shared as shared_parts

bp = web.blueprint("research_models", __name__, "/research/models")
TRIALS = 3


def experiments_using(model: str) -> list[dict[str, str]]:
    """The experiments of every kind that use ``model``: ``id`` and ``status``."""
    return [e for kind in KINDS.values() for e in kind.experiments_using(model)]


def model_rows() -> list[dict[str, Any]]:
    """One row per card, display-ready: the card, its pool status and its experiments."""
    status = shared_parts().pool.status()
    return [
        {
            "card": card,
            **status[name],
            "memory_mb": (
                None if status[name]["memory_bytes"] is None
                else round(status[name]["memory_bytes"] / 1e6)
            ),
            "experiments": experiments_using(name),
        }
        for name, card in sorted(shared_parts().cards.items())
    ]  # fmt: skip


def _page(trial: dict[str, Any] | None = None, status: int = 200):
    problems = web.read_new_cards()
    rows = model_rows()
    busy = any(row["state"] in ("pending", "loading") for row in rows)
    page = render_template(
        "research/models.html",
        rows=rows,
        busy=busy,
        trial=trial,
        problems=problems,
        default_story=DEFAULT_STORY,
        story_max_chars=STORY_MAX_CHARS,
    )
    return page, status


def _known(name: str) -> bool:
    if name in shared_parts().cards:
        return True
    flash(f"There is no model card named {name!r}.", "error")
    return False


@bp.get("/")
@auth.login_required
def models():
    return _page()


@bp.get("/status.json")
@auth.login_required
def models_status():
    return jsonify(shared_parts().pool.status())


@bp.post("/<name>/load")
@auth.login_required
def load(name: str):
    if _known(name):
        shared_parts().pool.load([name])
        flash(f"Loading {name} in the background; this page shows when it is ready.")
    return redirect(url_for("research_models.models"))


@bp.post("/<name>/unload")
@auth.login_required
def unload(name: str):
    if not _known(name):
        return redirect(url_for("research_models.models"))
    needed = [exp_id for kind in KINDS.values() for exp_id in kind.experiments_needing(name)]
    if needed:
        flash(
            f"{name} is used by the experiment(s) {', '.join(needed)}, open or opening: "
            "pause or close them first.",
            "error",
        )
        return redirect(url_for("research_models.models"))
    try:
        shared_parts().pool.unload(name)
    except ModelNotAvailable as exc:
        flash(str(exc), "error")
    else:
        flash(
            f"{name} is unloaded: its memory is given back, and a generation it was still "
            "doing (a Try, a rating study's stories) has failed with a message."
        )
    return redirect(url_for("research_models.models"))


@bp.post("/<name>/try")
@auth.login_required
def try_(name: str):
    if not _known(name):
        return redirect(url_for("research_models.models"))
    story = (request.form.get("story") or "").strip()
    trial: dict[str, Any] = {"model": name, "story": story or DEFAULT_STORY}
    state = shared_parts().pool.status()[name]["state"]
    if state != "ready":
        trial["error"] = f"{name} is {state.replace('_', ' ')}: load it first, then try it."
        return _page(trial, 409)
    try:
        backend = shared_parts().pool.get(name, timeout=0)
        card = shared_parts().cards[name]
        trial["problems"] = sampling_problems(backend, card, story)
        trial["draws"] = try_model(backend, card, story, n=TRIALS)
    except (ModelNotAvailable, ModelServerError, ValueError) as exc:
        trial["error"] = str(exc)
        return _page(trial, 400)
    return _page(trial)
