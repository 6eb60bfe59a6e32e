"""Numbers in sentences, one rule for every page, report and message: counts ("1 story",
"3 stories", never "1 sources") and a sampling's settings ("top-k 40, temperature 1.0"), not
a Python dict."""

from __future__ import annotations

# Nouns whose plural is not the noun with an "s".
IRREGULAR = {"story": "stories", "entry": "entries", "reply": "replies", "person": "people"}


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun in the plural unless ``count`` is 1: ``counted(1,
    "source")`` is "1 source", ``counted(3, "story")`` "3 stories". ``plural`` names an
    irregular plural the table lacks."""
    word = noun if count == 1 else plural or IRREGULAR.get(noun, noun + "s")
    return f"{count} {word}"


def sampling_words(sampling: dict[str, float]) -> str:
    """A sampling's settings (``top_k``, ``top_p``, ``temperature``, ``max_new_tokens``, as
    :class:`~cyoa.generation.types.Sampling` stores them) as a reader says them: "top-k 40,
    temperature 1.0, at most 256 tokens"; a filter that is off (top-k 0, top-p 1.0) is left
    out, and with both off it is "no top-k or nucleus filter"."""
    parts = []
    if sampling.get("top_k"):
        parts.append(f"top-k {int(sampling['top_k'])}")
    if sampling.get("top_p") is not None and float(sampling["top_p"]) < 1.0:
        parts.append(f"nucleus p = {float(sampling['top_p']):g}")
    if not parts:
        parts.append("no top-k or nucleus filter")
    if sampling.get("temperature") is not None:
        parts.append(f"temperature {float(sampling['temperature']):.1f}")
    if sampling.get("max_new_tokens"):
        parts.append(f"at most {counted(int(sampling['max_new_tokens']), 'token')}")
    return ", ".join(parts)
