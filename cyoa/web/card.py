"""What both kinds' evaluation cards share: the title and where the card comes from, and the
researcher's free text quoted as Markdown, and the planned sample size."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from cyoa.planning_cost import money


def header(title: str, exp_id: str, now: datetime) -> list[str]:
    """The card's first lines: its title, when it was generated, and why it has its
    sections (Karpinska, Akoury & Iyyer 2021, "The Perils of Using Mechanical Turk to
    Evaluate Open-Ended Text Generation", EMNLP)."""
    return [
        f"# Evaluation card: {title} (`{exp_id}`)",
        "",
        f"Generated {now.strftime('%Y-%m-%d %H:%M UTC')} by CYOA from the stored data. The "
        'sections follow what Karpinska et al. (2021, "The Perils of Using Mechanical Turk to '
        'Evaluate Open-Ended Text Generation") found papers failing to report.',
        "",
    ]


def quote(text: str) -> list[str]:
    """``text`` as Markdown quote lines (``> …``), ``(none)`` when it is empty."""
    lines = (text or "").strip().splitlines() or ["(none)"]
    return [f"> {line}" if line.strip() else ">" for line in lines]


def planned_sample_size(
    plan: Mapping[str, Any] | None, exp_id: str, design: Callable[[Mapping[str, Any]], str]
) -> list[str]:
    """The card's "Planned sample size" section: the latest stored plan (``plan`` as
    :func:`cyoa.store.latest_plan` returns it) with its inputs, seed, target, chosen design
    (in words: ``design(record)``, the kind's :attr:`cyoa.planning_record.Planner.design`),
    power and cost, and when it was made, so a paper can report the sample size as planned
    in advance (Card et al. 2020, "With Little Power Comes Great Responsibility", EMNLP);
    without a plan, how to make one."""
    lines = ["## Planned sample size", ""]
    if plan is None:
        return [*lines, f"No plan was stored. Make one on the experiment's Plan page or with "
                f"`python -m cyoa plan {exp_id} --save`.", ""]  # fmt: skip
    record = plan["record"]
    inputs = ", ".join(
        f"{name} = {entry['value']:.3g} ({entry['source']})"
        for name, entry in record["inputs"].items()
    )
    lines += [
        f"Plan {plan['id']}, made {plan['created_at']} (UTC) by CYOA's planner (docs/analysis.md, "
        '"Planning a study").',
        "",
        f"- Assumed: {inputs}.",
    ]
    if record["test"]:
        lines.append(
            f"- Test: {record['test']}, {record['alternative']} at α = {record['alpha']}; "
            f"target power {record['target_power']}; seed {record['seed']}."
        )
        if record["chosen"] is None:
            lines.append("- Chosen design: none of the grid reached the target power.")
        else:
            power = record["chosen"]["power"]
            lines.append(f"- Chosen design: {design(record)}, power {power:.3f}.")
    lines += [
        f"- {section['title']}: {section['summary']}"
        for section in record.get("sections", [])
        if section.get("summary")
    ]
    cost = record.get("cost")
    if cost:
        lines.append(
            f"- Cost: recruit {cost['recruit']} (for {cost['kept']} kept) × "
            f"{cost['minutes']:.1f} min × {_money(cost, 'hourly_rate')}/h, + "
            f"{cost['fee_rate']:.0%} fee = {_money(cost, 'total')}."
        )
    return [*lines, ""]


def _money(cost: Mapping[str, Any], field: str) -> str:
    """A stored plan's amount in its currency; a plan stored before plans named one gives
    the number alone."""
    currency = cost.get("currency")
    return money(cost[field], currency) if currency else f"{cost[field]:.2f}"
