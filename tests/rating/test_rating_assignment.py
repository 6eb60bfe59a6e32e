"""Which stories a rater gets: each story its raters, never twice, never two of one family,
least-rated first, balanced across sources, and places freed when a rater drops out."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cyoa.rating.assignment import (
    ACTIVE,
    DONE,
    EXPIRED,
    Assignment,
    Reason,
    StoryChoice,
    assignment_needed,
    choose_stories,
    holds_place,
    places_held,
)
from cyoa.rating.stories import StoryRecord

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


def stories(*specs: str) -> list[StoryRecord]:
    """``"id:source"`` or ``"id:source:family"`` per story."""
    records = []
    for spec in specs:
        story_id, source, *family = spec.split(":")
        records.append(
            StoryRecord(story_id, source, "", "text", family=family[0] if family else None)
        )
    return records


def given_(rater: str, story_id: str, state: str = DONE, minutes_ago: float = 5) -> Assignment:
    return Assignment(rater, story_id, state, NOW - timedelta(minutes=minutes_ago))


def choose(rater, story_set, assignments, per_story=2, per_rater=2, seed=0) -> StoryChoice:
    return choose_stories(
        rater,
        story_set,
        assignments,
        raters_per_story=per_story,
        stories_per_rater=per_rater,
        timeout=HOUR,
        now=NOW,
        rng=random.Random(seed),
    )


# --- hand-worked cases ---------------------------------------------------------------------


def test_an_active_assignment_holds_its_place_until_the_timeout():
    fresh = given_("r", "s", ACTIVE, minutes_ago=60)
    stale = given_("r", "s", ACTIVE, minutes_ago=61)
    assert holds_place(fresh, HOUR, NOW)
    assert not holds_place(stale, HOUR, NOW)
    assert holds_place(given_("r", "s", DONE, minutes_ago=600), HOUR, NOW)
    assert not holds_place(given_("r", "s", EXPIRED, minutes_ago=1), HOUR, NOW)


def test_a_rater_seen_recently_keeps_a_story_given_long_ago():
    working = Assignment(
        "r", "s", ACTIVE, NOW - 3 * HOUR, last_seen_at=NOW - 10 * timedelta(minutes=1)
    )
    assert holds_place(working, HOUR, NOW)


def test_places_held_count_finished_and_live_assignments_only():
    story_set = stories("a:x", "b:x", "c:y")
    assignments = [
        given_("r1", "a"),
        given_("r2", "a", ACTIVE),
        given_("r3", "a", ACTIVE, minutes_ago=90),
        given_("r1", "b", EXPIRED),
    ]
    assert places_held(story_set, assignments, HOUR, NOW) == {"a": 2, "b": 0, "c": 0}


def test_the_least_rated_stories_come_first():
    story_set = stories("a:x", "b:x", "c:x", "d:x")
    assignments = [given_("r1", "a"), given_("r1", "b"), given_("r2", "a"), given_("r2", "c")]
    # Held: a 2 (full), b 1, c 1, d 0 → d first, then one of b and c.
    choice = choose("new", story_set, assignments, per_story=2, per_rater=2, seed=3)
    assert choice.reason is Reason.COMPLETE
    assert "d" in choice.story_ids
    assert set(choice.story_ids) - {"d"} <= {"b", "c"}
    assert len(choice.story_ids) == 2


def test_a_rater_gets_one_story_of_each_source_before_a_second_of_any():
    story_set = stories("a1:a", "a2:a", "a3:a", "b1:b", "b2:b", "b3:b", "c1:c", "c2:c", "c3:c")
    for seed in range(20):
        choice = choose("new", story_set, [], per_story=3, per_rater=3, seed=seed)
        assert sorted(story_id[0] for story_id in choice.story_ids) == ["a", "b", "c"]


def test_a_rater_never_gets_an_original_and_its_corrupted_copy():
    story_set = stories(
        "s1:gpt", "s1-shuffled:gpt (shuffled):s1", "s2:gpt", "s2-negated:gpt (negated):s2"
    )
    for seed in range(20):
        choice = choose("new", story_set, [], per_story=1, per_rater=4, seed=seed)
        families = [story_id.split("-")[0] for story_id in choice.story_ids]
        assert sorted(families) == ["s1", "s2"]
        assert choice.reason is Reason.FEWER_LEFT
        assert choice.requested == 4


def test_a_returning_rater_never_gets_a_story_or_a_family_they_had():
    story_set = stories("s1:x", "s1-shuffled:x (shuffled):s1", "s2:x", "s3:x")
    had = [given_("back", "s1-shuffled", ACTIVE, minutes_ago=120), given_("back", "s2", EXPIRED)]
    choice = choose("back", story_set, had, per_story=1, per_rater=2)
    assert choice.story_ids == ("s3",)
    assert choice.reason is Reason.FEWER_LEFT


def test_a_rater_holding_places_is_only_topped_up():
    story_set = stories("a:x", "b:x", "c:x")
    choice = choose("r", story_set, [given_("r", "a", ACTIVE)], per_story=3, per_rater=2)
    assert len(choice.story_ids) == 1 and choice.story_ids[0] != "a"
    assert choice.requested == 1
    full = choose("r", story_set, [given_("r", "a"), given_("r", "b")], per_story=3, per_rater=2)
    assert full == StoryChoice((), Reason.COMPLETE, 0)


def test_a_full_study_gives_no_story_until_a_dropout_frees_a_place():
    story_set = stories("a:x", "b:y")
    assignments = [given_("r1", "a"), given_("r2", "b", ACTIVE, minutes_ago=30)]
    assert not assignment_needed(story_set, assignments, 1, HOUR, NOW)
    choice = choose("new", story_set, assignments, per_story=1, per_rater=2)
    assert choice == StoryChoice((), Reason.STUDY_FULL, 2)
    assert "Every story has its raters" in choice.message

    later = NOW + 31 * timedelta(minutes=1)
    assert assignment_needed(story_set, assignments, 1, HOUR, later)
    freed = choose_stories(
        "new",
        story_set,
        assignments,
        raters_per_story=1,
        stories_per_rater=2,
        timeout=HOUR,
        now=later,
        rng=random.Random(0),
    )
    assert freed.story_ids == ("b",)
    assert freed.reason is Reason.FEWER_LEFT
    assert "1 of 2 stories" in freed.message


def test_what_still_needs_raters_may_be_what_this_rater_read():
    story_set = stories("a:x", "b:x")
    assignments = [given_("r1", "a"), given_("me", "b", EXPIRED)]
    choice = choose("me", story_set, assignments, per_story=1, per_rater=1)
    assert choice.reason is Reason.NONE_FOR_RATER
    assert choice.story_ids == ()


def test_the_same_random_source_gives_the_same_stories():
    story_set = stories(*(f"s{i}:{'xyz'[i % 3]}" for i in range(12)))
    first = choose("new", story_set, [], per_story=2, per_rater=4, seed=9)
    assert choose("new", story_set, [], per_story=2, per_rater=4, seed=9) == first


def test_bad_arguments_are_refused_with_a_sentence():
    story_set = stories("a:x")
    with pytest.raises(ValueError, match="must be at least 1"):
        choose("r", story_set, [], per_story=0)
    with pytest.raises(ValueError, match="not one of the experiment's stories"):
        choose("r", story_set, [given_("q", "zzz")])
    with pytest.raises(ValueError, match="appear twice"):
        choose("r", [*story_set, *story_set], [])
    with pytest.raises(ValueError, match="has state 'lost'"):
        Assignment("r", "a", "lost", NOW)


# --- properties ----------------------------------------------------------------------------

SOURCES = ("gpt", "human", "llama")


@st.composite
def studies(draw):
    """Stories (some the copies of others), assignments of six raters in every state and age,
    and the targets."""
    count = draw(st.integers(1, 12))
    records = []
    for index in range(count):
        source = draw(st.sampled_from(SOURCES))
        originals = [r.story_id for r in records if r.family is None]
        family = draw(st.none() | st.sampled_from(originals)) if originals else None
        records.append(StoryRecord(f"s{index}", source, "", "text", family=family))
    assignments = []
    for rater in (f"r{n}" for n in range(6)):
        given_ids = draw(st.lists(st.sampled_from([r.story_id for r in records]), unique=True))
        for story_id in given_ids:
            state = draw(st.sampled_from((ACTIVE, DONE, EXPIRED)))
            age = draw(st.integers(0, 180))
            assignments.append(given_(rater, story_id, state, minutes_ago=age))
    return (
        records,
        assignments,
        draw(st.integers(1, 4)),
        draw(st.integers(1, 6)),
        draw(st.sampled_from(["new", "r0"])),
        draw(st.integers(0, 10**6)),
    )


@given(studies())
def test_no_story_twice_no_family_twice_and_no_story_over_its_raters(study):
    records, assignments, per_story, per_rater, rater, seed = study
    choice = choose(rater, records, assignments, per_story, per_rater, seed)
    family = {r.story_id: r.family_id for r in records}
    mine = [a for a in assignments if a.rater_id == rater]
    had = {a.story_id for a in mine}
    held = places_held(records, assignments, HOUR, NOW)

    assert len(set(choice.story_ids)) == len(choice.story_ids)
    assert len({family[s] for s in choice.story_ids}) == len(choice.story_ids)
    assert not had & set(choice.story_ids)
    assert not {family[s] for s in had} & {family[s] for s in choice.story_ids}
    assert all(held[s] < per_story for s in choice.story_ids)
    assert len(choice.story_ids) <= choice.requested
    assert choice.requested == max(0, per_rater - sum(holds_place(a, HOUR, NOW) for a in mine))


@given(studies())
def test_least_rated_first_and_nothing_left_out_that_the_rater_could_take(study):
    records, assignments, per_story, per_rater, rater, seed = study
    choice = choose(rater, records, assignments, per_story, per_rater, seed)
    held = places_held(records, assignments, HOUR, NOW)
    had = {a.story_id for a in assignments if a.rater_id == rater}
    blocked = {r.family_id for r in records if r.story_id in had or r.story_id in choice.story_ids}
    open_ = [r for r in records if held[r.story_id] < per_story and r.family_id not in blocked]
    if choice.story_ids:
        # Any story still open (its family untouched) was rated at least as often as each pick.
        most = max(held[s] for s in choice.story_ids)
        assert all(held[r.story_id] >= most for r in open_)
    if len(choice.story_ids) < choice.requested:
        assert not open_
    if choice.requested:
        assert (choice.reason is Reason.STUDY_FULL) == (
            not assignment_needed(records, assignments, per_story, HOUR, NOW)
        )


@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 5), st.integers(0, 10**6))
def test_a_new_rater_in_a_fresh_study_gets_the_sources_evenly(
    per_source, per_story, per_rater, seed
):
    records = [
        StoryRecord(f"{source}-{n}", source, "", "text")
        for source in SOURCES
        for n in range(per_source)
    ]
    choice = choose("new", records, [], per_story, per_rater, seed)
    counts = Counter(story_id.split("-")[0] for story_id in choice.story_ids)
    taken = [counts.get(source, 0) for source in SOURCES]
    assert max(taken) - min(taken) <= 1
    assert len(choice.story_ids) == min(per_rater, len(records))


@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 5), st.integers(0, 10**6))
def test_raters_arriving_one_by_one_fill_every_story_evenly_across_sources(
    per_source, per_story, per_rater, seed
):
    records = [
        StoryRecord(f"{source}-{n}", source, "", "text")
        for source in SOURCES
        for n in range(per_source)
    ]
    rng = random.Random(seed)
    assignments: list[Assignment] = []
    for number in range(100):
        rater = f"r{number}"
        choice = choose_stories(
            rater,
            records,
            assignments,
            raters_per_story=per_story,
            stories_per_rater=per_rater,
            timeout=HOUR,
            now=NOW,
            rng=rng,
        )
        if not choice.story_ids:
            assert choice.reason is Reason.STUDY_FULL
            break
        assignments += [given_(rater, story_id) for story_id in choice.story_ids]
        held = places_held(records, assignments, HOUR, NOW)
        # Least-rated first: the stories never drift more than one rater apart ...
        assert max(held.values()) - min(held.values()) <= 1
        # ... and neither do the sources (equal in size here).
        per_source_total = Counter()
        for record in records:
            per_source_total[record.source] += held[record.story_id]
        assert max(per_source_total.values()) - min(per_source_total.values()) <= 1
    assert places_held(records, assignments, HOUR, NOW) == {r.story_id: per_story for r in records}


def test_a_rater_who_has_answered_nothing_holds_places_only_until_the_first_answer_timeout():
    quiet = Assignment("r", "s", ACTIVE, NOW - timedelta(minutes=16), answered=False)
    answering = Assignment("r", "s", ACTIVE, NOW - timedelta(minutes=16), answered=True)
    first = timedelta(minutes=15)
    assert not holds_place(quiet, HOUR, NOW, first)
    assert holds_place(answering, HOUR, NOW, first)
    assert holds_place(quiet, HOUR, NOW)  # no first-answer timeout: the long one
    story_set = stories("a:x", "b:x")
    choice = choose_stories(
        "new",
        story_set,
        [Assignment("q", "a", ACTIVE, NOW - timedelta(minutes=16), answered=False)],
        raters_per_story=1,
        stories_per_rater=2,
        timeout=HOUR,
        first_answer_timeout=first,
        now=NOW,
        rng=random.Random(0),
    )
    assert sorted(choice.story_ids) == ["a", "b"]
