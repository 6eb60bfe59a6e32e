"""The dashboard's results: the analysis (:mod:`cyoa.cowriting.analysis.tables`) of an experiment as
display tables and the data for its charts, computed off the request path
(:mod:`cyoa.analyses.jobs`) and stored as display-ready JSON with its charts.

- Two systems: :func:`cyoa.cowriting.analysis.tables.analyze` of the whole experiment.
- More than two: the same analysis per pair of systems that writers compared (each writer
  compares one pair; :func:`cyoa.cowriting.analysis.data.experiment_pairs`), plus
  a Bradley–Terry ranking of all systems from every counted choice, with writer-level
  bootstrap intervals (:mod:`cyoa.cowriting.analysis.bradley_terry`), and beside it the
  ranking at equal style with writer-clustered intervals, and under adaptive pairing the
  check with every pair weighing the same (:mod:`cyoa.cowriting.analysis.rankings`).
- Likert answers per pair of systems, both orientations of the pair pooled.
- Per pair, the preference with writers as the unit first (the writers' t-test and t
  interval), the confidence sequence with its anytime-valid p, and the study-status line
  against the latest stored plan's N; Clark & Smith's pooled binomial follows, labelled, its
  per-round p-values Holm-adjusted across the rounds.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from cyoa import store
from cyoa.analyses.jobs import Step
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.analysis import process as process_report
from cyoa.cowriting.analysis import rankings as ranking_report
from cyoa.cowriting.analysis.bradley_terry import NotEstimable, Ranking, rank
from cyoa.cowriting.analysis.data import StudyData, experiment_pairs, load_study
from cyoa.cowriting.analysis.monitoring import planned_writers
from cyoa.cowriting.analysis.results import (
    OVERALL,
    Analysis,
    LikertRow,
    Mean,
    Monitoring,
    PreferenceTable,
    ShareRow,
)
from cyoa.cowriting.analysis.tables import analyze, likert_rows
from cyoa.cowriting.analysis.tag_cache import SentenceTagCache
from cyoa.cowriting.judges import report as judges_report
from cyoa.cowriting.process import exclusion
from cyoa.cowriting.research.exports import process_rows
from cyoa.cowriting.spec import Experiment
from cyoa.db.facade import Db
from cyoa.metrics.edit import edit_metrics_many
from cyoa.web.charts import CHART_LOCK
from cyoa.words import counted

RESAMPLES = 2000
# The stored analysis' kind (``analyses.kind``).
KIND = "cowriting-dashboard"
# The analysis of an experiment is computed again at most this often, in seconds.
RECOMPUTE_SECONDS = 30
# (edit_metrics key, axis label with unit, upper end of the axis: None = from the data)
CHART_METRICS = (
    ("edit_distance", "ED (characters)", None),
    ("jaccard", "JS (×100)", 100.0),
    ("user", "USER F (×100)", 100.0),
)


@dataclass(frozen=True)
class Table:
    """A table for the page and for results.json: cells are display strings."""

    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()


@dataclass
class Results:
    experiment: str
    version: str
    writers: int
    rounds: int
    tables: list[Table]
    notes: list[str]
    analyses: list[Analysis]
    edit_values: dict[str, dict[str, list[float]]]
    likert: tuple[LikertRow, ...]
    ranking: Ranking | None
    ranking_error: str | None
    charts: dict[str, bytes] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "version": self.version,
            "writers": self.writers,
            "rounds": self.rounds,
            "tables": [
                {
                    "key": t.key,
                    "title": t.title,
                    "columns": list(t.columns),
                    "rows": [list(r) for r in t.rows],
                    "notes": list(t.notes),
                }
                for t in self.tables
            ],
            "notes": self.notes,
            "charts": list(chart_names(self)),
        }


# --- formatting ----------------------------------------------------------------------


def pct(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def pvalue(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.3g}"


def _mean(mean: Mean) -> str:
    return f"{num(mean.mean)} (n={mean.n})"


def _interval(row: ShareRow) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "–"
    return f"{pct(row.ci_low)} – {pct(row.ci_high)}"


# --- tables --------------------------------------------------------------------------


def _preference_table(analysis: Analysis) -> Table | None:
    table = analysis.preference
    level = analysis.writer_level
    if table is None or level is None:
        return None
    alternative = table.rows[0].alternative or "two-sided"
    watch = level.monitoring
    rows = []
    if level.headline is not None:
        row = level.headline
        rows.append(
            (
                f"Writers (headline, {level.writers} writers)",
                f"{row.chosen} / {row.total}",
                pct(row.share),
                _interval(row),
                pvalue(row.p_value),
                "–",
            )
        )
    if watch.sequence is not None:
        sequence = watch.sequence
        rows.append(
            (
                f"Anytime-valid ({sequence.n} complete stories)",
                "–",
                pct(sequence.mean),
                f"{pct(sequence.low)} – {pct(sequence.high)}",
                pvalue(sequence.p_value),
                "–",
            )
        )
    for row in table.rows:
        label = "Clark & Smith's binomial, all rounds" if row.round is None else row.label
        holm = "–" if row.round is None else pvalue(level.round_p_holm.get(row.round))
        rows.append(
            (label, f"{row.chosen} / {row.total}", pct(row.share), _interval(row),
             pvalue(row.p_value), holm)
        )  # fmt: skip
    notes = _preference_notes(table, watch)
    return Table(
        key=f"preference:{table.system}:{table.other}",
        title=f"Preference: % of rounds in which {table.system} was chosen over {table.other}",
        columns=(
            "",
            "chosen / rounds",
            "% chosen",
            "95% CI",
            f"p ({alternative})",
            "p (Holm, rounds)",
        ),
        rows=tuple(rows),
        notes=tuple(notes),
    )


def _preference_notes(table: PreferenceTable, watch: Monitoring) -> list[str]:
    """The preference table's notes: the study status, what each row rests on, the rounds
    left out, the writer-clustered bootstrap and the position bias."""
    notes = [
        f"Study status: {watch.status}.",
        f"Headline: the mean writer share with the one-sample t-test of the writers' shares "
        f"against 0.5 and its 95% t interval (writers as the unit). {watch.fixed_sample}.",
        "Anytime-valid: the 95% betting confidence sequence of the mean writer share over the "
        "writers whose story is complete, in the order they completed it, and its p-value "
        "against 0.5 (two-sided); valid however often this page is looked at.",
        f"Clark & Smith's rows (the paper's test, every round counted as independent): "
        f"{table.method}; per-round p-values Holm-adjusted across the rounds.",
    ]
    if table.excluded_rounds:
        verb = "is" if table.excluded_rounds == 1 else "are"
        rounds = counted(table.excluded_rounds, "round")
        notes.append(f"{rounds} with one suggestion only {verb} left out.")
    if table.clustered is not None:
        c = table.clustered
        notes.append(
            f"Writer-clustered ({counted(c.writers, 'writer')}): "
            f"bootstrap {int(c.confidence * 100)}% CI "
            f"{pct(c.bootstrap_low)} – {pct(c.bootstrap_high)} ({c.resamples:,} resamples); "
            f"mean writer share {pct(c.mean_writer_share)}, t({c.df}) = {num(c.t_statistic)}, "
            f"p = {pvalue(c.p_value)}."
        )
    if table.position is not None:
        p = table.position
        notes.append(
            f"Position bias: slot 1 chosen in {p.chosen} / {p.total} rounds ({pct(p.share)}, "
            f"95% CI {_interval(p)}), p = {pvalue(p.p_value)}."
        )
    return notes


def _edit_table(analysis: Analysis) -> Table | None:
    table = analysis.edits
    level = analysis.writer_level
    if table is None or level is None:
        return None
    first, second = table.systems
    within = {row.metric: row for row in level.edits}
    rows = []
    for row in table.rows:
        test = row.test
        writer_row = within.get(row.metric)
        paired = writer_row.test if writer_row else None
        span = "–"
        if paired is not None and math.isfinite(paired.ci_low):
            span = f"{num(paired.difference)} ({num(paired.ci_low)} – {num(paired.ci_high)})"
        rows.append(
            (
                row.label,
                _mean(row.overall[first]),
                _mean(row.overall[second]),
                _mean(row.overall[OVERALL]),
                span,
                pvalue(writer_row.p_holm) if writer_row else "–",
                pvalue(test.p_value) if test else "–",
                pvalue(row.p_holm),
                num(test.rank_biserial) if test else "–",
            )
        )
    return Table(
        key=f"edits:{first}:{second}",
        title=f"Edits of accepted suggestions: mean per system ({first} vs {second})",
        columns=(
            "Metric",
            first,
            second,
            OVERALL,
            f"within writers: {first} − {second} (95% CI)",
            "p within writers (Holm)",
            "Mann–Whitney p (Clark & Smith)",
            "p (Holm)",
            "rank-biserial r",
        ),  # fmt: skip
        rows=tuple(rows),
        notes=(
            f"Within writers (CYOA's test): {level.edits_method}.",
            f"Clark & Smith's test (rounds counted as independent): {table.method}.",
            "Per-round edit means (the analysis' Tables 7/8) are descriptive: no test is made "
            "per round.",
        ),
    )


def _text_table(analysis: Analysis) -> Table | None:
    table = analysis.text
    if table is None:
        return None
    rows = tuple(
        (row.label, *(f"{num(row.values[s], 3)} (n={row.n[s]})" for s in table.sources))
        for row in table.rows
    )
    return Table(
        key="text:" + ":".join(table.sources),
        title="Text metrics of suggestions and of the writers' own lines",
        columns=("Metric", *table.sources),
        rows=rows,
        notes=(f"Method: {table.method}.", *table.not_computed),
    )


def _likert_table(rows: tuple[LikertRow, ...]) -> Table | None:
    body = []
    for row in rows:
        s = row.summary
        if s is None:
            continue
        body.append(
            (
                row.pair,
                row.item_id,
                row.question,
                str(s.n),
                *(str(s.counts[level]) for level in range(1, 6)),
                num(s.mean),
                num(s.median, 1),
                str(s.missing),
            )
        )
    if not body:
        return None
    return Table(
        key="likert",
        title="Survey (Likert, 1 = strongly disagree … 5 = strongly agree)",
        columns=(
            "Pair",
            "Item",
            "Statement",
            "n",
            "1",
            "2",
            "3",
            "4",
            "5",
            "mean",
            "median",
            "missing",
        ),
        rows=tuple(body),
        notes=("Finished sessions only; both orientations of a pair pooled.",),
    )


def _ranking_table(ranking: Ranking) -> Table:
    rows = tuple(
        (
            str(position),
            r.system,
            num(r.share, 3),
            f"{num(r.ci_low, 3)} – {num(r.ci_high, 3)}",
            f"{r.won} / {r.compared}",
        )
        for position, r in enumerate(ranking.systems, start=1)
    )
    used = ranking.resamples - ranking.skipped
    return Table(
        key="ranking",
        title="Ranking of all systems (Bradley–Terry)",
        columns=(
            "Rank",
            "System",
            "Strength (share)",
            f"{int(ranking.confidence * 100)}% CI",
            "chosen / compared",
        ),
        rows=rows,
        notes=(
            f"Maximum likelihood (MM algorithm, Hunter 2004) from "
            f"{counted(ranking.choices, 'choice')} of {counted(ranking.writers, 'writer')}; "
            "intervals: percentile bootstrap over writers "
            f"({used:,} of {ranking.resamples:,} resamples had an estimate, seed "
            f"{ranking.seed}). Pairs never compared add nothing.",
        ),
    )


def _style_ranking_table(rankings: ranking_report.SystemRankings) -> Table:
    coefficients = tuple(
        f"Style coefficient, {text}: {estimate} log-odds (95% CI {span})."
        for text, estimate, span in ranking_report.coefficient_rows(rankings)
    )
    return Table(
        key="ranking-style",
        title="Ranking of all systems at equal style (Bradley–Terry with style covariates)",
        columns=ranking_report.COLUMNS,
        rows=tuple(ranking_report.display_rows(rankings)),
        notes=(*coefficients, *ranking_report.notes(rankings)),
    )


# --- computing -----------------------------------------------------------------------


def _judges_tables(db: Db, studies: list[StudyData], resamples: int) -> list[Table]:
    """Per pair of systems with a judge of its rounds, the judges against the writers
    (:mod:`cyoa.cowriting.judges.report`)."""
    tables = []
    for data in studies:
        found = judges_report.study_judges(db, data, resamples=resamples)
        if found:
            first, second = data.systems
            tables.append(
                Table(
                    key=f"judges-{first}-{second}",
                    title=f"Judges of the writers' choices: {first} vs {second}",
                    columns=judges_report.COLUMNS,
                    rows=tuple(judges_report.display_rows(found)),
                    notes=(judges_report.NOTE, *sorted({a.note for a in found if a.note})),
                )
            )
    return tables


def _process_tables(db: Db, studies: list[StudyData], resamples: int) -> list[Table]:
    """Per pair of systems with submitted rounds, how writers wrote with each system, from
    the keystroke record (:mod:`cyoa.cowriting.analysis.process`); a study without a record
    gets one table saying so."""
    rows = process_rows(db, studies[0].experiment) if studies else []
    tables = []
    for data in studies:
        if not data.rounds:
            continue
        found = process_report.process_table(
            process_report.of_pair(rows, data.systems, {w.session_id for w in data.left_out}),
            data.systems,
            resamples=resamples,
        )
        line = process_report.headline(found)
        tables.append(
            Table(
                key=f"process-{'-'.join(data.systems)}",
                title=f"How writers wrote: {' vs '.join(data.systems)}",
                columns=("Measure", *data.systems),
                rows=tuple(process_report.display_rows(found)) if found.recorded else (),
                notes=(*([line] if line else []), *process_report.notes(found)),
            )
        )
    return tables


def choices_by_writer(studies: list[StudyData]) -> dict[str, list[tuple[str, str]]]:
    """Per session, its counted choices as ``(chosen system, other system)``."""
    choices: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for data in studies:
        for r in data.rounds:
            if r.counts_for_preference and r.chosen_system in r.slot_systems:
                other = next(s for s in r.slot_systems if s != r.chosen_system)
                choices[r.session_id].append((r.chosen_system, other))
    return dict(choices)


def compute_results(
    db: Db, exp: Experiment, version: str = "", resamples: int = RESAMPLES
) -> Results:
    """Every result of the dashboard for ``exp`` from the database: the analysis of each
    pair of systems that writers compared, and with more than two systems the ranking."""
    names = [s.name for s in exp.systems]
    studies = [load_study(db, exp.id, pair) for pair in experiment_pairs(db, exp.id)]
    cache = SentenceTagCache(db)
    planned = planned_writers(store.latest_plan(db, exp.id))
    analyses = [
        analyze(data, resamples=resamples, workers=1, cache=cache, planned_writers=planned)
        for data in studies
        if data.rounds
    ]
    tables: list[Table] = []
    ranking = None
    ranking_error = None
    if len(names) > 2:
        try:
            ranking = rank(choices_by_writer(studies), names, resamples=resamples)
            tables.append(_ranking_table(ranking))
        except NotEstimable as exc:
            ranking_error = str(exc)
        probabilities = cowriting_store.pair_probabilities(db, exp.id)
        ranked = ranking_report.rank_systems(studies, names, probabilities)
        tables.append(_style_ranking_table(ranked))
    for analysis in analyses:
        tables += [t for t in (_preference_table(analysis),) if t]
    for analysis in analyses:
        tables += [t for t in (_edit_table(analysis), _text_table(analysis)) if t]
    tables += _judges_tables(db, studies, resamples)
    tables += _process_tables(db, studies, resamples)
    likert = tuple(row for data in studies for row in likert_rows(data))
    likert_table = _likert_table(likert)
    if likert_table:
        tables.append(likert_table)

    edit_values: dict[str, dict[str, list[float]]] = {n: defaultdict(list) for n in names}
    scored = [r for data in studies for r in data.rounds if r.chosen_system in edit_values]
    for record, scores in zip(
        scored,
        edit_metrics_many(
            [(r.chosen_suggestion, r.final_text) for r in scored], language=exp.language
        ),
        strict=True,
    ):
        for metric, _, _ in CHART_METRICS:
            edit_values[record.chosen_system][metric].append(scores[metric])
    writers = sum(len(data.writers) for data in studies)
    rounds = sum(len(data.rounds) for data in studies)
    finished = sum(len(data.finished) for data in studies)
    notes = [
        f"{counted(writers, 'writer')} with a submitted round, "
        f"{counted(rounds, 'submitted round')}, {counted(finished, 'finished survey')}. "
        "Unfinished stories count with their submitted rounds."
    ]
    left_out = exclusion.sentence(
        [w for data in studies for w in data.left_out],
        studies[0].exclusion_rule if studies else (),
    )
    notes += [left_out] if left_out else []
    return Results(
        experiment=exp.id,
        version=version,
        writers=writers,
        rounds=rounds,
        tables=tables,
        notes=notes,
        analyses=analyses,
        edit_values={n: dict(v) for n, v in edit_values.items()},
        likert=likert,
        ranking=ranking,
        ranking_error=ranking_error,
    )


def chart_names(results: Results) -> tuple[str, ...]:
    names = ("preference", "edits", "likert")
    return (("ranking",) if results.ranking is not None else ()) + names


def render_chart(results: Results, name: str) -> bytes:
    """The SVG chart ``name`` (see :func:`chart_names`), drawn once per data version."""
    from cyoa.cowriting.research import charts

    with CHART_LOCK:
        if name not in results.charts:
            results.charts[name] = _draw(charts, results, name)
    return results.charts[name]


def _draw(charts, results: Results, name: str) -> bytes:
    if name == "preference":
        tables = [a.preference for a in results.analyses if a.preference is not None]
        return charts.preference_chart(tables)
    if name == "edits":
        return charts.edit_chart(results.edit_values, CHART_METRICS)
    if name == "likert":
        return charts.likert_chart(results.likert)
    if name == "ranking" and results.ranking is not None:
        return charts.ranking_chart(results.ranking)
    raise KeyError(name)


def data_version(db: Db, exp_id: str) -> str:
    """Changes whenever an event of the experiment, a judge's verdict or a plan (whose N the
    study-status line reads) is recorded."""
    count, last = db.execute(
        "SELECT count(*), max(e.server_time) FROM events e JOIN sessions s ON s.id = e.session_id"
        " WHERE s.experiment_id = ?",
        [exp_id],
    ).fetchone()
    verdicts, judged = db.execute(
        "SELECT count(*), max(recorded_at) FROM round_verdicts WHERE experiment_id = ?", [exp_id]
    ).fetchone()
    plan = db.execute("SELECT max(id) FROM plans WHERE experiment_id = ?", [exp_id]).fetchone()[0]
    return f"{count}-{last or ''}-{verdicts}-{judged or ''}-{plan or ''}"


def any_round(db: Db, exp_id: str) -> bool:
    """Whether a writer of ``exp_id`` submitted a round (before the first there is nothing to
    analyse)."""
    row = db.execute(
        "SELECT 1 FROM rounds WHERE experiment_id = ? AND turn_submitted_at IS NOT NULL LIMIT 1",
        [exp_id],
    )
    return row.fetchone() is not None


def stored_result(results: Results) -> dict[str, Any]:
    """``results`` as the dashboard serves it, display-ready JSON: :meth:`Results.to_dict`
    with whether there is a ranking, why not, and every chart drawn as SVG text by name."""
    return {
        **results.to_dict(),
        "ranking": results.ranking is not None,
        "ranking_error": results.ranking_error,
        "svg": {name: render_chart(results, name).decode("utf-8") for name in chart_names(results)},
    }


def analyse(db: Db, exp: Experiment, step: Step) -> tuple[int, str, dict[str, Any]]:
    """The dashboard's analysis of ``exp`` as its data is now: the submitted rounds it
    counted, the data version it read (read first: an answer that lands meanwhile makes the
    next version, analysed next) and the stored result."""
    version = data_version(db, exp.id)
    step("analysing the rounds")
    results = compute_results(db, exp, version)
    step(f"drawing the charts of {results.rounds:,} rounds")
    return results.rounds, version, stored_result(results)
