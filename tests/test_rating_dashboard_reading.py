"""What a rating study's dashboard says, as a researcher reads it: numbers rounded for reading
(the downloads keep full precision), each label once, intervals inside their scale, charts
whose labels can be read, and the evaluation card served as Markdown in UTF-8."""

from __future__ import annotations

import random
import re

import pytest
from conftest import Researcher

from cyoa import store
from cyoa.analysis.rating_report import rating_report, render_report
from cyoa.instruments import TTCW
from cyoa.rating.experiment import import_rating_experiment
from cyoa.rating.importing import Judgement

SOURCES = ("gemma-3-270m-nucleus-sampling", "smollm2-360m-instruct-topk")
BASE = "/research/ratings/ttcw-import"


@pytest.fixture
def ttcw(app):
    """An imported TTCW study: two stories per source, three raters each, Yes at random
    (seeded), so rates such as 2/3 and wide t intervals over two stories come up."""
    rnd = random.Random(1)
    judgements = [
        Judgement(
            f"{source}-{n}", source, f"e{rater}", item.id, float(rnd.random() < 0.5), None, "Why."
        )
        for source in SOURCES
        for n in range(2)
        for rater in range(3)
        for item in TTCW.items
    ]
    db = store.connect(app.config["DATABASE"])
    import_rating_experiment(db, "ttcw-import", TTCW, judgements)
    db.close()
    researcher = Researcher(app)
    researcher.login()
    return researcher


def test_the_results_tables_show_rounded_numbers_and_each_label_once(ttcw):
    tables = ttcw.get(f"{BASE}/progress.json").get_json()["tables"]
    cells = [cell for table in tables for row in table["rows"] for cell in row[1:]]
    assert not [cell for cell in cells if re.search(r"\d\.\d{4,}", cell)]
    agreement = next(t for t in tables if t["name"] == "agreement")
    assert agreement["columns"][:3] == ["alpha", "alpha ci_low", "alpha ci_high"]
    rates = next(t for t in tables if t["name"] == "pass_rates")
    sixths = {f"{k / 6:.3f}" for k in range(7)}  # six judgements per test and source
    assert {row[3] for row in rates["rows"] if not row[0].startswith("average")} <= sixths
    page = ttcw.get(BASE).get_data(as_text=True)
    assert "0.6666666666666666" not in page and "alpha alpha" not in page


def test_the_downloaded_analysis_keeps_full_precision(ttcw):
    db = store.connect(ttcw.app.config["DATABASE"])
    text = render_report(rating_report(db, "ttcw-import"), "csv")
    db.close()
    assert "0.6666666666666666" in text
