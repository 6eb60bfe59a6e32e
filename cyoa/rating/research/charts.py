"""A rating experiment's charts as SVG, drawn server-side with matplotlib in the style of the
co-writing charts (:mod:`cyoa.cowriting.research.charts`: Okabe–Ito colours, no browser code).

They draw what :func:`cyoa.rating.analysis.ratings.analyze_ratings` computed; nothing is
recomputed here:

- :func:`pass_rate_chart` (``pass-rates``): a heat map of the Yes/No tests (rows, grouped
  by dimension) × sources (columns); each cell is the pass rate, Yes judgements ÷
  judgements of the test, with that number of judgements ``n``
  (:func:`cyoa.rating.analysis.ttcw.pass_rates`; Chakrabarty et al. 2024, Table 5);
- :func:`factor_chart` (``factors``): per factor of a Likert scale (the AISS's five; the
  one scale of all items of an instrument without factors), each source's mean factor
  score with its 95% interval from the crossed story × rater mixed model
  (:mod:`cyoa.rating.analysis.mixed`; the t interval over stories where the model fell back
  to the bootstrap) (:func:`cyoa.rating.analysis.scales.analyze_scales`);
- :func:`entropy_chart` (``entropy``): FEI's ETC and EWC per source, E(Q) in bits at the
  number of readers per question every source is compared at, with the 95% percentile
  bootstrap interval over stories (:func:`cyoa.rating.analysis.fei.analyze_fei`; Castricato et
  al. 2021).

Every function returns the SVG document as bytes. An axis of means spans the values a mean
can take (the scale's lowest to highest point, e.g. 1 … 5 or 0 … 10; 0–1 bits); an
interval that reached past them was cut at the bound by the analysis
(:func:`cyoa.rating.analysis.scales.mean_interval`), and its mean is marked † with a note
under the chart. Long source names are wrapped onto several lines, never cut, so that
neighbouring labels do not run into each other. matplotlib's style is global: draw one chart
at a time (the web app holds the co-writing dashboard's chart lock).
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Mapping, Sequence

from cyoa.rating.analysis.fei import MIN_ANSWERS, IndexSummary
from cyoa.rating.analysis.mixed import SourceMean
from cyoa.rating.analysis.ratings import RatingAnalysis
from cyoa.rating.analysis.scales import (
    FactorSummary,
    MeanInterval,
    likert_scales,
    scale_bounds,
)
from cyoa.rating.analysis.ttcw import PassRate
from cyoa.rating.instruments import Instrument
from cyoa.web.charts import COLOURS, RC, empty_chart, new_figure, svg_bytes

# Chart name → what it shows (the image's alt text on the dashboard).
CHARTS = {
    "pass-rates": "Pass rate of each test per source, as a heat map of % Yes with n",
    "factors": "Mean factor score per source with 95% intervals from the mixed model",
    "entropy": "FEI entropies ETC and EWC per source with 95% bootstrap intervals over stories",
}
NO_DATA = "No judgements yet."
CLIPPED_NOTE = "† interval cut at the bound of the scale (docs/analysis.md)"
# A source's name is wrapped to lines of at most this many characters under its column.
LABEL_WIDTH = 14
# The y axes span the values a mean can take (low … high points; 0–1 bits) and this share more.
MARGIN = 0.04


def chart_names(instrument: Instrument) -> tuple[str, ...]:
    """The charts that apply to ``instrument``: ``pass-rates`` with Yes/No items,
    ``factors`` with Likert scales (:func:`~cyoa.rating.analysis.scales.likert_scales`:
    factors, or all Likert items of an instrument without factors), ``entropy`` with FEI
    questions."""
    names = []
    if any(item.kind == "yes_no" for item in instrument.items):
        names.append("pass-rates")
    if likert_scales(instrument):
        names.append("factors")
    if any(item.fei_kind for item in instrument.items):
        names.append("entropy")
    return tuple(names)


def rating_chart(
    name: str, instrument: Instrument, analysis: RatingAnalysis | None, caption: str = ""
) -> bytes:
    """The chart ``name`` (one of :func:`chart_names`) of ``analysis`` (None: no judgements
    yet); ``caption`` says whose judgements it shows. Raises ``KeyError`` for a chart that
    does not apply to ``instrument``."""
    if name not in chart_names(instrument):
        raise KeyError(name)
    if name == "pass-rates":
        if analysis is None or analysis.tests is None:
            return empty_chart(NO_DATA)
        return pass_rate_chart(analysis.tests.pass_rates, analysis.sources, caption)
    if name == "factors":
        if analysis is None or analysis.scales is None or not analysis.scales.factors:
            return empty_chart(NO_DATA)
        scales = likert_scales(instrument)
        bounds = scale_bounds(instrument, [i for ids in scales.values() for i in ids])
        models = {
            (model.what, mean.source): mean
            for model in analysis.scales.models
            for mean in model.means
            if model.components is not None
        }
        known = all(m.raters is not None for m in analysis.scales.models if m.components)
        return factor_chart(
            analysis.scales.factors, tuple(scales), bounds, caption, models, raters_known=known
        )
    if analysis is None or analysis.fei is None:
        return empty_chart(NO_DATA)
    if not analysis.fei.summaries:
        return empty_chart(missing_entropy(analysis.fei.skipped_questions))
    return entropy_chart(analysis.fei.summaries, caption)


def missing_entropy(skipped: int) -> str:
    """What the entropy chart lacks before any question has :data:`~cyoa.rating.analysis.fei.
    MIN_ANSWERS` answers, ``skipped`` being the story × question pairs answered once."""
    if not skipped:
        return NO_DATA
    sentence = (
        f"No entropy yet: each of the {skipped} questions answered so far has one answer, "
        f"and a question's entropy needs answers from at least {MIN_ANSWERS} readers."
    )
    return textwrap.fill(sentence, 60)


def _rate(cell: PassRate | None) -> float:
    return math.nan if cell is None or cell.rate is None else cell.rate


def wrapped(name: str, width: int = LABEL_WIDTH) -> str:
    """``name`` on lines of at most ``width`` characters, broken after hyphens and spaces
    where it can be and inside a long word where it must; every character kept."""
    return "\n".join(textwrap.wrap(name, width, break_on_hyphens=True)) or name


def _percent(rate: float) -> str:
    return f"{100 * rate:.0f}%"


def pass_rate_chart(rates: Sequence[PassRate], sources: Sequence[str], caption: str = "") -> bytes:
    """Heat map of ``rates``: one row per test (in the order given, each dimension's tests
    together, the dimension named on the right), one column per source in ``sources``
    order. A cell shows the pass rate in % (0–100, colour from 0% dark to 100% light,
    cividis) and ``n``, the judgements it is over; "–" where a source has none."""
    import matplotlib

    if not rates or not sources:
        return empty_chart(NO_DATA)
    tests: dict[str, PassRate] = {}
    for rate in rates:
        tests.setdefault(rate.test_id, rate)
    dimensions = list(dict.fromkeys(rate.dimension for rate in tests.values()))
    order = sorted(tests.values(), key=lambda rate: dimensions.index(rate.dimension))
    by_cell = {(rate.test_id, rate.source): rate for rate in rates}
    grid = [[_rate(by_cell.get((test.test_id, source))) for source in sources] for test in order]
    figure = new_figure(4.2 + 1.1 * len(sources), 1.3 + 0.42 * len(order))
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        colours = matplotlib.colormaps["cividis"].with_extremes(bad="#eeeeee")
        axes.imshow(grid, cmap=colours, vmin=0, vmax=1, aspect="auto")
        for row, test in enumerate(order):
            for column, source in enumerate(sources):
                cell = by_cell.get((test.test_id, source))
                if cell is None or cell.rate is None:
                    axes.text(column, row, "–", ha="center", va="center", color="#656d76")
                    continue
                colour = "#ffffff" if cell.rate < 0.6 else "#1f2328"
                label = f"{_percent(cell.rate)}\nn={cell.n}"
                axes.text(column, row, label, ha="center", va="center", color=colour, fontsize=7)
        column_labels = [wrapped(source) for source in sources]
        axes.set_xticks(range(len(sources)), column_labels)
        axes.xaxis.tick_top()
        axes.set_yticks(range(len(order)), [f"{t.test_id}. {t.category}" for t in order])
        axes.tick_params(length=0)
        for side in ("top", "right", "bottom", "left"):
            axes.spines[side].set_visible(False)
        start = 0
        for dimension in dimensions:
            size = sum(1 for test in order if test.dimension == dimension)
            if start:
                axes.axhline(start - 0.5, color="#ffffff", linewidth=3)
            if dimension:
                axes.text(
                    len(sources) - 0.4,
                    start + (size - 1) / 2,
                    dimension,
                    ha="left",
                    va="center",
                    fontweight="bold",
                )
            start += size
        axes.set_title(
            "Pass rate: % of judgements that are Yes (n = judgements)"
            + (f"; {caption}" if caption else ""),
            loc="left",
            pad=8 + 11 * max(label.count("\n") + 1 for label in column_labels),
        )
    return svg_bytes(figure)


def _dodged(count: int, index: int, width: float = 0.5) -> float:
    """The x offset of series ``index`` of ``count`` side by side within ``width``."""
    return 0.0 if count == 1 else -width / 2 + width * index / (count - 1)


def _errorbar(axes, x: float, mean: MeanInterval, colour: str, label: str | None) -> None:
    low = mean.mean - mean.ci_low if mean.ci_low is not None else 0
    high = mean.ci_high - mean.mean if mean.ci_high is not None else 0
    axes.errorbar(
        [x],
        [mean.mean],
        yerr=[[low], [high]],
        fmt="o",
        color=colour,
        capsize=3,
        markersize=5,
        label=label,
    )
    # A white box keeps the digits readable where a neighbouring whisker passes behind them.
    axes.annotate(
        f"{mean.mean:.2f}" + ("†" if mean.clipped else ""),
        (x, mean.mean),
        xytext=(5, 0),
        textcoords="offset points",
        va="center",
        fontsize=7,
        color=colour,
        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"},
    )


def _note_clipped(figure, means: Sequence[MeanInterval]) -> None:
    if any(mean.clipped for mean in means):
        figure.text(0.01, -0.02, CLIPPED_NOTE, fontsize=7, color="#656d76", va="top")


def factor_chart(
    factors: Sequence[FactorSummary],
    order: Sequence[str],
    bounds: tuple[float, float],
    caption: str = "",
    models: Mapping[tuple[str, str], SourceMean] | None = None,
    *,
    raters_known: bool = True,
) -> bytes:
    """Each factor's mean score per source (the mean over stories of the story's mean over
    its raters, after reverse coding, in points ``bounds`` = (lowest, highest)), with the
    95% Student t interval over stories as whiskers (none with one story) and the mean
    written beside it. With ``models`` ((factor, source) → the mixed model's mean,
    :mod:`cyoa.rating.analysis.mixed`) for every factor and source shown, those are drawn
    instead, and the title says so (``raters_known`` False: the model had no rater effect,
    the raters' ids being positions within a story). Factors along the x axis in
    ``order``; one colour per source, sorted by name."""
    import matplotlib

    factors = [f for f in factors if f.mean.mean is not None]
    modelled = bool(models) and all((f.factor, f.source) in models for f in factors)
    if modelled:
        factors = [dataclasses.replace(f, mean=models[(f.factor, f.source)]) for f in factors]
    if not factors:
        return empty_chart(NO_DATA)
    sources = sorted({f.source for f in factors})
    by_key = {(f.factor, f.source): f for f in factors}
    shown = [name for name in order if any(f.factor == name for f in factors)]
    figure = new_figure(1.2 + 1.5 * len(shown), 3.2)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        for index, source in enumerate(sources):
            colour = COLOURS[index % len(COLOURS)]
            label: str | None = source
            for x, name in enumerate(shown):
                summary = by_key.get((name, source))
                if summary is None:
                    continue
                _errorbar(axes, x + _dodged(len(sources), index), summary.mean, colour, label)
                label = None
        labels = [textwrap.fill(name, 14, break_long_words=False) for name in shown]
        axes.set_xticks(range(len(shown)), labels)
        axes.set_xlim(-0.6, len(shown) - 0.4)
        low, high = (int(end) for end in bounds)
        axes.set_ylim(low - MARGIN * (high - low), high + MARGIN * (high - low))
        axes.set_yticks(range(low, high + 1))
        axes.set_ylabel(f"mean factor score ({low}–{high}, after reverse coding)")
        axes.legend(title="source", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        effects = (
            "random story and rater, and rater × source where identifiable"
            if raters_known
            else ("random story; raters of unknown identity")
        )
        axes.set_title(
            (
                f"Mixed-model mean ({effects}) with 95% interval"
                if modelled
                else "Mean over stories with 95% t interval"
            )
            + (f"; {caption}" if caption else ""),
            loc="left",
        )
        _note_clipped(figure, [f.mean for f in factors])
    return svg_bytes(figure)


def entropy_chart(summaries: Sequence[IndexSummary], caption: str = "") -> bytes:
    """FEI's ETC and EWC per source: E(Q), the mean entropy in bits over the source's
    questions (0–1, lower is more coherent), each question rarefied to the number of readers
    every source is compared at (``IndexSummary.equal``), with the 95% percentile bootstrap
    interval over stories as whiskers (none with one story) and the value written beside
    it; one colour per source, sorted."""
    import matplotlib

    summaries = [s for s in summaries if s.equal.mean is not None]
    if not summaries:
        return empty_chart(NO_DATA)
    sources = sorted({s.source for s in summaries})
    by_key = {(s.index, s.source): s for s in summaries}
    indices = [index for index in ("ETC", "EWC") if any(s.index == index for s in summaries)]
    readers = ", ".join(
        f"{index} {next(s.readers for s in summaries if s.index == index)}" for index in indices
    )
    figure = new_figure(1.6 + 1.8 * len(indices), 3.2)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        for number, source in enumerate(sources):
            colour = COLOURS[number % len(COLOURS)]
            label: str | None = source
            for x, index in enumerate(indices):
                summary = by_key.get((index, source))
                if summary is None:
                    continue
                equal = summary.equal
                interval = MeanInterval(equal.mean, equal.ci_low, equal.ci_high, None, equal.n)
                _errorbar(axes, x + _dodged(len(sources), number), interval, colour, label)
                label = None
        axes.set_ylim(-MARGIN, 1 + MARGIN)
        axes.set_xticks(range(len(indices)), indices)
        axes.set_xlim(-0.6, len(indices) - 0.4)
        axes.set_ylabel("entropy (bits; lower is more coherent)")
        axes.legend(title="source", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
        axes.set_title(
            f"E(Q) at readers per question: {readers}; 95% bootstrap over stories"
            + (f"; {caption}" if caption else ""),
            loc="left",
        )
    return svg_bytes(figure)
