"""What both kinds' evaluation cards share: the title and where the card comes from, and the
researcher's free text quoted as Markdown."""

from __future__ import annotations

from datetime import datetime


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
