"""What a rater sees of a rating study's ids: nothing that names a story's source, model or
corruption (a generated story's id is ``<model>-p<prompt>-<n>``, a corrupted copy's ends in
``-shuffled``). Each story has an opaque ``alias`` (stored with it, a random token), and an
FEI question about one story is shown as ``<alias>-<n>`` (its n-th question); the
instrument's own items and the attention checks, the same for every story, keep their ids.
The researcher's ids stay everywhere researchers look (the database, exports, analysis):
the rater's page shows the aliases and the answer endpoint maps them back (pure).
"""

from __future__ import annotations

from typing import Any

from cyoa.rating.service import RatingExperiment


def rater_item_ids(exp: RatingExperiment, story_id: str) -> dict[str, str]:
    """The id the rater sees for each of the story's own questions (FEI), by item id; an
    item not in the result is shown by its own id."""
    own = [item.id for item in exp.questions.instrument.items if item.story_id == story_id]
    alias = exp.stories[story_id]["alias"]
    return {item_id: f"{alias}-{n}" for n, item_id in enumerate(own, start=1)}


def from_rater(exp: RatingExperiment, payload: Any) -> Any:
    """The payload of a rater's action with the story's and question's ids as stored. An
    alias that names no story becomes "" (no story), which the rules refuse as not the one
    to rate now; anything not a payload is returned as is, for the rules to refuse."""
    if not isinstance(payload, dict) or "story" not in payload:
        return payload
    by_alias = {story["alias"]: story_id for story_id, story in exp.stories.items()}
    alias = payload["story"]
    story_id = by_alias.get(alias, "") if isinstance(alias, str) else ""
    mapped = {**payload, "story": story_id}
    if story_id and isinstance(payload.get("item"), str):
        items = {shown: item_id for item_id, shown in rater_item_ids(exp, story_id).items()}
        mapped["item"] = items.get(payload["item"], payload["item"])
    return mapped
