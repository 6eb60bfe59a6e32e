"""The analysis of a rating study: raters read stories and answer an instrument about each.

:func:`analyze_ratings` takes the instrument and one row per rater × story × item, checks the
rows, and dispatches on the instrument's item kinds:

- Likert items → :mod:`cyoa.rating.analysis.scales` (item and factor means per source, reliability,
  tests between sources);
- Yes/No items (the TTCW) → :mod:`cyoa.rating.analysis.ttcw` (pass rates, tests passed, Fleiss' κ
  per test, correlation of raters' totals);
- true/false items with an FEI kind → :mod:`cyoa.rating.analysis.fei` (ETC and EWC);
- every scored item → :mod:`cyoa.rating.analysis.agreement` (Krippendorff's α with a bootstrap
  interval over stories, Fleiss' κ and Gwet's AC1 for categorical items, ICC(2,k) for Likert
  items, exact agreement).

It works with any number of sources (one: no tests; two: Mann–Whitney; more: Kruskal–Wallis)
and stories. :mod:`cyoa.rating.analysis.render` prints the result.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from cyoa.rating.analysis.agreement import ItemAgreement, Level, agreement_table
from cyoa.rating.analysis.fei import FeiAnalysis, analyze_fei
from cyoa.rating.analysis.scales import (
    ALL_ITEMS_SCALE,
    ScaleAnalysis,
    analyze_scales,
    likert_scales,
)
from cyoa.rating.analysis.ttcw import TtcwAnalysis, analyze_tests
from cyoa.rating.instruments.types import Instrument, InstrumentError

COLUMNS = ("story_id", "source", "rater_id", "item", "value", "rationale", "family")
REQUIRED = ("story_id", "source", "rater_id", "item", "value")


@dataclass(frozen=True)
class RatingAnalysis:
    """Everything :func:`analyze_ratings` computed, as plain data.

    ``stories``: stories per source; ``raters``: distinct raters; ``judgements``: rows;
    ``missing``: rows of scored items without a value. ``item_texts``: item id → its question
    or test name, for printing. Each part is ``None`` when the instrument has no items of its
    kind. ``text_answers``: per text item, the non-empty
    answers. ``bootstrap`` and ``seed``: the agreement intervals' replicates and seed.
    """

    instrument_id: str
    instrument_name: str
    instrument_version: str
    reference: str
    attribution: str
    sources: tuple[str, ...]
    stories: dict[str, int]
    raters: int
    judgements: int
    missing: int
    item_texts: dict[str, str]
    scales: ScaleAnalysis | None
    tests: TtcwAnalysis | None
    fei: FeiAnalysis | None
    agreement: tuple[ItemAgreement, ...]
    text_answers: dict[str, int]
    bootstrap: int
    seed: int
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-ready data: tuples become lists, NaN becomes ``None``."""
        return _plain(dataclasses.asdict(self))


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _domain_errors(instrument: Instrument, rows: pd.DataFrame) -> None:
    for item_id, values in rows.dropna(subset=["value"]).groupby("item")["value"]:
        item = instrument.item(item_id)
        if item.kind == "text":
            continue
        allowed = item.scale if item.kind == "likert" else (0, 1)
        wrong = values[~values.isin([float(v) for v in allowed])]
        if not wrong.empty:
            accepted = (
                f"whole numbers from {item.low} to {item.high}"
                if item.kind == "likert"
                else "1.0 (yes/true) or 0.0 (no/false)"
            )
            raise InstrumentError(
                f"Item {item.id} of {instrument.id} has the value {float(wrong.iloc[0])}: store "
                f"{accepted} (Instrument.parse_value does), or NaN for no answer."
            )


def validate_judgements(instrument: Instrument, judgements: pd.DataFrame) -> pd.DataFrame:
    """A checked copy of ``judgements`` with ids as strings, ``value`` as float and a
    ``rationale`` column (``None`` where absent).

    Raises ``ValueError`` (or :class:`InstrumentError` for what concerns the instrument) with
    a sentence saying what to fix: a missing column, no rows, an item the instrument does not
    have, a value outside the item's scale, two rows for one rater × story × item, a story
    under two sources, or an FEI question answered for another story than its own.
    """
    missing = [column for column in REQUIRED if column not in judgements.columns]
    if missing:
        raise ValueError(
            f"The judgements lack the column(s) {', '.join(missing)}: give one row per rater × "
            f"story × item with {', '.join(COLUMNS)}."
        )
    if judgements.empty:
        raise ValueError("There are no judgements to analyse: collect some ratings first.")
    rows = judgements.loc[:, [c for c in COLUMNS if c in judgements.columns]].copy()
    for column in ("story_id", "source", "rater_id", "item"):
        rows[column] = rows[column].astype(str)
    rows["value"] = pd.to_numeric(rows["value"], errors="coerce").astype(float)
    if "rationale" not in rows.columns:
        rows["rationale"] = None
    unknown = sorted(set(rows["item"]) - {item.id for item in instrument.items})
    if unknown:
        raise InstrumentError(
            f"The judgements name item(s) {', '.join(unknown)} that {instrument.id} does not "
            f"have: check that they were collected with this instrument."
        )
    duplicated = rows.duplicated(subset=["story_id", "rater_id", "item"], keep=False)
    if duplicated.any():
        first = rows[duplicated].iloc[0]
        raise ValueError(
            f"Rater {first['rater_id']} answered item {first['item']} of story "
            f"{first['story_id']} more than once: keep one row per rater × story × item."
        )
    sources = rows.groupby("story_id")["source"].nunique()
    if (sources > 1).any():
        story = sources[sources > 1].index[0]
        raise ValueError(f"Story {story} appears under several sources: each story has one source.")
    _domain_errors(instrument, rows)
    owners = {item.id: item.story_id for item in instrument.items if item.story_id}
    if owners:
        foreign = rows[rows["item"].map(owners).fillna(rows["story_id"]) != rows["story_id"]]
        if not foreign.empty:
            first = foreign.iloc[0]
            raise ValueError(
                f"FEI question {first['item']} is about story {owners[first['item']]} but was "
                f"answered for story {first['story_id']}: store each answer under its "
                f"question's story."
            )
    return rows


def _unfactored_note(instrument: Instrument) -> list[str]:
    """What an instrument whose Likert items declare no factor is scored as."""
    if any(item.factor for item in instrument.items if item.kind == "likert"):
        return []
    if ALL_ITEMS_SCALE in likert_scales(instrument):
        return [
            f"{instrument.id} declares no factors: its Likert items are analysed as one "
            f"scale, '{ALL_ITEMS_SCALE}' (score, test between sources, Cronbach's α and "
            "McDonald's ω), and each item on its own."
        ]
    return [
        f"{instrument.id} declares no factors and its Likert items run over different "
        "ranges: they are not averaged into one scale, and each item is summarised on its "
        "own. Give items a factor to score them together."
    ]


def _notes(instrument: Instrument, kinds: set[str], likert_level: Level) -> list[str]:
    notes = []
    if instrument.id == "aiss-v1":
        notes.append(
            "AISS item 9 is reverse-coded although v1 does not mark it: it loads with the "
            "reversed repetition items 10–12, and Avoiding Repetition means less repetition."
        )
    if "likert" in kinds:
        notes.append(
            "Likert headline: source means and differences from a linear mixed model with "
            "random story and rater effects (and rater × source, where raters rated stories "
            "of several sources), REML, 95% t intervals with Satterthwaite df; "
            "where it cannot be fitted, a cluster bootstrap over stories and raters, labelled. "
            "Also given: means over stories (each story's mean over its raters) with 95% t "
            "intervals over stories, which leave out the raters' share of the uncertainty. "
            "Factor scores are the mean of the factor's items after reverse coding, per "
            "rater × story that answered them all."
        )
        notes += _unfactored_note(instrument)
    if "yes_no" in kinds:
        notes.append(
            "Pass rate = Yes judgements ÷ judgements of the test (Chakrabarty et al. 2024, "
            "Table 5). Fleiss' κ per test is over all stories."
        )
    if "true_false" in kinds:
        notes.append(
            "FEI: entropy in bits of each question's true/false answers; a source's ETC and "
            "EWC are E(Q), the mean over all its transitional or world questions, with a "
            "percentile bootstrap interval over stories; sources are compared, and corrupted "
            "copies paired with their originals, at an equal number of readers per question; "
            "lower is more coherent."
        )
    notes.append(
        f"Agreement: Krippendorff's α ({likert_level} for Likert, nominal for yes/no and "
        "true/false) with a percentile bootstrap over stories (the pooled row draws each story "
        "with all its items) and q(α < .667), the share of replicates below .667; Fleiss' κ "
        "where every story has the same number of raters, and Gwet's AC1, for yes/no and "
        "true/false items; ICC(2,k) for Likert items where raters rated the same stories; "
        "exact agreement = share of stories on which all raters gave the same answer. ‡ marks "
        "an interval over fewer than 10 stories or one with replicates left out."
    )
    return notes


def analyze_ratings(
    instrument: Instrument,
    judgements: pd.DataFrame,
    *,
    seed: int = 0,
    bootstrap: int = 1000,
    likert_level: Level = "ordinal",
    raters_known: bool = True,
) -> RatingAnalysis:
    """Analyse a rating study's ``judgements`` of ``instrument``.

    ``judgements``: one row per rater × story × item, with columns ``story_id`` (str),
    ``source`` (str: the system or source of the story), ``rater_id`` (str), ``item`` (str,
    an :class:`~cyoa.rating.instruments.types.Item` id), ``value`` (float: a Likert point as
    answered, *not* reverse-coded; 1.0/0.0 for yes/no and true/false, as
    :meth:`~cyoa.rating.instruments.types.Instrument.parse_value` returns; NaN for no answer and for
    text items) and ``rationale`` (str or None: the written reason, and the answer itself for
    a text item; optional column) and ``family`` (str: the story a corrupted copy was made
    from, or the story's own id; optional: without it no copy is paired with its original).

    ``bootstrap`` replicates (seeded with ``seed``) give each Krippendorff's α and each FEI
    E(Q) its interval;
    ``likert_level`` is the level of α for Likert items (``"ordinal"`` or ``"interval"``).
    ``raters_known``: False when rater ids are positions within a story, not people (imported
    files that number each story's raters): the Likert model then has no rater effect.
    Raises ``ValueError``/:class:`InstrumentError` for rows that cannot be analysed (see
    :func:`validate_judgements`).
    """
    rows = validate_judgements(instrument, judgements)
    kinds = {instrument.item(item_id).kind for item_id in rows["item"].unique()}
    scored_ids = [item.id for item in instrument.items if item.scored]
    scored = rows[rows["item"].isin(scored_ids)]
    text_ids = [item.id for item in instrument.items if item.kind == "text"]
    text_answers = {
        item_id: sum(
            1
            for text in rows.loc[rows["item"] == item_id, "rationale"]
            if isinstance(text, str) and text.strip()
        )
        for item_id in text_ids
    }
    has_fei = any(instrument.item(item_id).fei_kind for item_id in scored["item"].unique())
    sources = tuple(sorted(rows["source"].unique()))
    stories = rows.groupby("source")["story_id"].nunique()
    return RatingAnalysis(
        instrument_id=instrument.id,
        instrument_name=instrument.name,
        instrument_version=instrument.version,
        reference=instrument.reference,
        attribution=instrument.attribution,
        sources=sources,
        stories={source: int(stories[source]) for source in sources},
        raters=int(rows["rater_id"].nunique()),
        judgements=int(rows.shape[0]),
        missing=int(scored["value"].isna().sum()),
        item_texts={item.id: item.category or item.text for item in instrument.items},
        scales=analyze_scales(instrument, scored, raters_known=raters_known)
        if "likert" in kinds
        else None,
        tests=analyze_tests(instrument, scored, raters_known) if "yes_no" in kinds else None,
        fei=analyze_fei(instrument, scored, bootstrap=bootstrap, seed=seed) if has_fei else None,
        agreement=agreement_table(
            instrument,
            scored,
            bootstrap=bootstrap,
            seed=seed,
            likert_level=likert_level,
            raters_known=raters_known,
        ),  # fmt: skip
        text_answers=text_answers,
        bootstrap=bootstrap,
        seed=seed,
        notes=tuple(_notes(instrument, kinds, likert_level)),
    )
