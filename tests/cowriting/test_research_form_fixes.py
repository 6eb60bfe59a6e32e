"""The experiment form as a new researcher meets it: every column of the systems table fits
a 1280 px window, blank consent and instructions are refused, "More system rows" keeps what
was typed, and empty sampling fields show the model card's defaults. Also the form's pure
functions: a spec shown in the form and read back is the same spec."""

import html
import re

import pytest
from conftest import FAKE_CARD, Researcher, db_rows, write_setup

from cyoa import ROOT, create_app
from cyoa.cowriting.research.forms import (
    MAX_SYSTEM_ROWS,
    edited_spec,
    form_defaults,
    form_from_spec,
    spec_from_form,
    with_more_rows,
)

# A card whose defaults differ from every field of the test cards (40, 1.0, 1.0, 40).
FAKE_C = FAKE_CARD.format(name="fake-c", options="").replace("top_k = 40", "top_k = 7")
FAKE_C = FAKE_C.replace("top_p = 1.0", "top_p = 0.8").replace(
    "temperature = 1.0", "temperature = 0.6"
)
FAKE_C = FAKE_C.replace("max_new_tokens = 40", "max_new_tokens = 33")


def form(**overrides) -> dict:
    data = {
        **form_defaults(),
        "id": "new-study",
        "title": "A new study",
        "consent": "You agree to take part.",
        "instructions": "Write a story with the machine.",
        "system1_name": "alpha",
        "system1_model": "fake-a",
        "system2_name": "beta",
        "system2_model": "fake-b",
        "system2_top_k": "5",
    }
    data.update(overrides)
    return data


def stored_ids(app) -> list[str]:
    return [r["id"] for r in db_rows(app.config["DATABASE"], "SELECT id FROM experiments")]


@pytest.fixture
def researcher_with_fake_c(tmp_path):
    config = write_setup(tmp_path)
    (tmp_path / "models" / "fake-c.toml").write_text(FAKE_C)
    person = Researcher(create_app(config))
    assert person.login().status_code == 302
    return person


def field(page: str, name: str) -> str:
    """The <input> tag named ``name`` in ``page``."""
    match = re.search(rf'<input[^>]*name="{name}"[^>]*>', page, re.S)
    assert match, name
    return match.group(0)


# --- the systems table fits at 1280 px --------------------------------------------------


def test_every_column_of_the_systems_table_fits_a_1280_px_window(researcher):
    page = researcher.get("/research/experiments/new").get_data(as_text=True)
    assert page.count('<col class="col-sampling">') == 4
    for header in ("top_<wbr>k", "top_<wbr>p", "temperature", "max_<wbr>new_<wbr>tokens"):
        assert f"<th>{header}</th>" in page
    css = (ROOT / "static" / "css" / "research.css").read_text()
    rule = re.search(r"table\.systems \{([^}]*)\}", css).group(1)
    assert "table-layout: fixed" in rule
    # The table needs at most its min-width; at 1280 px the form's fieldset is about 1,040 px
    # wide (the page's 72rem less the card's and fieldset's padding).
    min_width_rem = float(re.search(r"min-width: ([\d.]+)rem", rule).group(1))
    assert min_width_rem * 16 <= 1000
    assert "table.systems input, table.systems select { width: 100%" in css


# --- blank consent and instructions ---------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"consent": ""}, "The form: the consent text is empty."),
        ({"consent": "  \n "}, "The form: the consent text is empty."),
        ({"instructions": ""}, "The form: the instructions are empty."),
    ],
)
def test_blank_consent_or_instructions_are_refused_and_the_form_keeps_what_was_typed(
    app, researcher, overrides, message
):
    response = researcher.post("/research/experiments/new", data=form(**overrides))
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert message in html.unescape(page)
    assert 'value="A new study"' in page and 'name="system2_top_k" value="5"' in page
    assert stored_ids(app) == ["fake-ab"]


def test_the_form_marks_consent_and_instructions_as_required(researcher):
    page = researcher.get("/research/experiments/new").get_data(as_text=True)
    assert '<textarea name="consent" rows="4" required>' in page
    assert '<textarea name="instructions" rows="4" required>' in page


# --- more system rows -----------------------------------------------------------------


def test_more_system_rows_keeps_every_typed_value_and_creates_nothing(app, researcher):
    typed = form(
        prompt_text="Begin with a storm.",
        system3_name="gamma",
        system3_model="fake-a",
        system3_temperature="0.7",
        slot_order="balanced",
        likert="fun: It was fun.",
        action="more_rows",
    )
    response = researcher.post("/research/experiments/new", data=typed)
    assert response.status_code == 200
    page = response.get_data(as_text=True)
    assert page.count('_model" aria-label') == 6
    assert 'name="system_rows" value="6"' in page
    assert 'value="A new study"' in page and 'value="new-study"' in page
    assert "You agree to take part.</textarea>" in page
    assert "Begin with a storm.</textarea>" in page
    assert 'name="system3_name" value="gamma"' in page
    assert 'name="system3_temperature" value="0.7"' in page
    assert '<option value="balanced" selected>' in page
    assert "fun: It was fun.</textarea>" in page
    assert stored_ids(app) == ["fake-ab"]
    # The typed form, sent as it now is, creates the experiment with its three systems.
    response = researcher.post("/research/experiments/new", data={**typed, "action": ""})
    assert response.status_code == 302 and "new-study" in stored_ids(app)


def test_more_system_rows_is_a_button_of_the_form_that_skips_browser_validation(researcher):
    page = researcher.get("/research/experiments/new").get_data(as_text=True)
    form_html = page[
        page.index('<form class="card stack"') : page.index(
            "</form>", page.index('id="experiment-form"')
        )
    ]
    assert '<button type="submit" name="action" value="more_rows" formnovalidate>' in form_html
    # Enter in a field presses the first submit button: creating, not adding rows.
    first = re.search(r"<button[^>]*>[^<]*</button>", form_html).group(0)
    assert "Create experiment" in first and "more_rows" not in first
    full = {**form_defaults(), "system_rows": str(MAX_SYSTEM_ROWS)}
    page = researcher.post("/research/experiments/new", data={**full, "action": "more_rows"})
    assert "more_rows" not in page.get_data(as_text=True)  # no button past the maximum


# --- the card's defaults as placeholders ----------------------------------------------


def test_empty_sampling_fields_show_the_chosen_cards_defaults(researcher_with_fake_c):
    typed = form(system1_model="fake-c", system2_top_k="5", action="more_rows")
    page = researcher_with_fake_c.post("/research/experiments/new", data=typed).get_data(True)
    expected = {"top_k": "7", "top_p": "0.8", "temperature": "0.6", "max_new_tokens": "33"}
    for key, default in expected.items():
        assert f'placeholder="{default}"' in field(page, f"system1_{key}")
    assert 'placeholder="40"' in field(page, "system2_top_k")  # fake-b's, under the typed 5
    assert 'value="5"' in field(page, "system2_top_k")
    assert 'placeholder=""' in field(page, "system3_top_k")  # no model chosen yet
    # Every option carries its card's defaults, for the script that follows the select.
    assert re.search(r'<option value="fake-c"\s+data-top_k="7" data-top_p="0.8"', page)
    assert "js/research/experiment-form.js" in page
    script = researcher_with_fake_c.get("/static/js/research/experiment-form.js")
    assert script.status_code == 200 and b"placeholder" in script.data


# --- the pure functions ---------------------------------------------------------------


def test_a_spec_made_by_the_form_survives_being_shown_in_the_form_again():
    typed = form(
        prompt_text="Begin with a storm.",
        rounds="7",
        min_chars="10",
        max_chars="300",
        completion_url="https://example.org/done?cc={code}",
        target_writers="12",
        slot_order="balanced",
        system1_top_p="0.9",
        system1_temperature="0.7",
        system2_max_new_tokens="50",
        likert="fun: It was fun.\nhard: It was hard.",
        open="why: Why?",
    )
    spec = spec_from_form(typed)
    assert spec_from_form(form_from_spec(spec)) == spec
    assert form_from_spec(spec)["system1_top_p"] == "0.9"


def test_a_spec_without_optional_fields_shows_the_papers_defaults():
    values = form_from_spec({"id": "x", "title": "X", "systems": []})
    defaults = form_defaults()
    for key in ("rounds", "min_chars", "max_chars", "target_writers", "likert", "open"):
        assert values[key] == defaults[key]
    assert values["rounds"] == "5" and values["system_rows"] == "4"
    assert values["likert"].startswith("happy: I'm happy with my final story.")


def test_more_rows_adds_two_up_to_the_maximum():
    assert with_more_rows({"system_rows": "4", "title": "kept"}) == {
        "system_rows": "6",
        "title": "kept",
    }
    assert with_more_rows({"system_rows": str(MAX_SYSTEM_ROWS)})["system_rows"] == str(
        MAX_SYSTEM_ROWS
    )


def test_an_edit_keeps_the_fields_the_form_does_not_show():
    stored = {
        **spec_from_form(form(prompt_text="Begin.")),
        "suggestion_timeout_seconds": 33,
        "prompt": {"text": "Begin.", "image": "prompts/forest.jpg"},
    }
    values = form_from_spec(stored)
    spec = edited_spec({**values, "title": "Renamed", "prompt_text": "", "id": "other"}, stored)
    assert spec["title"] == "Renamed" and spec["id"] == "new-study"
    assert spec["suggestion_timeout_seconds"] == 33
    assert spec["prompt"] == {"image": "prompts/forest.jpg"}
    assert edited_spec(values, stored) == stored
