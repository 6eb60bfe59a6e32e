"""Each judge's bias card of a stored rating experiment (:mod:`cyoa.rating.judges.bias`), and
the card as ``analyze`` shows it: a JSON-ready dict, Markdown and CSV rows."""

from __future__ import annotations

import dataclasses
from typing import Any

from cyoa.db.facade import Db
from cyoa.rating import store as rating_store
from cyoa.rating.analysis.data import RatingData, load_ratings
from cyoa.rating.judges.bias import (
    ALPHA,
    FLIP_THRESHOLD,
    BiasCard,
    Correlation,
    length_bias,
    score_measure,
    story_scores,
)
from cyoa.rating.judges.report import num, plain
from cyoa.rating.judges.store import judge_panels
from cyoa.rating.quality import story_words


def story_lengths(db: Db, experiment: str) -> dict[str, int]:
    """Story id → its length in whitespace-separated words, for the stories of
    ``experiment`` whose text is stored (a story shown as a link, or imported without its
    text, has no length)."""
    lengths = {}
    for row in rating_store.rating_rows(db, experiment, "stories"):
        words = story_words(row["text"] or "")
        if words:
            lengths[row["story_id"]] = words
    return lengths


def judge_bias_cards(db: Db, experiment: str, humans: RatingData) -> tuple[BiasCard, ...]:
    """The bias card of each judge panel of ``experiment``: its score against story length
    beside the human panel's ``humans``. No pairwise verdicts are stored with a rating
    experiment, so the cards have no position part."""
    instrument = humans.instrument
    words = story_lengths(db, experiment)
    human = story_scores(instrument, humans.judgements)
    measure = score_measure(instrument)
    return tuple(
        BiasCard(
            judge=judge,
            length=length_bias(
                measure,
                words,
                story_scores(instrument, load_ratings(db, experiment, panel=judge).judgements),
                human,
            ),
        )
        for judge in judge_panels(db, experiment)
    )


def bias_to_dict(card: BiasCard) -> dict[str, Any]:
    """``card`` as plain data (every figure named as in docs/analysis.md, "Bias card")."""
    return plain(dataclasses.asdict(card))


def correlation_text(found: Correlation) -> str:
    """ρ with its p-value and stories, or why there is none."""
    if found.rho is None:
        return f"– ({found.stories} stories: too few, or a score that never varies)"
    return f"{num(found.rho)} (p = {found.p_value:.3g}, {found.stories} stories)"


def position_lines(card: BiasCard) -> list[str]:
    """The position part of ``card`` as Markdown lines (none without pairwise verdicts)."""
    found = card.position
    if found is None:
        return []
    if found.slot_a is None:
        return [f"- Position: none of {found.verdicts} pairwise verdicts could be read."]
    slot = found.slot_a
    flips = (
        f"{num(found.flip_rate)} [{num(found.flip_ci_low)}, {num(found.flip_ci_high)}] "
        f"({found.flips} of {found.pairs} pairs judged in both orders)"
        if found.flip_rate is not None
        else "– (no pair judged in both orders)"
    )
    return [
        f"- Position: slot A chosen in {num(slot.share)} [{num(slot.ci_low)}, "
        f"{num(slot.ci_high)}] of {slot.total} read verdicts (binomial p = {slot.p_value:.3g}); "
        f"flip rate {flips}; {found.unread} unread. "
        + ("**Flagged: position bias.**" if found.flagged else "Not flagged.")
    ]


def bias_markdown(cards: tuple[BiasCard, ...]) -> str:
    """The Bias card section of ``analyze``: per judge, its score by length tercile beside
    the humans', the three Spearman correlations with length, and the flags."""
    if not cards:
        return ""
    lines = [
        "# Bias card",
        "",
        "Each judge's score of a story (its "
        f"{cards[0].length.measure}) against the story's length in words, beside the "
        "humans'; Spearman's ρ with length of the judge's score, the humans' and the judge's "
        f"excess (judge − humans); flagged when the judge's ρ and the excess's both have "
        f"p < {ALPHA}, with one sign. Pairwise judging: "
        f"flagged when the slot-A share's binomial p < {ALPHA} and the flip rate > "
        f"{FLIP_THRESHOLD}.",
        "",
    ]
    for card in cards:
        length = card.length
        lines += [
            f"## {card.judge}",
            "",
            "| length tercile | stories | words | judge | humans |",
            "|---|---|---|---|---|",
            *(
                f"| {band.label} | {band.stories} | {band.min_words}–{band.max_words} | "
                f"{num(band.judge)} | {num(band.human)} |"
                for band in length.bands
            ),
            "",
            f"- Spearman's ρ with length: judge {correlation_text(length.judge)}; humans "
            f"{correlation_text(length.human)}; the judge's excess "
            f"{correlation_text(length.excess)}. "
            + ("**Flagged: length bias.**" if length.flagged else "Not flagged."),
            *(
                [f"- {length.without_length} judged stories have no stored text: left out."]
                if length.without_length
                else []
            ),
            *position_lines(card),
            "",
        ]
    return "\n".join(lines)


def bias_csv_rows(cards: tuple[BiasCard, ...]) -> list[tuple]:
    """(table, row, column, value) rows: table ``bias:<judge>``, a row per length tercile and
    one per correlation, and ``position`` when the judge judged pairs."""
    out: list[tuple] = []
    for card in cards:
        table = f"bias:{card.judge}"
        for band in card.length.bands:
            figures = dataclasses.asdict(band)
            out += [(table, band.label, k, v) for k, v in figures.items() if k != "label"]
        for name in ("judge", "human", "excess"):
            found = getattr(card.length, name)
            out += [(table, f"rho with length ({name})", k, v) for k, v in vars(found).items()]
        out.append((table, "length", "flagged", card.length.flagged))
        if card.position is not None:
            found = card.position
            slot = found.slot_a
            figures = {
                "slot_a_share": slot.share if slot else None,
                "slot_a_p_value": slot.p_value if slot else None,
                "flip_rate": found.flip_rate,
                "flip_ci_low": found.flip_ci_low,
                "flip_ci_high": found.flip_ci_high,
                "flagged": found.flagged,
            }
            out += [(table, "position", k, v) for k, v in figures.items()]
    return out
