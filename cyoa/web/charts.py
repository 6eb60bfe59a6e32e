"""What every chart shares: the colours, matplotlib's settings, a figure, its SVG bytes, a chart
that only says why there is nothing to draw, and the lock that keeps one chart drawing at a
time (matplotlib's style settings are global). Each wing draws its own charts on these.

matplotlib is imported by the functions that draw: the app's start (which imports the
dashboards' views) does not pay for it."""

from __future__ import annotations

import io
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# matplotlib's style settings are global: one chart at a time.
CHART_LOCK = threading.Lock()
# Colour-blind-safe (Okabe & Ito 2008).
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "cyoa",
    "text.parse_math": False,  # labels are shown as written (no $…$ math)
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def svg_bytes(figure: Figure) -> bytes:
    import matplotlib

    out = io.BytesIO()
    with matplotlib.rc_context(RC):
        figure.savefig(out, format="svg", bbox_inches="tight", metadata={"Date": None})
    return out.getvalue()


def new_figure(width: float, height: float) -> Figure:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        return Figure(figsize=(width, height), layout="constrained")


def empty_chart(message: str) -> bytes:
    """A small chart that only says ``message`` (e.g. no data yet)."""
    import matplotlib

    figure = new_figure(5, 0.8)
    with matplotlib.rc_context(RC):
        axes = figure.add_subplot()
        axes.axis("off")
        axes.text(0.5, 0.5, message, ha="center", va="center", color="#656d76")
    return svg_bytes(figure)
