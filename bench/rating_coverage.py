"""Benchmark: do the rating analysis's model-based intervals hold their level?

    .venv/bin/python bench/rating_coverage.py                # 1,000 studies per design
    .venv/bin/python bench/rating_coverage.py --studies 200  # a quicker run

Simulates rating studies from the crossed model y = μ_source + a_story + b_rater + e (normal
effects; rater spread as large as story spread) in three designs, analyses each with
:func:`cyoa.rating.analysis.mixed.source_model`, and counts how often the 95% interval of a
source's mean and of the difference between two sources covers the truth, and how often the
test of a true null difference rejects at .05. Beside it, the same for what the analysis gave
before the model (a Student t interval over story means; Mann–Whitney over story means), to
show why the model is the headline. Writes ``bench/results/rating-coverage.md`` and ``.json``.

- ``crossed``: 2 sources × 10 stories; the same 4 raters rate every story.
- ``nested``: 2 sources × 10 stories; 4 raters per source, each rating only that source's
  stories (as FEI's design and many imported files).
- ``unbalanced``: 2 sources × 12 stories; 8 raters, each story rated by 3 of them at random,
  answers rounded to a 1–5 scale.
- ``rater × source``: 2 sources × 10 stories; the same 6 raters rate every story, and each
  rater prefers one source by their own amount: a rater × source effect with SD
  :data:`SD_RATER_SOURCE` (Card et al. 2020's "worker slope"), as large as the story SD.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cyoa.rating.analysis.mixed import source_model  # noqa: E402
from cyoa.rating.analysis.scales import mean_interval  # noqa: E402
from cyoa.stats import mann_whitney  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
TRUE_MEAN = 3.0
SD_STORY, SD_RATER, SD_RESIDUAL = 0.5, 0.5, 0.7
SD_RATER_SOURCE = 0.5


@dataclass(frozen=True)
class Design:
    """A simulated study's shape: ``stories`` per source, ``raters`` (in all, or per source
    when ``nested``), ``per_story`` raters drawn for each story (all when ``None``), and
    whether answers are rounded to the 1–5 points; ``rater_source``: whether each rater's
    offset differs by source (SD :data:`SD_RATER_SOURCE` for each rater × source cell)."""

    name: str
    stories: int
    raters: int
    nested: bool = False
    per_story: int | None = None
    rounded: bool = False
    rater_source: bool = False


DESIGNS = (
    Design("crossed", stories=10, raters=4),
    Design("nested", stories=10, raters=4, nested=True),
    Design("unbalanced", stories=12, raters=8, per_story=3, rounded=True),
    Design("rater × source", stories=10, raters=6, rater_source=True),
)


def simulate_study(design: Design, rng: np.random.Generator) -> pd.DataFrame:
    """One study's ratings (``story_id``, ``source``, ``rater_id``, ``score``) with two sources
    of the same true mean :data:`TRUE_MEAN`."""
    pools = 2 if design.nested else 1
    rater_effects = rng.normal(0.0, SD_RATER, design.raters * pools)
    rows = []
    for index, source in enumerate(("A", "B")):
        pool = np.arange(design.raters) + (index * design.raters if design.nested else 0)
        cell_effects = np.zeros(design.raters * pools)
        if design.rater_source:  # drawn only here, so the other designs' draws stay as they were
            cell_effects = rng.normal(0.0, SD_RATER_SOURCE, design.raters * pools)
        for story in range(design.stories):
            story_effect = rng.normal(0.0, SD_STORY)
            chosen = pool if design.per_story is None else rng.choice(pool, design.per_story, False)
            for rater in chosen:
                score = (
                    TRUE_MEAN
                    + story_effect
                    + rater_effects[rater]
                    + cell_effects[rater]
                    + rng.normal(0, SD_RESIDUAL)
                )
                if design.rounded:
                    score = float(np.clip(np.rint(score), 1, 5))
                rows.append((f"{source}{story}", source, f"r{rater}", score))
    return pd.DataFrame(rows, columns=["story_id", "source", "rater_id", "score"])


def check_design(design: Design, studies: int, seed: int = 0) -> dict[str, float]:
    """Shares (fractions) over ``studies`` simulated studies: the model's 95% interval of
    source A's mean covering the truth, of A − B covering 0, its test rejecting at .05, and
    the same for the story-mean t interval and Mann–Whitney; and the share of studies the
    model fitted (the rest used the bootstrap)."""
    rng = np.random.default_rng(seed)
    truth = TRUE_MEAN
    if design.rounded:  # the truth of the rounded scale: its mean under the model, simulated
        truth = float(simulate_study(Design("truth", 20000, 1, rounded=True), rng)["score"].mean())
    counts = dict.fromkeys(("mean", "difference", "rejected", "t_mean", "mw_rejected", "fitted"), 0)
    for _ in range(studies):
        frame = simulate_study(design, rng)
        model = source_model(frame, "score", (1, 5) if design.rounded else None)
        mean, difference = model.means[0], model.differences[0]
        counts["fitted"] += model.components is not None
        counts["mean"] += mean.ci_low <= truth <= mean.ci_high
        counts["difference"] += difference.ci_low <= 0 <= difference.ci_high
        counts["rejected"] += (difference.p_value or 1.0) < 0.05
        story_means = frame.groupby(["source", "story_id"])["score"].mean()
        t = mean_interval(story_means["A"].to_numpy())
        counts["t_mean"] += t.ci_low <= truth <= t.ci_high
        result = mann_whitney(story_means["A"].to_numpy(), story_means["B"].to_numpy())
        counts["mw_rejected"] += result.p_value < 0.05
    return {name: count / studies for name, count in counts.items()}


def render_markdown(results: dict[str, dict[str, float]], studies: int, seconds: float) -> str:
    lines = [
        "# Rating-study interval coverage",
        "",
        f"`.venv/bin/python bench/rating_coverage.py --studies {studies}`",
        "",
        f"- {studies} simulated studies per design; SD story {SD_STORY}, rater {SD_RATER}, "
        f"residual {SD_RESIDUAL} (rater × source {SD_RATER_SOURCE} where named); "
        f"Python {platform.python_version()}; {seconds:.0f} s",
        "- target: 95% intervals cover 93–97%; a test of a true null rejects ≤ 6% at .05",
        "",
        "| design | model: mean covered | model: A − B covered | model: rejects | "
        "story-mean t: mean covered | Mann–Whitney: rejects | model fitted |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, shares in results.items():
        cells = [shares[k] for k in ("mean", "difference", "rejected", "t_mean", "mw_rejected")]
        cells.append(shares["fitted"])
        lines.append(f"| {name} | " + " | ".join(f"{100 * v:.1f}%" for v in cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    results = {design.name: check_design(design, args.studies, args.seed) for design in DESIGNS}
    seconds = time.perf_counter() - start
    RESULTS.mkdir(exist_ok=True)
    body = {"studies": args.studies, "seed": args.seed, "seconds": seconds, "results": results}
    (RESULTS / "rating-coverage.json").write_text(json.dumps(body, indent=2) + "\n")
    markdown = render_markdown(results, args.studies, seconds)
    (RESULTS / "rating-coverage.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
