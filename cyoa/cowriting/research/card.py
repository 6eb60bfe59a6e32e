"""The evaluation card: what a paper should report about a human evaluation, filled in from
the experiment's spec, the data and what the researcher entered.

Karpinska, Akoury and Iyyer (2021), "The Perils of Using Mechanical Turk to Evaluate
Open-Ended Text Generation" (EMNLP), found that most papers with a human evaluation of
generated stories do not report: the task, the length of the rated text, the rated
attributes, the scale and its labels, the instructions, the raters' qualifications and the
quality control, the number of items, the systems, the raters per item, whether human
references were shown, the pay, and the time on task. The card has one section for each.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cyoa.cowriting import planner
from cyoa.cowriting.analysis import rankings as ranking_report
from cyoa.cowriting.analysis.data import StudyData
from cyoa.cowriting.analysis.monitoring import planned_writers
from cyoa.cowriting.analysis.tables import edit_scores, edit_table, preference_table, writer_level
from cyoa.cowriting.process import exclusion
from cyoa.cowriting.research.lifecycle import models_without_card
from cyoa.cowriting.spec import Experiment
from cyoa.generation.types import System
from cyoa.languages import described, language_name
from cyoa.metrics.text import not_computed
from cyoa.metrics.tokens import WORDS_RULE, is_english
from cyoa.web.card import header, planned_sample_size, quote
from cyoa.web.research import format_seconds


def _quantiles(values: Sequence[float]) -> str:
    if not values:
        return "no data yet"
    if len(values) == 1:
        return f"{values[0]:.0f}"
    q1, median, q3 = statistics.quantiles(values, n=4)
    return f"median {median:.0f} (IQR {q1:.0f}–{q3:.0f}, range {min(values):.0f}–{max(values):.0f})"


def _duration(values: Sequence[float]) -> str:
    if not values:
        return "no data yet"
    median = statistics.median(values)
    if len(values) < 2:
        return format_seconds(median)
    q1, _, q3 = statistics.quantiles(values, n=4)
    return f"median {format_seconds(median)} (IQR {format_seconds(q1)} – {format_seconds(q3)})"


def evaluation_card(
    exp: Experiment,
    details: dict[str, Any],
    sessions: Sequence[dict[str, Any]],
    rounds: Sequence[dict[str, Any]],
    now: datetime,
    plan: dict[str, Any] | None = None,
    studies: Sequence[StudyData] = (),
) -> str:
    """The card as Markdown. ``sessions`` and ``rounds`` are the rows of the ``sessions`` and
    ``preference`` export tables; ``details`` the researcher's entries (``pay``,
    ``qualifications``); ``plan`` the latest stored plan (:func:`cyoa.store.latest_plan`);
    ``studies`` each pair's data (:func:`cyoa.cowriting.analysis.data.load_study`) for the
    results section."""
    lines = [
        *_task(exp, now),
        *_rated_text(exp, rounds),
        *_attributes_and_scale(exp),
        *_instructions_and_quality(exp, details),
        *_number_of_items(exp, sessions, rounds),
        *_systems_and_raters(exp, rounds),
        *planned_sample_size(plan, exp.id, planner.design),
        *_results(studies, planned_writers(plan)),
        *_ranking(exp, sessions, studies),
        *_pay_and_time(details, sessions, rounds),
        *_files(),
    ]
    return "\n".join(lines)


def _task(exp: Experiment, now: datetime) -> list[str]:
    """The card's title, where it comes from, and the task the writers did."""
    return [
        *header(exp.title, exp.id, now),
        "## Task",
        "",
        "Collaborative story writing with paired suggestions (Choose Your Own Adventure; Clark "
        f"& Smith, NAACL 2021). Each writer writes a story of {exp.limits.rounds} rounds: they "
        "write a line, two systems each suggest a continuation (shown side by side in a "
        f"random slot order, slot order mode '{exp.slot_order}'), the writer chooses one, may "
        "switch, edits it and adds it to the story. The choice is the preference judgement; "
        "the edits measure how much of the suggestion the writer kept.",
        "",
        described(exp.source),
        "",
    ]


def _rated_text(exp: Experiment, rounds: Sequence[dict[str, Any]]) -> list[str]:
    """How long a turn may be, and how long the suggestions shown were (characters, words)."""
    shown = [r[f"slot{slot}_text"] for r in rounds for slot in (1, 2)]
    suggestion_chars = [float(len(text)) for text in shown if text is not None]
    suggestion_words = [float(len(text.split())) for text in shown if text is not None]
    return [
        "## Length of the rated text",
        "",
        f"- Each turn (the writer's line and the edited suggestion) is limited to "
        f"{exp.limits.min_chars}–{exp.limits.max_chars} characters.",
        f"- Suggestions shown, in characters: {_quantiles(suggestion_chars)}; in words "
        f"(whitespace-separated): {_quantiles(suggestion_words)}.",
        "",
    ]


def _attributes_and_scale(exp: Experiment) -> list[str]:
    """What the writers judged (the choice, their edits, the survey) and on which scales."""
    likert = [item for item in exp.survey if item.kind == "likert"]
    open_ = [item for item in exp.survey if item.kind == "open"]
    return [
        "## Rated attributes",
        "",
        "- Preference: which of two suggestions the writer chose to continue their story "
        "(implicit, forced choice).",
        "- Edits: how much the writer changed the chosen suggestion (edit distance, Jaccard, "
        "USER).",
        *(f"- Survey statement `{item.id}`: {item.text}" for item in likert),
        *(f"- Open question `{item.id}`: {item.text}" for item in open_),
        "",
        "## Scale and labels",
        "",
        "- Preference: binary choice between slot 1 and slot 2; writers never see system names.",
        "- Survey statements: 5-point Likert scale, "
        + ", ".join(f"{n} = {label}" for n, label in enumerate(exp.likert_labels, start=1))
        + ".",
        "- Open questions: free text (at most 2000 characters).",
        "",
    ]


def _instructions_and_quality(exp: Experiment, details: dict[str, Any]) -> list[str]:
    """The texts the writers were shown, and the qualifications and checks that applied."""
    return [
        "## Instructions",
        "",
        "Shown to writers before and during writing:",
        "",
        *quote(exp.instructions),
        "",
        "Consent text:",
        "",
        *quote(exp.consent),
        "",
        "Story prompt:",
        "",
        *quote(exp.prompt_text),
        "",
        "## Qualifications and quality control",
        "",
        "Entered by the researcher:",
        "",
        *quote(details.get("qualifications") or "(not entered)"),
        "",
        "Enforced by the app: one story per participant id per experiment; turn length limits; "
        "every action recorded before it is acknowledged.",
        "",
        _keystroke_record(exp),
        "",
    ]


def _keystroke_record(exp: Experiment) -> str:
    """Whether the writers' keystrokes were recorded (``record_keystrokes``), and what of."""
    if not exp.record_keystrokes:
        return "Keystroke record: off (`record_keystrokes = false`); only actions were stored."
    return (
        "Keystroke record: on (`record_keystrokes = true`, the default). Every change to the "
        "writer's line and to the edit box (position, text removed and put in, the writer's "
        "clock in ms, typed / pasted / dropped / cut / undo / redo / other), each suggestion "
        "shown, hidden, focused or hovered, and the page hidden or offline, stored in "
        "`text_operations`; writers were told so on the consent page. Each line, draft and "
        "turn was checked against its replayed record (`record` in the events)."
    )


def _number_of_items(
    exp: Experiment, sessions: Sequence[dict[str, Any]], rounds: Sequence[dict[str, Any]]
) -> list[str]:
    """How many writers started and finished, rounds judged, writers per pair of systems,
    where the participant ids came from and when the data were collected."""
    finished = [s for s in sessions if s["status"] == "finished"]
    counted = [r for r in rounds if not r["one_suggestion_only"]]
    per_pair: dict[str, int] = {}
    for s in sessions:
        pair = f"{s['system_a']} vs {s['system_b']}"
        per_pair[pair] = per_pair.get(pair, 0) + 1
    sources = sorted({s["id_source"] for s in sessions})
    started = min((s["started_at"] for s in sessions), default=None)
    last = max((s["updated_at"] for s in sessions if s["updated_at"]), default=None)
    return [
        "## Number of items",
        "",
        f"- Writers (sessions started): {len(sessions)}; finished (survey submitted): "
        f"{len(finished)}; target: {exp.target_writers or 'not set'}.",
        f"- Submitted rounds (preference judgements): {len(rounds)}; with both suggestions "
        f"shown (counted for preference): {len(counted)}.",
        "- Writers per pair of systems: "
        + (", ".join(f"{pair}: {n}" for pair, n in sorted(per_pair.items())) or "none yet")
        + ".",
        f"- Participant ids came from: {', '.join(sources) or 'no sessions yet'}.",
        f"- Data collected from {started or '–'} to {last or '–'} (server time, UTC).",
        "",
    ]


def _sampling(system: System, without_card: list[str]) -> str:
    """The system's sampling as JSON; "not recorded" for a model with no card here (imported
    data: the stand-in's sampling is not the study's)."""
    if system.model.name in without_card:
        return "not recorded"
    return json.dumps(system.sampling.to_dict(), sort_keys=True)


def _systems_and_raters(exp: Experiment, rounds: Sequence[dict[str, Any]]) -> list[str]:
    """The systems compared (model card, version, weights, sampling; for a served model what
    its server was sent), the raters per item and whether human references were shown."""
    without_card = models_without_card(exp)
    return [
        "## Systems",
        "",
        "| system | model card | display name | version | weights | sampling |",
        "|---|---|---|---|---|---|",
        *(
            f"| {s.name} | {s.model.name} | {s.model.display_name} | {s.model.version or '–'} "
            f"| {s.model.weights_file or '–'} | {_sampling(s, without_card)} |"
            for s in exp.systems
        ),
        "",
        *_sent_settings(rounds),
        "## Raters per item",
        "",
        "One. Each writer judges only the suggestions made for their own story, so every "
        "judgement has exactly one rater; agreement between raters cannot be computed for this "
        "protocol. Writers are the raters (no separate annotators).",
        "",
        "## Human references shown",
        "",
        "No. Writers see only the two systems' suggestions; the human-written text is their own "
        "lines.",
        "",
    ]


def _sent_settings(rounds: Sequence[dict[str, Any]]) -> list[str]:
    """Each served system's settings as its model server was sent them (the suggestions'
    ``sent_settings``, the seed left out: it is each suggestion's own), so the card says
    what sampled, not only what the model card asked; nothing when no system was served."""
    sent: dict[str, set[str]] = {}
    for row in rounds:
        for slot in (1, 2):
            settings = row.get(f"slot{slot}_sent_settings")
            if settings:
                shown = {k: v for k, v in json.loads(settings).items() if k != "seed"}
                sent.setdefault(row[f"slot{slot}_system"], set()).add(
                    json.dumps(shown, sort_keys=True)
                )
    if not sent:
        return []
    return [
        "Sent to the model servers of served systems (backend `openai`, recorded with each "
        "suggestion; each suggestion's own seed left out):",
        "",
        *(f"- {system}: `{each}`" for system in sorted(sent) for each in sorted(sent[system])),
        "",
    ]


def _pct(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{100 * value:.1f}%"


def _p(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.3g}"


def _num(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:.2f}"


# Bootstrap replicates of the writer-clustered interval the card's analysis computes.
CARD_RESAMPLES = 2000


def _results(studies: Sequence[StudyData], planned: int | None) -> list[str]:
    """The results with writers as the unit, per pair of systems: the headline, the paper's
    pooled binomial (labelled), the per-round p-values Holm-adjusted across rounds, the
    anytime-valid confidence sequence with the study status, and the within-writer edit
    tests beside the paper's Mann–Whitney; per-round edit means are descriptive."""
    lines = ["## Results (writers as the unit)", ""]
    left_out = exclusion.sentence(
        [w for data in studies for w in data.left_out],
        studies[0].exclusion_rule if studies else (),
    )
    lines += [left_out, ""] if left_out else []
    analysed = [data for data in studies if data.rounds]
    if not analysed:
        return [*lines, "No submitted round yet.", ""]
    lines += [
        "Each writer is one independent unit: their rounds are not. Fixed-sample p-values hold "
        "at the planned N; the confidence sequence holds at every look (docs/analysis.md, "
        '"Watching a study as it runs").',
        "",
    ]
    language = analysed[0].language
    if not is_english(language):
        lines += [
            f"The text is in {language_name(language)}: distinct-n, Jaccard and USER count its "
            f"words ({WORDS_RULE}); the edit distance counts characters.",
            *(f"- {sentence}" for sentence in not_computed(language)),
            "",
        ]
    for data in analysed:
        first, second = data.systems
        table = preference_table(data, resamples=CARD_RESAMPLES)
        scores = edit_scores(data)
        level = writer_level(data, table, scores, planned_writers=planned)
        edits = edit_table(data, scores=scores)
        lines += [f"### {first} vs {second}", ""]
        if level.headline is not None:
            row = level.headline
            lines.append(
                f"- Headline: the mean writer chose {first} in {_pct(row.share)} of their rounds "
                f"({level.writers} writers), 95% t interval {_pct(row.ci_low)} – "
                f"{_pct(row.ci_high)}, p = {_p(row.p_value)} (t-test of the writers' shares "
                f"against 0.5); {level.monitoring.fixed_sample}."
            )
        if table is not None:
            pooled = table.rows[0]
            lines.append(
                f"- Clark & Smith's pooled binomial (rounds as independent): {pooled.chosen} / "
                f"{pooled.total} rounds ({_pct(pooled.share)}), 95% CI {_pct(pooled.ci_low)} – "
                f"{_pct(pooled.ci_high)}, p = {_p(pooled.p_value)}."
            )
            lines.append(
                "- Per round, binomial p (Holm across the rounds): "
                + ", ".join(f"round {number} {_p(p)}" for number, p in level.round_p_holm.items())
                + "."
            )
        sequence = level.monitoring.sequence
        if sequence is not None:
            lines.append(
                f"- Anytime-valid: 95% confidence sequence {_pct(sequence.low)} – "
                f"{_pct(sequence.high)} after {sequence.n} complete stories, p = "
                f"{_p(sequence.p_value)} (Waudby-Smith & Ramdas 2023)."
            )
        lines.append(f"- Study status: {level.monitoring.status}.")
        mann_whitney = {row.metric: row for row in edits.rows} if edits else {}
        for row in level.edits:
            test, paper = row.test, mann_whitney.get(row.metric)
            paper_p = _p(paper.test.p_value) if paper and paper.test else "–"
            lines.append(
                f"- Edits, {row.label}: within writers {first} − {second} = "
                f"{_num(test.difference)} "
                f"(95% CI {_num(test.ci_low)} – {_num(test.ci_high)}, {test.writers} writers), "
                f"p (Holm across metrics) = {_p(row.p_holm)}; Clark & Smith's Mann–Whitney "
                f"(rounds as independent) p = {paper_p}."
            )
        lines += ["- Per-round edit means are descriptive: no test is made per round.", ""]
    return lines


def _ranking(
    exp: Experiment, sessions: Sequence[dict[str, Any]], studies: Sequence[StudyData]
) -> list[str]:
    """With more than two systems: the ranking of all systems, plain and at equal style
    (:mod:`cyoa.cowriting.analysis.rankings`), with its check under adaptive pairing."""
    systems = [s.name for s in exp.systems]
    if len(systems) < 3 or not any(data.rounds for data in studies):
        return []
    probabilities = {
        row["session_id"]: float(row["pair_probability"])
        for row in sessions
        if row.get("pair_probability") is not None
    }
    ranked = ranking_report.rank_systems(studies, systems, probabilities)
    lines = ranking_report.markdown_lines(ranked, exp.id)
    return ["## Ranking of all systems (writers as clusters)", "", *lines[2:]]


def _pay_and_time(
    details: dict[str, Any], sessions: Sequence[dict[str, Any]], rounds: Sequence[dict[str, Any]]
) -> list[str]:
    """The pay the researcher entered, and the time on task measured per session and round."""
    finished = [s for s in sessions if s["status"] == "finished"]
    session_seconds = [s["session_seconds"] for s in finished if s["session_seconds"] is not None]
    turn_seconds = [r["round_seconds"] for r in rounds if r["round_seconds"] is not None]
    return [
        "## Pay",
        "",
        *quote(details.get("pay") or "(not entered)"),
        "",
        "## Time on task (measured)",
        "",
        f"- Per finished session (consent to survey): {_duration(session_seconds)}.",
        f"- Per round (round start to the edited turn): {_duration(turn_seconds)}.",
        "",
    ]


def _files() -> list[str]:
    """What the export bundle holds."""
    return [
        "## Files in the bundle",
        "",
        "`preference`, `sessions`, `events`, `survey` as CSV and Parquet; `cyoa.tsv` (the "
        "original evaluation script's layout; one `cyoa-<a>-vs-<b>.tsv` per compared pair with "
        "more than two systems); `data-dictionary.md` "
        "(every column); `experiment-spec.json`; this card.",
        "",
    ]
