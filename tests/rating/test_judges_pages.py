"""Where judges show: the rating dashboard's Judges section (the judges read from the panels,
the calibration table with the human ceiling and the alternative annotator test, the system
level, the disagreements with both rationales escaped, the bias card), progress counts and
the evaluation card that count the human panel only, the card's Judges section, and
``analyze`` with each judge's bias card."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from conftest import Researcher, write_setup

from cyoa import create_app, store
from cyoa.cli import cli
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement, Story
from cyoa.rating.instruments import TTCW
from cyoa.rating.judges.store import add_judge
from cyoa.rating.research.judges import judge_template

BASE = "/research/ratings/ttcw-small"
SCRIPT = "<script>alert('judge')</script>"
STORIES = [(f"{source}-{n}", source) for source in ("GPT4", "Human") for n in range(4)]


def expert_value(story: int, rater: int, test: int) -> float:
    """Three experts who agree on most tests; rater 2 dissents on odd tests."""
    agreed = float((story + test) % 3 == 0)
    return 1.0 - agreed if rater == 2 and test % 2 else agreed


def small_ttcw(app) -> None:
    """Eight stories of 100 to 800 words, three experts, and the judge 'lengthy' that says Yes
    more the longer the story, its rationales carrying markup."""
    stories = [
        Story(story_id, source, story_id, " ".join(["word"] * (100 * (n + 1))), "")
        for n, (story_id, source) in enumerate(STORIES)
    ]
    experts = [
        Judgement(story_id, source, f"expert-{rater}", item.id,
                  expert_value(n, rater, int(item.id)), None, f"Expert {rater} on {story_id}.")
        for n, (story_id, source) in enumerate(STORIES)
        for rater in range(3)
        for item in TTCW.items
    ]  # fmt: skip
    verdicts = [
        Judgement(story_id, source, "lengthy", item.id, float(int(item.id) <= 2 * n),
                  None, f"{SCRIPT} because it is long")
        for n, (story_id, source) in enumerate(STORIES)
        for item in TTCW.items
    ]  # fmt: skip
    db = store.connect(app.config["DATABASE"])
    try:
        import_rating_experiment(db, "ttcw-small", TTCW, experts, stories, {"format": "ttcw"})
        add_judge(db, "ttcw-small", "lengthy", verdicts,
                  {"format": "ttcw-llm", "file": "annotations_lengthy.jsonl"})  # fmt: skip
    finally:
        db.close()


@pytest.fixture(scope="module")
def shown(tmp_path_factory):
    """The small TTCW study with its judge as a researcher sees it (computed once: the
    analysis takes seconds): the dashboard, its progress.json and the evaluation card."""
    app = create_app(write_setup(tmp_path_factory.mktemp("judge-pages")))
    small_ttcw(app)
    person = Researcher(app)
    assert person.login().status_code == 302
    person.analysed(f"{BASE}/progress.json")
    page = person.get(BASE).get_data(as_text=True)
    return SimpleNamespace(
        page=page,
        judges=page[page.index('id="judges"') :],
        progress=person.get(f"{BASE}/progress.json").get_json(),
        card=person.get(f"{BASE}/evaluation-card.md").get_data(as_text=True),
    )


def test_the_dashboard_lists_each_judge_from_its_panel_with_where_it_came_from(shown):
    text = shown.page
    assert '<section class="card" id="judges">' in text
    assert "lengthy" in text and "imported from annotations_lengthy.jsonl (format ttcw-llm)" in text


def test_the_dashboard_shows_the_calibration_beside_the_human_ceiling_and_the_alt_test(shown):
    section = shown.judges
    assert "Human ceiling" in section and "Alternative annotator test" in section
    assert "all items" in section and "Narrative Ending" in section
    assert "Kendall" in section and "GPT4" in section


def test_the_disagreement_table_puts_both_rationales_side_by_side_escaped(shown):
    text = shown.page
    assert SCRIPT not in text
    assert "&lt;script&gt;alert(&#39;judge&#39;)&lt;/script&gt; because it is long" in text
    assert "expert-0: Expert 0 on" in text


def test_the_dashboard_s_bias_card_flags_a_judge_that_says_yes_to_longer_stories(shown):
    section = shown.judges
    assert "Bias card" in section and "shortest third" in section
    assert "Flagged: length bias" in section


def test_progress_counts_the_human_panel_only(shown):
    progress = shown.progress["progress"]
    assert progress["started"] == 3 and progress["finished"] == 3
    assert progress["judgements"] == 3 * 8 * 14
    assert progress["least_rated"] == 3 and progress["most_rated"] == 3


def test_the_results_tables_stay_the_human_panel_s(shown):
    tables = shown.progress["tables"]
    assert tables and not [t for t in tables if t["name"].startswith(("judge:", "bias:"))]


def test_the_evaluation_card_counts_humans_and_lists_each_judge_with_its_calibration(shown):
    card = shown.card
    assert "Achieved (raters who answered about the story): min 3, median 3, max 3" in card
    assert "imported (judged elsewhere): 3" in card and "Raters who started: 0" in card
    judges = card[card.index("## Judges") :]
    assert "**lengthy**: imported from annotations_lengthy.jsonl (format ttcw-llm)" in judges
    assert "model version not recorded" in judges and "human ceiling" in judges
    assert "Bias card: length flagged." in judges


def test_a_study_without_judges_says_how_to_add_one_and_its_card_has_no_judges_section(app):
    db = store.connect(app.config["DATABASE"])
    experts = [
        Judgement(story_id, source, f"e{rater}", item.id, 1.0, None, "")
        for story_id, source in STORIES[:2]
        for rater in range(2)
        for item in TTCW.items
    ]
    import_rating_experiment(db, "ttcw-small", TTCW, experts)
    db.close()
    person = Researcher(app)
    person.login()
    text = person.get(BASE).get_data(as_text=True)
    assert "No judges yet" in text and "--judge" in text
    assert "## Judges" not in person.get(f"{BASE}/evaluation-card.md").get_data(as_text=True)


def test_analyze_reports_each_judge_s_bias_card(app):
    small_ttcw(app)
    db_path = app.config["DATABASE"]
    result = CliRunner().invoke(cli, ["--db", db_path, "analyze", "ttcw-small", "--format", "json"])
    assert result.exit_code == 0, result.output
    [card] = json.loads(result.output)["bias_cards"]
    assert card["judge"] == "lengthy" and card["length"]["flagged"] is True
    assert card["length"]["judge"]["rho"] == pytest.approx(1.0)
    assert [band["stories"] for band in card["length"]["bands"]] == [3, 3, 2]
    markdown = CliRunner().invoke(cli, ["--db", db_path, "analyze", "ttcw-small"]).output
    assert "# Bias card" in markdown and "**Flagged: length bias.**" in markdown


def test_a_run_judge_shows_its_templates_by_kind_and_an_imported_one_none():
    run = {"format": "run", "templates": {"yes_no": "Q: {question}", "likert": "Rate {item}"}}
    assert judge_template(run) == "[likert]\nRate {item}\n\n[yes_no]\nQ: {question}"
    assert judge_template({"file": "annotations_gpt4.jsonl", "format": "ttcw-llm"}) is None
    assert judge_template({"prompt_template": "Judge: {story}"}) == "Judge: {story}"
