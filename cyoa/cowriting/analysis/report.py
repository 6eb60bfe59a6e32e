"""The ``analyze`` verb's text for a co-writing experiment: the paper's tables with their
tests, one set per pair of systems that writers compared (:mod:`.tables`, :mod:`.render`)."""

from __future__ import annotations

from sqlite_utils import Database

from cyoa.cowriting.analysis.data import experiment_pairs, load_study
from cyoa.cowriting.analysis.render import render
from cyoa.cowriting.analysis.tables import analyze
from cyoa.cowriting.analysis.tag_cache import SentenceTagCache
from cyoa.errors import AnalysisError


def report(
    db: Database,
    experiment: str,
    fmt: str,
    *,
    compat: str | None = None,
    alternative: str = "two-sided",
    pair: tuple[str, str] | None = None,
) -> str:
    """The tables of ``experiment`` in ``fmt`` (markdown, csv or json): of one ``pair`` of
    systems, or of every pair writers compared; ``compat`` and ``alternative`` as
    :func:`~cyoa.cowriting.analysis.tables.analyze` takes them. :class:`AnalysisError` when
    no writer has started."""
    pairs = [tuple(pair)] if pair else experiment_pairs(db, experiment)
    studies = [load_study(db, experiment, p) for p in pairs]
    if not studies:
        raise AnalysisError(f"No writer of experiment '{experiment}' has started yet.")
    cache = SentenceTagCache(db)
    analyses = [
        analyze(data, compat=compat, alternative=alternative, cache=cache) for data in studies
    ]
    return render(analyses, fmt)
