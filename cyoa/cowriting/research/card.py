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
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cyoa.cowriting.research.lifecycle import models_without_card
from cyoa.cowriting.spec import Experiment
from cyoa.generation.types import System
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
) -> str:
    """The card as Markdown. ``sessions`` and ``rounds`` are the rows of the ``sessions`` and
    ``preference`` export tables; ``details`` the researcher's entries (``pay``,
    ``qualifications``); ``plan`` the latest stored plan (:func:`cyoa.store.latest_plan`)."""
    lines = [
        *_task(exp, now),
        *_rated_text(exp, rounds),
        *_attributes_and_scale(exp),
        *_instructions_and_quality(exp, details),
        *_number_of_items(exp, sessions, rounds),
        *_systems_and_raters(exp),
        *planned_sample_size(plan, exp.id),
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
    ]


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


def _systems_and_raters(exp: Experiment) -> list[str]:
    """The systems compared (model card, version, weights, sampling), the raters per item
    and whether human references were shown."""
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
