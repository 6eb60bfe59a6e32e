"""The dashboard's charts as SVG, drawn server-side with matplotlib (no browser code).

- :func:`preference_chart`: per pair of systems, the share of rounds in which the first
  system was chosen, overall and per round, with 95% Clopper–Pearson whiskers and the 50%
  line (the analysis' Tables 1/4);
- :func:`edit_chart`: the distribution of each edit metric per system (box plots with the
  single values), over accepted suggestions;
- :func:`likert_chart`: diverging stacked bars per survey statement (Clark & Smith 2021,
  Fig. 3 style): disagreement to the left of zero, agreement to the right, the neutral answer
  split across the middle;
- :func:`ranking_chart`: Bradley–Terry shares with bootstrap intervals (more than two
  systems).

Every function returns the SVG document as bytes. Figures are made without pyplot, but the
style is set through matplotlib's global rcParams: draw one chart at a time (the dashboard
holds a lock). Texts are written by matplotlib, which escapes them for XML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib
import matplotlib.patches

from cyoa.cowriting.analysis.bradley_terry import Ranking
from cyoa.cowriting.analysis.results import LikertRow, PreferenceTable
from cyoa.web.charts import COLOURS, RC, empty_chart, new_figure, svg_bytes

LIKERT_COLOURS = ("#B2182B", "#EF8A62", "#BDBDBD", "#67A9CF", "#2166AC")


def preference_chart(tables: Sequence[PreferenceTable]) -> bytes:
    """One panel per pair: % of rounds in which ``table.system`` was chosen."""
    if not tables:
        return empty_chart("No round with two suggestions yet.")
    figure = new_figure(6.5, 2.4 * len(tables))
    with matplotlib.rc_context(RC):
        for index, table in enumerate(tables):
            axes = figure.add_subplot(len(tables), 1, index + 1)
            labels = [row.label for row in table.rows]
            shares = [100 * (row.share or 0) for row in table.rows]
            low = [
                100 * ((row.share or 0) - row.ci_low) if row.ci_low is not None else 0
                for row in table.rows
            ]
            high = [
                100 * (row.ci_high - (row.share or 0)) if row.ci_high is not None else 0
                for row in table.rows
            ]
            colours = [COLOURS[0]] + [COLOURS[4]] * (len(labels) - 1)
            axes.bar(labels, shares, color=colours, yerr=[low, high], capsize=4, ecolor="#333")
            axes.axhline(50, color="#656d76", linestyle="--", linewidth=1)
            axes.set_ylim(0, 100)
            axes.set_ylabel(f"% {table.system} chosen")
            axes.set_title(
                f"{table.system} vs {table.other}: share of rounds (95% Clopper–Pearson)",
                loc="left",
            )
            for x, row in enumerate(table.rows):
                axes.annotate(
                    f"n={row.total}", (x, 2), ha="center", va="bottom", fontsize=7, color="#fff"
                )
    return svg_bytes(figure)


def edit_chart(
    values: Mapping[str, Mapping[str, Sequence[float]]],
    metrics: Sequence[tuple[str, str, float | None]],
) -> bytes:
    """Box plots per system for each metric: ``values[system][metric]`` are the single
    values (one per accepted suggestion); ``metrics`` is ``(key, label with unit, upper end
    of the axis or None)`` in panel order. Every system gets a row, in ``values`` order."""
    systems = list(values)
    if not any(values[s].get(m) for s in systems for m, _, _ in metrics):
        return empty_chart("No accepted suggestion yet.")
    figure = new_figure(3.4 * len(metrics), 1.2 + 0.5 * len(systems))
    figure.get_layout_engine().set(wspace=0.12)
    with matplotlib.rc_context(RC):
        for index, (metric, label, upper) in enumerate(metrics):
            axes = figure.add_subplot(1, len(metrics), index + 1)
            plotted = [
                (row, list(values[s].get(metric, [])))
                for row, s in enumerate(systems, start=1)
                if values[s].get(metric)
            ]
            boxes = axes.boxplot(
                [data for _, data in plotted],
                positions=[row for row, _ in plotted],
                orientation="horizontal",
                widths=0.55,
                patch_artist=True,
                showfliers=False,
                medianprops={"color": "#1f2328"},
            )
            for patch, (row, data) in zip(boxes["boxes"], plotted, strict=True):
                colour = COLOURS[(row - 1) % len(COLOURS)]
                patch.set_facecolor(colour)
                patch.set_alpha(0.35)
                jitter = [row + 0.18 * ((i * 0.618) % 1 - 0.5) for i in range(len(data))]
                axes.scatter(data, jitter, s=8, color=colour, zorder=3)
            axes.set_ylim(len(systems) + 0.6, 0.4)  # the first system on top
            axes.set_xlim(0, upper)
            axes.set_yticks(range(1, len(systems) + 1), systems if index == 0 else [])
            axes.set_xlabel(label)
    return svg_bytes(figure)


def likert_chart(rows: Sequence[LikertRow]) -> bytes:
    """Diverging stacked bars, one per pair × statement, in % of answers."""
    rows = [row for row in rows if row.summary is not None and row.summary.n]
    if not rows:
        return empty_chart("No survey answers yet.")
    figure = new_figure(7.5, 1.5 + 0.38 * len(rows))
    pairs = {row.pair for row in rows}
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        labels = []
        for y, row in enumerate(reversed(rows)):
            summary = row.summary
            shares = [100 * summary.counts[level] / summary.n for level in range(1, 6)]
            left = -(shares[0] + shares[1] + shares[2] / 2)
            for level, share in enumerate(shares, start=1):
                axes.barh(y, share, left=left, color=LIKERT_COLOURS[level - 1], height=0.7)
                left += share
            prefix = f"{row.pair}: " if len(pairs) > 1 else ""
            labels.append(f"{prefix}{row.item_id} (n={summary.n})")
        axes.set_yticks(range(len(rows)), labels)
        axes.axvline(0, color="#333", linewidth=0.8)
        axes.set_xlim(-100, 100)
        axes.set_xticks([-100, -50, 0, 50, 100], ["100%", "50%", "0", "50%", "100%"])
        axes.set_xlabel("% of answers (disagree ← → agree)")
        handles = [
            matplotlib.patches.Patch(color=c, label=f"{n}")
            for n, c in enumerate(LIKERT_COLOURS, start=1)
        ]
        axes.legend(
            handles=handles,
            title="answer (1 = strongly disagree … 5 = strongly agree)",
            ncols=5,
            loc="lower center",
            bbox_to_anchor=(0.5, 1.0),
            frameon=False,
        )
    return svg_bytes(figure)


def ranking_chart(ranking: Ranking) -> bytes:
    """Bradley–Terry shares (strongest on top) with their bootstrap intervals."""
    systems = list(reversed(ranking.systems))
    figure = new_figure(6, 0.8 + 0.45 * len(systems))
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        for y, ranked in enumerate(systems):
            if ranked.ci_low is not None and ranked.ci_high is not None:
                axes.plot([ranked.ci_low, ranked.ci_high], [y, y], color="#333", linewidth=1.5)
            axes.scatter([ranked.share], [y], color=COLOURS[0], s=36, zorder=3)
        axes.axvline(1 / len(systems), color="#656d76", linestyle="--", linewidth=1)
        axes.set_yticks(range(len(systems)), [r.system for r in systems])
        axes.set_xlabel(
            f"Bradley–Terry strength (share, sums to 1) with {int(ranking.confidence * 100)}% "
            "writer bootstrap interval"
        )
    return svg_bytes(figure)
