"""Story sets for rating studies: the record every part passes around, and where sets come from.

- :class:`StoryRecord`: one story to rate (plain, frozen data);
- :mod:`.corrupt`: corrupted controls made from a story set by a named, seeded operation
  (Castricato et al. 2021, §5);
- :mod:`.cowriting`: a co-writing experiment's finished stories.

Stories read from a file come from :func:`cyoa.rating.importing.stories_from_file`;
:meth:`StoryRecord.from_story` turns each into a record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cyoa.rating.importing import Story


@dataclass(frozen=True)
class StoryRecord:
    """A story to rate.

    ``source``: who or what wrote it (a system, a pair of systems, a corrupted control such as
    ``"gpt4 (shuffled)"``); analyses compare sources. ``text``: the plain text shown to a
    rater, or ``""`` when only ``url`` is known. ``family``: the ``story_id`` of the story this
    one is a copy of (a corrupted control names its original); ``None`` for a story that is
    not a copy. Copies of one story share :attr:`family_id`, and a rater never gets two of
    them. ``origin``: JSON-ready details of where the story came from (the file, the session
    and who wrote each turn, the corruption and what it changed); never shown to raters.
    """

    story_id: str
    source: str
    title: str
    text: str
    url: str = ""
    family: str | None = None
    origin: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def family_id(self) -> str:
        """The id shared by a story and all its copies: ``family``, else ``story_id``."""
        return self.family or self.story_id

    @classmethod
    def from_story(cls, story: Story, origin: dict[str, Any] | None = None) -> StoryRecord:
        """The record of a story read from a file (not a copy of another story)."""
        return cls(
            story_id=story.story_id,
            source=story.source,
            title=story.title,
            text=story.text,
            url=story.url,
            origin=dict(origin or {}),
        )


__all__ = ["StoryRecord"]
