"""The ``analyze`` verb's text for a co-writing experiment: the paper's tables with their
tests, one set per pair of systems that writers compared (:mod:`.tables`, :mod:`.render`),
each followed by the judges of the writers' choices (:mod:`cyoa.cowriting.judges.report`):
a Markdown section, ``judges`` rows in CSV, a ``judges`` list in each pair's JSON object.
With more than two systems (and neither ``--pair`` nor ``--compat``) the ranking of all
systems follows, plain and at equal style (:mod:`.rankings`): a Markdown section, CSV rows
under the pair ``all systems``, and a last JSON object ``{"ranking": ...}``. Last comes how
writers wrote with each system, from the keystroke record (:mod:`.process`): a Markdown
section, CSV rows under the pair ``writing process``, a JSON object ``{"process": ...}``."""

from __future__ import annotations

import csv
import io
import json

from cyoa import store
from cyoa.cowriting import store as cowriting_store
from cyoa.cowriting.analysis import process as process_report
from cyoa.cowriting.analysis import rankings as ranking_report
from cyoa.cowriting.analysis.data import experiment_pairs, experiment_systems, load_study
from cyoa.cowriting.analysis.monitoring import planned_writers
from cyoa.cowriting.analysis.render import render, to_markdown
from cyoa.cowriting.analysis.results import Analysis
from cyoa.cowriting.analysis.tables import analyze
from cyoa.cowriting.analysis.tag_cache import SentenceTagCache
from cyoa.cowriting.judges import report as judges_report
from cyoa.cowriting.judges.figures import WriterAgreement
from cyoa.cowriting.research.exports import process_rows
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError


def report(
    db: Db,
    experiment: str,
    fmt: str,
    *,
    compat: str | None = None,
    alternative: str = "two-sided",
    pair: tuple[str, str] | None = None,
) -> str:
    """The tables of ``experiment`` in ``fmt`` (markdown, csv or json): of one ``pair`` of
    systems, or of every pair writers compared; ``compat`` and ``alternative`` as
    :func:`~cyoa.cowriting.analysis.tables.analyze` takes them; the planned N of the
    study-status line is the latest stored plan's (:func:`cyoa.store.latest_plan`).
    :class:`AnalysisError` when no writer has started."""
    pairs = [tuple(pair)] if pair else experiment_pairs(db, experiment)
    studies = [load_study(db, experiment, p) for p in pairs]
    if not studies:
        raise AnalysisError(f"No writer of experiment '{experiment}' has started yet.")
    cache = SentenceTagCache(db)
    planned = planned_writers(store.latest_plan(db, experiment))
    analyses = [
        analyze(data, compat=compat, alternative=alternative, cache=cache, planned_writers=planned)
        for data in studies
    ]
    judges = [judges_report.study_judges(db, data) for data in studies]
    text = with_judges(analyses, judges, fmt)
    systems = experiment_systems(db, experiment)
    if pair is None and compat is None and len(systems) > 2:
        probabilities = cowriting_store.pair_probabilities(db, experiment)
        ranked = ranking_report.rank_systems(studies, systems, probabilities)
        text = with_ranking(text, ranked, experiment, fmt)
    if compat is None:
        rows = process_rows(db, experiment)
        tables = [
            process_report.process_table(
                process_report.of_pair(rows, p, {w.session_id for w in data.left_out}), p
            )
            for p, data in zip(pairs, studies, strict=True)
        ]
        text = with_process(text, tables, fmt)
    return text


def with_process(text: str, tables: list[process_report.ProcessTable], fmt: str) -> str:
    """``text`` (the pairs' tables in ``fmt``) with each pair's writing-process table
    (:mod:`.process`): a ``process`` key in each pair's JSON object, a Markdown section per
    pair at the end, CSV rows under each pair."""
    if fmt == "json":
        plain = json.loads(text)
        for entry, table in zip(plain, tables, strict=False):
            entry["process"] = process_report.to_dict(table)
        return json.dumps(plain, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return text + "".join("\n".join(process_report.markdown_lines(t)) for t in tables)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for table in tables:
        for measure, cells in process_report.to_dict(table)["measures"].items():
            for system, cell in cells.items():
                value = "" if cell is None else cell["value"]
                writer.writerow((" vs ".join(table.systems), "process", measure, system, value))
    return text + out.getvalue()


def with_ranking(
    text: str, rankings: ranking_report.SystemRankings, experiment: str, fmt: str
) -> str:
    """``text`` (the pairs' tables in ``fmt``) followed by the ranking of all systems."""
    if fmt == "json":
        plain = json.loads(text)
        plain.append({"ranking": ranking_report.to_dict(rankings)})
        return json.dumps(plain, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return text + "\n" + "\n".join(ranking_report.markdown_lines(rankings, experiment))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for table, row, column, value in ranking_report.csv_rows(rankings):
        writer.writerow(("all systems", table, row, column, "" if value is None else value))
    return text + out.getvalue()


def with_judges(analyses: list[Analysis], judges: list[list[WriterAgreement]], fmt: str) -> str:
    """``analyses`` rendered in ``fmt``, each pair followed by its ``judges``."""
    if fmt == "json":
        plain = json.loads(render(analyses, "json"))
        for entry, found in zip(plain, judges, strict=True):
            entry["judges"] = judges_report.to_dicts(found)
        return json.dumps(plain, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        return "\n".join(
            to_markdown(analysis) + "\n".join(judges_report.markdown_lines(found))
            for analysis, found in zip(analyses, judges, strict=True)
        )
    text = render(analyses, fmt)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for analysis, found in zip(analyses, judges, strict=True):
        pair = " vs ".join(analysis.systems)
        for row in judges_report.csv_rows(found):
            writer.writerow((pair, *("" if v is None else v for v in row)))
    return text + out.getvalue()
