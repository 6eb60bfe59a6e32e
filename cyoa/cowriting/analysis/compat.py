"""``--compat cyoa-2021``: what the original CYOA evaluation script computed, number for number.

The script is ``eval_script.py`` of https://github.com/eaclark07/cyoa (Clark & Smith, 2021),
run on the experiment's export in its layout (:mod:`cyoa.cowriting.analysis.tsv`): complete stories
only, Model = the first system, Baseline = the second. Its four analyses:

1. Preference (``model_choice_analysis``): the number of ``"true"`` in ``isModelAccepted``
   over all writers and rounds, out of rounds × writers (no round is left out), overall and
   per round; ``scipy.stats.binom_test(k, n)``: the exact binomial test against 0.5,
   two-sided (its only use). No interval and no per-round test.
2. Revisions (``writer_changes_analysis``): for every round, ``nltk`` edit distance (characters),
   Jaccard similarity of ``str.split()`` token sets as a *fraction*, and USER F ×100 of
   ``get_diff_score(edit, suggestion)`` with an empty stopword list, each between the writer's
   edit and the suggestion of the system the writer accepted: "model" when
   ``isModelAccepted`` is ``"true"``, "baseline" for anything else; "overall" pools both. The
   per-round means are ``sum(x) / len(x)``; the all-round means ``numpy.mean`` of the rounds
   concatenated. The test is ``scipy.stats.mannwhitneyu(baseline, model)`` with the defaults of
   scipy < 1.7 (2021): normal approximation with tie and continuity correction, statistic
   min(U1, U2), and a *one-sided* p-value (half the two-sided one) —
   :func:`~cyoa.stats.mann_whitney_scipy_2021`. No correction across metrics.
3. Text (``generated_text_metrics``): per writer, ``" ".join`` of the five model lines, of the
   five baseline lines and of the five user lines; distinct-1/2/3 and mean sentence length
   averaged over writers (``sum / len``), noun and verb concreteness averaged over the writers
   where they are defined (the script drops ``None``).
4. Likert (``likert_analysis``): ``pandas.DataFrame.describe()`` of Q1–Q5: count, mean,
   standard deviation (n − 1), min, quartiles (linear interpolation), max.

Where the script would stop with an error (a mean of no value, Jaccard of two empty texts,
a Mann–Whitney test of identical values), this module leaves the cell empty (Jaccard of two
empty texts is 1.0) and says so in the notes. Differences that cannot be removed, because the
original's data cannot be installed here: sentences are split by spaCy's sentencizer, not
NLTK's Punkt; tags and lemmas come from spaCy ``en_core_web_sm`` 3.8, not ``en_core_web_md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from cyoa.cowriting.analysis.data import StudyData
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
)
from cyoa.cowriting.analysis.tsv import WriterRow, rows_from_study
from cyoa.metrics.edit import edit_distance, user_metric
from cyoa.metrics.pool import map_chunks
from cyoa.metrics.text import LemmaCache, text_profiles
from cyoa.stats import mann_whitney_scipy_2021, preference

MODE = "cyoa-2021"
SCRIPT_LIKERT = ("Q1", "Q2", "Q3", "Q4", "Q5")
_METRICS = (
    ("ed", "ED (characters)"),
    ("js", "JS (fraction)"),
    ("user", "USER F (×100)"),
)


@dataclass(frozen=True)
class ScriptScores:
    """The script's three revision metrics of one (suggestion, edit) pair."""

    ed: int
    js: float
    user: float


def script_jaccard(original: str, edited: str) -> float:
    """``get_jaccard_sim(edited, original)`` of the script: a fraction, computed as it does
    (``float(len(c)) / (len(a) + len(b) - len(c))``). Two texts without tokens: 1.0 (the
    script divides by zero)."""
    a = set(edited.split())
    b = set(original.split())
    c = a.intersection(b)
    if not a and not b:
        return 1.0
    return float(len(c)) / (len(a) + len(b) - len(c))


def script_scores(original: str, edited: str) -> ScriptScores:
    """ED, JS and USER ×100 as the script computes them for one accepted suggestion."""
    return ScriptScores(
        ed=edit_distance(original, edited),
        js=script_jaccard(original, edited),
        user=user_metric(original, edited, "cyoa-2021").f * 100,
    )


def _scores_chunk(pairs: list[tuple[str, str]]) -> list[ScriptScores]:
    return [script_scores(original, edited) for original, edited in pairs]


def _share(chosen: int, total: int) -> float | None:
    return chosen / total if total else None


def preference_2021(rows: Sequence[WriterRow], model: str, baseline: str) -> PreferenceTable:
    """The script's ``model_choice_analysis`` (see the module docstring)."""
    rounds = len(rows[0].is_model_accepted)
    per_round = [sum(row.is_model_accepted[i] == "true" for row in rows) for i in range(rounds)]
    chosen, total = sum(per_round), rounds * len(rows)
    test = preference(chosen, total, "two-sided")
    shares = [
        ShareRow(
            OVERALL,
            None,
            chosen,
            total,
            _share(chosen, total),
            p_value=test.p_value,
            alternative="two-sided",
        )
    ]
    for number, count in enumerate(per_round, start=1):
        shares.append(ShareRow(f"Round {number}", number, count, len(rows), count / len(rows)))
    return PreferenceTable(
        system=model,
        other=baseline,
        rows=tuple(shares),
        excluded_rounds=0,
        clustered=None,
        position=None,
        method="scipy.stats.binom_test(k, n): exact binomial test against 0.5, two-sided",
    )


def _script_mean(values: list[float]) -> Mean:
    return Mean(sum(values) / len(values) if values else None, len(values))


def edits_2021(
    rows: Sequence[WriterRow], model: str, baseline: str, workers: int = 1
) -> tuple[EditTable, list[str]]:
    """The script's ``writer_changes_analysis`` (see the module docstring), and notes."""
    rounds = len(rows[0].is_model_accepted)
    pairs, labels = [], []
    # The script's order: round by round, writers in file order within a round.
    for index in range(rounds):
        for row in rows:
            accepted = row.is_model_accepted[index] == "true"
            line = row.model_lines[index] if accepted else row.baseline_lines[index]
            pairs.append((line, row.user_edits[index]))
            labels.append((index + 1, model if accepted else baseline))
    scores = map_chunks(_scores_chunk, pairs, n_process=workers, chunk_size=5000)
    notes = []
    if any(not o.split() and not e.split() for o, e in pairs):
        notes.append("JS of two texts without tokens is 1.0 here; the script divides by zero.")
    table_rows = []
    for metric, label in _METRICS:
        per_round = {
            number: {model: [], baseline: [], OVERALL: []} for number in range(1, rounds + 1)
        }
        for (number, group), score in zip(labels, scores, strict=True):
            value = getattr(score, metric)
            per_round[number][group].append(value)
            per_round[number][OVERALL].append(value)
        overall = {}
        for group in (model, baseline, OVERALL):
            concatenated = [v for number in per_round for v in per_round[number][group]]
            mean = float(np.mean(np.array(concatenated))) if concatenated else None
            overall[group] = Mean(mean, len(concatenated))
        test = None
        try:
            test = mann_whitney_scipy_2021(
                [v for n in per_round for v in per_round[n][baseline]],
                [v for n in per_round for v in per_round[n][model]],
            )
        except ValueError as error:
            notes.append(f"{label}: no Mann–Whitney test ({error})")
        table_rows.append(
            EditMetricRow(
                metric=metric,
                label=label,
                overall=overall,
                by_round={
                    number: {g: _script_mean(v) for g, v in groups.items()}
                    for number, groups in per_round.items()
                },
                test=test,
                p_holm=None,
            )
        )
    method = (
        f"scipy.stats.mannwhitneyu(x = {baseline}, y = {model}) with scipy < 1.7 defaults: "
        "normal approximation with tie and continuity correction, U = min(U1, U2), "
        "one-sided p; no correction across metrics"
    )
    return EditTable((model, baseline), tuple(table_rows), method), notes


_TEXT_METRICS = (
    ("distinct_1", "distinct-1 (fraction)"),
    ("distinct_2", "distinct-2 (fraction)"),
    ("distinct_3", "distinct-3 (fraction)"),
    ("concreteness_n", "Noun concreteness (1–5)"),
    ("concreteness_v", "Verb concreteness (1–5)"),
    ("mean_sent_len", "Sentence length (words)"),
)


def text_2021(
    rows: Sequence[WriterRow],
    model: str,
    baseline: str,
    workers: int = 1,
    cache: LemmaCache | None = None,
) -> tuple[TextTable, list[str]]:
    """The script's ``generated_text_metrics`` (see the module docstring), and notes."""
    sources = (model, baseline, HUMAN)
    stories = [
        [" ".join(row.model_lines) for row in rows],
        [" ".join(row.baseline_lines) for row in rows],
        [" ".join(row.user_lines) for row in rows],
    ]
    profiles = text_profiles(
        [s for texts in stories for s in texts], n_process=workers, cache=cache
    )
    count = len(rows)
    notes = []
    table_rows = []
    for metric, label in _TEXT_METRICS:
        values: dict[str, float | None] = {}
        counts: dict[str, int] = {}
        for index, source in enumerate(sources):
            source_profiles = profiles[index * count : (index + 1) * count]
            if metric == "concreteness_n":
                raw = [p.concreteness.noun.mean for p in source_profiles]
            elif metric == "concreteness_v":
                raw = [p.concreteness.verb.mean for p in source_profiles]
            elif metric == "mean_sent_len":
                raw = [p.mean_sentence_length for p in source_profiles]
            else:
                raw = [getattr(p, metric) for p in source_profiles]
            defined = [value for value in raw if value is not None]
            if len(defined) < len(raw) and not metric.startswith("concreteness"):
                notes.append(
                    f"{label}, {source}: undefined for {len(raw) - len(defined)} writers, left "
                    "out (the script stops with an error there)."
                )
            values[source] = sum(defined) / len(defined) if defined else None
            counts[source] = len(defined)
        table_rows.append(TextMetricRow(metric, label, values, counts))
    method = (
        "per writer ' '.join of the lines; metric per text, then sum/len over writers "
        "(concreteness: over writers where defined, as the script)"
    )
    return TextTable(sources, tuple(table_rows), method), notes


def describe(values: Sequence[int | None]) -> dict[str, float | None]:
    """``pandas.Series.describe()`` of Likert answers (``None`` = missing, skipped):
    count, mean, std (n − 1), min, 25%, 50%, 75% (linear interpolation), max."""
    answered = np.array([v for v in values if v is not None], dtype=float)
    if answered.size == 0:
        return {"count": 0.0} | dict.fromkeys(("mean", "std", "min", "25%", "50%", "75%", "max"))
    q1, q2, q3 = np.percentile(answered, [25, 50, 75])
    return {
        "count": float(answered.size),
        "mean": float(answered.mean()),
        "std": float(answered.std(ddof=1)) if answered.size > 1 else None,
        "min": float(answered.min()),
        "25%": float(q1),
        "50%": float(q2),
        "75%": float(q3),
        "max": float(answered.max()),
    }


def likert_2021(rows: Sequence[WriterRow], model: str, baseline: str) -> tuple[LikertRow, ...]:
    """The script's ``likert_analysis``: ``describe()`` of Q1–Q5 (those in the data)."""
    items = min(len(SCRIPT_LIKERT), len(rows[0].likert))
    return tuple(
        LikertRow(
            pair=f"{model} vs {baseline}",
            item_id=SCRIPT_LIKERT[index],
            question="",
            describe=describe([row.likert[index] for row in rows]),
        )
        for index in range(items)
    )


def analyze_rows_2021(
    rows: Sequence[WriterRow],
    systems: tuple[str, str],
    experiment: str = "",
    title: str = "",
    workers: int = 1,
    cache: LemmaCache | None = None,
) -> Analysis:
    """Every analysis of the script on rows of its layout (see the module docstring);
    ``cache`` keeps tagged sentences (:mod:`cyoa.cowriting.analysis.tag_cache`)."""
    model, baseline = systems
    notes = [
        f"--compat {MODE}: eval_script.py (eaclark07/cyoa) on the cyoa-tsv export: "
        f"{len(rows)} complete stories; Model = {model}, Baseline = {baseline}.",
        "Differences that cannot be removed: sentences by spaCy's sentencizer (not NLTK "
        "Punkt); tags and lemmas by en_core_web_sm 3.8 (not en_core_web_md).",
    ]
    if not rows:
        notes.append("No complete story: the script has nothing to analyse.")
        return Analysis(experiment, title, MODE, systems, 0, 0, None, None, None, (), tuple(notes))
    preference_result = preference_2021(rows, model, baseline)
    notes.append(f"Preference: {preference_result.method}.")
    edits, edit_notes = edits_2021(rows, model, baseline, workers)
    notes.append(f"Revisions: {edits.method}.")
    text, text_notes = text_2021(rows, model, baseline, workers, cache)
    notes += edit_notes + text_notes
    notes.append("Likert: pandas describe() of Q1–Q5 (std with n − 1, linear quartiles).")
    return Analysis(
        experiment=experiment,
        title=title,
        compat=MODE,
        systems=systems,
        writers=len(rows),
        rounds=len(rows) * len(rows[0].is_model_accepted),
        preference=preference_result,
        edits=edits,
        text=text,
        likert=likert_2021(rows, model, baseline),
        notes=tuple(notes),
    )


def analyze_cyoa_2021(
    data: StudyData, workers: int = 1, cache: LemmaCache | None = None
) -> Analysis:
    """:func:`analyze_rows_2021` on the stored experiment's export."""
    return analyze_rows_2021(
        rows_from_study(data), data.systems, data.experiment, data.title, workers, cache
    )
