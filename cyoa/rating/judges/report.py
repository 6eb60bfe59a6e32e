"""Every judge of a stored rating experiment calibrated against its human panel, and the
calibration as ``analyze`` shows it: a JSON-ready dict, Markdown tables and CSV rows."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from cyoa.db.facade import Db
from cyoa.rating.analysis.data import RatingData, load_ratings
from cyoa.rating.judges.calibration import (
    ItemCalibration,
    JudgeCalibration,
    SystemLevel,
    calibrate,
)
from cyoa.rating.judges.store import judge_panels


def judge_calibrations(
    db: Db, experiment: str, humans: RatingData, bootstrap: int = 1000
) -> tuple[JudgeCalibration, ...]:
    """Each judge panel of ``experiment`` against the human panel ``humans`` (unparsed
    verdicts left out and counted), its intervals from ``bootstrap`` replicates."""
    return tuple(
        calibrate(
            humans.instrument,
            humans.judgements,
            load_ratings(db, experiment, panel=judge).judgements,
            judge=judge,
            bootstrap=bootstrap,
        )
        for judge in judge_panels(db, experiment)
    )


def plain(value: Any) -> Any:
    """``value`` with NaN as None, for JSON."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {key: plain(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [plain(inner) for inner in value]
    return value


def calibration_to_dict(calibration: JudgeCalibration) -> dict[str, Any]:
    """``calibration`` as plain data (every figure named as in docs/analysis.md)."""
    return plain(dataclasses.asdict(calibration))


def num(value: float | None, digits: int = 2) -> str:
    """``value`` to ``digits`` decimals, "–" when undefined."""
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def kappa_cell(row: ItemCalibration) -> str:
    """κ of ``row`` with its 95% interval, "–" when undefined."""
    kappa = row.kappa
    if kappa.kappa is None:
        return "–"
    if kappa.ci_low is None:
        return num(kappa.kappa)
    return f"{num(kappa.kappa)} [{num(kappa.ci_low)}, {num(kappa.ci_high)}]"


def alt_cell(row: ItemCalibration) -> str:
    """The alternative annotator test's verdict on ``row`` with its ω and ρ."""
    test = row.alt_test
    if test is None or test.passed is None:
        return "too few units"
    verdict = "passes" if test.passed else "fails"
    cell = f"{verdict} (ω {num(test.winning_rate)}, ρ {num(test.advantage_probability)})"
    other = row.alt_test_other_family
    if other is not None and other.passed is not None and other.passed != test.passed:
        corrected = "with every criterion" if other.family == "judge" else "per criterion"
        cell += f"; {'passes' if other.passed else 'fails'} corrected {corrected}"
    return cell


def tau_cell(system: SystemLevel) -> str:
    """Kendall's τ of the system level with its 95% interval where there is one, and its
    permutation p: "0.67 (p 0.333, exact permutation (24 orderings); no interval: …)"; "–
    (why)" when τ is undefined."""
    if system.tau is None:
        return f"– ({system.reason})"
    interval = (
        f" [{num(system.ci_low)}, {num(system.ci_high)}]" if system.ci_low is not None else ""
    )
    p = f"p {num(system.p_value, 3)}, {system.p_method}" if system.p_value is not None else ""
    why = f"; no interval: {system.interval_reason}" if system.interval_reason else ""
    return f"{num(system.tau)}{interval} ({p}{why})" if p or why else f"{num(system.tau)}{interval}"


def _row(judge: str, row: ItemCalibration) -> str:
    scores = row.scores
    second = (
        f"{num(scores.balanced_accuracy)} | {num(scores.f1)}"
        if scores is not None
        else f"{num(row.alpha)} | {num(row.spearman)}"
    )
    return (
        f"| {judge} | {row.label} | {row.kappa.units} | {kappa_cell(row)} | {second} | "
        f"{num(row.ceiling.human)} | {num(row.ceiling.judge)} | {alt_cell(row)} | "
        f"{row.unparsed} |"
    )


def calibration_markdown(calibrations: tuple[JudgeCalibration, ...]) -> str:
    """The Judges section of ``analyze``: one calibration table (each judge over all items,
    then per item), the system level and the count of disagreements."""
    if not calibrations:
        return ""
    binary = any(row.kind == "binary" for c in calibrations for row in c.items)
    second = "balanced accuracy | F1" if binary else "α | Spearman ρ"
    lines = [
        "# Judges",
        "",
        f"Each judge against the human raters (reference: their {'majority' if binary else 'mean'};"
        " Cohen's κ with a 95% bootstrap interval over stories"
        f"{'' if binary else ', quadratically weighted'}). The human ceiling is each human "
        "against the others' majority, pooled; beside it the judge against the same "
        "majorities. Alternative annotator test: Calderon et al. (2025), ε = "
        f"{_epsilon(calibrations)}, Benjamini–Yekutieli {_family(calibrations)}. Unparsed "
        "verdicts are left out and counted.",
        "",
        f"| judge | item | units | κ [95% CI] | {second} | human ceiling | judge in a human's "
        "place | alternative annotator test | unparsed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for calibration in calibrations:
        rows = ((calibration.overall,) if calibration.overall else ()) + calibration.items
        lines += [_row(calibration.judge, row) for row in rows]
    lines += [
        "",
        "| judge | source | humans | judge | Kendall's τ [95% CI] (permutation p) |",
        "|---|---|---|---|---|",
    ]
    for calibration in calibrations:
        system = calibration.system
        tau = tau_cell(system)
        lines += [
            f"| {calibration.judge} | {row.source} | {num(row.human)} | {num(row.judge)} | {tau} |"
            for row in system.rows
        ]
    lines.append("")
    lines += notebook_lines(calibrations)
    lines += [
        f"{c.judge}: {len(c.disagreements)} units where the humans were unanimous and the "
        "judge said otherwise (the JSON output lists them with both rationales)."
        for c in calibrations
    ]
    return "\n".join(lines) + "\n"


def notebook_lines(calibrations: tuple[JudgeCalibration, ...]) -> list[str]:
    """The TTCW release notebook's table (Yes/No instruments): each judge's five figures over
    all items with every unparsed or missing verdict counted as No, as the notebook counts
    them, and beside them the correlation with those verdicts left out (CYOA's rule above)."""
    rows = [c for c in calibrations if c.notebook is not None and c.overall is not None]
    if not rows:
        return []
    lines = [
        "The TTCW release notebook's table (Evaluating_LLM.ipynb §3.1: over all items, every "
        "unparsed or missing verdict counted as No for all five figures), and the correlation "
        "with those verdicts left out:",
        "",
        "| judge | units | balanced accuracy | precision | recall | F1 | correlation | "
        "correlation, unparsed left out |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in rows:
        nb, left_out = c.notebook, c.overall.scores
        kept = left_out.correlation if left_out is not None else None
        lines.append(
            f"| {c.judge} | {nb.units} | {num(nb.balanced_accuracy)} | {num(nb.precision)} | "
            f"{num(nb.recall)} | {num(nb.f1)} | {num(nb.correlation)} | {num(kept)} |"
        )
    return [*lines, ""]


def _family(calibrations: tuple[JudgeCalibration, ...]) -> str:
    """Which p-values the alternative annotator test corrected together, in words."""
    families = {
        row.alt_test.family for c in calibrations for row in c.items if row.alt_test is not None
    }
    if families == {"judge"}:
        return "over every criterion of a judge together"
    return "within each criterion, as the authors' code does"


def _epsilon(calibrations: tuple[JudgeCalibration, ...]) -> str:
    for calibration in calibrations:
        for row in calibration.items:
            if row.alt_test is not None:
                return num(row.alt_test.epsilon)
    return "–"


def calibration_csv_rows(calibrations: tuple[JudgeCalibration, ...]) -> list[tuple]:
    """(table, row, column, value) rows of each judge's calibration, as the rating CSV has
    them: table ``judge:<name>``, row the item, columns the figures."""
    out = []
    for calibration in calibrations:
        rows = ((calibration.overall,) if calibration.overall else ()) + calibration.items
        for row in rows:
            figures = {
                "units": row.kappa.units,
                "kappa": row.kappa.kappa,
                "kappa_ci_low": row.kappa.ci_low,
                "kappa_ci_high": row.kappa.ci_high,
                "ceiling_human": row.ceiling.human,
                "ceiling_judge": row.ceiling.judge,
                "unparsed": row.unparsed,
                **(dataclasses.asdict(row.scores) if row.scores else {}),
                **({"alpha": row.alpha, "spearman": row.spearman} if not row.scores else {}),
                "alt_test_winning_rate": row.alt_test.winning_rate if row.alt_test else None,
            }
            out += [(f"judge:{calibration.judge}", row.item, k, v) for k, v in figures.items()]
    return out
