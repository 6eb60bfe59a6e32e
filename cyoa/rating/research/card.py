"""The evaluation card of a rating study: what a paper should report about it, filled in from
the spec, the instrument, the stored data, the analysis and what the researcher entered.

The sections follow the co-writing card (:mod:`cyoa.cowriting.research.card`) and so Karpinska,
Akoury and Iyyer (2021), "The Perils of Using Mechanical Turk to Evaluate Open-Ended Text
Generation" (EMNLP): the task, the instrument and its version, the rated attributes, the
scale and its labels, the instructions and consent, the stories (how many, from which
sources, how long), the raters per story (target and achieved), qualifications, quality
control (attention checks, exclusion rules and how many raters each excluded), agreement with
its interval, whether human references were shown, the pay and the time on task measured.

:func:`rating_card` renders a :class:`RatingCardData` (pure); :func:`load_card_data` reads one
from the database, and :func:`rating_card_markdown` does both for the web page and the bundle.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cyoa import store
from cyoa.db.facade import Db
from cyoa.languages import described, language_name
from cyoa.rating import planner
from cyoa.rating import store as rating_store
from cyoa.rating.analysis.ratings import RatingAnalysis
from cyoa.rating.analysis.render import agreement_warnings, alpha_cell
from cyoa.rating.analysis.report import RatingReport, rating_report
from cyoa.rating.instruments import Instrument
from cyoa.rating.instruments.definition import instrument_from_dict
from cyoa.rating.instruments.translation import as_read, translation_note
from cyoa.rating.quality import AttentionCheck, QualitySpec, quality_spec, story_words
from cyoa.rating.research.judges import card_lines, judge_list
from cyoa.rating.store import study_languages
from cyoa.web.card import header, planned_sample_size, quote
from cyoa.words import counted


@dataclass(frozen=True)
class CardStory:
    """One story of the study: its length in whitespace-separated words
    (:func:`cyoa.rating.quality.story_words`; 0 for a story shown as a link, or one whose
    text is not stored) and, for a generated story, the model card and version that wrote it
    and its ``origin`` (the prompt, sampling and seeds
    :func:`cyoa.rating.stories.generate.generate_stories` records); ``link``: whether the
    story is stored as a web address."""

    story_id: str
    source: str
    words: int
    model: str | None = None
    origin: Mapping[str, Any] = field(default_factory=dict)
    link: bool = False


@dataclass(frozen=True)
class RatingCardData:
    """What the card is made of. ``raters``: the rows of the ``raters`` table (``phase``,
    ``id_source``, ``started_at``, ``updated_at``); ``raters_per_story``: per story, the raters
    who answered about it; ``report``: the analysis with quality control, ``None`` before the
    first judgement; ``judges``: the judge panels (:func:`cyoa.rating.research.judges.judge_list`),
    apart from the human ``raters``."""

    experiment_id: str
    title: str
    spec: Mapping[str, Any]
    instrument: Instrument
    quality: QualitySpec
    stories: tuple[CardStory, ...]
    raters: tuple[Mapping[str, Any], ...]
    raters_per_story: Mapping[str, int]
    report: RatingReport | None
    judges: tuple[Mapping[str, Any], ...] = ()


def _spread(values: Sequence[float], digits: int = 0) -> str:
    """Median (IQR q1–q3, range min–max; n) of ``values``. Quartiles by
    :func:`statistics.quantiles` with the inclusive method (linear interpolation between
    the values, so they stay within the range however few there are)."""
    if not values:
        return "not measured yet"
    median = statistics.median(values)
    if len(values) < 2:
        return f"{median:.{digits}f} (one value)"
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (
        f"median {median:.{digits}f} (IQR {q1:.{digits}f}–{q3:.{digits}f}, range "
        f"{min(values):.{digits}f}–{max(values):.{digits}f}; n = {len(values)})"
    )


def _raters(count: int) -> str:
    return f"{count} rater" + ("" if count == 1 else "s")


def _agreement_lines(label: str, analysis: RatingAnalysis) -> list[str]:
    rows = [entry for entry in analysis.agreement if entry.scope == "all"]
    if not rows:
        return [f"{label}: no item has two raters of one story yet.", ""]
    lines = [
        f"{label} (Krippendorff's α with a 95% percentile bootstrap interval over stories, each "
        f"story with all its items, {analysis.bootstrap:,} replicates, seed {analysis.seed}; "
        "all sources):",
        "",
        "| item | level | α [95% CI] | stories | % all agree |",
        "|---|---|---|---|---|",
    ]
    for entry in rows:
        share = entry.exact.share
        lines.append(
            f"| {entry.item_id} | {entry.alpha.level} | {alpha_cell(entry)} | "
            f"{entry.alpha.stories} | {'–' if share is None else f'{100 * share:.0f}%'} |"
        )
    warned = agreement_warnings(tuple(rows))
    return lines + [""] + [f"- ‡ {warning}" for warning in warned] + ([""] if warned else [])


def _items_lines(instrument: Instrument) -> list[str]:
    probes = [item for item in instrument.items if item.fei_kind]
    if probes:
        kinds = Counter(item.fei_kind for item in probes)
        stories = len({item.story_id for item in probes})
        return [
            f"- {len(probes)} true/false questions about {stories} stories (Fabula Entropy "
            f"Indexing): {kinds.get('transitional', 0)} transitional (about the plot's "
            f"turns), {kinds.get('world', 0)} world (about the story world); each asked about "
            "its own story only."
        ]
    lines = []
    for item in instrument.items:
        group = f" [{item.factor}]" if item.factor else ""
        name = f"{item.category}: " if item.category else ""
        keyed = " (reverse-keyed)" if item.reverse else ""
        lines.append(f"- `{item.id}`{group} {name}{item.text}{keyed}")
    return lines


def _translations_shown(data: RatingCardData) -> list[Instrument]:
    """The instrument as raters read it in each of the study's languages that is not its
    own (its translations: the study was refused without them)."""
    shown = (as_read(data.instrument, language) for language in study_languages(data.spec))
    return [instrument for instrument in shown if instrument.translation is not None]


def _language_lines(data: RatingCardData) -> list[str]:
    """In which languages raters read the items, each translation marked as such."""
    lines = [f"- Items written in {language_name(data.instrument.language)}."]
    for shown in _translations_shown(data):
        note = translation_note(shown.translation)
        lines.append(f"- Shown in {language_name(shown.language)}: {note}.")
    return lines


def _translated_items(data: RatingCardData) -> list[str]:
    lines = []
    for shown in _translations_shown(data):
        lines += [
            f"As raters read them in {language_name(shown.language)} (a translation, not the "
            "validated instrument):",
            "",
            *_items_lines(shown),
            *(
                f"- Labels of `{item.id}`: {', '.join(item.labels)}"
                for item in shown.translation.items
                if item.labels
            ),
            "",
        ]
    return lines


def _scale_lines(instrument: Instrument) -> list[str]:
    lines = []
    shapes: dict[tuple, list] = {}
    for item in instrument.items:
        shape = (item.kind, item.points, item.low, item.labels, item.rationale)
        shapes.setdefault(shape, []).append(item)
    for (kind, points, low, labels, rationale), items in shapes.items():
        which = f"{len(items)} item{'s' if len(items) != 1 else ''}"
        if kind == "likert":
            numbers = tuple(str(point) for point in items[0].scale)
            named = ", ".join(f"{n} = {label}" for n, label in zip(numbers, labels, strict=False))
            if labels == numbers:
                named = ""
            span = "" if low == 1 else f" from {low} to {items[0].high}"
            lines.append(
                f"- {which}: {points}-point Likert scale{span}, {named or 'numbered points'}."
            )
        elif kind == "yes_no":
            why = " with a written rationale" if rationale else ""
            lines.append(f"- {which}: Yes or No{why}.")
        elif kind == "true_false":
            lines.append(f"- {which}: true or false.")
        else:
            lines.append(f"- {which}: free text.")
    return lines


def _check_answer(check: AttentionCheck) -> str:
    if check.item.kind == "likert":
        labels = check.item.labels
        point = int(check.answer)
        return f"point {point}" + (f" ({labels[point - 1]})" if labels else "")
    if check.item.kind == "yes_no":
        return "Yes" if check.answer == 1 else "No"
    return "true" if check.answer == 1 else "false"


def _quality_lines(data: RatingCardData) -> list[str]:
    report = data.report
    qualities = report.review.qualities if report else ()
    lines = ["Attention checks (scored apart from the instrument):", ""]
    if not data.quality.checks:
        lines.append("- none in the spec.")
    for check in data.quality.checks:
        answered = [r for q in qualities for r in q.checks if r.check_id == check.id]
        failed = sum(1 for r in answered if not r.passed)
        where = f"with story {check.story_id}" if check.story_id else "with every story"
        lines.append(
            f"- `{check.id}` ({where}): {check.item.text} Right answer: "
            f"{_check_answer(check)}. Answered {len(answered)} times, failed {failed}."
        )
    lines += ["", "Exclusion rules, written in the spec before the study opened:", ""]
    if not data.quality.exclusions:
        lines.append("- none: every rater is analysed.")
    elif report is None:
        lines += [f"- {rule.describe()}: no rater yet." for rule in data.quality.exclusions]
    else:
        lines += [
            f"- {count.description}: broken by {_raters(count.raters)}, {count.only_this_rule} "
            "of them by this rule alone."
            for count in report.review.summary.by_rule
        ]
        lines.append(
            f"- In all {report.review.summary.excluded} of {report.review.summary.raters} "
            "raters excluded. The analysis is reported with every rater and, when any is "
            "excluded, without them; excluded raters stay in the rater export, flagged."
        )
    return lines


def _cell(text: str) -> str:
    """``text`` as one cell of a markdown table."""
    return " ".join(text.split()).replace("|", "\\|") or "–"


def _generated_lines(stories: tuple[CardStory, ...]) -> list[str]:
    """A row per generated story: the prompt it continued, the system's sampling, and the
    seed of each sentence, so another researcher can generate it again."""
    generated = [story for story in stories if story.origin.get("generated")]
    if not generated:
        return []
    lines = [
        "",
        "Generated stories (each sentence sampled with its own seed, in order):",
        "",
        "| story | model | prompt | sampling | seeds |",
        "|---|---|---|---|---|",
    ]
    for story in generated:
        origin = story.origin
        sampling = json.dumps(origin.get("sampling", {}), sort_keys=True)
        seeds = ", ".join(str(seed) for seed in origin.get("seeds", []))
        lines.append(
            f"| {story.story_id} | {story.model or '–'} | {_cell(str(origin.get('prompt', '')))} "
            f"| `{sampling}` | {seeds or '–'} |"
        )
    return lines + _length_lines(generated)


def _length_lines(generated: list[CardStory]) -> list[str]:
    """How close the stories written to a target length came to it (``origin.length_control``,
    :mod:`cyoa.rating.stories.length`), naming every story kept outside the tolerance."""
    controls = {
        story.story_id: story.origin["length_control"]
        for story in generated
        if "length_control" in story.origin
    }
    if not controls:
        return []
    missed = {story: c for story, c in controls.items() if not c.get("within_tolerance")}
    line = (
        "Written to a target length (Chakrabarty et al., CHI 2024, §5.1: the model writes, then "
        f"is asked to lengthen its story): {len(controls) - len(missed)} of {len(controls)} "
        "within the tolerance."
    )
    if missed:
        named = ", ".join(
            f"{story} ({c.get('words')} words of {c.get('target_words')} after "
            f"{c.get('rounds')} rounds)"
            for story, c in missed.items()
        )
        line += f" Kept outside it: {named}."
    return ["", line]


def _story_lines(data: RatingCardData) -> list[str]:
    by_source: dict[str, list[CardStory]] = {}
    for story in data.stories:
        by_source.setdefault(story.source, []).append(story)
    lines = [
        f"- {counted(len(data.stories), 'story')} from {counted(len(by_source), 'source')}; "
        "length in words "
        f"(whitespace-separated): {_spread([s.words for s in data.stories if s.words])}.",
        "",
        "| source | stories | words | written by |",
        "|---|---|---|---|",
    ]
    for source, stories in sorted(by_source.items()):
        models = sorted({s.model for s in stories if s.model})
        lines.append(
            f"| {source} | {len(stories)} | {_spread([s.words for s in stories if s.words])} | "
            f"{', '.join(models) or '–'} |"
        )
    lines += _generated_lines(data.stories)
    links = sum(1 for story in data.stories if story.link and not story.words)
    if links:
        shown = "is shown as a link (its" if links == 1 else "are shown as a link (their"
        lines += ["", f"{counted(links, 'story')} {shown} text is not stored)."]
    untold = [story.story_id for story in data.stories if not story.link and not story.words]
    if untold:
        have = "has" if len(untold) == 1 else "have"
        lines += [
            "",
            f"{counted(len(untold), 'story')} {have} no text stored (neither a text nor a link): "
            f"{', '.join(untold)}; their judgements are analysed all the same.",
        ]
    where = data.spec.get("stories")
    if isinstance(where, dict):
        lines += [
            "",
            f"Stories from the spec's `[stories]`: `{json.dumps(where, sort_keys=True)}`.",
        ]
    if "import" in data.spec:
        origin = json.dumps(data.spec["import"], sort_keys=True)
        lines += ["", f"Judgements and stories imported (collected elsewhere): `{origin}`."]
    for number, table in enumerate(data.spec.get("corrupt", []), start=1):
        lines.append(
            f"Corrupted control {number} (FEI §5, labelled as its own source): "
            f"`{json.dumps(table, sort_keys=True)}`."
        )
    return lines


def _task_lines(data: RatingCardData) -> list[str]:
    if "import" in data.spec:
        return [
            "Rating study collected elsewhere and imported: raters read stories and answered "
            "the instrument about each (see Stories for where the data came from)."
        ]
    order = (
        "The AISS items come in a random order per rater, as the scale's authors advise."
        if data.instrument.id == "aiss-v1"
        else "The items come in the instrument's order."
    )
    return [
        f"Rating study: each rater reads {data.spec.get('stories_per_rater', 1)} stories, one at "
        "a time, and answers the instrument about each, with any attention checks among the "
        "items. Stories are assigned least-rated first, balanced across sources, and a rater "
        f"never sees two copies of one story nor any story's source. {order}",
        "",
        described(data.spec),
    ]


def _time_lines(report: RatingReport | None) -> list[str]:
    times = [s for q in (report.review.qualities if report else ()) for s in q.stories]
    seconds = [s.seconds for s in times if s.seconds is not None]
    speeds = [s.words_per_minute for s in times if s.words_per_minute is not None]
    return [
        "Measured on the server, per rater × story, from when the story was first shown to its "
        "last answer (reading and answering):",
        "",
        f"- Seconds per story: {_spread(seconds)}.",
        f"- Words per minute (the story's words over that time; a lower bound on the reading "
        f"speed): {_spread(speeds)}.",
    ]


def rating_card(
    data: RatingCardData,
    details: Mapping[str, Any],
    now: datetime,
    plan: Mapping[str, Any] | None = None,
) -> str:
    """The card as Markdown; ``details`` is what the researcher entered (``pay``,
    ``qualifications``; :func:`cyoa.store.get_evaluation_details`), ``plan`` the latest
    stored plan (:func:`cyoa.store.latest_plan`)."""
    lines = [
        *_header_and_instrument(data, now),
        *_instructions_and_stories(data),
        *_raters_per_story(data),
        *planned_sample_size(plan, data.experiment_id, planner.design),
        *_qualifications_and_agreement(data, details),
        *_references_pay_and_time(data, details),
        *card_lines(list(data.judges), data.report),
    ]
    return "\n".join(lines)


def _header_and_instrument(data: RatingCardData, now: datetime) -> list[str]:
    """The card's title and source, the task, the instrument, its items and its scales."""
    instrument = data.instrument
    return [
        *header(data.title, data.experiment_id, now),
        "## Task",
        "",
        *_task_lines(data),
        "",
        "## Instrument",
        "",
        f"- {instrument.name} (`{instrument.id}`, version {instrument.version}), "
        f"{len(instrument.items)} items.",
        f"- Reference: {instrument.reference or '–'}",
        f"- Attribution: {instrument.attribution or '–'}",
        *_language_lines(data),
        "",
        "## Rated attributes",
        "",
        *_items_lines(instrument),
        "",
        *_translated_items(data),
        "## Scale and labels",
        "",
        *_scale_lines(instrument),
        "",
    ]


def _instructions_and_stories(data: RatingCardData) -> list[str]:
    """The texts the raters were shown, and the stories they rated."""
    instrument = data.instrument
    return [
        "## Instructions",
        "",
        "Shown to raters before the first story:",
        "",
        *quote(str(data.spec.get("instructions", ""))),
        "",
        "The instrument's own instructions:",
        "",
        *quote(instrument.instructions),
        "",
        "Consent text:",
        "",
        *quote(str(data.spec.get("consent", ""))),
        "",
        "## Stories",
        "",
        *_story_lines(data),
        "",
    ]


def _raters_per_story(data: RatingCardData) -> list[str]:
    """How many raters each story had against the target, how many raters started, finished
    or were excluded, the judgements, and when the data were collected."""
    report = data.report
    per_story = [data.raters_per_story.get(story.story_id, 0) for story in data.stories]
    started = [r for r in data.raters if r.get("id_source") != "import"]
    finished = sum(1 for r in data.raters if r.get("phase") == "done")
    imported = len(data.raters) - len(started)
    first = min((r["started_at"] for r in started if r.get("started_at")), default=None)
    last = max((r["updated_at"] for r in started if r.get("updated_at")), default=None)
    target = data.spec.get("raters_per_story", "not set")
    return [
        "## Raters per story",
        "",
        f"- Target: {target}. Achieved (raters who answered about the story): "
        + (
            f"min {min(per_story)}, median {statistics.median(per_story):g}, max "
            f"{max(per_story)}; {sum(1 for n in per_story if n >= target)} of {len(per_story)} "
            "stories reached the target."
            if per_story and isinstance(target, int)
            else "no stories."
        ),
        f"- Raters who started: {len(started)}; finished every story: {finished}; excluded: "
        f"{report.review.summary.excluded if report else 0}"
        + (f"; imported (judged elsewhere): {imported}" if imported else "")
        + ".",
        f"- Judgements: {report.all_raters.judgements if report else 0}.",
        f"- Data collected from {first or '–'} to {last or '–'} (server time, UTC).",
        "",
    ]


def _qualifications_and_agreement(data: RatingCardData, details: Mapping[str, Any]) -> list[str]:
    """The qualifications the researcher entered, the quality control, and the agreement
    between raters (with every rater, and without the excluded ones)."""
    lines = [
        "## Qualifications and quality control",
        "",
        "Entered by the researcher:",
        "",
        *quote(details.get("qualifications") or "(not entered)"),
        "",
        *_quality_lines(data),
        "",
        "## Agreement",
        "",
    ]
    if data.report is None:
        lines += ["No judgements yet.", ""]
    else:
        lines += _agreement_lines("With every rater", data.report.all_raters)
        if data.report.kept_raters is not None:
            lines += _agreement_lines("Without the excluded raters", data.report.kept_raters)
    return lines


def _references_pay_and_time(data: RatingCardData, details: Mapping[str, Any]) -> list[str]:
    """Whether references were shown, the pay, the time on task, and the bundle's files."""
    return [
        "## Human references shown",
        "",
        "No. Each rater reads one story at a time and is never shown a reference story or "
        "any story's source; a human-written source, if the study has one, is rated like the "
        "others.",
        "",
        "## Pay",
        "",
        *quote(details.get("pay") or "(not entered)"),
        "",
        "## Time on task (measured)",
        "",
        *_time_lines(data.report),
        "",
        "## Files in the bundle",
        "",
        "`judgements`, `stories`, `raters` as CSV and Parquet; `data-dictionary.md` (every "
        "column); `experiment-spec.json`; this card.",
        "",
    ]


def load_card_data(db: Db, exp_id: str, report: RatingReport | None = None) -> RatingCardData:
    """The stored rating experiment ``exp_id`` as the card needs it. ``report``: its
    :func:`~cyoa.rating.analysis.report.rating_report` when already computed; otherwise it
    is computed here (``None`` without judgements)."""
    row = store.get_experiment(db, exp_id)
    spec = json.loads(row["spec"])
    definition = db.execute(
        "SELECT definition FROM instruments WHERE experiment_id = ?", [exp_id]
    ).fetchone()
    instrument = instrument_from_dict(json.loads(definition[0]))
    story_rows = rating_store.rating_rows(db, exp_id, "stories")
    stories = []
    for story in story_rows:
        origin = json.loads(story["origin"] or "{}")
        model = origin.get("model")
        if model and origin.get("model_version"):
            model = f"{model} ({origin['model_version']})"
        stories.append(
            CardStory(
                story["story_id"],
                story["source"],
                story_words(story["text"] or ""),
                model,
                origin,
                link=bool(story["url"]),
            )
        )
    judged = {
        r["story_id"]: r["n"]
        for r in db.query(
            "SELECT j.story_id, count(DISTINCT j.rater_id) AS n FROM judgements j JOIN raters r"
            " ON r.experiment_id = j.experiment_id AND r.rater_id = j.rater_id"
            " WHERE j.experiment_id = ? AND r.panel = ? GROUP BY j.story_id",
            [exp_id, rating_store.HUMAN_PANEL],
        )
    }
    if report is None and judged:
        report = rating_report(db, exp_id, judges=True)
    return RatingCardData(
        experiment_id=exp_id,
        title=row["title"],
        spec=spec,
        instrument=instrument,
        quality=quality_spec(spec, exp_id, instrument, {s.story_id for s in stories}),
        stories=tuple(stories),
        raters=tuple(
            row
            for row in rating_store.rating_rows(db, exp_id, "raters")
            if row["panel"] == rating_store.HUMAN_PANEL
        ),
        raters_per_story=judged,
        report=report if judged else None,
        judges=tuple(judge_list(db, exp_id, spec)),
    )


def rating_card_markdown(
    db: Db, exp_id: str, now: datetime, report: RatingReport | None = None
) -> str:
    """The card of the stored rating experiment ``exp_id`` with the researcher's entries."""
    return rating_card(
        load_card_data(db, exp_id, report),
        store.get_evaluation_details(db, exp_id),
        now,
        store.latest_plan(db, exp_id),
    )
