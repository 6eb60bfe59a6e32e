"""Benchmark: may a researcher watch the co-writing dashboard and stop when it looks decisive?

    .venv/bin/python bench/cowriting_sequential.py                # 1,000 studies per case
    .venv/bin/python bench/cowriting_sequential.py --studies 200  # a quicker run

Simulates studies whose writers arrive one by one (writer SD 0.5 on the log-odds, 5 rounds
each, the planner's model, :mod:`cyoa.cowriting.planning`) and looks at them after every 5
writers from 10 to 60 (11 looks), as a researcher watching the dashboard would:

- under no true preference: how often each p-value is ever ≤ .05 at one of the 11 looks —
  the anytime-valid p of the confidence sequence (:func:`cyoa.sequential.confidence_sequence`
  over the writers' shares, as :mod:`cyoa.cowriting.analysis.monitoring` computes it), and
  the fixed-sample p-values (Clark & Smith's pooled binomial, the writer t-test) peeked at
  the same looks and at the last look only; and how often the sequence covers the true
  share at every look;
- under a true preference of 60%: looking every 5 writers from 10 on (up to
  :data:`MAX_WRITERS`) and stopping at the first anytime-valid p ≤ .05, how many writers a
  study needed on average, against the planner's fixed N for 80% power
  (:func:`cyoa.cowriting.planning.plan_cowriting`, writer t-test, two-sided .05).

Writes ``bench/results/cowriting-sequential.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cyoa.cowriting.planning import intercept_for, plan_cowriting  # noqa: E402
from cyoa.sequential import confidence_sequence  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
WRITER_SD = 0.5
ROUNDS = 5
LOOKS = tuple(range(10, 61, 5))
MAX_WRITERS = 300
ALPHA = 0.05


def writer_shares(preference: float, writers: int, rng: np.random.Generator) -> np.ndarray:
    """Each writer's share of ``ROUNDS`` rounds in which they chose the first system."""
    mu = intercept_for(preference, WRITER_SD)
    chance = special.expit(mu + rng.normal(0.0, WRITER_SD, writers))
    return rng.binomial(ROUNDS, chance) / ROUNDS


def fixed_p_values(shares: np.ndarray, look: int) -> tuple[float, float]:
    """The binomial test of the pooled rounds and the writer t-test after ``look`` writers."""
    first = shares[:look]
    chosen = int(round(first.sum() * ROUNDS))
    binomial = stats.binomtest(chosen, look * ROUNDS).pvalue
    t_test = stats.ttest_1samp(first, 0.5).pvalue if first.std() > 0 else 1.0
    return float(binomial), float(t_test)


def null_case(studies: int, seed: int) -> dict[str, float]:
    """Shares (fractions) of null studies in which each p is ever ≤ .05 over the looks, and
    the sequence covers 0.5 at every look."""
    rng = np.random.default_rng(seed)
    keys = ("anytime_ever", "binomial_ever", "t_ever", "binomial_last", "t_last", "covers_all")
    counts = dict.fromkeys(keys, 0)
    index = np.array(LOOKS) - 1
    for _ in range(studies):
        shares = writer_shares(0.5, LOOKS[-1], rng)
        sequence = confidence_sequence(shares)
        lows, highs = np.array(sequence.lows)[index], np.array(sequence.highs)[index]
        counts["covers_all"] += bool(np.all((lows <= 0.5) & (highs >= 0.5)))
        counts["anytime_ever"] += bool(np.min(np.array(sequence.p_values)[index]) <= ALPHA)
        peeks = [fixed_p_values(shares, look) for look in LOOKS]
        counts["binomial_ever"] += min(b for b, _ in peeks) <= ALPHA
        counts["t_ever"] += min(t for _, t in peeks) <= ALPHA
        counts["binomial_last"] += peeks[-1][0] <= ALPHA
        counts["t_last"] += peeks[-1][1] <= ALPHA
    return {name: count / studies for name, count in counts.items()}


def alternative_case(studies: int, seed: int, preference: float = 0.6) -> dict[str, float]:
    """Under a true ``preference``: looking every 5 writers from 10 to :data:`MAX_WRITERS`,
    the writers at the first anytime-valid p ≤ .05 (mean and quartiles over the studies that
    stopped), the share that stopped, the share that stopped by the planner's N, and that
    N."""
    plan = plan_cowriting(preference, WRITER_SD, rounds=(ROUNDS,), seed=seed)
    planned = plan.chosen.writers if plan.chosen else None
    rng = np.random.default_rng(seed)
    looks = np.arange(10, MAX_WRITERS + 1, 5)
    stops = []
    for _ in range(studies):
        p_values = np.array(
            confidence_sequence(writer_shares(preference, MAX_WRITERS, rng)).p_values
        )
        crossed = np.nonzero(p_values[looks - 1] <= ALPHA)[0]
        stops.append(int(looks[crossed[0]]) if crossed.size else None)
    stopped = [n for n in stops if n is not None]
    q1, median, q3 = np.percentile(stopped, [25, 50, 75]) if stopped else (np.nan,) * 3
    return {
        "preference": preference,
        "planned_writers": planned,
        "planned_power": plan.chosen.power if plan.chosen else None,
        "stopped": len(stopped) / studies,
        "mean_writers": float(np.mean(stopped)) if stopped else None,
        "median_writers": float(median),
        "q1_writers": float(q1),
        "q3_writers": float(q3),
        "stopped_by_planned": sum(n <= planned for n in stopped) / studies if planned else None,
    }


def render_markdown(null: dict, alternative: dict, studies: int, seconds: float) -> str:
    pct = lambda v: f"{100 * v:.1f}%"  # noqa: E731
    planned = alternative["planned_writers"]
    return "\n".join([
        "# Watching a co-writing study: anytime-valid monitoring",
        "",
        f"`.venv/bin/python bench/cowriting_sequential.py --studies {studies}`",
        "",
        f"- {studies} simulated studies per case (seeded); writer SD {WRITER_SD} on the log-odds, "
        f"{ROUNDS} rounds per writer; 95% betting confidence sequence over the writers' shares "
        f"(cyoa.sequential); Python {platform.python_version()}; {seconds:.0f} s",
        "- target: under the null, P(the anytime-valid p is ever ≤ .05 over the 11 looks) ≤ 5% "
        "and the sequence covers the true share at every look in ≥ 95% of studies",
        "",
        "## No true preference: 11 looks, every 5 writers from 10 to 60",
        "",
        "| p-value looked at | P(p ≤ .05 at some look) | P(p ≤ .05 at the last look only) |",
        "|---|---|---|",
        f"| anytime-valid (confidence sequence) | {pct(null['anytime_ever'])} | – |",
        f"| writer t-test (fixed-sample) | {pct(null['t_ever'])} | {pct(null['t_last'])} |",
        f"| Clark & Smith's pooled binomial (fixed-sample) | {pct(null['binomial_ever'])} | "
        f"{pct(null['binomial_last'])} |",
        "",
        f"The confidence sequence covers the true share (50%) at all 11 looks in "
        f"{pct(null['covers_all'])} of studies.",
        "",
        f"## A true preference of {pct(alternative['preference'])}: writers needed",
        "",
        f"Looking every 5 writers from 10 to {MAX_WRITERS} and stopping at the first anytime-valid "
        "p ≤ .05, against the planner's fixed N (`plan`: writer t-test, two-sided .05, 80% power, "
        f"{ROUNDS} rounds, its writer grid).",
        "",
        "| | writers |",
        "|---|---|",
        f"| planner's fixed N (power {alternative['planned_power']:.3f}) | {planned} |",
        f"| anytime-valid stop: mean over studies that stopped | "
        f"{alternative['mean_writers']:.1f} |",
        f"| anytime-valid stop: median (quartiles) | {alternative['median_writers']:.0f} "
        f"({alternative['q1_writers']:.0f}–{alternative['q3_writers']:.0f}) |",
        f"| studies that stopped by {MAX_WRITERS} writers | {pct(alternative['stopped'])} |",
        f"| studies that stopped by the planned N | {pct(alternative['stopped_by_planned'])} |",
        "",
    ])  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    start = time.perf_counter()
    null = null_case(args.studies, args.seed)
    alternative = alternative_case(args.studies, args.seed + 1)
    seconds = time.perf_counter() - start
    RESULTS.mkdir(exist_ok=True)
    body = {"studies": args.studies, "seed": args.seed, "seconds": seconds,
            "null": null, "alternative": alternative}  # fmt: skip
    (RESULTS / "cowriting-sequential.json").write_text(json.dumps(body, indent=2) + "\n")
    markdown = render_markdown(null, alternative, args.studies, seconds)
    (RESULTS / "cowriting-sequential.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
