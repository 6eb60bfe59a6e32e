"""``python -m cyoa links``: every experiment's participant link, co-writing and rating, whole
and in the form Prolific takes; and the same links, copyable, on the researcher's pages."""

from __future__ import annotations

import html

from click.testing import CliRunner
from conftest import Researcher, write_setup

from cyoa import create_app
from cyoa.cli import cli
from tests.rating.test_rating_journey import write_spec

PROLIFIC = "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"


def create_rating(app, tmp_path) -> None:
    spec = write_spec(tmp_path)
    result = CliRunner().invoke(
        cli, ["--db", app.config["DATABASE"], "experiment", "create", str(spec)]
    )
    assert result.exit_code == 0, result.output


def test_links_prints_both_kinds_with_prolifics_placeholders(app, tmp_path):
    create_rating(app, tmp_path)
    result = CliRunner().invoke(
        cli,
        ["--db", app.config["DATABASE"], "links", "--base-url", "https://study.example.org/"],
        env={
            "CYOA_MODELS_DIR": app.config["MODELS_DIR"],
            "CYOA_EXPERIMENTS_DIR": app.config["EXPERIMENTS_DIR"],
        },
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "  aiss-pilot (rating): https://study.example.org/r/aiss-pilot" in lines
    assert f"    Prolific: https://study.example.org/r/aiss-pilot{PROLIFIC}" in lines
    assert "  fake-ab (cowriting): https://study.example.org/s/fake-ab" in lines
    assert f"    Prolific: https://study.example.org/s/fake-ab{PROLIFIC}" in lines


def test_the_researchers_pages_show_whole_prolific_links_at_the_public_address(tmp_path):
    app = create_app({**write_setup(tmp_path), "PUBLIC_URL": "https://study.example.org"})
    create_rating(app, tmp_path)
    researcher = Researcher(app)
    researcher.login()
    for page, link in (
        ("/research/ratings/aiss-pilot", "https://study.example.org/r/aiss-pilot"),
        ("/research/experiments/fake-ab", "https://study.example.org/s/fake-ab"),
    ):
        text = html.unescape(researcher.get(page).get_data(as_text=True))
        assert (
            f'id="link-prolific" class="link" type="text" readonly value="{link}{PROLIFIC}"' in text
        )
        assert 'data-copy="link-prolific">Copy</button>' in text


def test_without_a_public_address_the_links_use_the_requests_host(app, tmp_path):
    create_rating(app, tmp_path)
    researcher = Researcher(app)
    researcher.login()
    text = html.unescape(researcher.get("/research/ratings/aiss-pilot").get_data(as_text=True))
    assert f'value="http://localhost/r/aiss-pilot{PROLIFIC}"' in text
