"""What both kinds' evaluation cards share: the researcher's free text quoted as Markdown."""

from __future__ import annotations


def quote(text: str) -> list[str]:
    """``text`` as Markdown quote lines (``> …``), ``(none)`` when it is empty."""
    lines = (text or "").strip().splitlines() or ["(none)"]
    return [f"> {line}" if line.strip() else ">" for line in lines]
