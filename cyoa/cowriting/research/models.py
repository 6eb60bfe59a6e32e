"""Which co-writing experiments use a model, for the researcher's Models page
(:mod:`cyoa.research.models_views`, through the table of kinds): what it lists beside each
card, and what keeps a card from being unloaded."""

from __future__ import annotations

from flask import current_app

from cyoa import store
from cyoa.cowriting.parts import parts as cowriting_parts


def experiments_using(model: str) -> list[dict[str, str]]:
    """The co-writing experiments whose systems use ``model``: ``id`` and ``status``."""
    study = cowriting_parts().study
    db = store.connect(current_app.config["DATABASE"])
    try:
        statuses = {
            row["id"]: row["status"]
            for row in db.query("SELECT id, status FROM experiments WHERE kind = 'cowriting'")
        }
    finally:
        db.close()
    return [
        {"id": exp.id, "status": statuses.get(exp.id, "")}
        for exp in sorted(study.experiments.values(), key=lambda e: e.id)
        if any(system.model.name == model for system in exp.systems)
    ]


def experiments_needing(model: str) -> list[str]:
    """The ids of the co-writing experiments that need ``model`` loaded: open ones that use
    it, then paused ones waiting for it to open."""
    using = experiments_using(model)
    waiting = cowriting_parts().openings.waiting_for
    return [e["id"] for e in using if e["status"] == "open"] + [
        e["id"] for e in using if e["status"] != "open" and model in waiting(e["id"])
    ]
