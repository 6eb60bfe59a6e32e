"""The ranking of N systems as ``analyze``, the dashboard and the evaluation card show it:
the plain Bradley–Terry fit beside the style-controlled one
(:mod:`cyoa.cowriting.analysis.style_control`), so that a system that wins by writing longer
(or with more dialogue) is seen: its strength drops once style is held equal.

Both fits use every counted choice (both suggestions shown, :attr:`RoundRecord.
counts_for_preference`) of every pair, unweighted, with intervals clustered by writer.

Under adaptive pairing (:mod:`cyoa.cowriting.assignment`) the ranking is still the unweighted
fit. Each writer's pair depends only on earlier writers' choices, so the design is ignorable:
the likelihood, and with it the maximum-likelihood estimate and its (here writer-clustered)
asymptotic intervals, is that of a fixed design (the likelihood principle, Berger & Wolpert
1988; for estimates and intervals after a sequential design, Ford, Titterington & Wu
1985; Rosenberger, Flournoy & Durham 1997). Weighting by the inverse assignment probability
would only matter where the model is wrong, and it costs: under the near-deterministic
adaptive design the probabilities range from the floor ``ε/K`` to almost 1, and the
inverse-probability-weighted intervals are far wider and cover too little
(bench/results/ranking.md). Beside the ranking, a check that needs no model for how pairs were
drawn: the plain fit with every pair weighing the same (:func:`pair_weights`), which is what
uniform pairing estimates even when Bradley–Terry does not fit the writers; a ranking that
moves there by more than its intervals says the model does not fit.

References:
    Berger, J. O. and Wolpert, R. L. (1988). The Likelihood Principle, 2nd ed. IMS Lecture
    Notes 6.
    Ford, I., Titterington, D. M. and Wu, C. F. J. (1985). Inference and sequential design.
    Biometrika 72(3), 545–551.
    Rosenberger, W. F., Flournoy, N. and Durham, S. D. (1997). Asymptotic normality of maximum
    likelihood estimators from multiparameter response-driven designs. Journal of
    Statistical Planning and Inference 60(1), 69–76.
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
    or ``style_error`` when the choices do not determine it); under adaptive pairing
    (``adaptive_writers`` > 0, the writers with a stored pair probability) also the check
    with every pair weighing the same (``equal_pairs``, ``None`` when not determined)."""

    plain: LogitRanking | None
    style: LogitRanking | None
    plain_error: str | None
    style_error: str | None
    adaptive_writers: int
    equal_pairs: LogitRanking | None = None


def pair_weights(writer_pairs: Mapping[str, frozenset[str]]) -> dict[str, float]:
    """Each writer's weight ``n / (K · n_k)``, ``n`` writers in all, ``n_k`` of them on the
    writer's pair and ``K`` the pairs with writers: every pair then weighs ``n / K``, as under
    uniform pairing, and the weights average 1. Post-stratification by pair (Holt & Smith
    1979): within a pair the writers are exchangeable, since a writer's pair depended on
    earlier writers only, so the pair's realised share replaces each writer's assignment
    probability, which under adaptive pairing varies many-fold within a pair and would make
    the check far noisier (estimated in place of known propensities, Hirano, Imbens & Ridder
    2003).

    References:
        Holt, D. and Smith, T. M. F. (1979). Post stratification. JRSS A 142(1), 33–46.
        Hirano, K., Imbens, G. W. and Ridder, G. (2003). Efficient estimation of average
        treatment effects using the estimated propensity score. Econometrica 71(4),
        1161–1189.
    """
    per_pair: dict[frozenset[str], int] = {}
    for pair in writer_pairs.values():
        per_pair[pair] = per_pair.get(pair, 0) + 1
    share = len(writer_pairs) / len(per_pair) if per_pair else 0.0
    return {w: share / per_pair[pair] for w, pair in writer_pairs.items()}


def comparisons(studies: Sequence[StudyData]) -> list[Comparison]:
    """Every counted choice of ``studies`` as a :class:`Comparison` with its style
    differences (weight 1)."""
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
                )
            )
    return out


def _fit(
    data: Sequence[Comparison], systems: Sequence[str], covariates: Sequence[str]
) -> tuple[LogitRanking | None, str | None]:
    try:
        return logit_rank(data, systems, covariates=covariates), None
    except NotEstimable as exc:
        return None, str(exc)


def rank_systems(
    studies: Sequence[StudyData], systems: Sequence[str], probabilities: Mapping[str, float]
) -> SystemRankings:
    """Both rankings of ``systems`` from ``studies`` (every pair writers compared), and the
    equal-pairs check when any writer has a stored pair probability (``probabilities``, by
    session: adaptive pairing)."""
    styled = comparisons(studies)
    plain_input = [Comparison(c.writer, c.first, c.second, c.first_chosen) for c in styled]
    plain, plain_error = _fit(plain_input, systems, ())
    style, style_error = _fit(styled, systems, COVARIATES)
    adaptive = len({c.writer for c in styled if c.writer in probabilities})
    check = None
    if adaptive:
        weights = pair_weights({c.writer: frozenset((c.first, c.second)) for c in styled})
        weighted = [
            Comparison(c.writer, c.first, c.second, c.first_chosen, (), weights[c.writer])
            for c in plain_input
        ]
        check, _ = _fit(weighted, systems, ())
    return SystemRankings(plain, style, plain_error, style_error, adaptive, check)


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
    if rankings.adaptive_writers:
        out.append(
            f"Adaptive pairing ({rankings.adaptive_writers} writers with a stored pair "
            "probability): the ranking is the unweighted fit, valid because each writer's pair "
            "depended only on earlier writers' choices (Ford, Titterington & Wu 1985)."
        )
        out.append(_check_note(rankings.equal_pairs))
    for label, error in (("plain", rankings.plain_error), ("at equal style", rankings.style_error)):
        if error:
            out.append(f"No ranking {label} yet: {error}")
    return out


def _check_note(check: LogitRanking | None) -> str:
    if check is None:
        return "Check with every pair weighing the same: not determined yet."
    shares = "; ".join(
        f"{s.system} {_num(s.share.estimate)} ({_span(s.share)})" for s in check.systems
    )
    return (
        "Check with every pair weighing the same (what uniform pairing estimates, even where "
        f"Bradley–Terry does not fit): shares {shares}. A share far outside the plain "
        "ranking's interval says the model does not fit these writers."
    )


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
    """``(table, row, column, value)`` rows: tables ``ranking``, ``ranking_style`` and, under
    adaptive pairing, ``ranking_equal_pairs``."""
    rows: list[tuple[str, str, str, Any]] = []
    tables = (
        ("ranking", rankings.plain),
        ("ranking_style", rankings.style),
        ("ranking_equal_pairs", rankings.equal_pairs),
    )
    for table, ranking in tables:
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
    """The rankings for JSON: the fits (without the covariance) and the notes."""
    return {
        "plain": _plain_dict(rankings.plain),
        "style": _plain_dict(rankings.style),
        "equal_pairs": _plain_dict(rankings.equal_pairs),
        "adaptive_writers": rankings.adaptive_writers,
        "notes": notes(rankings),
    }
