"""The ranking of N systems as ``analyze``, the dashboard and the evaluation card show it:
the plain Bradley–Terry fit beside the style-controlled one
(:mod:`cyoa.cowriting.analysis.style_control`), so that a system that wins by writing longer
(or with more dialogue) is seen: its strength drops once style is held equal.

Both fits use every counted choice (both suggestions shown, :attr:`RoundRecord.
counts_for_preference`) of every pair, with intervals clustered by writer. Under adaptive
pairing each writer's choices are weighted by :func:`writer_weights`, so the ranking is that
of uniform pairing; sessions without a stored probability (balanced pairing) weigh 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cyoa.cowriting.analysis.bradley_terry import NotEstimable
from cyoa.cowriting.analysis.data import StudyData
from cyoa.cowriting.analysis.style_control import (
    COVARIATES,
    Comparison,
    Estimate,
    LogitRanking,
    logit_rank,
    style_differences,
)

COLUMNS = (
    "Rank",
    "System",
    "Strength (share)",
    "95% CI",
    "Share at equal style",
    "95% CI at equal style",
    "Rank at equal style",
)
COVARIATE_TEXT = {
    "length": "length: (words₁ − words₂) / (words₁ + words₂)",
    "dialogue": "dialogue share: difference of the fractions of characters in quotation marks",
}


@dataclass(frozen=True)
class SystemRankings:
    """The plain and the style-controlled ranking (``None`` with the reason in ``plain_error``
    or ``style_error`` when the choices do not determine it); ``weighted_writers`` counts the
    writers whose choices carry an inverse-propensity weight."""

    plain: LogitRanking | None
    style: LogitRanking | None
    plain_error: str | None
    style_error: str | None
    weighted_writers: int


def writer_weights(
    writer_pairs: Mapping[str, frozenset[str]], probabilities: Mapping[str, float], pairs: int
) -> dict[str, float]:
    """Each adaptively paired writer's weight: the inverse-propensity weight
    ``1 / (pairs · π)`` (Horvitz & Thompson 1952; ``π`` the probability their pair was drawn
    with), self-normalised within each pair so that every pair's writers together weigh
    ``n / pairs``, ``n`` the adaptively paired writers (Hájek 1971). Each pair then carries
    the weight it would have under uniform pairing, which is the ranking's estimand; the
    normalisation keeps out the chance variation in how many writers a pair drew, which
    unnormalised weights add to the intervals. Writers without a stored ``π`` weigh 1.

    References:
        Horvitz, D. G. and Thompson, D. J. (1952). JASA 47(260), 663–685.
        Hájek, J. (1971). Comment on a paper by D. Basu. In Foundations of Statistical
        Inference, p. 236. Holt, Rinehart and Winston.
    """
    raw = {w: 1.0 / (pairs * probabilities[w]) for w in writer_pairs if w in probabilities}
    totals: dict[frozenset[str], float] = {}
    for writer, weight in raw.items():
        totals[writer_pairs[writer]] = totals.get(writer_pairs[writer], 0.0) + weight
    share = len(raw) / pairs
    weights = {w: 1.0 for w in writer_pairs}
    weights.update({w: r * share / totals[writer_pairs[w]] for w, r in raw.items()})
    return weights


def comparisons(
    studies: Sequence[StudyData], probabilities: Mapping[str, float], pairs: int
) -> list[Comparison]:
    """Every counted choice of ``studies`` as a :class:`Comparison` with its style
    differences and its writer's weight (:func:`writer_weights`)."""
    writer_pairs = {
        r.session_id: frozenset(r.slot_systems) for data in studies for r in data.rounds
    }
    weights = writer_weights(writer_pairs, probabilities, pairs)
    out = []
    for data in studies:
        for r in data.rounds:
            if not r.counts_for_preference or r.chosen_system not in r.slot_systems:
                continue
            first, second = r.suggestions
            out.append(
                Comparison(
                    writer=r.session_id,
                    first=r.slot_systems[0],
                    second=r.slot_systems[1],
                    first_chosen=r.chosen_system == r.slot_systems[0],
                    style=style_differences(first or "", second or ""),
                    weight=weights[r.session_id],
                )
            )
    return out


def rank_systems(
    studies: Sequence[StudyData], systems: Sequence[str], probabilities: Mapping[str, float]
) -> SystemRankings:
    """Both rankings of ``systems`` from ``studies`` (every pair writers compared)."""
    pairs = len(systems) * (len(systems) - 1) // 2
    styled = comparisons(studies, probabilities, pairs)
    plain_input = [
        Comparison(c.writer, c.first, c.second, c.first_chosen, (), c.weight) for c in styled
    ]
    results: list[LogitRanking | None] = []
    errors: list[str | None] = []
    for data, covariates in ((plain_input, ()), (styled, COVARIATES)):
        try:
            results.append(logit_rank(data, systems, covariates=covariates))
            errors.append(None)
        except NotEstimable as exc:
            results.append(None)
            errors.append(str(exc))
    weighted = {c.writer for c in styled if c.writer in probabilities}
    return SystemRankings(results[0], results[1], errors[0], errors[1], len(weighted))


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _span(estimate: Estimate | None) -> str:
    if estimate is None or estimate.ci_low is None or estimate.ci_high is None:
        return "–"
    return f"{_num(estimate.ci_low)} – {_num(estimate.ci_high)}"


def display_rows(rankings: SystemRankings) -> list[tuple[str, ...]]:
    """The table of :data:`COLUMNS`, in the plain ranking's order (the style-controlled
    order when the plain ranking is missing)."""
    lead = rankings.plain or rankings.style
    if lead is None:
        return []
    style = {s.system: s for s in rankings.style.systems} if rankings.style else {}
    style_rank = (
        {s.system: n for n, s in enumerate(rankings.style.systems, start=1)}
        if (rankings.style)
        else {}
    )
    plain = {s.system: s for s in rankings.plain.systems} if rankings.plain else {}
    rows = []
    for position, entry in enumerate(lead.systems, start=1):
        name = entry.system
        ours, theirs = plain.get(name), style.get(name)
        rows.append(
            (
                str(position) if rankings.plain else "–",
                name,
                _num(ours.share.estimate) if ours else "–",
                _span(ours.share) if ours else "–",
                _num(theirs.share.estimate) if theirs else "–",
                _span(theirs.share) if theirs else "–",
                str(style_rank[name]) if name in style_rank else "–",
            )
        )
    return rows


def coefficient_rows(rankings: SystemRankings) -> list[tuple[str, str, str]]:
    """Each style covariate: its text, coefficient (log-odds per unit) and interval."""
    if rankings.style is None:
        return []
    return [(COVARIATE_TEXT[c.name], _num(c.estimate), _span(c)) for c in rankings.style.covariates]


def notes(rankings: SystemRankings) -> list[str]:
    """What the table rests on, and why a part is missing."""
    lead = rankings.plain or rankings.style
    out = []
    if lead is not None:
        out.append(
            f"Bradley–Terry as a logistic regression from {lead.comparisons} choices of "
            f"{lead.writers} writers; shares are softmax of the strengths (sum 1); 95% Wald "
            "intervals with the sandwich covariance clustered by writer (delta method for "
            "shares). 'At equal style' adds the style covariates of the two suggestions "
            "(lmarena's style control, Li et al. 2024): a system whose share drops there won "
            "partly by its style."
        )
    if rankings.weighted_writers:
        out.append(
            f"Adaptive pairing: the choices of {rankings.weighted_writers} writers are weighted "
            "by the inverse of the probability their pair was drawn with, normalised within "
            "each pair (Hájek), so the ranking is that of uniform pairing."
        )
    for label, error in (("plain", rankings.plain_error), ("at equal style", rankings.style_error)):
        if error:
            out.append(f"No ranking {label} yet: {error}")
    return out


def markdown_lines(rankings: SystemRankings, experiment: str) -> list[str]:
    """The ranking section of ``analyze``'s Markdown."""
    lines = [f"# Ranking of all systems: {experiment}", ""]
    rows = display_rows(rankings)
    if rows:
        lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        lines.append("")
    coefficients = coefficient_rows(rankings)
    if coefficients:
        lines += ["| Style covariate | Coefficient (log-odds) | 95% CI |", "|---|---|---|"]
        lines += ["| " + " | ".join(row) + " |" for row in coefficients]
        lines.append("")
    lines += [f"- {note}" for note in notes(rankings)]
    return lines + [""]


def _estimate_rows(table: str, ranking: LogitRanking) -> list[tuple[str, str, str, Any]]:
    rows: list[tuple[str, str, str, Any]] = []
    for rank, s in enumerate(ranking.systems, start=1):
        rows.append((table, s.system, "rank", rank))
        for field, value in (("strength", s.strength), ("share", s.share)):
            rows += [
                (table, s.system, field, value.estimate),
                (table, s.system, f"{field}_ci_low", value.ci_low),
                (table, s.system, f"{field}_ci_high", value.ci_high),
            ]
    for c in ranking.covariates:
        rows += [
            (table, c.name, "coefficient", c.estimate),
            (table, c.name, "ci_low", c.ci_low),
            (table, c.name, "ci_high", c.ci_high),
        ]
    rows += [
        (table, "all", "choices", ranking.comparisons),
        (table, "all", "writers", ranking.writers),
        (table, "all", "weighted", ranking.weighted),
    ]
    return rows


def csv_rows(rankings: SystemRankings) -> list[tuple[str, str, str, Any]]:
    """``(table, row, column, value)`` rows: tables ``ranking`` and ``ranking_style``."""
    rows: list[tuple[str, str, str, Any]] = []
    for table, ranking in (("ranking", rankings.plain), ("ranking_style", rankings.style)):
        if ranking is not None:
            rows += _estimate_rows(table, ranking)
    for index, note in enumerate(notes(rankings), start=1):
        rows.append(("ranking_notes", str(index), "note", note))
    return rows


def _plain_dict(ranking: LogitRanking | None) -> dict[str, Any] | None:
    if ranking is None:
        return None
    entry = asdict(ranking)
    del entry["covariance"]
    return entry


def to_dict(rankings: SystemRankings) -> dict[str, Any]:
    """The rankings for JSON: both fits (without the covariance) and the notes."""
    return {
        "plain": _plain_dict(rankings.plain),
        "style": _plain_dict(rankings.style),
        "weighted_writers": rankings.weighted_writers,
        "notes": notes(rankings),
    }
