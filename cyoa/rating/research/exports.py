"""The tables of a rating experiment, as exported (see docs/data-dictionary.md, "Exports of
rating experiments"): every judgement, the stories with their scores, and the raters.

Pure functions from the database to rows; the formats (CSV, JSON Lines, Parquet) are
:mod:`cyoa.cowriting.research.exports`'.
"""

from __future__ import annotations

import io
import json
import zipfile
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from cyoa.db.facade import Db
from cyoa.rating.analysis.data import load_ratings, review_raters
from cyoa.rating.analysis.fei import question_entropies, story_indices
from cyoa.rating.analysis.report import quality_rows, rater_severity, raters_known
from cyoa.rating.analysis.scales import factor_scores
from cyoa.rating.analysis.ttcw import majority_passed, story_totals
from cyoa.rating.instruments import Instrument
from cyoa.rating.instruments.translation import as_read, translation_note
from cyoa.rating.research.card import rating_card_markdown
from cyoa.rating.store import rater_languages, stored_instrument
from cyoa.web.columns import Column
from cyoa.web.completion import shown_code
from cyoa.web.tables import ExportError, data_dictionary, to_csv, to_parquet, write_table

JUDGEMENT_COLUMNS = (
    Column("experiment_id", "string", "the rating experiment"),
    Column("story_id", "string", "the story judged"),
    Column("source", "string", "the story's source or system (what the analysis compares)"),
    Column("rater_id", "string", "the rater"),
    Column("panel", "string", "the rater's panel: 'human', or the judge model's name"),
    Column("item_id", "string", "the instrument's item (AISS 1–22, TTCW 1–14, an FEI question)"),
    Column("item_kind", "string", "likert, yes_no, true_false or text"),
    Column("factor", "string", "the item's factor (AISS) or dimension (TTCW); null if none"),
    Column("reverse", "bool", "whether the item is reverse-keyed (Likert)"),
    Column("value", "float", "the answer as given: Likert points, 1/0 for Yes/No, true/false"),
    Column(
        "value_coded",
        "float",
        "the answer as scored: low + high − value for a reverse-keyed item (points + 1 − "
        "value on a scale from 1), else value",
    ),
    Column("value_text", "string", "the answer to a text item (null for the others)"),
    Column("rationale", "string", "the rater's written reason, where one was given"),
    Column(
        "items_language",
        "string",
        "the language (BCP 47) the rater read the item in: the one their pages started in; "
        "a judge model's, and an imported rater's, is the instrument's own; null for an "
        "attention check (the researcher's own words)",
    ),
    Column(
        "items_translation",
        "string",
        "for an item read in translation: 'items translated to <language> by <translator> "
        "(<source>); not the validated instrument' (or '; a validated translation'); null "
        "for the instrument's own language and for attention checks",
    ),
    Column("shown_at", "string", "when the story was shown to the rater (UTC; null if imported)"),
    Column("answered_at", "string", "when the rater answered (UTC; null if imported)"),
    Column("recorded_at", "string", "when the judgement was stored (UTC)"),
)

STORY_COLUMNS = (
    Column("experiment_id", "string", "the rating experiment"),
    Column("story_id", "string", "the story"),
    Column("source", "string", "its source or system"),
    Column("title", "string", "its title ('' if none was given)"),
    Column(
        "text",
        "string",
        "the story as raters read it (null when only a link is stored, or no text: an "
        "import's story whose text was not released)",
    ),
    Column("words", "int", "words in its stored text (0 when only a link, or no text, is stored)"),
    Column("url", "string", "where it can be read, when its text is not stored"),
    Column("raters", "int", "raters who judged it"),
    Column("judgements", "int", "judgements of it"),
    Column(
        "measure",
        "string",
        "what value is: 'factor:<name>' (AISS/Likert factor score, mean over its raters), "
        "'tests_passed_majority' and 'tests_passed_per_rater' (TTCW), 'etc' and 'ewc' (FEI "
        "entropy in bits); null when the instrument has no per-story score",
    ),
    Column("value", "float", "the measure's value for this story"),
)

RATER_COLUMNS = (
    Column("experiment_id", "string", "the rating experiment"),
    Column("rater_id", "string", "the rater"),
    Column("panel", "string", "the rater's panel: 'human', or the judge model's name"),
    Column("external_id", "string", "the platform's id for the rater, when recorded"),
    Column("id_source", "string", "where the rater came from ('import' for imported data)"),
    Column(
        "completion_code",
        "string",
        "the code the rater was shown on finishing: the spec's study-wide completion_code when "
        "it sets one, else the rater's own (null until they finish, and if imported)",
    ),
    Column("finished", "bool", "whether the rater finished every story (imported: true)"),
    Column("started_at", "string", "when the rater started (UTC; null if imported)"),
    Column("finished_at", "string", "when the rater finished (UTC; null until then)"),
    Column("stories", "int", "stories the rater judged"),
    Column("judgements", "int", "judgements the rater made"),
    Column("rationales", "int", "judgements with a written rationale"),
    Column("first_answer_at", "string", "the rater's first answer (UTC; null if imported)"),
    Column("last_answer_at", "string", "the rater's last answer (UTC; null if imported)"),
    Column("checks", "int", "attention checks the rater answered"),
    Column("failed_checks", "int", "attention checks answered wrongly"),
    Column(
        "median_seconds_per_story",
        "float",
        "time on task: seconds from when the server showed a story to its last answer, the "
        "median over the rater's stories (null if not measured, e.g. imported)",
    ),
    Column(
        "median_words_per_minute",
        "float",
        "the story's words / minutes on task, median over the rater's stories",
    ),
    Column(
        "straight_lined_pages",
        "int",
        "stories whose Likert answers to the instrument (5 or more; attention checks not "
        "counted) were all the same, reversed items included",
    ),
    Column(
        "severity",
        "float",
        "the rater's offset in the crossed story × rater model of their mean Likert answer "
        "after reverse coding (points; for Yes/No instruments the share of Yes): + lenient, "
        "− harsh (null if not measured, e.g. rater ids that are positions)",
    ),
    Column("excluded", "bool", "whether the spec's exclusion rules exclude the rater"),
    Column("rules_broken", "string", "the exclusion rules the rater broke ('' if none)"),
)

RATING_TABLES: dict[str, tuple[Column, ...]] = {
    "judgements": JUDGEMENT_COLUMNS,
    "stories": STORY_COLUMNS,
    "raters": RATER_COLUMNS,
}


def rating_table_rows(db: Db, exp_id: str, table: str) -> list[dict[str, Any]]:
    """The rows of one of :data:`RATING_TABLES`."""
    if table == "judgements":
        return judgement_rows(db, exp_id)
    if table == "stories":
        return story_rows(db, exp_id)
    return rater_rows(db, exp_id)


def judgement_rows(db: Db, exp_id: str) -> list[dict[str, Any]]:
    """One row per rater × story × item, with the item's kind, factor and keying."""
    rows = db.query(
        "SELECT j.experiment_id, j.story_id, s.source, j.rater_id,"
        " (SELECT r.panel FROM raters r WHERE r.experiment_id = j.experiment_id"
        " AND r.rater_id = j.rater_id) AS panel, j.item_id, i.kind AS"
        " item_kind, i.factor, i.reverse, i.points, i.low, j.value, j.value_text, j.rationale,"
        " j.shown_at, j.answered_at, j.recorded_at"
        " FROM judgements j"
        " JOIN stories s ON s.experiment_id = j.experiment_id AND s.story_id = j.story_id"
        " JOIN instrument_items i ON i.experiment_id = j.experiment_id AND i.item_id = j.item_id"
        " WHERE j.experiment_id = ? ORDER BY j.story_id, j.rater_id, i.position",
        [exp_id],
    )
    instrument = stored_instrument(db, exp_id)
    own_items = {item.id for item in instrument.items}  # the others are attention checks
    languages = rater_languages(db, exp_id)
    # A rater's page language → the language they read the items in, and its translation.
    marks: dict[str, tuple[str, str | None]] = {}
    out = []
    for row in rows:
        points, low = row.pop("points"), row.pop("low")
        reverse = bool(row["reverse"])
        value = row["value"]
        coded = low + (low + points - 1) - value if reverse and value is not None else value
        page_language = languages.get(row["rater_id"], instrument.language)
        if page_language not in marks:
            read = as_read(instrument, page_language)
            note = translation_note(read.translation) if read.translation else None
            marks[page_language] = (read.language, note)
        language, note = marks[page_language] if row["item_id"] in own_items else (None, None)
        out.append(
            {
                **row,
                "reverse": reverse,
                "value_coded": coded,
                "items_language": language,
                "items_translation": note,
            }
        )
    return out


def story_rows(db: Db, exp_id: str) -> list[dict[str, Any]]:
    """One row per story × measure (see :data:`STORY_COLUMNS`); a story without a score has
    one row whose measure is null."""
    data = load_ratings(db, exp_id)
    measures = story_measures(data.instrument, data.judgements)
    counts = {
        row["story_id"]: row
        for row in db.query(
            "SELECT story_id, count(DISTINCT rater_id) AS raters, count(*) AS judgements"
            " FROM judgements WHERE experiment_id = ? GROUP BY story_id",
            [exp_id],
        )
    }
    out = []
    for story in db.query(
        "SELECT story_id, source, title, text, url FROM stories WHERE experiment_id = ?"
        " ORDER BY source, story_id",
        [exp_id],
    ):
        base = {
            "experiment_id": exp_id,
            "story_id": story["story_id"],
            "source": story["source"],
            "title": story["title"] or "",
            "text": story["text"] or None,
            "words": len((story["text"] or "").split()),
            "url": story["url"] or None,
            "raters": counts.get(story["story_id"], {}).get("raters", 0),
            "judgements": counts.get(story["story_id"], {}).get("judgements", 0),
        }
        scores = measures.get(story["story_id"], {})
        if not scores:
            out.append({**base, "measure": None, "value": None})
        out += [{**base, "measure": name, "value": value} for name, value in scores.items()]
    return out


def story_measures(instrument: Instrument, judgements: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per story, its scores under ``instrument``: each factor's score (Likert items with a
    factor: the mean over raters of :func:`cyoa.rating.analysis.scales.factor_scores`), TTCW's
    tests passed (by majority, and the mean per rater), FEI's ETC and EWC."""
    measures: dict[str, dict[str, float]] = {}
    kinds = {item.kind for item in instrument.items}
    if "likert" in kinds:
        scores = factor_scores(instrument, judgements)
        for (story, factor), score in (
            scores.groupby(["story_id", "factor"])["score"].mean().items()
        ):
            measures.setdefault(story, {})[f"factor:{factor}"] = float(score)
    if "yes_no" in kinds:
        for story, passed in majority_passed(instrument, judgements).items():
            measures.setdefault(story, {})["tests_passed_majority"] = float(passed)
        totals = story_totals(instrument, judgements)
        for story, passed in totals.groupby("story_id")["passed"].mean().items():
            measures.setdefault(story, {})["tests_passed_per_rater"] = float(passed)
    if any(item.fei_kind for item in instrument.items):
        questions, _ = question_entropies(instrument, judgements)
        for index in story_indices(questions):
            for name in ("etc", "ewc"):
                value = getattr(index, name)
                if value is not None:
                    measures.setdefault(index.story_id, {})[name] = float(value)
    return measures


def rater_rows(db: Db, exp_id: str) -> list[dict[str, Any]]:
    """One row per rater, with how much they judged, the code they are shown, whether they
    finished, and what quality control found: flagged raters are in the export, never
    dropped."""
    data = load_ratings(db, exp_id)
    severity = rater_severity(data.instrument, data.judgements, raters_known(data.spec))
    review = review_raters(db, exp_id, data)
    quality = {row["rater_id"]: row for row in quality_rows(review, severity)}
    study_code = data.spec.get("completion_code", "")
    rows = db.query(
        "SELECT r.experiment_id, r.rater_id, r.panel, r.external_id, r.id_source,"
        " r.completion_code AS own_code, r.phase, r.started_at, r.finished_at,"
        " count(DISTINCT j.story_id) AS stories, count(j.item_id) AS judgements,"
        " count(NULLIF(j.rationale, '')) AS rationales,"
        " min(j.answered_at) AS first_answer_at, max(j.answered_at) AS last_answer_at"
        " FROM raters r LEFT JOIN judgements j"
        " ON j.experiment_id = r.experiment_id AND j.rater_id = r.rater_id"
        " WHERE r.experiment_id = ? GROUP BY r.experiment_id, r.rater_id ORDER BY r.rater_id",
        [exp_id],
    )
    out = []
    for row in rows:
        own, phase = row.pop("own_code"), row.pop("phase")
        imported = row["id_source"] in ("import", "judge")
        row["finished"] = imported or phase == "done"
        # Only a rater who finished was shown a code.
        shown = row["finished"] and not imported
        row["completion_code"] = shown_code(study_code, own) if shown else None
        out.append({**row, **quality.get(row["rater_id"], {})})
    return out


def export(
    db: Db,
    row: dict[str, Any],
    fmt: str,
    *,
    table: str | None = None,
    now: datetime | None = None,
    **_cowriting_only: Any,
) -> bytes:
    """A stored rating experiment's (``row``) export: one of its :data:`RATING_TABLES`
    (default ``judgements``) in one of :data:`~cyoa.web.tables.TABLE_FORMATS`, or the
    ``bundle`` of all of them with the spec and the evaluation card. The co-writing
    options (a pair of systems, exact text) do not apply and are ignored."""
    table = table or "judgements"
    if fmt == "cyoa-tsv":
        raise ExportError(
            f"'{row['id']}' is a rating experiment: the CYOA TSV holds co-writing studies. "
            f"Export its tables ({', '.join(RATING_TABLES)}) or the bundle."
        )
    if fmt == "bundle":
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, columns in RATING_TABLES.items():
                rows = rating_table_rows(db, row["id"], name)
                archive.writestr(f"{name}.csv", to_csv(rows, columns))
                archive.writestr(f"{name}.parquet", to_parquet(rows, columns))
            archive.writestr("data-dictionary.md", data_dictionary())
            spec = json.dumps(json.loads(row["spec"]), indent=2, ensure_ascii=False)
            archive.writestr("experiment-spec.json", spec + "\n")
            card = rating_card_markdown(db, row["id"], now or datetime.now(UTC))
            archive.writestr("evaluation-card.md", card)
        return out.getvalue()
    if table not in RATING_TABLES:
        raise ExportError(
            f"'{row['id']}' is a rating experiment: its tables are {', '.join(RATING_TABLES)}, "
            f"not '{table}'."
        )
    return write_table(rating_table_rows(db, row["id"], table), RATING_TABLES[table], fmt)
