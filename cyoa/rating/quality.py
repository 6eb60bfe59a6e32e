"""Quality control of a rating study's raters (pure): attention checks, time on task,
straight-lining, and exclusion rules written in the spec before the study opens.

Karpinska et al. (2021) found that many crowd raters do not read what they rate (42% of
workers spent under 40 seconds per task) and recommend measuring the time actually spent
and filtering on it; the AISS study added instructed-response and story-content checks
(Wiechmann, "Quality-Control Questions"). Here:

- **Attention checks** (:class:`AttentionCheck`): an extra item with a known right answer,
  scored here and never by the instrument's analysis. :data:`AISS_QUALITY_CHECK` is the AISS
  instructed-response item ("This is a quality check. Please select "Somewhat disagree"."),
  passed by point 2 of 5; a researcher writes others about a story (yes/no, true/false, or a
  Likert point).
- **Time on task** per story: from when the server showed the story to when it received the
  story's last answer, in seconds; and the reading speed it implies, the story's words per
  minute. Answering time is included, so the speed is a lower bound on how fast the rater
  read: a rater above a plausible reading speed (skilled readers manage some 200–400 words
  per minute) did not read the whole story.
- **Straight-lining**: the same answer to every Likert item of the instrument on a page,
  reverse-keyed items included (where a scale has reversed items, that is a contradiction).
  Attention checks do not count: a careless rater who passes a Likert check would otherwise
  never straight-line.
- **Exclusion rules** (:class:`ExclusionRule`), evaluated per rater; excluded raters are
  reported with the rules they broke, and their judgements split off, never dropped unseen.

Spec shapes (both lists optional; :func:`quality_spec` reads and checks them)::

    [[attention_checks]]
    builtin = "aiss"            # the AISS item; asked with every story
    [[attention_checks]]
    id = "qc-village"           # unique, not an instrument item's id
    story_id = "s1"             # optional: asked with this story only
    text = "The story takes place in a village."
    kind = "true_false"         # yes_no | true_false | likert (then points, optional labels)
    answer = true               # the right answer: yes/no, true/false, or a Likert point

    [[exclusions]]
    rule = "failed_attention_checks"
    at_least = 1
    [[exclusions]]
    rule = "words_per_minute"
    above = 600
    statistic = "median"        # optional: "median" of the rater's stories, or "max"
    [[exclusions]]
    rule = "seconds_per_story"
    below = 40
    statistic = "median"        # optional: "median", or "min" (the rater's quickest story)
    [[exclusions]]
    rule = "straight_lining"
    at_least = 1                # pages
    min_items = 5               # optional (5): only pages with this many Likert answers count

References: Karpinska, M., Akoury, N. and Iyyer, M. (2021). The Perils of Using Mechanical
Turk to Evaluate Open-Ended Text Generation. EMNLP, §3 and §6. Brysbaert, M. (2019). How
many words do we read per minute? A review and meta-analysis of reading rate. Journal of
Memory and Language 109. Wiechmann, M. The AI Story
Scale (AISS), Study 1, "Quality-Control Questions".
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from cyoa.rating.instruments import AISS_V1, Instrument, InstrumentError, Item

AISS_CHECK_ID = "qc-aiss"
AISS_QUALITY_CHECK = Item(
    id=AISS_CHECK_ID,
    text='This is a quality check. Please select "Somewhat disagree".',
    kind="likert",
    points=5,
    labels=AISS_V1.items[0].labels,
)
AISS_CHECK_ANSWER = 2.0  # "Somewhat disagree", point 2 of AISS_V1's five
CHECK_KINDS = ("yes_no", "true_false", "likert")
STRAIGHT_LINING_MIN_ITEMS = 5

_CHECK_KEYS = {"id", "story_id", "text", "kind", "answer", "points", "labels"}
_BUILTIN_KEYS = {"builtin", "story_id"}
# Each rule's fields: required ones first, then optional ones with their defaults.
_RULES: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "failed_attention_checks": (("at_least",), {}),
    "words_per_minute": (("above",), {"statistic": "median"}),
    "seconds_per_story": (("below",), {"statistic": "median"}),
    "straight_lining": (("at_least",), {"min_items": STRAIGHT_LINING_MIN_ITEMS}),
}
_STATISTICS = {"words_per_minute": ("median", "max"), "seconds_per_story": ("median", "min")}


class QualitySpecError(ValueError):
    """Attention checks or exclusion rules that cannot be used; the message names the spec,
    the check or rule, and the field."""


@dataclass(frozen=True)
class AttentionCheck:
    """An extra question with a known right answer. ``answer``: the stored value that passes
    (a Likert point; 1.0 or 0.0 for yes/no and true/false); ``story_id``: the story it is
    asked with, or None for every story."""

    item: Item
    answer: float
    story_id: str | None = None

    @property
    def id(self) -> str:
        return self.item.id

    def parse(self, raw: object) -> float:
        """The stored value of a rater's answer (as
        :meth:`~cyoa.rating.instruments.types.Instrument.parse_value` reads one);
        :class:`~cyoa.rating.instruments.types.InstrumentError` saying what is accepted."""
        return float(_one_item(self.item).parse_value(self.item.id, raw))

    def passes(self, value: float | None) -> bool:
        """Whether a stored answer ``value`` is the right one (no answer is not)."""
        return value is not None and float(value) == self.answer


@dataclass(frozen=True)
class ExclusionRule:
    """One exclusion rule of the spec (see the module docstring for the fields of each)."""

    rule: str
    at_least: int | None = None
    above: float | None = None
    below: float | None = None
    statistic: str | None = None
    min_items: int | None = None

    def describe(self) -> str:
        """The rule as a phrase, e.g. "failed at least 1 attention check"."""
        if self.rule == "failed_attention_checks":
            plural = "" if self.at_least == 1 else "s"
            return f"failed at least {self.at_least} attention check{plural}"
        if self.rule == "words_per_minute":
            which = "median story" if self.statistic == "median" else "fastest story"
            return f"read faster than {_number(self.above)} words per minute ({which})"
        if self.rule == "seconds_per_story":
            which = "median story" if self.statistic == "median" else "quickest story"
            return f"spent under {_number(self.below)} seconds on a story ({which})"
        plural = "" if self.at_least == 1 else "s"
        return (
            f"gave the same answer to every Likert item on at least {self.at_least} "
            f"page{plural} (of {self.min_items} or more items)"
        )


@dataclass(frozen=True)
class QualitySpec:
    """A study's attention checks and exclusion rules, checked."""

    checks: tuple[AttentionCheck, ...] = ()
    exclusions: tuple[ExclusionRule, ...] = ()

    def checks_for(self, story_id: str) -> tuple[AttentionCheck, ...]:
        """The checks asked with ``story_id``: its own and those for every story."""
        return tuple(check for check in self.checks if check.story_id in (None, story_id))


def quality_spec(
    spec: Mapping[str, Any],
    where: str,
    instrument: Instrument | None = None,
    story_ids: Collection[str] | None = None,
) -> QualitySpec:
    """The ``attention_checks`` and ``exclusions`` of a rating experiment's ``spec`` (the
    whole spec; other fields are ignored), checked.

    Checks: every field known and of the right type; a check's id unique and, given the
    ``instrument``, not one of its items'; a check's ``story_id``, given ``story_ids``, one of
    them; a right answer the check's kind can take; rule names known, required thresholds
    given (whole numbers ≥ 1 for ``at_least``, numbers above 0 for ``above``/``below``, 2 or
    more for ``min_items``), no rule given twice, and ``failed_attention_checks`` only with
    at least one check. :class:`QualitySpecError` starts with ``where`` and names the check
    or rule and the field.
    """
    raw_checks = spec.get("attention_checks", [])
    raw_rules = spec.get("exclusions", [])
    if not isinstance(raw_checks, list):
        raise QualitySpecError(
            f"{where}: attention_checks must be a list of tables ([[attention_checks]])."
        )
    if not isinstance(raw_rules, list):
        raise QualitySpecError(f"{where}: exclusions must be a list of tables ([[exclusions]]).")
    item_ids = {item.id for item in instrument.items} if instrument is not None else set()
    checks: list[AttentionCheck] = []
    own = 0  # the researcher's checks are numbered; a built-in one is named
    for raw in raw_checks:
        if isinstance(raw, Mapping) and "builtin" in raw:
            label = "the built-in check"
            check = _check(raw, f"{where}: {label}", story_ids)
            name = f"{where}: {label}"
        else:
            own += 1
            check = _check(raw, f"{where}: attention check {own}", story_ids)
            name = f"{where}: attention check {own} ({check.id!r})"
        if check.id in item_ids:
            raise QualitySpecError(
                f"{name}: id is an item of the instrument {instrument.id}: give the check "
                "another id."
            )
        if any(earlier.id == check.id for earlier in checks):
            raise QualitySpecError(
                f"{name}: id repeats an earlier check's: give each check its own id."
            )
        checks.append(check)
    rules: list[ExclusionRule] = []
    for number, raw in enumerate(raw_rules, start=1):
        rule = _rule(raw, f"{where}: exclusion rule {number}")
        name = f"{where}: exclusion rule {number} ({rule.rule})"
        if rule.rule == "failed_attention_checks" and not checks:
            raise QualitySpecError(
                f"{name}: the spec has no attention checks to fail: add [[attention_checks]] "
                "or remove this rule."
            )
        if rule in rules:
            raise QualitySpecError(f"{name}: the same rule is given twice; keep one.")
        rules.append(rule)
    return QualitySpec(tuple(checks), tuple(rules))


def _one_item(item: Item) -> Instrument:
    return Instrument(
        id="attention checks",
        name="Attention checks",
        version="1",
        reference="",
        attribution="",
        instructions="",
        items=(item,),
    )


def _number(value: float | None) -> str:
    return f"{value:g}"


def _story_id(raw: Mapping[str, Any], name: str, story_ids: Collection[str] | None) -> str | None:
    story_id = raw.get("story_id")
    if story_id is None:
        return None
    if not isinstance(story_id, str) or not story_id.strip():
        raise QualitySpecError(f"{name}: story_id must be a story's id (text), not {story_id!r}.")
    if story_ids is not None and story_id not in story_ids:
        raise QualitySpecError(
            f"{name}: story_id {story_id!r} is not one of the study's stories; check the id."
        )
    return story_id


def _check(raw: object, name: str, story_ids: Collection[str] | None) -> AttentionCheck:
    if not isinstance(raw, Mapping):
        raise QualitySpecError(f"{name} must be a table ([[attention_checks]]), not {raw!r}.")
    if "builtin" in raw:
        unknown = sorted(set(raw) - _BUILTIN_KEYS)
        if unknown:
            raise QualitySpecError(
                f"{name}: a built-in check takes only builtin and story_id, not "
                f"{', '.join(unknown)}."
            )
        if raw["builtin"] != "aiss":
            raise QualitySpecError(
                f'{name}: builtin must be "aiss" (the AISS instructed-response item), not '
                f"{raw['builtin']!r}."
            )
        return AttentionCheck(
            AISS_QUALITY_CHECK, AISS_CHECK_ANSWER, _story_id(raw, name, story_ids)
        )
    raw_id = raw.get("id")
    if not isinstance(raw_id, str) or not raw_id.strip():
        raise QualitySpecError(
            f'{name}: id is missing: give each check an id (or builtin = "aiss").'
        )
    name = f"{name} ({raw_id!r})"
    unknown = sorted(set(raw) - _CHECK_KEYS)
    if unknown:
        raise QualitySpecError(
            f"{name}: unknown field(s) {', '.join(unknown)}: use "
            f"{', '.join(sorted(_CHECK_KEYS))} (or builtin)."
        )
    kind = raw.get("kind")
    if kind not in CHECK_KINDS:
        raise QualitySpecError(
            f"{name}: kind must be one of {', '.join(CHECK_KINDS)}, not {kind!r}."
        )
    points = raw.get("points")
    labels = raw.get("labels")
    if kind == "likert":
        if isinstance(points, bool) or not isinstance(points, int):
            raise QualitySpecError(
                f"{name}: points must be a whole number from 2 to 11 for a Likert check, not "
                f"{points!r}."
            )
        if labels is not None and (
            not isinstance(labels, list) or not all(isinstance(label, str) for label in labels)
        ):
            raise QualitySpecError(f"{name}: labels must be a list of texts, low to high.")
    elif points is not None or labels is not None:
        raise QualitySpecError(f"{name}: points and labels belong to Likert checks only.")
    text = raw.get("text")
    if not isinstance(text, str):
        raise QualitySpecError(f"{name}: text must be the question to ask, not {text!r}.")
    try:
        item = Item(
            id=raw_id.strip(),
            text=text.strip(),
            kind=kind,
            points=points,
            labels=tuple(label.strip() for label in labels or ()),
        )
    except InstrumentError as error:
        raise QualitySpecError(f"{name}: {error}") from None
    if "answer" not in raw:
        raise QualitySpecError(f"{name}: answer is missing: give the right answer.")
    try:
        answer = _one_item(item).parse_value(item.id, raw["answer"])
    except InstrumentError as error:
        raise QualitySpecError(f"{name}: answer: {error}") from None
    return AttentionCheck(item, float(answer), _story_id(raw, name, story_ids))


def _whole(value: object, name: str, field: str, lowest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise QualitySpecError(
            f"{name}: {field} must be a whole number of at least {lowest}, not {value!r}."
        )
    return value


def _positive(value: object, name: str, field: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise QualitySpecError(f"{name}: {field} must be a number above 0, not {value!r}.")
    return float(value)


def _rule(raw: object, name: str) -> ExclusionRule:
    if not isinstance(raw, Mapping):
        raise QualitySpecError(f"{name} must be a table ([[exclusions]]), not {raw!r}.")
    rule = raw.get("rule")
    if rule not in _RULES:
        raise QualitySpecError(f"{name}: rule must be one of {', '.join(_RULES)}, not {rule!r}.")
    name = f"{name} ({rule})"
    required, optional = _RULES[rule]
    unknown = sorted(set(raw) - {"rule", *required, *optional})
    if unknown:
        raise QualitySpecError(
            f"{name}: unknown field(s) {', '.join(unknown)}: this rule takes "
            f"{', '.join((*required, *optional))}."
        )
    missing = [field for field in required if field not in raw]
    if missing:
        raise QualitySpecError(
            f"{name}: {', '.join(missing)} is missing: write the threshold in the spec."
        )
    fields = {**optional, **{key: raw[key] for key in raw if key != "rule"}}
    if "at_least" in fields:
        fields["at_least"] = _whole(fields["at_least"], name, "at_least", 1)
    if "min_items" in fields:
        fields["min_items"] = _whole(fields["min_items"], name, "min_items", 2)
    for field in ("above", "below"):
        if field in fields:
            fields[field] = _positive(fields[field], name, field)
    if "statistic" in fields and fields["statistic"] not in _STATISTICS[rule]:
        raise QualitySpecError(
            f"{name}: statistic must be one of {', '.join(_STATISTICS[rule])}, not "
            f"{fields['statistic']!r}."
        )
    return ExclusionRule(rule=rule, **fields)


# --- one rater's records -------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """One stored answer of a rater: ``value`` as stored (a Likert point as answered, 1.0 or
    0.0, None for a text item); ``answered_at``: server time; ``page``: which page of the
    story's questions it was on, when they are split over several ("" for one page)."""

    story_id: str
    item_id: str
    value: float | None
    answered_at: datetime | None = None
    page: str = ""


@dataclass(frozen=True)
class StoryShown:
    """When the server first showed a story to the rater, and its length in words
    (:func:`story_words`)."""

    story_id: str
    shown_at: datetime
    words: int


@dataclass(frozen=True)
class CheckResult:
    """A rater's answer to one attention check about one story."""

    check_id: str
    story_id: str
    value: float | None
    expected: float
    passed: bool


@dataclass(frozen=True)
class StoryTime:
    """Time on task for one story: ``seconds`` from when it was shown to its last answer
    (None before any answer), and ``words_per_minute`` = ``words`` / (``seconds`` / 60)
    (None without a time or without words; infinite for zero seconds)."""

    story_id: str
    words: int
    seconds: float | None
    words_per_minute: float | None


@dataclass(frozen=True)
class PageAnswers:
    """The Likert answers of one page: how many, and how many different values."""

    story_id: str
    page: str
    likert_answers: int
    distinct_values: int

    def straight_lined(self, min_items: int) -> bool:
        """Whether the page has at least ``min_items`` Likert answers, all the same."""
        return self.likert_answers >= min_items and self.distinct_values == 1


@dataclass(frozen=True)
class RaterQuality:
    """Everything quality control measured for one rater."""

    rater_id: str
    checks: tuple[CheckResult, ...]
    stories: tuple[StoryTime, ...]
    pages: tuple[PageAnswers, ...]

    @property
    def failed_checks(self) -> int:
        """How many attention checks the rater answered wrongly."""
        return sum(1 for check in self.checks if not check.passed)

    def words_per_minute(self, statistic: str = "median") -> float | None:
        """The median (``"median"``) or highest (``"max"``) words per minute over the rater's
        timed stories; None when no story was timed."""
        rates = [s.words_per_minute for s in self.stories if s.words_per_minute is not None]
        if not rates:
            return None
        return max(rates) if statistic == "max" else statistics.median(rates)

    def seconds_per_story(self, statistic: str = "median") -> float | None:
        """The median (``"median"``) or lowest (``"min"``) seconds on a story over the rater's
        timed stories; None when no story was timed."""
        times = [s.seconds for s in self.stories if s.seconds is not None]
        if not times:
            return None
        return min(times) if statistic == "min" else statistics.median(times)

    def straight_lined_pages(self, min_items: int = STRAIGHT_LINING_MIN_ITEMS) -> int:
        """How many pages had at least ``min_items`` Likert answers, all the same."""
        return sum(1 for page in self.pages if page.straight_lined(min_items))


def story_words(text: str) -> int:
    """The length of a story in whitespace-separated words (as
    :func:`cyoa.metrics.text.mean_sentence_length` counts them)."""
    return len(text.split())


def time_on_task(shown_at: datetime, last_answer_at: datetime | None) -> float | None:
    """Seconds from when a story was shown to its last answer; None without an answer."""
    if last_answer_at is None:
        return None
    return (last_answer_at - shown_at).total_seconds()


def words_per_minute(words: int, seconds: float | None) -> float | None:
    """``words`` / (``seconds`` / 60); None without a time or words (a story shown as a
    link), infinite for zero seconds."""
    if seconds is None or words <= 0:
        return None
    if seconds <= 0:
        return math.inf
    return words / (seconds / 60)


def rater_quality(
    rater_id: str,
    answers: Iterable[Answer],
    shown: Iterable[StoryShown],
    instrument: Instrument,
    checks: Sequence[AttentionCheck] = (),
) -> RaterQuality:
    """What quality control measures of one rater from their ``answers`` (to the
    instrument's items and to the ``checks``) and the stories they were ``shown``.

    - ``checks``: one :class:`CheckResult` per answer to a check, in answer order;
    - ``stories``: one :class:`StoryTime` per story shown, in the order given; the last
      answer is the latest ``answered_at`` among the story's answers, checks included;
    - ``pages``: one :class:`PageAnswers` per story and page with a Likert answer to the
      instrument, in order of first answer. Attention checks are left out: a check has a
      right answer, so answering it correctly must not break a run of identical answers.

    Raises :class:`ValueError` for an answer to an item that is neither the instrument's
    nor a check's.
    """
    answers = list(answers)
    by_id = {check.id: check for check in checks}
    results = []
    last_answer: dict[str, datetime] = {}
    page_values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for answer in answers:
        check = by_id.get(answer.item_id)
        if check is not None:
            item = check.item
            results.append(
                CheckResult(
                    check.id,
                    answer.story_id,
                    answer.value,
                    check.answer,
                    check.passes(answer.value),
                )
            )
        else:
            try:
                item = instrument.item(answer.item_id)
            except InstrumentError:
                raise ValueError(
                    f"Rater {rater_id!r} answered item {answer.item_id!r} about story "
                    f"{answer.story_id!r}, which is neither an item of {instrument.id} nor an "
                    "attention check."
                ) from None
        if answer.answered_at is not None:
            latest = last_answer.get(answer.story_id)
            if latest is None or answer.answered_at > latest:
                last_answer[answer.story_id] = answer.answered_at
        if check is None and item.kind == "likert" and answer.value is not None:
            page_values[(answer.story_id, answer.page)].append(float(answer.value))
    times = []
    for story in shown:
        seconds = time_on_task(story.shown_at, last_answer.get(story.story_id))
        times.append(
            StoryTime(story.story_id, story.words, seconds, words_per_minute(story.words, seconds))
        )
    pages = tuple(
        PageAnswers(story_id, page, len(values), len(set(values)))
        for (story_id, page), values in page_values.items()
    )
    return RaterQuality(rater_id, tuple(results), tuple(times), pages)


# --- exclusions ----------------------------------------------------------------------------


def breaks(rule: ExclusionRule, quality: RaterQuality) -> bool:
    """Whether the rater measured by ``quality`` breaks ``rule``. A rule about time needs a
    timed story: a rater with none breaks no time rule."""
    if rule.rule == "failed_attention_checks":
        return quality.failed_checks >= rule.at_least
    if rule.rule == "words_per_minute":
        rate = quality.words_per_minute(rule.statistic)
        return rate is not None and rate > rule.above
    if rule.rule == "seconds_per_story":
        seconds = quality.seconds_per_story(rule.statistic)
        return seconds is not None and seconds < rule.below
    return quality.straight_lined_pages(rule.min_items) >= rule.at_least


@dataclass(frozen=True)
class RaterExclusion:
    """The rules one rater broke (in the spec's order); excluded when there is any."""

    rater_id: str
    broken: tuple[ExclusionRule, ...]

    @property
    def excluded(self) -> bool:
        return bool(self.broken)


def evaluate_exclusions(
    rules: Sequence[ExclusionRule], qualities: Iterable[RaterQuality]
) -> tuple[RaterExclusion, ...]:
    """For each rater (in the order given), the ``rules`` they break."""
    return tuple(
        RaterExclusion(quality.rater_id, tuple(rule for rule in rules if breaks(rule, quality)))
        for quality in qualities
    )


@dataclass(frozen=True)
class RuleCount:
    """How many raters broke a rule (``raters``), and how many broke no other rule
    (``only_this_rule``: those the rule alone excluded)."""

    rule: ExclusionRule
    description: str
    raters: int
    only_this_rule: int


@dataclass(frozen=True)
class ExclusionSummary:
    """How many raters were evaluated and excluded in all, and by each rule (spec order).
    A rater who broke several rules counts once in ``excluded`` and under each rule."""

    raters: int
    excluded: int
    by_rule: tuple[RuleCount, ...]


def exclusion_summary(
    rules: Sequence[ExclusionRule], exclusions: Sequence[RaterExclusion]
) -> ExclusionSummary:
    """The summary of :func:`evaluate_exclusions`'s result under ``rules``."""
    return ExclusionSummary(
        raters=len(exclusions),
        excluded=sum(1 for exclusion in exclusions if exclusion.excluded),
        by_rule=tuple(
            RuleCount(
                rule=rule,
                description=rule.describe(),
                raters=sum(1 for e in exclusions if rule in e.broken),
                only_this_rule=sum(1 for e in exclusions if e.broken == (rule,)),
            )
            for rule in rules
        ),
    )


def split_judgements(
    judgements: pd.DataFrame,
    excluded_raters: Collection[str],
    check_ids: Collection[str] = (),
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(kept, excluded)``: the rows of ``judgements`` (the long table of
    :mod:`cyoa.rating.analysis.ratings`: story_id, source, rater_id, item, value, rationale) of the
    raters not in ``excluded_raters``, and of those in it; every column kept, row order kept,
    a fresh index. Rows of the ``check_ids`` items (attention checks, which are not the
    instrument's) are left out of both. Raises :class:`ValueError` without a ``rater_id``
    column.
    """
    missing = [column for column in ("rater_id", "item") if column not in judgements.columns]
    if missing:
        raise ValueError(
            f"The judgements have no {', '.join(missing)} column: give the long table of "
            "cyoa.rating.analysis.ratings (story_id, source, rater_id, item, value, rationale)."
        )
    rows = judgements[~judgements["item"].astype(str).isin({str(i) for i in check_ids})]
    out = rows["rater_id"].astype(str).isin({str(r) for r in excluded_raters})
    return rows[~out].reset_index(drop=True), rows[out].reset_index(drop=True)
