"""Print analyses (:class:`~cyoa.cowriting.analysis.results.Analysis`, one per pair of systems) as
Markdown, CSV or JSON.

- ``markdown``: the paper's tables for reading (shares in %, means to 3 decimals, p-values to
  3 significant digits), with the notes saying what was computed and how; one section per
  pair.
- ``csv``: one value per line, ``pair,table,row,column,value``, at full precision, for
  scripts.
- ``json``: a list with one object per pair holding every field of the dataclasses, at full
  precision; NaN and undefined values are ``null``.

In CYOA's own mode the writer-level analysis leads (the headline row, the within-writer edit
tests, the confidence sequence and the study-status line) and the paper's tests follow,
labelled as Clark & Smith's. ``--compat cyoa-2021`` prints what it always printed: the
original script's numbers, nothing of the writer-level analysis (``writer_level`` is left out
of its JSON).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from collections.abc import Sequence
from typing import Any, Literal

from cyoa.cowriting.analysis.results import OVERALL, Analysis, Mean, ShareRow, WriterLevel
from cyoa.words import counted

Format = Literal["markdown", "csv", "json"]
FORMATS: tuple[Format, ...] = ("markdown", "csv", "json")


def render(analyses: Sequence[Analysis], fmt: Format = "markdown") -> str:
    """``analyses`` (one per pair of systems) in the format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "markdown":
        return "\n".join(to_markdown(analysis) for analysis in analyses)
    if fmt == "csv":
        return to_csv(analyses)
    if fmt == "json":
        return to_json(analyses)
    raise ValueError(f"Unknown format {fmt!r}: use one of {', '.join(FORMATS)}.")


# --- JSON ----------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def to_json(analyses: Sequence[Analysis]) -> str:
    """A JSON list with every field of each analysis (integer keys such as round numbers
    become strings)."""
    plain = []
    for analysis in analyses:
        entry = _plain(dataclasses.asdict(analysis))
        if analysis.compat is not None:
            del entry["writer_level"]
            if not analysis.left_out:  # the script's output as it was, unless the rule acted
                del entry["left_out"]
            if entry.get("text") is not None:  # compat refuses a study in another language
                del entry["text"]["not_computed"]
        plain.append(entry)
    return json.dumps(plain, indent=2, ensure_ascii=False) + "\n"


# --- CSV -----------------------------------------------------------------------------------


# The fields of a share (a preference or position-bias row) in the CSV layout, in order.
SHARE_FIELDS = ("chosen", "total", "share", "p_value", "alternative", "ci_low", "ci_high")


def _writer_csv_rows(level: WriterLevel) -> list[tuple[str, str, str, Any]]:
    rows: list[tuple[str, str, str, Any]] = []
    if level.headline is not None:
        for field in SHARE_FIELDS:
            rows.append(("preference_writers", "headline", field, getattr(level.headline, field)))
        rows.append(("preference_writers", "headline", "writers", level.writers))
    for number, p in level.round_p_holm.items():
        rows.append(("preference", f"Round {number}", "p_holm_rounds", p))
    for row in level.edits:
        for field, value in dataclasses.asdict(row.test).items():
            rows.append(("edits_writers", row.metric, field, value))
        rows.append(("edits_writers", row.metric, "p_holm", row.p_holm))
    watch = level.monitoring
    sequence = watch.sequence
    fields = {
        "writers": watch.writers,
        "planned_writers": watch.planned_writers,
        "alpha": watch.alpha,
        "mean": sequence.mean if sequence else None,
        "low": sequence.low if sequence else None,
        "high": sequence.high if sequence else None,
        "p_value": sequence.p_value if sequence else None,
        "decisive": watch.decisive,
        "status": watch.status,
        "fixed_sample": watch.fixed_sample,
    }
    rows += [("monitoring", "sequence", field, value) for field, value in fields.items()]
    if sequence is not None:
        for look, (low, high, p) in enumerate(
            zip(sequence.lows, sequence.highs, sequence.p_values, strict=True), start=1
        ):
            rows.append(("monitoring_looks", f"writer {look}", "low", low))
            rows.append(("monitoring_looks", f"writer {look}", "high", high))
            rows.append(("monitoring_looks", f"writer {look}", "p_value", p))
    return rows


def _csv_rows(analysis: Analysis) -> list[tuple[str, str, str, Any]]:
    rows: list[tuple[str, str, str, Any]] = []
    if analysis.writer_level is not None:
        rows += _writer_csv_rows(analysis.writer_level)
    preference = analysis.preference
    if preference is not None:
        for share in preference.rows:
            for field in SHARE_FIELDS:
                rows.append(("preference", share.label, field, getattr(share, field)))
        if preference.clustered is not None:
            for field, value in dataclasses.asdict(preference.clustered).items():
                rows.append(("preference_clustered", "writers", field, value))
        if preference.position is not None:
            for field in SHARE_FIELDS:
                rows.append(("position_bias", "slot 1", field, getattr(preference.position, field)))
    if analysis.edits is not None:
        for metric in analysis.edits.rows:
            for group, mean in metric.overall.items():
                rows.append(("edits", metric.metric, f"{group} mean", mean.mean))
                rows.append(("edits", metric.metric, f"{group} n", mean.n))
            if metric.test is not None:
                for field in ("u", "p_value", "alternative", "rank_biserial"):
                    rows.append(("edits", metric.metric, field, getattr(metric.test, field)))
            rows.append(("edits", metric.metric, "p_holm", metric.p_holm))
            for number, groups in metric.by_round.items():
                for group, mean in groups.items():
                    row = f"{metric.metric} {group}"
                    rows.append(("edits_by_round", row, f"round {number} mean", mean.mean))
                    rows.append(("edits_by_round", row, f"round {number} n", mean.n))
    if analysis.text is not None:
        for metric in analysis.text.rows:
            for source in analysis.text.sources:
                rows.append(("text", metric.metric, source, metric.values[source]))
                rows.append(("text", metric.metric, f"{source} n", metric.n[source]))
    for item in analysis.likert:
        row = f"{item.pair} {item.item_id}"
        if item.summary is not None:
            for level, count in item.summary.counts.items():
                rows.append(("likert", row, str(level), count))
            for field in ("n", "missing", "mean", "median"):
                rows.append(("likert", row, field, getattr(item.summary, field)))
        if item.describe is not None:
            for field, value in item.describe.items():
                rows.append(("likert", row, field, value))
    for index, note in enumerate(analysis.notes, start=1):
        rows.append(("notes", str(index), "note", note))
    return rows


def to_csv(analyses: Sequence[Analysis]) -> str:
    """One value per line: ``pair,table,row,column,value`` (empty value: undefined)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("pair", "table", "row", "column", "value"))
    for analysis in analyses:
        pair = " vs ".join(analysis.systems)
        for table, row, column, value in _csv_rows(analysis):
            writer.writerow((pair, table, row, column, "" if _plain(value) is None else value))
    return out.getvalue()


# --- Markdown ------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def _p(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.3g}"


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _mean(mean: Mean) -> str:
    return f"{_num(mean.mean)} ({mean.n})"


def _table(head: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in body]
    return lines + [""]


def _interval(row: ShareRow) -> str:
    if row.ci_low is None or row.ci_high is None:
        return "–"
    return f"{_pct(row.ci_low)} – {_pct(row.ci_high)}"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _span(low: float | None, high: float | None) -> str:
    if low is None or high is None or not math.isfinite(low) or not math.isfinite(high):
        return "–"
    return f"{_num(low)} – {_num(high)}"


def _headline_lines(table_system: str, level: WriterLevel) -> list[str]:
    """CYOA's headline: the writers' shares, the confidence sequence and the status line."""
    lines = []
    row = level.headline
    watch = level.monitoring
    if row is not None:
        lines.append(
            f"**Headline (writers as the unit, {level.writers} writers):** the mean writer chose "
            f"{table_system} in {_pct(row.share)} of their rounds, 95% t interval "
            f"{_interval(row)}, p = {_p(row.p_value)} ({row.alternative}; one-sample t-test of "
            f"the writers' shares against 0.5). {_sentence(watch.fixed_sample)}."
        )
        lines.append("")
    sequence = watch.sequence
    if sequence is not None:
        lines.append(
            f"**Anytime-valid, valid at every look ({sequence.n} complete stories, in the order "
            f"they were completed):** 95% confidence sequence {_pct(sequence.low)} – "
            f"{_pct(sequence.high)} of the mean writer share, anytime-valid p = "
            f"{_p(sequence.p_value)} (two-sided, against 0.5; betting confidence sequence, "
            "Waudby-Smith & Ramdas 2023)."
        )
        lines.append("")
    lines += [f"**Study status:** {watch.status}.", ""]
    return lines


def _preference_lines(analysis: Analysis) -> list[str]:
    table = analysis.preference
    if table is None:
        return ["## Tables 1/4: % chosen", "", "No round to count.", ""]
    level = analysis.writer_level
    lines = [f"## Tables 1/4: % of rounds in which {table.system} was chosen over {table.other}"]
    lines.append("")
    if level is not None:
        lines += _headline_lines(table.system, level)
        lines += [
            "Clark & Smith's pooled binomial (every round counted as independent; the paper's "
            "test, kept for comparison with it): per-round p-values Holm-adjusted across the "
            f"{counted(len(level.round_p_holm), 'round')}.",
            "",
        ]
    lines += [f"Test: {table.method}.", ""]
    has_interval = any(row.ci_low is not None for row in table.rows)
    head = ["", "chosen / rounds", "% chosen"]
    head += ["95% CI"] if has_interval else []
    alternative = table.rows[0].alternative or ""
    head.append(f"p ({alternative})")
    head += ["p (Holm, rounds)"] if level is not None else []
    body = []
    for row in table.rows:
        cells = [row.label, f"{row.chosen} / {row.total}", _pct(row.share)]
        cells += [_interval(row)] if has_interval else []
        cells.append(_p(row.p_value))
        if level is not None:
            cells.append("–" if row.round is None else _p(level.round_p_holm.get(row.round)))
        body.append(cells)
    lines += _table(head, body)
    if table.excluded_rounds:
        lines += [f"{table.excluded_rounds} rounds with one suggestion only are left out.", ""]
    clustered = table.clustered
    if clustered is not None:
        lines.append(
            f"Writer-clustered ({clustered.writers} writers): pooled {_pct(clustered.share)}, "
            f"bootstrap {int(clustered.confidence * 100)}% CI {_pct(clustered.bootstrap_low)} – "
            f"{_pct(clustered.bootstrap_high)} ({clustered.resamples:,} resamples, seed "
            f"{clustered.seed}); mean writer share {_pct(clustered.mean_writer_share)}, "
            f"t({clustered.df}) = {_num(clustered.t_statistic)}, p = {_p(clustered.p_value)} "
            f"({clustered.alternative})."
        )
        lines.append("")
    position = table.position
    if position is not None:
        lines.append(
            f"Position bias: the suggestion in slot 1 was chosen in {position.chosen} / "
            f"{position.total} rounds ({_pct(position.share)}, 95% CI {_interval(position)}), "
            f"p = {_p(position.p_value)} ({position.alternative})."
        )
        lines.append("")
    return lines


def _edit_lines(analysis: Analysis) -> list[str]:
    table = analysis.edits
    if table is None:
        return ["## Tables 2/5: edits of accepted suggestions", "", "No round to score.", ""]
    first, second = table.systems
    lines = ["## Tables 2/5: edits of accepted suggestions (mean (n))", ""]
    if analysis.writer_level is not None:
        lines += [
            "Clark & Smith's test, rounds counted as independent (the paper's; the within-writer "
            "test below is CYOA's):",
            "",
        ]
    lines += [f"Test: {table.method}.", ""]
    alternative = next((row.test.alternative for row in table.rows if row.test), "")
    head = ["Metric", first, second, OVERALL, "U", f"p ({alternative})"]
    has_holm = any(row.p_holm is not None for row in table.rows)
    # The original script reported U and p only.
    show_r = analysis.compat is None
    head += ["p (Holm)"] if has_holm else []
    head += ["rank-biserial r"] if show_r else []
    body = []
    for row in table.rows:
        test = row.test
        cells = [row.label, _mean(row.overall[first]), _mean(row.overall[second])]
        cells += [_mean(row.overall[OVERALL])]
        cells += [_num(test.u, 1) if test else "–", _p(test.p_value) if test else "–"]
        cells += [_p(row.p_holm)] if has_holm else []
        if show_r:
            cells.append(_num(test.rank_biserial) if test else "–")
        body.append(cells)
    lines += _table(head, body)
    if analysis.writer_level is not None:
        lines += _writer_edit_lines(analysis.writer_level)
    title = "## Tables 7/8: edit metrics by round (mean (n); Overall = all rounds)"
    if analysis.writer_level is not None:
        title += "\n\nDescriptive: no test is made per round (read any difference as exploratory)."
    lines += [title, ""]
    for row in table.rows:
        numbers = list(row.by_round)
        lines += [f"### {row.label}", ""]
        head = ["", *(f"Round {n}" for n in numbers), "All rounds"]
        body = [
            [group, *(_mean(row.by_round[n][group]) for n in numbers), _mean(row.overall[group])]
            for group in (first, second, OVERALL)
        ]
        lines += _table(head, body)
    return lines


def _writer_edit_lines(level: WriterLevel) -> list[str]:
    if not level.edits:
        return []
    alternative = level.edits[0].test.alternative
    lines = ["### Within writers (CYOA's test of the edit metrics)", ""]
    lines += [f"Test: {level.edits_method}.", ""]
    head = ["Metric", "difference", "95% CI", "d_z", "writers (left out)"]
    head += [f"p ({alternative})", "p (Holm)"]
    body = [
        [
            row.label,
            _num(row.test.difference),
            _span(row.test.ci_low, row.test.ci_high),
            _num(row.test.dz),
            f"{row.test.writers} ({row.test.left_out})",
            _p(row.test.p_value),
            _p(row.p_holm),
        ]
        for row in level.edits
    ]
    return lines + _table(head, body)


def _text_lines(analysis: Analysis) -> list[str]:
    table = analysis.text
    if table is None:
        return []
    lines = ["## Tables 3/6: text metrics (value (n))", "", f"Method: {table.method}.", ""]
    body = [
        [row.label, *(f"{_num(row.values[s])} ({row.n[s]})" for s in table.sources)]
        for row in table.rows
    ]
    return lines + _table(["Metric", *table.sources], body)


def _likert_lines(analysis: Analysis) -> list[str]:
    if not analysis.likert:
        return []
    lines = ["## Likert items", ""]
    pairs = list(dict.fromkeys(item.pair for item in analysis.likert))
    for pair in pairs:
        items = [item for item in analysis.likert if item.pair == pair]
        lines += [f"### {pair}", ""]
        if items[0].describe is not None:
            fields = list(items[0].describe)
            body = [
                [item.item_id, *(_num(item.describe[f]) for f in fields)]
                for item in items
                if item.describe is not None
            ]
            lines += _table(["Item", *fields], body)
            continue
        head = ["Item", "Statement", "n", "1", "2", "3", "4", "5", "mean", "median", "missing"]
        body = []
        for item in items:
            summary = item.summary
            if summary is None:
                continue
            body.append(
                [
                    item.item_id,
                    item.question,
                    str(summary.n),
                    *(str(summary.counts[level]) for level in range(1, 6)),
                    _num(summary.mean, 2),
                    _num(summary.median, 1),
                    str(summary.missing),
                ]
            )
        lines += _table(head, body)
    return lines


def to_markdown(analysis: Analysis) -> str:
    """The paper's tables as Markdown, followed by the notes."""
    mode = (
        f"--compat {analysis.compat} (the original evaluation script)"
        if analysis.compat
        else "this project's analysis"
    )
    first, second = analysis.systems
    lines = [
        f"# Analysis of {analysis.experiment}: {first} vs {second}",
        "",
        (f"{analysis.title}. " if analysis.title else "")
        + f"Mode: {mode}. Systems: {first} (first), {second} (second). "
        f"Writers: {analysis.writers}; rounds: {analysis.rounds}.",
        "",
    ]
    if analysis.left_out:
        lines += [analysis.left_out, ""]
    lines += _preference_lines(analysis)
    lines += _edit_lines(analysis)
    lines += _text_lines(analysis)
    lines += _likert_lines(analysis)
    lines += ["## Notes", ""] + [f"- {note}" for note in analysis.notes]
    return "\n".join(lines) + "\n"
