"""Judgements published with their stories, as released data sets are: some stories' texts
are empty and missing fields are JSON's ``NaN``. An import notes the stories without text
(how many, which) in its output and in the evaluation card; a study raters will read still
refuses them; ``NaN`` reads as missing and ``Infinity`` is refused with a sentence."""

from __future__ import annotations

import csv
import html
import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from cyoa.rating.importing import RatingImportError, read_records, stories_from_file
from cyoa.rating.research.card import rating_card_markdown

# Four 5-point items, like the crowd ratings of a decoding study (fluency, coherence,
# interestingness, relevance to the prompt).
INSTRUMENT = """\
id = "narrative-1-5"
name = "Narrative quality (1-5)"
{items}
"""
ITEMS = ("fluency", "coherence", "interestingness", "relevance")
SOURCES = ("nucleus-0.9", "top-k-40", "temperature-0.7")


def released_data(folder: Path, stories: int = 30) -> tuple[Path, Path, Path, list[str]]:
    """A small release shaped like DeLucia et al.'s (GEM 2021) stories and ratings, made up
    here: every sixth story's text empty, every fourth title ``NaN`` (as ``json.dumps``
    writes a pandas table's missing value), 3 to 10 raters per story from a pool of 15.
    The stories file, the ratings file, the instrument, and the ids of the empty stories."""
    rng = random.Random(2021)
    story_lines, rows, empty = [], [], []
    for n in range(stories):
        story_id, source = f"story-{n:03d}", SOURCES[n % len(SOURCES)]
        text = "" if n % 6 == 0 else f"Prompt {n}. The lighthouse keeper counted ships."
        if not text:
            empty.append(story_id)
        title = float("nan") if n % 4 == 0 else f"Story {n}"
        record = {"story_id": story_id, "source": source, "title": title, "text": text}
        story_lines.append(json.dumps(record))  # writes NaN for the missing title
        for rater in rng.sample(range(15), 3 + n % 8):
            rows += [
                {"story_id": story_id, "source": source, "rater_id": f"worker-{rater}",
                 "item": item, "value": rng.randint(1, 5)}
                for item in ITEMS
            ]  # fmt: skip
    stories_file = folder / "stories.jsonl"
    stories_file.write_text("\n".join(story_lines) + "\n", encoding="utf-8")
    ratings_file = folder / "ratings.csv"
    with ratings_file.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    items = "".join(
        f'\n[[items]]\nid = "{item}"\ntext = "The story\'s {item}."\nkind = "likert"\npoints = 5\n'
        for item in ITEMS
    )
    instrument = folder / "narrative.toml"
    instrument.write_text(INSTRUMENT.format(items=items), encoding="utf-8")
    return stories_file, ratings_file, instrument, empty


def import_release(db_path: str, folder: Path):
    stories, ratings, instrument, empty = released_data(folder)
    result = CliRunner().invoke(cli, [
        "--db", db_path, "import-ratings", str(ratings), "--format", "long", "--name",
        "decoding", "--instrument", str(instrument), "--stories", str(stories),
    ])  # fmt: skip
    return result, empty


@pytest.mark.both_databases
def test_a_released_stories_file_with_empty_texts_is_imported_and_its_empty_stories_named(
    database, tmp_path
):
    result, empty = import_release(database, tmp_path)
    assert result.exit_code == 0, result.output
    assert "of 30 stories by" in result.output
    assert f"{len(empty)} stories have no text stored" in result.output
    assert ", ".join(empty) in result.output
    db = store.connect(database)
    try:
        rows = {r["story_id"]: r for r in db.query("SELECT * FROM stories")}
    finally:
        db.close()
    assert len(rows) == 30
    assert {story for story, row in rows.items() if not row["text"]} == set(empty)
    assert rows["story-000"]["title"] == "" and rows["story-001"]["title"] == "Story 1"


def test_the_card_names_the_empty_stories_and_the_analysis_counts_their_judgements(tmp_path):
    database = str(tmp_path / "cyoa.sqlite")
    result, empty = import_release(database, tmp_path)
    assert result.exit_code == 0, result.output
    db = store.connect(database)
    try:
        card = rating_card_markdown(db, "decoding", datetime(2026, 1, 1, tzinfo=UTC))
    finally:
        db.close()
    assert f"{len(empty)} stories have no text stored (neither a text nor a link): " in card
    assert ", ".join(empty) in card
    assert "shown as a link" not in card
    assert f"- Judgements: {sum(4 * (3 + n % 8) for n in range(30))}." in card  # all analysed


def test_a_study_raters_will_read_still_refuses_a_story_without_text(tmp_path):
    stories, _, _, empty = released_data(tmp_path)
    spec = tmp_path / "rating.toml"
    spec.write_text(
        'id = "rerate"\nkind = "rating"\ninstrument = "aiss-v1"\nraters_per_story = 3\n'
        'consent = "I agree."\ninstructions = "Read each story."\n'
        '[stories]\nfile = "stories.jsonl"\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(
        cli, ["--db", str(tmp_path / "cyoa.sqlite"), "experiment", "create", str(spec)]
    )
    assert result.exit_code != 0
    assert f"story {empty[0]!r} has neither text nor a link, and raters must read it" in (
        result.output
    )
    with pytest.raises(RatingImportError, match="raters must read it"):
        stories_from_file(stories.read_text(encoding="utf-8"), stories.name)


def test_nan_in_a_json_lines_file_reads_as_missing():
    text = '{"story_id": "s1", "source": "a", "title": NaN, "text": "A ship."}\n'
    assert list(read_records(text, "stories.jsonl")) == [
        (1, {"story_id": "s1", "source": "a", "title": None, "text": "A ship."})
    ]
    [story] = stories_from_file(text, "stories.jsonl")
    assert story.title == ""


def test_nan_in_a_json_list_reads_as_missing():
    text = '[{"story_id": "s1", "source": "a", "title": NaN, "text": "A ship."}]'
    assert stories_from_file(text, "stories.json")[0].title == ""


def test_a_text_that_is_nan_is_a_story_without_text_not_the_word_nan():
    text = '{"story_id": "s1", "source": "a", "text": NaN}\n'
    assert stories_from_file(text, "stories.jsonl", need_text=False)[0].text == ""
    with pytest.raises(RatingImportError, match="story 's1' has neither text nor a link"):
        stories_from_file(text, "stories.jsonl")


@pytest.mark.parametrize(
    ("line", "sentence"),
    [
        (
            '{"story_id": NaN, "source": "a", "text": "A ship."}',
            "stories.jsonl, record 1: the field 'story_id' (or 'id') is missing or empty.",
        ),
        (
            '{"story_id": "s1", "source": "a", "title": Infinity, "text": "A ship."}',
            "stories.jsonl, line 1, field 'title' holds an infinite number (inf)",
        ),
        (
            '{"story_id": "s1", "source": "a", "title": -Infinity, "text": "A ship."}',
            "stories.jsonl, line 1, field 'title' holds an infinite number (-inf)",
        ),
        (
            '{"story_id": "s1", "source": "a", "origin": {"seed": 1e999}, "text": "A ship."}',
            "stories.jsonl, line 1, field 'origin' holds an infinite number (inf)",
        ),
    ],
    ids=["nan id", "infinity", "minus infinity", "overflowing number in a nested field"],
)
def test_a_nan_id_or_an_infinite_number_is_refused_with_a_sentence(line, sentence):
    with pytest.raises(RatingImportError) as refused:
        stories_from_file(line + "\n", "stories.jsonl")
    assert sentence in str(refused.value)


def test_a_nan_rating_or_rater_in_a_long_file_is_refused_naming_the_line(tmp_path):
    database = str(tmp_path / "cyoa.sqlite")
    for field, sentence in (
        ("value", "line 2, field 'value': Item fluency"),
        ("rater_id", "line 2: the field 'rater_id' is missing or empty."),
    ):
        _, _, instrument, _ = released_data(tmp_path, stories=1)
        rows = [
            {"story_id": "s1", "source": "a", "rater_id": "w1", "item": "fluency", "value": 3},
            {"story_id": "s1", "source": "a", "rater_id": "w2", "item": "fluency", "value": 4},
        ]
        rows[1][field] = float("nan")
        ratings = tmp_path / "ratings.jsonl"
        ratings.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        result = CliRunner().invoke(cli, [
            "--db", database, "import-ratings", str(ratings), "--format", "long", "--name",
            "nan", "--instrument", str(instrument),
        ])  # fmt: skip
        assert result.exit_code != 0
        assert sentence in result.output
        assert "Traceback" not in result.output


def test_a_copy_of_the_import_for_raters_is_not_opened_while_stories_lack_their_text(
    app, researcher, tmp_path
):
    result, empty = import_release(app.config["DATABASE"], tmp_path)
    assert result.exit_code == 0, result.output
    cloned = researcher.post("/research/ratings/decoding/clone", {"new_id": "rerate"})
    assert cloned.status_code == 302
    reply = researcher.post(
        "/research/ratings/rerate/status", {"status": "open"}, follow_redirects=True
    )
    page = html.unescape(reply.get_data(as_text=True))
    assert f"'rerate' has {len(empty)} stories with neither text nor a link" in page
    assert ", ".join(empty) in page
    db = store.connect(app.config["DATABASE"])
    try:
        assert store.get_experiment(db, "rerate")["status"] == "paused"
    finally:
        db.close()


def test_experiment_open_refuses_an_imported_rating_study_with_a_sentence(tmp_path):
    database = str(tmp_path / "cyoa.sqlite")
    result, _ = import_release(database, tmp_path)
    assert result.exit_code == 0, result.output
    opened = CliRunner().invoke(cli, ["--db", database, "experiment", "open", "decoding"])
    assert opened.exit_code == 1
    assert "holds imported judgements and has no raters' pages to open" in opened.output
    assert "Traceback" not in opened.output
    db = store.connect(database)
    try:
        assert store.get_experiment(db, "decoding")["status"] != "open"
    finally:
        db.close()
