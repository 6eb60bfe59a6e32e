"""The Judges section of a rating experiment's dashboard and evaluation card, display-ready:
the experiment's judges (read from its panels, with where each came from), each judge's
calibration against the human panel per item and over all items with the human ceiling and
the alternative annotator test, the system level, the disagreements with both rationales,
and the bias card. The figures come from the report
(:func:`cyoa.rating.analysis.report.rating_report` with ``judges=True``); defined in
docs/analysis.md, "Judges and calibration" and "Bias card"."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cyoa.db.facade import Db
from cyoa.rating.analysis.report import RatingReport
from cyoa.rating.judges.bias import BiasCard
from cyoa.rating.judges.bias_report import correlation_text, position_lines
from cyoa.rating.judges.calibration import ItemCalibration, JudgeCalibration
from cyoa.rating.judges.report import alt_cell, kappa_cell, tau_cell
from cyoa.rating.judges.store import judge_panels

# Disagreements listed per judge on the page; the rest are in analyze's JSON.
DISAGREEMENTS_SHOWN = 50


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def judge_origin(origin: Mapping[str, Any]) -> str:
    """Where a judge's verdicts came from, in words: ``imported from FILE (format F)`` for
    imported verdicts (the experiment spec's ``judges`` entry has ``file``), else the model
    run's model and version."""
    if origin.get("file"):
        return f"imported from {origin['file']} (format {origin.get('format', '–')})"
    model = origin.get("model")
    if model:
        version = origin.get("model_version")
        return f"run with {model}" + (f" (version {version})" if version else "")
    return "origin not recorded"


def judge_template(origin: Mapping[str, Any]) -> str | None:
    """The prompt template a judge was run with, as shown: a run stores one template per kind
    of item (``templates``), each shown under its kind; ``None`` for imported verdicts."""
    if origin.get("prompt_template"):
        return str(origin["prompt_template"])
    templates = origin.get("templates") or {}
    return "\n\n".join(f"[{kind}]\n{text}" for kind, text in sorted(templates.items())) or None


def judge_list(db: Db, exp_id: str, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every judge panel of ``exp_id``: its name, origin (:func:`judge_origin`), the prompt
    template and model version when recorded, and its verdicts, unparsed ones and stories."""
    origins = spec.get("judges") or {}
    rows = []
    for judge in judge_panels(db, exp_id):
        verdicts, unparsed, stories = db.execute(
            "SELECT count(*), sum(j.value IS NULL AND j.value_text IS NULL),"
            " count(DISTINCT j.story_id) FROM judgements j JOIN raters r"
            " ON r.experiment_id = j.experiment_id AND r.rater_id = j.rater_id"
            " WHERE j.experiment_id = ? AND r.panel = ?",
            [exp_id, judge],
        ).fetchone()
        origin = origins.get(judge) or {}
        rows.append(
            {
                "name": judge,
                "origin": judge_origin(origin),
                "template": judge_template(origin),
                "model_version": origin.get("model_version") or "not recorded",
                "verdicts": verdicts,
                "unparsed": unparsed or 0,
                "stories": stories,
            }
        )
    return rows


def _calibration_row(row: ItemCalibration) -> dict[str, str]:
    scores = row.scores
    return {
        "item": row.item,
        "label": row.label,
        "units": str(row.kappa.units),
        "kappa": kappa_cell(row),
        "balanced_accuracy": _num(scores.balanced_accuracy) if scores else "–",
        "f1": _num(scores.f1) if scores else "–",
        "alpha": _num(row.alpha),
        "spearman": _num(row.spearman),
        "ceiling_human": _num(row.ceiling.human),
        "ceiling_judge": _num(row.ceiling.judge),
        "alt_test": alt_cell(row),
        "unparsed": str(row.unparsed),
    }


def _system(calibration: JudgeCalibration) -> dict[str, Any]:
    system = calibration.system
    tau = tau_cell(system)
    rows = [
        {"source": row.source, "stories": row.stories, "human": _num(row.human),
         "judge": _num(row.judge)}
        for row in system.rows
    ]  # fmt: skip
    return {"measure": system.measure, "tau": tau, "rows": rows}


def _verdict(value: float, likert: bool) -> str:
    if likert:
        return f"{value:g}"
    return "Yes" if value == 1 else "No"


def _disagreements(calibration: JudgeCalibration, labels: Mapping[str, str]) -> dict[str, Any]:
    likert = any(row.kind == "likert" for row in calibration.items)
    rows = [
        {
            "story": found.story_id,
            "source": found.source,
            "item": labels.get(found.item, found.item),
            "human": _verdict(found.human, likert),
            "judge": _verdict(found.judge, likert),
            "human_rationales": list(found.human_rationales),
            "judge_rationale": found.judge_rationale or "–",
        }
        for found in calibration.disagreements[:DISAGREEMENTS_SHOWN]
    ]
    return {"count": len(calibration.disagreements), "rows": rows}


def _bias(card: BiasCard | None) -> dict[str, Any] | None:
    if card is None:
        return None
    length = card.length
    return {
        "measure": length.measure,
        "bands": [
            {
                "label": band.label,
                "stories": band.stories,
                "words": f"{band.min_words}–{band.max_words}",
                "judge": _num(band.judge),
                "human": _num(band.human),
            }
            for band in length.bands
        ],  # fmt: skip
        "judge": correlation_text(length.judge),
        "human": correlation_text(length.human),
        "excess": correlation_text(length.excess),
        "without_length": length.without_length,
        "flagged": length.flagged,
        "position": [line.removeprefix("- ").replace("**", "") for line in position_lines(card)],
    }


def judges_section(
    db: Db, exp_id: str, spec: Mapping[str, Any], report: RatingReport | None
) -> dict[str, Any]:
    """The Judges section (see the module): ``judges`` the list of judges, and per judge
    with a calibration its ``calibrations`` entry."""
    bias = {card.judge: card for card in (report.bias if report else ())}
    labels = report.all_raters.item_texts if report else {}
    calibrations = [
        {
            "judge": calibration.judge,
            "rows": [
                _calibration_row(row)
                for row in ((calibration.overall,) if calibration.overall else ())
                + calibration.items
            ],
            "likert": any(row.kind == "likert" for row in calibration.items),
            "system": _system(calibration),
            "disagreements": _disagreements(calibration, labels),
            "bias": _bias(bias.get(calibration.judge)),
        }
        for calibration in (report.judges if report else ())
    ]
    return {"judges": judge_list(db, exp_id, spec), "calibrations": calibrations}


def card_lines(judges: list[dict[str, Any]], report: RatingReport | None) -> list[str]:
    """The evaluation card's Judges section: every judge of ``judges`` (:func:`judge_list`)
    with where it came from, its prompt template and model version, and its calibration
    summary (κ over all items with its interval beside the human ceiling, the alternative
    annotator test, the bias flags); no section without judges."""
    if not judges:
        return []
    found = {c.judge: c for c in (report.judges if report else ())}
    bias = {card.judge: card for card in (report.bias if report else ())}
    lines = ["## Judges", ""]
    for judge in judges:
        calibration = found.get(judge["name"])
        overall = calibration.overall if calibration else None
        lines += [
            f"- **{judge['name']}**: {judge['origin']}; model version {judge['model_version']}; "
            f"{judge['verdicts']} verdicts about {judge['stories']} stories, {judge['unparsed']} "
            "unparsed (left out).",
        ]
        if judge["template"]:
            lines += ["", "  Prompt template:", "", "  ```", *(
                f"  {line}" for line in str(judge["template"]).splitlines()
            ), "  ```", ""]  # fmt: skip
        if overall is not None:
            lines.append(
                f"  Over all items: Cohen's κ against the human majority {kappa_cell(overall)} "
                f"({overall.kappa.units} units); human ceiling {_num(overall.ceiling.human)}, "
                f"the judge in a human's place {_num(overall.ceiling.judge)}; alternative "
                f"annotator test: {alt_cell(overall)}."
            )
        card = bias.get(judge["name"])
        if card is not None:
            length = "flagged" if card.length.flagged else "not flagged"
            lines.append(f"  Bias card: length {length}.")
    lines += [
        "",
        'Definitions: docs/analysis.md, "Judges and calibration" and "Bias card"; every '
        "figure per item in `analyze --format json`.",
        "",
    ]
    return lines
