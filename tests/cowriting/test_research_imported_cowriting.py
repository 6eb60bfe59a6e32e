"""An imported co-writing study (``import-tsv`` of the original CYOA TSV) whose systems name
no model card here: its research pages show its stored data without the cards, and it cannot
be opened to writers. Its writers' ids, imported as they are, are isolated on the pages."""

from __future__ import annotations

import html
import io
import zipfile

import pytest
from click.testing import CliRunner

from cyoa import store
from cyoa.cli import cli
from cyoa.cowriting.analysis.tsv import WriterRow, import_tsv, write_cyoa_tsv

pytestmark = pytest.mark.both_databases

RLO = "\u202e"
# A writer id with a right-to-left override, as an imported file may hold: shown raw, it
# would reverse whatever follows it on the line.
SPOOFED = f"writer-{RLO}fdp.exe"


def writer(name: str, accepted: str) -> WriterRow:
    return WriterRow(
        writer=name,
        model_lines=tuple(f"Model line {n} of {name}." for n in range(1, 6)),
        baseline_lines=tuple(f"Baseline line {n} of {name}." for n in range(1, 6)),
        user_lines=tuple(f"Writer line {n} of {name}." for n in range(1, 6)),
        user_edits=tuple(f"Edited line {n} of {name}." for n in range(1, 6)),
        is_model_accepted=tuple("true" if c == "T" else "false" for c in accepted),
        likert=(4, 5, 3, 2, 4),
    )


@pytest.fixture
def imported(app):
    """The original CYOA TSV of three writers imported as 'cyoa-2021'; its systems are the
    script's 'model' and 'baseline', which are no model cards here."""
    rows = [writer("w1", "TTFTF"), writer("w2", "FFFFT"), writer(SPOOFED, "TTTTT")]
    db = store.connect(app.config["DATABASE"])
    try:
        import_tsv(db, write_cyoa_tsv(rows, 5, 5, exact=True), "cyoa-2021", source="cyoa.tsv")
        participant = db.execute(
            "SELECT id FROM participants WHERE external_id = ?", [SPOOFED]
        ).fetchone()[0]
    finally:
        db.close()
    return participant


PAGES = [
    "/research/experiments/cyoa-2021",
    "/research/experiments/cyoa-2021/progress.json",
    "/research/experiments/cyoa-2021/writers.json",
    "/research/experiments/cyoa-2021/results.json",
    "/research/experiments/cyoa-2021/evaluation-card.md",
    "/research/experiments/cyoa-2021/participants",
    "/research/experiments/cyoa-2021/participants.csv",
    "/research/experiments/cyoa-2021/download/sessions.csv",
    "/research/experiments/cyoa-2021/download/preference.jsonl",
    "/research/experiments/cyoa-2021/download/cyoa.tsv",
]


def test_every_research_page_of_an_imported_study_without_model_cards_works(researcher, imported):
    statuses = {url: researcher.get(url).status_code for url in PAGES}
    assert statuses == dict.fromkeys(PAGES, 200)


def test_the_imported_study_s_dashboard_shows_its_writers_and_says_its_models_are_no_cards(
    researcher, imported
):
    page = html.unescape(researcher.get("/research/experiments/cyoa-2021").get_data(as_text=True))
    assert "w1" in page and "w2" in page
    assert "no model card here" in page


def test_the_replay_and_the_bundle_of_an_imported_study_work_without_its_cards(
    researcher, imported
):
    replay = researcher.get(f"/research/experiments/cyoa-2021/writers/{imported}")
    assert replay.status_code == 200
    assert "Edited line 3 of" in replay.get_data(as_text=True)
    bundle = researcher.get("/research/experiments/cyoa-2021/download/bundle.zip")
    assert bundle.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(bundle.data)).namelist()
    assert "evaluation-card.md" in names and "cyoa.tsv" in names


def test_the_card_of_an_imported_study_says_its_sampling_is_not_recorded(researcher, imported):
    card = researcher.get("/research/experiments/cyoa-2021/evaluation-card.md").get_data(
        as_text=True
    )
    assert "| model | model | no model card here |" in card
    assert '"top_k"' not in card


def test_an_imported_study_without_model_cards_cannot_be_opened_and_says_why(researcher, imported):
    reply = researcher.post(
        "/research/experiments/cyoa-2021/status", {"status": "open"}, follow_redirects=True
    )
    assert "no model card here" in html.unescape(reply.get_data(as_text=True))
    assert "cannot be opened" in html.unescape(reply.get_data(as_text=True))
    db = store.connect(researcher.app.config["DATABASE"])
    try:
        assert store.get_experiment(db, "cyoa-2021")["status"] == "closed"
    finally:
        db.close()


def test_an_imported_writer_id_is_isolated_on_the_dashboard_and_the_replay(researcher, imported):
    dashboard = researcher.get("/research/experiments/cyoa-2021").get_data(as_text=True)
    assert f'dir="auto">{SPOOFED}</a>' in dashboard
    replay = researcher.get(f"/research/experiments/cyoa-2021/writers/{imported}")
    text = replay.get_data(as_text=True)
    assert f"<h1>Session of <bdi>{SPOOFED}</bdi></h1>" in text
    title = text.split("<title>", 1)[1].split("</title>", 1)[0]
    assert RLO not in title and "writer-&lt;U+202E&gt;fdp.exe" in title
    participants = researcher.get("/research/experiments/cyoa-2021/participants")
    assert f"<bdi>{SPOOFED}</bdi>" in participants.get_data(as_text=True)


def test_an_imported_writer_id_is_neutralised_in_the_csv_and_exact_in_json_lines(
    researcher, imported
):
    csv_text = researcher.get("/research/experiments/cyoa-2021/download/sessions.csv").get_data(
        as_text=True
    )
    assert RLO not in csv_text and "writer-<U+202E>fdp.exe" in csv_text
    jsonl = researcher.get("/research/experiments/cyoa-2021/download/sessions.jsonl").get_data(
        as_text=True
    )
    assert SPOOFED in jsonl


def test_the_live_dashboard_of_an_imported_study_joins_its_room(researcher, imported):
    ack = researcher.socket().emit("research_join", {"experiment": "cyoa-2021"}, callback=True)
    assert ack["ok"] and ack["progress"]["finished"] == 3


def test_an_imported_study_is_listed_without_participant_links(researcher, imported):
    page = researcher.get("/research/").get_data(as_text=True)
    listed = page.split('href="/research/experiments/cyoa-2021"', 1)[1].split("</section>", 1)[0]
    assert "cannot be opened to writers" in listed and "Participant links" not in listed
    assert researcher.get("/s/cyoa-2021").status_code == 404


def test_cloning_or_editing_an_imported_study_is_refused_with_a_sentence(researcher, imported):
    clone = researcher.post(
        "/research/experiments/cyoa-2021/clone", {"new_id": "again"}, follow_redirects=True
    )
    assert clone.status_code == 200
    assert "Not cloned." in html.unescape(clone.get_data(as_text=True))
    assert "unknown model 'model'" in html.unescape(clone.get_data(as_text=True))
    edit = researcher.get("/research/experiments/cyoa-2021/edit", follow_redirects=True)
    assert edit.status_code == 200
    assert "Not editable now" in html.unescape(edit.get_data(as_text=True))


def test_experiment_open_refuses_an_imported_study_without_model_cards(app, imported):
    result = CliRunner().invoke(
        cli, ["--db", app.config["DATABASE"], "experiment", "open", "cyoa-2021"]
    )
    assert result.exit_code == 1
    assert "'cyoa-2021' cannot be opened: its systems' models" in result.output
    db = store.connect(app.config["DATABASE"])
    try:
        assert store.get_experiment(db, "cyoa-2021")["status"] != "open"
    finally:
        db.close()
