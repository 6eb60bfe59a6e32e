"""The analysis results as plain data: what :mod:`cyoa.cowriting.analysis.tables` and
:mod:`cyoa.cowriting.analysis.compat` compute and :mod:`cyoa.cowriting.analysis.render` prints.

Shares, intervals and p-values are fractions; each metric's unit is in its ``label``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cyoa.sequential import ConfidenceSequence
from cyoa.stats import ClusteredPreference, LikertSummary, MannWhitney, WriterDifference

OVERALL = "Overall"
HUMAN = "Human"


@dataclass(frozen=True)
class ShareRow:
    """How often a system was chosen in a set of rounds (all of them, or one round number).

    ``share`` is ``chosen / total`` (``None`` without rounds). ``p_value`` and ``alternative``
    belong to the test named by the table; ``ci_low``/``ci_high`` to its interval. Left
    ``None`` where the analysis computes no test or interval for the row.
    """

    label: str
    round: int | None
    chosen: int
    total: int
    share: float | None
    p_value: float | None = None
    alternative: str | None = None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(frozen=True)
class PreferenceTable:
    """Tables 1 and 4: the share of rounds in which ``system`` (not ``other``) was chosen.

    ``rows``: overall first, then one row per round. ``excluded_rounds``: rounds left out
    because one suggestion failed. ``clustered``: the writer-level analysis; ``position``:
    the share of rounds in which the suggestion in slot 1 was chosen. ``method`` says which
    test and interval the rows carry.
    """

    system: str
    other: str
    rows: tuple[ShareRow, ...]
    excluded_rounds: int
    clustered: ClusteredPreference | None
    position: ShareRow | None
    method: str


@dataclass(frozen=True)
class Mean:
    """The mean of ``n`` values (``None`` when ``n`` is 0)."""

    mean: float | None
    n: int


@dataclass(frozen=True)
class EditMetricRow:
    """One edit metric over accepted suggestions.

    ``overall``: per system and :data:`OVERALL` (all accepted suggestions pooled), over every
    round — Tables 2 and 5. ``by_round``: the same per round number — Tables 7 and 8.
    ``test``: Mann–Whitney U between the two systems' values (see ``EditTable.method``);
    ``p_holm``: its Holm-adjusted p-value across the table's metrics.
    """

    metric: str
    label: str
    overall: dict[str, Mean]
    by_round: dict[int, dict[str, Mean]]
    test: MannWhitney | None
    p_holm: float | None


@dataclass(frozen=True)
class EditTable:
    """Tables 2/5 and 7/8: edit metrics of the accepted suggestions, per system."""

    systems: tuple[str, str]
    rows: tuple[EditMetricRow, ...]
    method: str


@dataclass(frozen=True)
class TextMetricRow:
    """One text metric per source (each system, and :data:`HUMAN` for the writers' own
    lines); ``n``: how many values were averaged (writers, or texts for corpus rows)."""

    metric: str
    label: str
    values: dict[str, float | None]
    n: dict[str, int]


@dataclass(frozen=True)
class TextTable:
    """Tables 3 and 6: text metrics of generated text against the writers' own.
    ``not_computed``: a sentence per English-only metric left out of a study in another
    language (:func:`cyoa.metrics.text.not_computed`)."""

    sources: tuple[str, ...]
    rows: tuple[TextMetricRow, ...]
    method: str
    not_computed: tuple[str, ...] = ()


@dataclass(frozen=True)
class LikertRow:
    """One Likert item for one pair of systems: ``summary`` (counts 1–5, mean, median), or in
    compat mode ``describe`` (pandas ``describe()``: count, mean, std, min, 25%, 50%, 75%,
    max)."""

    pair: str
    item_id: str
    question: str
    summary: LikertSummary | None = None
    describe: dict[str, float | None] | None = None


@dataclass(frozen=True)
class WriterEditRow:
    """One edit metric compared between the systems within writers: ``test`` is
    :func:`~cyoa.stats.writer_difference` of each writer's mean for the first system minus
    their mean for the second (in the metric's unit, see ``label``); ``p_holm`` its
    Holm-adjusted p across the table's metrics."""

    metric: str
    label: str
    test: WriterDifference
    p_holm: float | None


@dataclass(frozen=True)
class Monitoring:
    """The study watched as it runs (:mod:`cyoa.cowriting.analysis.monitoring`).

    ``sequence``: the confidence sequence of the writers' shares of the first system, one
    value per writer whose story is complete, in the order they completed it (``None``
    before the first); ``writers``: how many. ``planned_writers``: the latest stored plan's
    writers (``None`` without a plan). ``decisive``: the anytime-valid p is at most
    ``alpha``. ``status``: the study-status line; ``fixed_sample``: what the fixed-sample
    p-values mean at this size.
    """

    sequence: ConfidenceSequence | None
    writers: int
    planned_writers: int | None
    alpha: float
    decisive: bool
    status: str
    fixed_sample: str


@dataclass(frozen=True)
class WriterLevel:
    """CYOA's own analysis with the writer as the unit (absent in ``--compat`` mode).

    ``headline``: the preference row of the writers' shares (share = the mean writer share,
    interval = its t interval, p = the t-test against 0.5; :func:`~cyoa.stats.
    clustered_preference`), ``None`` with fewer than two writers. ``round_p_holm``: the
    per-round binomial p-values of the preference table Holm-adjusted across the rounds.
    ``edits``: the within-writer edit tests. ``monitoring``: the anytime-valid view.
    """

    headline: ShareRow | None
    writers: int
    round_p_holm: dict[int, float]
    edits: tuple[WriterEditRow, ...]
    edits_method: str
    monitoring: Monitoring


@dataclass(frozen=True)
class Analysis:
    """Every table of the paper for one experiment, with the notes that say how.

    ``compat`` is ``None`` for this project's analysis or ``"cyoa-2021"`` for the original
    script's. ``writers`` and ``rounds`` count what was analysed. ``writer_level``: the
    analysis with writers as the unit and the anytime-valid monitoring (``None`` in compat
    mode, whose output is the script's). ``left_out``: the sentence saying which writers the
    spec's process-flag rule left out ('' for none; :mod:`cyoa.cowriting.process.exclusion`).
    """

    experiment: str
    title: str
    compat: str | None
    systems: tuple[str, str]
    writers: int
    rounds: int
    preference: PreferenceTable | None
    edits: EditTable | None
    text: TextTable | None
    likert: tuple[LikertRow, ...]
    notes: tuple[str, ...]
    writer_level: WriterLevel | None = None
    left_out: str = ""
