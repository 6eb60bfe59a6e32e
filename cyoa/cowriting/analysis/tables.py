"""The paper's tables from a stored experiment (Clark & Smith, 2021), with this project's tests.

:func:`analyze` builds every table from :class:`~cyoa.cowriting.analysis.data.StudyData`:

- Tables 1/4 (:func:`preference_table`): % of rounds in which the first system was chosen,
  overall and per round; exact binomial test against 0.5 (alternative explicit, two-sided by
  default) with a Clopper–Pearson 95% interval; writer-clustered bootstrap interval and
  writer-level t-test; position bias (slot 1 against slot 2). Rounds in which one suggestion
  failed are left out: the writer had no choice.
- Tables 2/5 and 7/8 (:func:`edit_table`): ED, JS and USER of the accepted suggestions
  (the model's chosen text against the writer's final text), per system and pooled
  ("Overall": every accepted suggestion, so the acceptance-weighted mean of the two systems),
  over all rounds and per round; Mann–Whitney U per metric between the systems, rank-biserial
  effect size, Holm's correction across the metrics.
- Tables 3/6 (:func:`text_table`): per writer, one text of all of a system's suggestions
  (accepted or not) and one of the writer's own lines; sentence length, distinct-n and
  concreteness computed per text, then averaged over writers; plus corpus-level distinct-n.
- Likert items (:func:`likert_rows`): counts per level, mean and median, per pair of systems.
- Writers as the unit (:func:`writer_level`), CYOA's own headline: the preference of the
  mean writer with the t-test and t interval of the writers' shares (the binomial above is
  kept beside it as Clark & Smith's, whose rounds it treats as independent); the per-round
  binomial p-values Holm-adjusted across rounds; each edit metric compared within writers
  (:func:`~cyoa.stats.writer_difference`, Holm across the metrics; the Mann–Whitney above is
  the paper's); and the anytime-valid monitoring (:mod:`.monitoring`).

``analyze(..., compat="cyoa-2021")`` instead computes what the original evaluation script did
(:mod:`cyoa.cowriting.analysis.compat`).
"""

from __future__ import annotations

import math
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from typing import Literal

from cyoa.cowriting.analysis.data import RoundRecord, StudyData
from cyoa.cowriting.analysis.monitoring import monitoring
from cyoa.cowriting.analysis.results import (
    HUMAN,
    OVERALL,
    Analysis,
    EditMetricRow,
    EditTable,
    LikertRow,
    Mean,
    PreferenceTable,
    ShareRow,
    TextMetricRow,
    TextTable,
    WriterEditRow,
    WriterLevel,
)
from cyoa.cowriting.process import exclusion
from cyoa.errors import AnalysisError
from cyoa.languages import language_name
from cyoa.metrics.edit import Variant, edit_metrics_many
from cyoa.metrics.text import (
    LemmaCache,
    TextProfile,
    corpus_distinct_n,
    not_computed,
    text_profiles,
)
from cyoa.metrics.tokens import WORDS_RULE, is_english
from cyoa.stats import (
    ALTERNATIVES,
    Alternative,
    Preference,
    clustered_preference,
    holm,
    likert_summary,
    mann_whitney,
    position_bias,
    preference,
    writer_difference,
)

Compat = Literal["cyoa-2021"]
COMPAT_MODES: tuple[Compat, ...] = ("cyoa-2021",)

# Writers from which worker processes pay off (each worker loads spaCy first).
PARALLEL_FROM_WRITERS = 1000


def edit_metric_labels(variant: Variant) -> tuple[tuple[str, str], ...]:
    """The edit metrics of Tables 2/5 and 7/8: (column of ``edit_metrics``, label with unit)."""
    user = "USER precision (×100)" if variant == "storium" else "USER F (×100)"
    return (
        ("edit_distance", "ED (characters)"),
        ("edit_distance_norm", "ED / longer text (fraction)"),
        ("jaccard", "JS (×100)"),
        ("jaccard_normalized", "JS lowercased, punctuation stripped (×100)"),
        ("user", user),
    )


def _workers(workers: int | None, writers: int) -> int:
    if workers is not None:
        return max(1, workers)
    return (os.cpu_count() or 1) if writers >= PARALLEL_FROM_WRITERS else 1


def _mean(values: Sequence[float]) -> Mean:
    return Mean(sum(values) / len(values) if values else None, len(values))


def _share_row(label: str, number: int | None, test: Preference) -> ShareRow:
    return ShareRow(
        label=label,
        round=number,
        chosen=test.chosen,
        total=test.total,
        share=test.share,
        p_value=test.p_value,
        alternative=test.alternative,
        ci_low=test.ci_low,
        ci_high=test.ci_high,
    )


def _counts_row(label: str, number: int | None, chosen: int, total: int) -> ShareRow:
    return ShareRow(label, number, chosen, total, chosen / total if total else None)


def preference_table(
    data: StudyData,
    alternative: Alternative = "two-sided",
    resamples: int = 10_000,
    seed: int = 0,
) -> PreferenceTable | None:
    """Tables 1/4: how often the first system was chosen (``None`` without a counted round).

    Counted rounds: both suggestions shown (:attr:`RoundRecord.counts_for_preference`).
    Each row: exact binomial test of H0 share = 0.5 with ``alternative`` and the two-sided
    95% Clopper–Pearson interval (:func:`~cyoa.stats.preference`). Writer level:
    :func:`~cyoa.stats.clustered_preference` over writers with a counted round
    (needs two). Position bias: share of counted rounds whose slot-1 suggestion was chosen
    (:func:`~cyoa.stats.position_bias`), unless the slot order was not recorded.
    """
    first, second = data.systems
    counted = [r for r in data.rounds if r.counts_for_preference]
    if not counted:
        return None
    rows = [_share_row(OVERALL, None, _preference_of(counted, first, alternative))]
    by_round: dict[int, list[RoundRecord]] = defaultdict(list)
    for record in counted:
        by_round[record.round].append(record)
    for number in sorted(by_round):
        test = _preference_of(by_round[number], first, alternative)
        rows.append(_share_row(f"Round {number}", number, test))

    per_writer: dict[str, list[int]] = {}
    for record in counted:
        chosen_rounds = per_writer.setdefault(record.session_id, [0, 0])
        chosen_rounds[0] += record.chosen_system == first
        chosen_rounds[1] += 1
    clustered = None
    if len(per_writer) >= 2:
        clustered = clustered_preference(
            [tuple(pair) for pair in per_writer.values()],
            alternative=alternative,
            resamples=resamples,
            seed=seed,
        )
    position = None
    if data.slot_order_recorded:
        slot1 = sum(record.chosen_slot == 1 for record in counted)
        position = _share_row(
            "Slot 1 chosen", None, position_bias(slot1, len(counted), alternative)
        )
    return PreferenceTable(
        system=first,
        other=second,
        rows=tuple(rows),
        excluded_rounds=len(data.rounds) - len(counted),
        clustered=clustered,
        position=position,
        method=(
            f"exact binomial test against 0.5, {alternative}; two-sided 95% Clopper–Pearson "
            "interval"
        ),
    )


def _preference_of(rounds: list[RoundRecord], system: str, alternative: Alternative) -> Preference:
    chosen = sum(record.chosen_system == system for record in rounds)
    return preference(chosen, len(rounds), alternative)


def edit_scores(data: StudyData, variant: Variant = "cyoa-2021", workers: int = 1) -> list[dict]:
    """:func:`~cyoa.metrics.edit.edit_metrics` of each round's ``(chosen_suggestion,
    final_text)``, in the order of ``data.rounds``, in the study's language."""
    return edit_metrics_many(
        [(r.chosen_suggestion, r.final_text) for r in data.rounds],
        variant,
        n_process=workers,
        language=data.language,
    )


def edit_table(
    data: StudyData,
    alternative: Alternative = "two-sided",
    variant: Variant = "cyoa-2021",
    workers: int = 1,
    scores: list[dict] | None = None,
) -> EditTable | None:
    """Tables 2/5 and 7/8: edit metrics of accepted suggestions (``None`` without rounds).

    Each submitted round contributes one value per metric, to the system the writer chose:
    :func:`~cyoa.metrics.edit.edit_metrics` of ``(chosen_suggestion, final_text)`` with the
    USER ``variant``. :data:`OVERALL` pools both systems' values. The test per metric is
    :func:`~cyoa.stats.mann_whitney` with x = first system, y = second system and
    ``alternative``; the p-values of the metrics with a test are Holm-adjusted together.
    ``scores``: :func:`edit_scores` of ``data`` when already computed.
    """
    if not data.rounds:
        return None
    first, second = data.systems
    if scores is None:
        scores = edit_scores(data, variant, workers)
    rows: list[EditMetricRow] = []
    for metric, label in edit_metric_labels(variant):
        values: dict[str, list[float]] = {first: [], second: []}
        by_round: dict[int, dict[str, list[float]]] = defaultdict(lambda: {first: [], second: []})
        for record, score in zip(data.rounds, scores, strict=True):
            if record.chosen_system in values:
                values[record.chosen_system].append(score[metric])
                by_round[record.round][record.chosen_system].append(score[metric])
        test = None
        if values[first] and values[second]:
            test = mann_whitney(values[first], values[second], alternative)
        rows.append(
            EditMetricRow(
                metric=metric,
                label=label,
                overall=_system_means(values, first, second),
                by_round={n: _system_means(by_round[n], first, second) for n in sorted(by_round)},
                test=test,
                p_holm=None,
            )
        )
    tested = [i for i, row in enumerate(rows) if row.test and not math.isnan(row.test.p_value)]
    adjusted = holm([rows[i].test.p_value for i in tested])
    for i, p in zip(tested, adjusted, strict=True):
        rows[i] = replace(rows[i], p_holm=p)
    return EditTable(
        systems=(first, second),
        rows=tuple(rows),
        method=(
            f"Mann–Whitney U (exact or permutation p for small samples, else the normal "
            f"approximation; cyoa.stats.mann_whitney), x = {first}, y = {second}, {alternative}; "
            f"rank-biserial r = 2U/(n_x·n_y) − 1 (positive: {first} larger); Holm across "
            f"{len(tested)} metrics"
        ),
    )


def writer_edit_rows(
    data: StudyData,
    scores: list[dict],
    alternative: Alternative = "two-sided",
    variant: Variant = "cyoa-2021",
) -> tuple[WriterEditRow, ...]:
    """Each edit metric compared within writers: per writer, the values of the suggestions
    they accepted from the first system and from the second (``scores`` as
    :func:`edit_scores` gives them), tested by :func:`~cyoa.stats.writer_difference`
    (first minus second, ``alternative``); Holm across the metrics with a p-value."""
    first, second = data.systems
    rows = []
    for metric, label in edit_metric_labels(variant):
        per_writer: dict[str, tuple[list[float], list[float]]] = {}
        for record, score in zip(data.rounds, scores, strict=True):
            if record.chosen_system in (first, second):
                of_first, of_second = per_writer.setdefault(record.session_id, ([], []))
                (of_first if record.chosen_system == first else of_second).append(score[metric])
        test = writer_difference(per_writer.values(), alternative)
        rows.append(WriterEditRow(metric, label, test, None))
    tested = [i for i, row in enumerate(rows) if not math.isnan(row.test.p_value)]
    for i, p in zip(tested, holm([rows[i].test.p_value for i in tested]), strict=True):
        rows[i] = replace(rows[i], p_holm=p)
    return tuple(rows)


def writer_level(
    data: StudyData,
    preference_result: PreferenceTable | None,
    scores: list[dict],
    alternative: Alternative = "two-sided",
    variant: Variant = "cyoa-2021",
    planned_writers: int | None = None,
) -> WriterLevel:
    """The analysis with the writer as the unit (see the module docstring): the headline
    preference row from the writers' t-test and t interval, the per-round p-values
    Holm-adjusted across rounds, the within-writer edit tests, and the monitoring against the
    ``planned_writers``."""
    headline = None
    writers = 0
    round_p_holm: dict[int, float] = {}
    if preference_result is not None:
        clustered = preference_result.clustered
        if clustered is not None:
            writers = clustered.writers
            headline = ShareRow(
                label="Writers (headline)",
                round=None,
                chosen=clustered.chosen,
                total=clustered.total,
                share=clustered.mean_writer_share,
                p_value=clustered.p_value,
                alternative=clustered.alternative,
                ci_low=clustered.t_low,
                ci_high=clustered.t_high,
            )
        per_round = [row for row in preference_result.rows if row.round is not None]
        adjusted = holm([row.p_value for row in per_round if row.p_value is not None])
        round_p_holm = {row.round: p for row, p in zip(per_round, adjusted, strict=True)}
    return WriterLevel(
        headline=headline,
        writers=writers,
        round_p_holm=round_p_holm,
        edits=writer_edit_rows(data, scores, alternative, variant) if data.rounds else (),
        edits_method=(
            f"paired t-test of writer-level differences (cyoa.stats.writer_difference): per "
            f"writer who accepted suggestions of both, their mean for {data.systems[0]} minus "
            f"their mean for {data.systems[1]}; mean difference with its 95% t interval, "
            f"{alternative}; d_z = mean ÷ SD of the differences; Holm across the metrics"
        ),
        monitoring=monitoring(data, planned_writers),
    )


def _system_means(values: dict[str, list[float]], first: str, second: str) -> dict[str, Mean]:
    return {
        first: _mean(values[first]),
        second: _mean(values[second]),
        OVERALL: _mean(values[first] + values[second]),
    }


def writer_texts(data: StudyData) -> dict[str, list[str]]:
    """Per source (each system, then HUMAN): one text per writer, in writer order."""
    first, second = data.systems
    parts: dict[str, dict[str, list[str]]] = {
        source: defaultdict(list) for source in (first, second, HUMAN)
    }
    for record in data.rounds:
        for system in (first, second):
            suggestion = record.suggestion_of(system)
            if suggestion is not None:
                parts[system][record.session_id].append(suggestion)
        parts[HUMAN][record.session_id].append(record.writer_line)
    return {
        source: [" ".join(parts[source][sid]) for sid in data.writers]
        for source in (first, second, HUMAN)
    }


_PROFILE_METRICS: tuple[tuple[str, str], ...] = (
    ("mean_sentence_length", "Sentence length (words)"),
    ("distinct_1", "distinct-1 (fraction)"),
    ("distinct_2", "distinct-2 (fraction)"),
    ("distinct_3", "distinct-3 (fraction)"),
    ("noun_concreteness", "Noun concreteness (1–5)"),
    ("verb_concreteness", "Verb concreteness (1–5)"),
)


# The text metrics of a study in any language; the others are English-only.
_ANY_LANGUAGE = frozenset({"distinct_1", "distinct_2", "distinct_3"})


def _profile_value(profile: TextProfile, metric: str) -> float | None:
    if metric == "noun_concreteness":
        return profile.concreteness.noun.mean
    if metric == "verb_concreteness":
        return profile.concreteness.verb.mean
    return getattr(profile, metric)


def text_table(
    data: StudyData, workers: int = 1, cache: LemmaCache | None = None
) -> TextTable | None:
    """Tables 3/6: text metrics per system and for the writers' own lines.

    Per writer and source, one text: the writer's suggestions from that system (accepted or
    not, the last successful attempt of each round) or the writer's own lines, in round order,
    joined by spaces. Each metric is computed per text (:func:`~cyoa.metrics.text.
    text_profiles`), then averaged over the writers where it is defined (``n``). Coverage rows:
    rated / tagged lemmas pooled over the source's texts. Corpus rows: distinct-n of Li et al.
    (2016) over every single suggestion (or line) of the source, n-grams never spanning two.

    A study in another language than English (``data.language``) gets distinct-n on the words
    of its script (:mod:`cyoa.metrics.tokens`) and no sentence length, concreteness or
    coverage row: they are English-only, and ``not_computed`` says so.
    """
    if not data.rounds:
        return None
    english = is_english(data.language)
    texts = writer_texts(data)
    sources = tuple(texts)
    all_texts = [text for source in sources for text in texts[source]]
    profiles = text_profiles(all_texts, n_process=workers, cache=cache, language=data.language)
    per_source: dict[str, list[TextProfile]] = {}
    for index, source in enumerate(sources):
        count = len(data.writers)
        per_source[source] = profiles[index * count : (index + 1) * count]

    rows: list[TextMetricRow] = []
    for metric, label in _PROFILE_METRICS:
        if not english and metric not in _ANY_LANGUAGE:
            continue
        values: dict[str, float | None] = {}
        counts: dict[str, int] = {}
        for source in sources:
            defined = [
                value
                for value in (_profile_value(p, metric) for p in per_source[source])
                if value is not None
            ]
            values[source] = _mean(defined).mean
            counts[source] = len(defined)
        rows.append(TextMetricRow(metric, label, values, counts))
    if english:
        rows += _coverage_rows(per_source)
    rows += _corpus_rows(data, sources)
    return TextTable(
        sources=sources,
        rows=tuple(rows),
        method=(
            "per writer: all of a system's suggestions (accepted or not) joined, and the "
            "writer's own lines joined; metric per text, then the mean over writers where it "
            "is defined (n); "
            + (
                "sentences by spaCy's sentencizer, tags by en_core_web_sm"
                if english
                else f"words of any script ({WORDS_RULE})"
            )
        ),
        not_computed=not_computed(data.language),
    )


def _coverage_rows(per_source: dict[str, list[TextProfile]]) -> list[TextMetricRow]:
    """Rated / tagged noun and verb lemmas, pooled over each source's texts."""
    rows = []
    for pos in ("noun", "verb"):
        values, counts = {}, {}
        for source, profiles in per_source.items():
            scores = [getattr(p.concreteness, pos) for p in profiles]
            tagged = sum(score.tagged for score in scores)
            values[source] = sum(score.rated for score in scores) / tagged if tagged else None
            counts[source] = tagged
        label = f"{pos.capitalize()} lemmas rated (fraction)"
        rows.append(TextMetricRow(f"{pos}_coverage", label, values, counts))
    return rows


def _corpus_rows(data: StudyData, sources: tuple[str, ...]) -> list[TextMetricRow]:
    """Li et al.'s corpus distinct-n over every single suggestion (or line) of each source."""
    singles = _single_texts(data)
    return [
        TextMetricRow(
            f"corpus_distinct_{n}",
            f"Corpus distinct-{n} (Li et al. 2016, per token)",
            {
                source: corpus_distinct_n(singles[source], n, language=data.language)
                for source in sources
            },
            {source: len(singles[source]) for source in sources},
        )
        for n in (1, 2, 3)
    ]


def _single_texts(data: StudyData) -> dict[str, list[str]]:
    first, second = data.systems
    singles: dict[str, list[str]] = {first: [], second: [], HUMAN: []}
    for record in data.rounds:
        for system in (first, second):
            suggestion = record.suggestion_of(system)
            if suggestion is not None:
                singles[system].append(suggestion)
        singles[HUMAN].append(record.writer_line)
    return singles


def likert_rows(data: StudyData) -> tuple[LikertRow, ...]:
    """Likert summary per item for the pair, over the sessions that submitted the survey (an
    item such a session did not answer counts as ``missing``)."""
    values = {
        (answer.session_id, answer.item_id): answer.value
        for answer in data.survey
        if answer.kind == "likert"
    }
    finished = [sid for sid in data.writers if sid in data.finished]
    first, second = data.systems
    return tuple(
        LikertRow(
            pair=f"{first} vs {second}",
            item_id=item_id,
            question=question,
            summary=likert_summary([values.get((sid, item_id)) for sid in finished]),
        )
        for item_id, question in data.likert_items.items()
    )


def _first_notes(data: StudyData, left_out: str) -> list[str]:
    """The analysis's first notes: who the spec's process-flag rule left out (if anyone),
    what was counted, what the preference is."""
    first, second = data.systems
    return [
        *([left_out] if left_out else []),
        f"{len(data.writers)} writers, {len(data.rounds)} submitted rounds "
        f"({len(data.finished)} writers finished the survey; unfinished stories count "
        "with their submitted rounds).",
        f"Preference: share of rounds in which {first} was chosen over {second}.",
    ]


def _compat_analysis(
    data: StudyData, compat: str, workers: int, cache: LemmaCache | None
) -> Analysis:
    """The original evaluation script's analysis; refused for a study in another language
    than English, which that script's metrics are defined on."""
    if compat not in COMPAT_MODES:
        raise ValueError(f"Unknown compat mode {compat!r}: use one of {COMPAT_MODES}.")
    if not is_english(data.language):
        raise AnalysisError(
            f"The {compat} mode reproduces the original evaluation script, which is "
            f"English-only, and experiment '{data.experiment}' is in "
            f"{language_name(data.language)}: analyse it without --compat."
        )
    from cyoa.cowriting.analysis.compat import analyze_cyoa_2021

    return analyze_cyoa_2021(data, workers=workers, cache=cache)


def analyze(
    data: StudyData,
    compat: Compat | None = None,
    alternative: Alternative = "two-sided",
    variant: Variant = "cyoa-2021",
    resamples: int = 10_000,
    seed: int = 0,
    workers: int | None = None,
    cache: LemmaCache | None = None,
    planned_writers: int | None = None,
) -> Analysis:
    """Every table for ``data``: this project's analysis, or with ``compat="cyoa-2021"`` the
    original evaluation script's (which has its own fixed tests: ``alternative``,
    ``variant``, ``resamples`` and ``seed`` do not apply there).

    ``workers``: processes for the slow metrics (tagging, USER); by default all CPUs from
    :data:`PARALLEL_FROM_WRITERS` writers on, else 1. ``cache``: where tagged sentences are
    kept between analyses (:class:`~cyoa.cowriting.analysis.tag_cache.SentenceTagCache`). Results
    depend on neither. ``planned_writers``: the planned N of the study-status line (the
    latest stored plan's writers; ``None`` without a plan).
    """
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative must be one of {', '.join(ALTERNATIVES)}.")
    processes = _workers(workers, len(data.writers))
    if compat is not None:
        compat_analysis = _compat_analysis(data, compat, processes, cache)
        left_out = exclusion.sentence(data.left_out, data.exclusion_rule)
        return replace(compat_analysis, left_out=left_out)
    first, second = data.systems
    preference_result = preference_table(data, alternative, resamples, seed)
    left_out = exclusion.sentence(data.left_out, data.exclusion_rule)
    notes = _first_notes(data, left_out)
    if preference_result is not None:
        notes.append(
            f"Preference tests: {preference_result.method}; "
            f"{preference_result.excluded_rounds} rounds with one suggestion only left out."
        )
        if preference_result.clustered is not None:
            notes.append(
                "Writer-clustered: percentile bootstrap over writers "
                f"({resamples:,} resamples, seed {seed}); one-sample t-test of per-writer "
                f"shares against 0.5, {alternative}."
            )
    if not data.slot_order_recorded:
        notes.append("Position bias: not computed, the slot order was not recorded.")
    scores = edit_scores(data, variant, processes)
    edits = edit_table(data, alternative, variant, processes, scores)
    notes.append(
        f"Edit metrics: accepted suggestions (model text vs final text), USER variant {variant}; "
        "Overall pools every accepted suggestion (the acceptance-weighted mean of the two)"
        + ("." if is_english(data.language) else f"; JS and USER on words ({WORDS_RULE}).")
    )
    if edits is not None:
        notes.append(f"Edit tests: {edits.method}.")
    text = text_table(data, processes, cache)
    if text is not None:
        notes.append(f"Text metrics: {text.method}.")
        notes.extend(text.not_computed)
    return Analysis(
        experiment=data.experiment,
        title=data.title,
        compat=None,
        systems=data.systems,
        writers=len(data.writers),
        rounds=len(data.rounds),
        preference=preference_result,
        edits=edits,
        text=text,
        likert=likert_rows(data),
        notes=tuple(notes),
        writer_level=writer_level(
            data, preference_result, scores, alternative, variant, planned_writers
        ),
        left_out=left_out,
    )
