"""A stored experiment, read into plain dataclasses for the analysis (no statistics here).

What counts:

- a **round** is analysed once its turn was submitted (``rounds.turn_submitted_at`` set, so
  ``final_text`` and ``chosen_system`` are known). Rounds still in progress are left out.
- **Unfinished sessions count**: every submitted round of a writer who stopped before the
  survey is included (the writer's choices in those rounds were real choices). Pass
  ``finished_only=True`` to keep only sessions whose survey was submitted (``phase = 'done'``).
- Each round carries the suggestion each slot finally showed: the last attempt with
  ``status = 'done'`` for that slot. A round in which one system failed
  (``one_suggestion_only = 1``) has one suggestion only; the writer had no choice there, so
  preference analyses leave such rounds out (:attr:`RoundRecord.counts_for_preference`).
- **One pair of systems at a time.** An experiment may compare N systems, each writer one
  pair of them (``sessions.system_a``/``system_b``, in either orientation). The analysis of a
  pair reads the sessions assigned that pair; its two systems are ordered as in the spec's
  ``systems`` (first = "A", second = "B"). With exactly two systems the pair can be left out.
  For a spec without ``systems``, the systems are taken from the sessions, in order of first
  appearance.
- Survey answers are those of the sessions whose rounds are read (so ``finished_only`` applies
  to them too).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cyoa import store
from cyoa.cowriting.process import exclusion
from cyoa.cowriting.process.flags import session_flags
from cyoa.cowriting.process.store import load_operations
from cyoa.db.facade import Db
from cyoa.errors import AnalysisError
from cyoa.languages import SOURCE_LANGUAGE


@dataclass(frozen=True)
class RoundRecord:
    """One writer's submitted round.

    ``slot_systems[i]`` and ``suggestions[i]`` are the system and the suggestion text shown in
    slot ``i + 1`` (``None`` for a slot whose generation failed). ``chosen_suggestion`` is the
    chosen option as the model wrote it, ``final_text`` the writer's edit of it that was added
    to the story.
    """

    session_id: str
    writer: str
    round: int
    writer_line: str
    slot_systems: tuple[str, str]
    suggestions: tuple[str | None, str | None]
    chosen_slot: int
    chosen_system: str
    chosen_suggestion: str
    final_text: str
    one_suggestion_only: bool

    @property
    def counts_for_preference(self) -> bool:
        """Whether the writer chose between two suggestions (both slots succeeded)."""
        return not self.one_suggestion_only and None not in self.suggestions

    def suggestion_of(self, system: str) -> str | None:
        """The text ``system`` suggested this round (``None`` if it failed or was not shown)."""
        for slot_system, text in zip(self.slot_systems, self.suggestions, strict=True):
            if slot_system == system:
                return text
        return None


@dataclass(frozen=True)
class SurveyAnswer:
    """One answered survey item of a session: ``value`` (1–5) for Likert items, ``text`` for
    open questions."""

    session_id: str
    item_id: str
    kind: str
    question: str
    value: int | None
    text: str | None


@dataclass(frozen=True)
class StudyData:
    """The submitted rounds and survey answers of an experiment's writers of one pair.

    ``systems``: the pair's systems, first then second (spec order). ``writers``: session id → the
    participant's external id, for every session with at least one submitted round (in the
    order the sessions started). ``finished``: the sessions whose survey was submitted.
    ``likert_items``: Likert item ids in the spec's order (or the order first answered), with
    their question texts. ``rounds_per_story``: the spec's ``rounds`` (5 by default).
    ``slot_order_recorded``: False for data imported without it (see
    ``cyoa.cowriting.analysis.tsv``). ``completed``: the sessions whose every round was
    submitted, in the order their last turn was submitted (ties: the order they started), the
    order in which a study watched as it runs sees writers finish. ``left_out``: the
    writers the spec's process-flag rule leaves out (:mod:`cyoa.cowriting.process.exclusion`),
    none of whose rounds or answers are in the rest; ``exclusion_rule``: the flags that rule
    names (``()``: no rule applied). ``language``: the spec's ``language`` (BCP 47, "en" by
    default), the language the writers wrote in: the text metrics are chosen by it
    (:mod:`cyoa.metrics.tokens`).
    """

    experiment: str
    title: str
    systems: tuple[str, str]
    rounds_per_story: int
    rounds: tuple[RoundRecord, ...]
    writers: dict[str, str]
    finished: frozenset[str]
    survey: tuple[SurveyAnswer, ...]
    likert_items: dict[str, str]
    slot_order_recorded: bool = True
    completed: tuple[str, ...] = ()
    left_out: tuple[exclusion.LeftOut, ...] = ()
    exclusion_rule: tuple[str, ...] = ()
    language: str = SOURCE_LANGUAGE


def _spec(row: dict[str, Any]) -> dict[str, Any]:
    try:
        spec = json.loads(row["spec"] or "{}")
    except json.JSONDecodeError:
        return {}
    return spec if isinstance(spec, dict) else {}


def experiment_systems(db: Db, experiment: str) -> tuple[str, ...]:
    """The experiment's systems in spec order (from the sessions if the spec names none).

    Raises :class:`AnalysisError` when the experiment does not exist."""
    return _systems(db, experiment, _spec(store.experiment_row(db, experiment)))


def experiment_language(db: Db, experiment: str) -> str:
    """The language (BCP 47) the experiment's writers wrote in: its spec's ``language``, "en"
    when the spec names none. Raises :class:`AnalysisError` when the experiment does not
    exist."""
    return _language(_spec(store.experiment_row(db, experiment)))


def experiment_pairs(db: Db, experiment: str) -> list[tuple[str, str]]:
    """The pairs of systems that writers of ``experiment`` compared, each in spec order, in the
    order of the spec's pairs (every pair of a two-system experiment, even without writers)."""
    systems = experiment_systems(db, experiment)
    rank = {name: index for index, name in enumerate(systems)}
    assigned = {
        tuple(sorted((a, b), key=lambda name: rank.get(name, len(rank))))
        for a, b in db.execute(
            "SELECT DISTINCT system_a, system_b FROM sessions WHERE experiment_id = ?",
            [experiment],
        ).fetchall()
    }
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1 :]]
    if len(pairs) == 1:
        return pairs
    return [pair for pair in pairs if pair in assigned]


def _systems(db: Db, experiment: str, spec: dict[str, Any]) -> tuple[str, ...]:
    names = [s.get("name") for s in spec.get("systems", []) if isinstance(s, dict)]
    if len(names) >= 2 and all(isinstance(name, str) for name in names):
        return tuple(names)
    seen: dict[str, None] = {}
    for a, b in db.execute(
        "SELECT system_a, system_b FROM sessions WHERE experiment_id = ? ORDER BY started_at,"
        " participant_id",
        [experiment],
    ).fetchall():
        seen.setdefault(a)
        seen.setdefault(b)
    if len(seen) < 2:
        raise AnalysisError(
            f"Experiment '{experiment}' names no two systems and has no session yet: "
            "there is nothing to analyse."
        )
    return tuple(seen)


def _pair(systems: tuple[str, ...], pair: tuple[str, str] | None, experiment: str):
    if pair is None:
        if len(systems) == 2:
            return systems[0], systems[1]
        raise AnalysisError(
            f"Experiment '{experiment}' compares {len(systems)} systems "
            f"({', '.join(systems)}): analyse one pair at a time (--pair A B)."
        )
    unknown = [name for name in pair if name not in systems]
    if unknown or pair[0] == pair[1]:
        raise AnalysisError(
            f"'{pair[0]}' and '{pair[1]}' are not two systems of experiment '{experiment}' "
            f"(its systems: {', '.join(systems)})."
        )
    first, second = sorted(pair, key=systems.index)
    return first, second


def _spec_likert(spec: dict[str, Any]) -> dict[str, str]:
    from cyoa.cowriting.spec import DEFAULT_LIKERT

    survey = spec.get("survey")
    if isinstance(survey, dict) and isinstance(survey.get("likert"), list):
        return {str(item["id"]): str(item.get("text", "")) for item in survey["likert"]}
    return dict(DEFAULT_LIKERT)


def load_study(
    db: Db,
    experiment: str,
    pair: tuple[str, str] | None = None,
    finished_only: bool = False,
    apply_exclusions: bool = True,
) -> StudyData:
    """Read the submitted rounds and survey answers of ``experiment``'s writers who compared
    ``pair`` (either orientation; optional for a two-system experiment).

    Raises :class:`AnalysisError` when the experiment does not exist, or the pair is missing
    or not the experiment's. See the module docstring for which rounds and sessions count.
    ``apply_exclusions``: leave out the writers of the spec's process-flag rule (off for an
    export of the data, which keeps every writer).
    """
    row = store.experiment_row(db, experiment)
    spec = _spec(row)
    systems = _pair(_systems(db, experiment, spec), pair, experiment)
    scope = _Scope.of(experiment, systems, finished_only)
    writers, finished = _writers(db, scope)
    rule = _flag_rule(spec, experiment) if apply_exclusions else ()
    left_out = _left_out(db, rule, writers)
    for writer in left_out:
        del writers[writer.session_id]
    rounds = _submitted_rounds(db, scope, writers, _shown_suggestions(db, scope))
    with_rounds = {r.session_id for r in rounds}
    writers = {sid: external for sid, external in writers.items() if sid in with_rounds}
    survey = _survey_answers(db, scope, writers)
    rounds_per_story = int(spec.get("rounds", 5))
    return StudyData(
        experiment=experiment,
        title=row["title"],
        systems=systems,
        rounds_per_story=rounds_per_story,
        rounds=tuple(rounds),
        writers=writers,
        finished=frozenset(finished & set(writers)),
        survey=tuple(survey),
        likert_items=_likert_items(spec, survey),
        slot_order_recorded=bool(spec.get("import", {}).get("slot_order_recorded", True)),
        completed=_completed(db, scope, writers, rounds_per_story),
        left_out=left_out,
        exclusion_rule=rule,
        language=_language(spec),
    )


def _flag_rule(spec: dict[str, Any], experiment: str) -> tuple[str, ...]:
    try:
        return exclusion.flag_rule(spec, f"experiment '{experiment}'")
    except exclusion.ExclusionRuleError as exc:
        raise AnalysisError(str(exc)) from None


def _left_out(
    db: Db, kinds: tuple[str, ...], writers: dict[str, str]
) -> tuple[exclusion.LeftOut, ...]:
    """The writers the process-flag rule naming ``kinds`` leaves out (none without a rule:
    the flags alone exclude nobody, and no record is read)."""
    if not kinds:
        return ()
    flags = (
        (sid, external, session_flags(load_operations(db, sid)))
        for sid, external in writers.items()
    )
    return exclusion.left_out(flags, kinds)


def _language(spec: dict[str, Any]) -> str:
    language = spec.get("language", SOURCE_LANGUAGE)
    return language if isinstance(language, str) and language else SOURCE_LANGUAGE


@dataclass(frozen=True)
class _Scope:
    """The sessions a study's queries read: a SQL condition on the sessions ``s`` and its
    parameters."""

    session_filter: str
    params: dict[str, Any]

    @classmethod
    def of(cls, experiment: str, systems: tuple[str, str], finished_only: bool) -> _Scope:
        """The sessions of ``experiment`` that compared ``systems`` (either orientation) and,
        if asked, finished."""
        session_filter = (
            " AND ((s.system_a = :first AND s.system_b = :second)"
            " OR (s.system_a = :second AND s.system_b = :first))"
        )
        if finished_only:
            session_filter += " AND s.phase = 'done'"
        params = {"experiment": experiment, "first": systems[0], "second": systems[1]}
        return cls(session_filter, params)


def _shown_suggestions(db: Db, scope: _Scope) -> dict[tuple[str, int, int], str | None]:
    """The text of each (session, round, slot)'s suggestion that was shown: its last
    finished attempt."""
    suggestions: dict[tuple[str, int, int], str | None] = {}
    for sid, rnd, slot, text in db.execute(
        "SELECT g.session_id, g.round, g.slot, g.text FROM suggestions g"
        " JOIN sessions s ON s.id = g.session_id"
        f" WHERE s.experiment_id = :experiment AND g.status = 'done'{scope.session_filter}"
        " ORDER BY g.session_id, g.round, g.slot, g.attempt",
        scope.params,
    ).fetchall():
        suggestions[(sid, rnd, slot)] = text
    return suggestions


def _writers(db: Db, scope: _Scope) -> tuple[dict[str, str], set[str]]:
    """Each session's writer (external id), in the order the sessions started, and the
    sessions that finished."""
    writers: dict[str, str] = {}
    finished: set[str] = set()
    for sid, external_id, phase in db.execute(
        "SELECT s.id, p.external_id, s.phase FROM sessions s"
        " JOIN participants p ON p.id = s.participant_id"
        f" WHERE s.experiment_id = :experiment{scope.session_filter}"
        " ORDER BY s.started_at, s.participant_id",
        scope.params,
    ).fetchall():
        writers[sid] = external_id
        if phase == "done":
            finished.add(sid)
    return writers, finished


def _completed(
    db: Db, scope: _Scope, writers: dict[str, str], rounds_per_story: int
) -> tuple[str, ...]:
    """The sessions of ``writers`` with ``rounds_per_story`` submitted rounds, in the order
    their last turn was submitted (ties in the order they started)."""
    order = {sid: index for index, sid in enumerate(writers)}
    last_turns = [
        (last, order[sid], sid)
        for sid, last, count in db.execute(
            "SELECT r.session_id, MAX(r.turn_submitted_at), COUNT(*) FROM rounds r"
            " JOIN sessions s ON s.id = r.session_id"
            " WHERE s.experiment_id = :experiment AND r.turn_submitted_at IS NOT NULL"
            f"{scope.session_filter} GROUP BY r.session_id",
            scope.params,
        ).fetchall()
        if sid in order and count >= rounds_per_story
    ]
    return tuple(sid for _, _, sid in sorted(last_turns))


def _submitted_rounds(
    db: Db,
    scope: _Scope,
    writers: dict[str, str],
    suggestions: dict[tuple[str, int, int], str | None],
) -> list[RoundRecord]:
    """The rounds whose turn was submitted of the sessions in ``writers``, by writer (in
    ``writers``' order) and round."""
    rounds: list[RoundRecord] = []
    for (
        sid,
        rnd,
        line,
        slot1,
        slot2,
        one_only,
        chosen_slot,
        chosen_system,
        chosen_suggestion,
        final_text,
    ) in db.execute(
        "SELECT r.session_id, r.round, r.writer_line, r.slot1_system, r.slot2_system,"
        " r.one_suggestion_only, r.chosen_slot, r.chosen_system, r.chosen_suggestion,"
        " r.final_text FROM rounds r JOIN sessions s ON s.id = r.session_id"
        f" WHERE s.experiment_id = :experiment AND r.turn_submitted_at IS NOT NULL"
        f"{scope.session_filter}",
        scope.params,
    ).fetchall():
        if sid not in writers:
            continue  # left out by the spec's process-flag rule
        rounds.append(
            RoundRecord(
                session_id=sid,
                writer=writers[sid],
                round=rnd,
                writer_line=line or "",
                slot_systems=(slot1, slot2),
                suggestions=(suggestions.get((sid, rnd, 1)), suggestions.get((sid, rnd, 2))),
                chosen_slot=chosen_slot,
                chosen_system=chosen_system,
                chosen_suggestion=chosen_suggestion or "",
                final_text=final_text or "",
                one_suggestion_only=bool(one_only),
            )
        )
    order = {sid: index for index, sid in enumerate(writers)}
    rounds.sort(key=lambda r: (order[r.session_id], r.round))
    return rounds


def _survey_answers(db: Db, scope: _Scope, writers: dict[str, str]) -> list[SurveyAnswer]:
    """The survey answers of the sessions in ``writers``, in the order the sessions started."""
    survey: list[SurveyAnswer] = []
    for sid, item_id, kind, question, value, text in db.execute(
        "SELECT a.session_id, a.item_id, a.kind, a.question, a.value, a.text"
        " FROM survey_answers a JOIN sessions s ON s.id = a.session_id"
        f" WHERE s.experiment_id = :experiment{scope.session_filter}"
        " ORDER BY s.started_at, s.participant_id, a.position",
        scope.params,
    ).fetchall():
        if sid in writers:
            survey.append(SurveyAnswer(sid, item_id, kind, question or "", value, text))
    return survey


def _likert_items(spec: dict[str, Any], survey: Sequence[SurveyAnswer]) -> dict[str, str]:
    """The Likert statements by id: the spec's, then any other answered one with the text it
    was asked with (an experiment whose spec no longer lists it)."""
    items = _spec_likert(spec)
    for answer in survey:
        if answer.kind == "likert" and answer.item_id not in items:
            items[answer.item_id] = answer.question
    return items
