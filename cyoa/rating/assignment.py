"""Which stories a new rater reads: pure functions of the stories, the assignments so far, the
clock and a random source, so the design is testable (as :mod:`cyoa.cowriting.assignment` is for
writers).

The rules (issue "Rating studies, part 2", Assignment):

- each story gets ``raters_per_story`` raters: a story is offered while fewer assignments
  *hold a place* on it (:func:`holds_place`: finished, or active and not timed out);
- a rater never gets the same story twice, nor two stories of one family (an original and
  its corrupted copies: :attr:`cyoa.rating.stories.StoryRecord.family_id`), counting every story
  the rater was ever given, timed out or not;
- the least-rated stories come first, and among equally rated ones the rater's list and the
  study stay balanced across sources;
- a rater who drops out frees their places once their assignment is older than the timeout;
  a rater who has answered nothing yet frees them after the shorter first-answer timeout, so
  starts that never become answers (a bot, a rater who closes the tab) do not fill the study.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

ACTIVE, DONE, EXPIRED = "active", "done", "expired"
STATES = (ACTIVE, DONE, EXPIRED)


class RatableStory(Protocol):
    """What assignment needs to know of a story (a :class:`cyoa.rating.stories.StoryRecord` is
    one): ``family`` is the id of the story it is a copy of, or None."""

    @property
    def story_id(self) -> str: ...

    @property
    def source(self) -> str: ...

    @property
    def family(self) -> str | None: ...


@dataclass(frozen=True)
class Assignment:
    """One story given to one rater.

    ``state``: ``"done"`` (the rater finished the story), ``"active"`` (given, not finished)
    or ``"expired"`` (marked as given up). ``assigned_at``: when it was given;
    ``last_seen_at``: the rater's latest action, if known (a rater still at work keeps the
    place however long ago the story was given). ``answered``: whether the rater has answered
    any question yet. Times must all be timezone-aware or all naive, like ``now``.
    """

    rater_id: str
    story_id: str
    state: str
    assigned_at: datetime
    last_seen_at: datetime | None = None
    answered: bool = True

    def __post_init__(self) -> None:
        if self.state not in STATES:
            raise ValueError(
                f"Assignment of story {self.story_id!r} to rater {self.rater_id!r} has state "
                f"{self.state!r}: use one of {', '.join(STATES)}."
            )


class Reason(StrEnum):
    """Why a rater got the stories they got."""

    COMPLETE = "complete"  # as many as stories_per_rater asks
    FEWER_LEFT = "fewer_left"  # some, but fewer stories still need this rater
    STUDY_FULL = "study_full"  # none: every story has its raters
    NONE_FOR_RATER = "none_for_rater"  # none: what still needs raters, this rater has read


@dataclass(frozen=True)
class StoryChoice:
    """The stories for a rater, in the order to show them, and why there are that many
    (``requested``: how many more the rater was to get)."""

    story_ids: tuple[str, ...]
    reason: Reason
    requested: int

    @property
    def message(self) -> str:
        """A sentence for the researcher (or a log) saying what happened."""
        if self.reason is Reason.COMPLETE:
            return f"The rater gets {len(self.story_ids)} stories, as asked."
        if self.reason is Reason.FEWER_LEFT:
            return (
                f"The rater gets {len(self.story_ids)} of {self.requested} stories: the "
                "other stories already have their raters, or are ones this rater read (or "
                "copies of them)."
            )
        if self.reason is Reason.STUDY_FULL:
            return "Every story has its raters: this rater gets no story."
        return (
            "The stories that still need raters are ones this rater read, or copies of "
            "them: this rater gets no story."
        )


def holds_place(
    assignment: Assignment,
    timeout: timedelta,
    now: datetime,
    first_answer_timeout: timedelta | None = None,
) -> bool:
    """Whether ``assignment`` counts towards its story's raters at ``now``: finished
    (``done``), or ``active`` and not older than ``timeout`` since the later of
    ``assigned_at`` and ``last_seen_at`` (the shorter of ``timeout`` and
    ``first_answer_timeout`` while its rater has answered nothing). An ``expired`` one never
    does."""
    if assignment.state == DONE:
        return True
    if assignment.state == EXPIRED:
        return False
    if not assignment.answered and first_answer_timeout is not None:
        timeout = min(timeout, first_answer_timeout)
    seen = max(assignment.assigned_at, assignment.last_seen_at or assignment.assigned_at)
    return now - seen <= timeout


def places_held(
    stories: Sequence[RatableStory],
    assignments: Sequence[Assignment],
    timeout: timedelta,
    now: datetime,
    first_answer_timeout: timedelta | None = None,
) -> dict[str, int]:
    """Story id → the number of assignments holding a place on it (:func:`holds_place`), for
    every story (0 for a story nobody holds), in the order of ``stories``.

    Raises :class:`ValueError` for a repeated story id or an assignment to a story that is
    not in ``stories``."""
    held = {story.story_id: 0 for story in stories}
    if len(held) != len(stories):
        ids = Counter(story.story_id for story in stories)
        repeated = sorted(story_id for story_id, n in ids.items() if n > 1)
        raise ValueError(f"Story ids {', '.join(repeated)} appear twice: give each its own id.")
    for assignment in assignments:
        if assignment.story_id not in held:
            raise ValueError(
                f"Rater {assignment.rater_id!r} is assigned story {assignment.story_id!r}, "
                "which is not one of the experiment's stories."
            )
        if holds_place(assignment, timeout, now, first_answer_timeout):
            held[assignment.story_id] += 1
    return held


def assignment_needed(
    stories: Sequence[RatableStory],
    assignments: Sequence[Assignment],
    raters_per_story: int,
    timeout: timedelta,
    now: datetime,
) -> bool:
    """Whether some story has fewer than ``raters_per_story`` places held at ``now``: False
    means the study is full, and a new rater would get no story. A full study can need
    raters again later, when an active assignment times out."""
    held = places_held(stories, assignments, timeout, now)
    return any(count < raters_per_story for count in held.values())


def _family(story: RatableStory) -> str:
    return story.family or story.story_id


def choose_stories(
    rater_id: str,
    stories: Sequence[RatableStory],
    assignments: Sequence[Assignment],
    *,
    raters_per_story: int,
    stories_per_rater: int,
    timeout: timedelta,
    now: datetime,
    rng: random.Random,
    first_answer_timeout: timedelta | None = None,
) -> StoryChoice:
    """The stories to give ``rater_id`` now, in the order to show them.

    The rater is to hold ``stories_per_rater`` places: a new rater gets up to that many
    stories; a rater with assignments already (returning after a time-out, say) gets only
    what tops them up. Candidates are the stories with fewer than ``raters_per_story`` places
    held (:func:`places_held`, with ``timeout`` and ``first_answer_timeout``) that the rater
    was never given, from families the rater never had. They are taken one at a time, each
    time the one with

    1. the fewest places held (least-rated first);
    2. then from the source this rater has had least so far (the rater's stories spread over
       the sources);
    3. then from the source with the fewest places held per story (the study stays balanced
       across sources of different sizes);
    4. then at random (``rng``);

    and after each pick the rest of its family leaves the candidates. The chosen stories are
    then shown in a random order (``rng``), so that a story's position (early, fresh; late,
    tired) is not tied to its source or how often it was rated.

    ``reason``: :attr:`Reason.COMPLETE`, or, with fewer stories, :attr:`Reason.FEWER_LEFT`,
    :attr:`Reason.STUDY_FULL` (nothing needs raters) or :attr:`Reason.NONE_FOR_RATER`.
    Raises :class:`ValueError` for targets below 1, a timeout not above zero, or
    assignments to unknown stories.
    """
    _check_settings(raters_per_story, stories_per_rater, timeout, first_answer_timeout)
    held = places_held(stories, assignments, timeout, now, first_answer_timeout)
    mine = [a for a in assignments if a.rater_id == rater_id]
    wanted = stories_per_rater - sum(
        1 for a in mine if holds_place(a, timeout, now, first_answer_timeout)
    )
    if wanted <= 0:
        return StoryChoice((), Reason.COMPLETE, 0)
    needing = [story for story in stories if held[story.story_id] < raters_per_story]
    if not needing:
        return StoryChoice((), Reason.STUDY_FULL, wanted)
    families = {story.story_id: _family(story) for story in stories}
    read = {a.story_id for a in mine}
    read_families = {families[story_id] for story_id in read}
    candidates = [
        story
        for story in needing
        if story.story_id not in read and _family(story) not in read_families
    ]
    picked = _pick(candidates, stories, held, wanted, rng)
    rng.shuffle(picked)
    if len(picked) == wanted:
        reason = Reason.COMPLETE
    else:
        reason = Reason.FEWER_LEFT if picked else Reason.NONE_FOR_RATER
    return StoryChoice(tuple(picked), reason, wanted)


def _check_settings(
    raters_per_story: int,
    stories_per_rater: int,
    timeout: timedelta,
    first_answer_timeout: timedelta | None,
) -> None:
    """:class:`ValueError` for targets below 1 or a timeout not above zero."""
    if raters_per_story < 1 or stories_per_rater < 1:
        raise ValueError(
            f"raters_per_story and stories_per_rater must be at least 1, not "
            f"{raters_per_story} and {stories_per_rater}."
        )
    if timeout <= timedelta(0):
        raise ValueError(f"The dropout timeout must be longer than zero, not {timeout}.")
    if first_answer_timeout is not None and first_answer_timeout <= timedelta(0):
        raise ValueError(
            f"The first-answer timeout must be longer than zero, not {first_answer_timeout}."
        )


def _pick(
    candidates: list[RatableStory],
    stories: Sequence[RatableStory],
    held: dict[str, int],
    wanted: int,
    rng: random.Random,
) -> list[str]:
    """Up to ``wanted`` of the ``candidates``' ids, taken one at a time by the order
    :func:`choose_stories` gives (places held, the rater's stories per source, places held
    per story of the source, then ``rng``); after each pick the rest of its family leaves."""
    source_size = Counter(story.source for story in stories)
    source_held: Counter[str] = Counter()
    for story in stories:
        source_held[story.source] += held[story.story_id]
    mine_per_source: Counter[str] = Counter()

    def rank(story: RatableStory) -> tuple[int, int, float]:
        return (
            held[story.story_id],
            mine_per_source[story.source],
            source_held[story.source] / source_size[story.source],
        )

    picked: list[str] = []
    while candidates and len(picked) < wanted:
        best = min(rank(story) for story in candidates)
        story = rng.choice([story for story in candidates if rank(story) == best])
        picked.append(story.story_id)
        mine_per_source[story.source] += 1
        source_held[story.source] += 1
        candidates = [other for other in candidates if _family(other) != _family(story)]
    return picked
