"""How a judge of the writers' choices compares with the writers (pure).

A :class:`RoundVerdict` is one showing of a round to the judge (see
:mod:`cyoa.cowriting.judges.prompts`): the slot it chose, None when its answer could not be
read. The chosen slot names a suggestion: in order ``AB`` slot A holds the suggestion the
writer saw in slot 1, in ``BA`` the one in slot 2.

- **Agreement**: the share of read verdicts whose suggestion is the one the writer chose,
  both orders of every round counted (so a judge that flips when the suggestions swap
  agrees on one showing of two). A fraction; 0.5 is what a judge choosing at random reaches.
  Its 95% interval is the writer-clustered percentile bootstrap of
  :func:`cyoa.stats.clustered_preference` (each writer's verdicts resampled together: one
  writer's rounds are not independent), and its p-value the t-test of the writers' shares
  against one half; both need two writers at least (Davison & Hinkley 1997, §3.8; Donner &
  Klar 2000, ch. 6). Verdicts about rounds the writers had no choice in are left out.
- **Position**: the judge's slot-A share and flip rate (:func:`cyoa.pairwise.position_bias`,
  Zheng et al. 2023; Wang et al. 2024), each round a pair.

References:
    Davison, A. C. and Hinkley, D. V. (1997). Bootstrap Methods and their Application.
    Cambridge University Press.
    Donner, A. and Klar, N. (2000). Design and Analysis of Cluster Randomization Trials in
    Health Research. Arnold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from cyoa.cowriting.analysis.data import RoundRecord
from cyoa.pairwise import PairVerdict, PositionBias, position_bias
from cyoa.stats import clustered_preference

RESAMPLES = 10_000


@dataclass(frozen=True)
class RoundVerdict:
    """One showing of a writer's round to the judge: the order and the slot it chose."""

    session_id: str
    round: int
    order: Literal["AB", "BA"]
    chosen_slot: Literal["A", "B"] | None


@dataclass(frozen=True)
class WriterAgreement:
    """The judge against the writers' choices (see the module): ``verdicts`` about rounds
    with a choice, ``unread`` of them, ``agreed`` of the ``read`` ones, the ``share``
    (None: nothing read) with its writer-clustered 95% interval and p-value against one half
    (None, with a ``note`` saying why, when fewer than two writers have a read verdict),
    ``writers`` counted, and the judge's ``position`` bias."""

    judge: str
    model: str
    verdicts: int
    unread: int
    read: int
    agreed: int
    share: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    writers: int
    position: PositionBias
    note: str = ""


def writer_slot(order: str, chosen_slot: str) -> int:
    """The writer's slot (1 or 2) of the suggestion in the judge's ``chosen_slot``."""
    return 1 if (chosen_slot == "A") == (order == "AB") else 2


def agreement_with_writers(
    rounds: Sequence[RoundRecord],
    verdicts: Iterable[RoundVerdict],
    judge: str = "",
    model: str = "",
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> WriterAgreement:
    """The judge's ``verdicts`` against the writers' choices in ``rounds`` (see the module);
    verdicts about a round not in ``rounds`` or without a choice are left out."""
    by_round = {(r.session_id, r.round): r for r in rounds if r.counts_for_preference}
    kept = [v for v in verdicts if (v.session_id, v.round) in by_round]
    per_writer: dict[str, list[int]] = {}
    for verdict in kept:
        if verdict.chosen_slot is None:
            continue
        record = by_round[(verdict.session_id, verdict.round)]
        agreed = writer_slot(verdict.order, verdict.chosen_slot) == record.chosen_slot
        counts = per_writer.setdefault(record.writer, [0, 0])
        counts[0] += int(agreed)
        counts[1] += 1
    agreed = sum(c[0] for c in per_writer.values())
    read = sum(c[1] for c in per_writer.values())
    low = high = p_value = None
    note = ""
    if len(per_writer) >= 2:
        clustered = clustered_preference(
            [tuple(c) for c in per_writer.values()], resamples=resamples, seed=seed
        )
        low, high, p_value = clustered.bootstrap_low, clustered.bootstrap_high, clustered.p_value
    elif read:
        note = "No interval: it needs verdicts about two writers at least."
    pairs = [PairVerdict(f"{v.session_id}/{v.round}", v.order, v.chosen_slot) for v in kept]
    return WriterAgreement(
        judge=judge,
        model=model,
        verdicts=len(kept),
        unread=len(kept) - read,
        read=read,
        agreed=agreed,
        share=agreed / read if read else None,
        ci_low=low,
        ci_high=high,
        p_value=p_value,
        writers=len(per_writer),
        position=position_bias(pairs),
        note=note,
    )
