"""Every bad input to a rating study is answered with a sentence that says what to fix: the
researcher's form shows itself again with it, ``import-ratings`` prints one line and exits
with click's error code, the rater's answer endpoint answers ``{ok: false, error}``; never a
500 or a traceback. Files as spreadsheets save them (a byte-order mark, a long story) are
read."""

from __future__ import annotations

import html
import io
from pathlib import Path

import pytest
from click.testing import CliRunner

from cyoa.cli import cli
from cyoa.cowriting.spec import SpecError, experiment_from_dict
from cyoa.web.experiments import parse_spec
from tests.rating.test_rating_journey import Rater, study  # noqa: F401 - the fixture, used by name
from tests.rating.test_research_rating_admin import form, page_of, rows

LONG_STORY = "Once upon a time. " * 12_000  # 216,000 characters: over csv's 131,072
DEEP_JSON = "[" * 100_000 + "]" * 100_000
HUGE_NUMBER = "9" * 5_000
DEEP_TOML = "a = " + "[" * 3_000 + "]" * 3_000 + "\n"
CSV_HEADER = "story_id,source,title,text\r\n"


def csv_stories(*lines: str, bom: str = "") -> bytes:
    return (bom + CSV_HEADER + "".join(line + "\r\n" for line in lines)).encode()


def jsonl(*records: str) -> bytes:
    return "".join(record + "\n" for record in records).encode()


GOOD = '{"story_id": "s1", "source": "human", "text": "A keeper lit the lamp."}'
GOOD_TOO = '{"story_id": "s2", "source": "model", "text": "A ship came at night."}'

BAD_STORIES = [
    pytest.param(b"", "stories.jsonl", "has no stories", id="empty file"),
    pytest.param(csv_stories(), "stories.csv", "has no stories", id="header-only csv"),
    pytest.param(
        csv_stories('s1,human,One,"A keeper', "s2,model,Two,A ship came."),
        "stories.csv",
        "line 2: a quoted field opens there and never closes",
        id="unterminated csv quote",
    ),
    pytest.param(
        csv_stories(f"s1,human,One,{'x' * 1_000_001}"),
        "stories.csv",
        "a field longer than 1,000,000 characters",
        id="absurd csv field",
    ),
    pytest.param(
        jsonl(f'{{"story_id": {DEEP_JSON}}}'), "stories.jsonl", "nested too deeply", id="deep jsonl"
    ),
    pytest.param(
        f'[{{"story_id": "s1", "source": "a", "text": {HUGE_NUMBER}}}]'.encode(),
        "stories.json",
        "a number with more than 4,300 digits",
        id="5,000-digit integer",
    ),
    pytest.param(
        jsonl(GOOD, '{"story_id": "s2", "source": "model", "title": "Empty"}'),
        "stories.jsonl",
        "neither text nor a link",
        id="story without text or link",
    ),
    pytest.param(
        jsonl(GOOD, '{"story_id": "s2", "source": "model", "text": "javascript:alert(1)"}'),
        "stories.jsonl",
        "a link must be a web address",
        id="javascript link",
    ),
    pytest.param(
        jsonl(GOOD, '{"story_id": "s2", "source": "model", "url": "javascript:alert(1)"}'),
        "stories.jsonl",
        "a link must be a web address",
        id="javascript url field",
    ),
    pytest.param(
        jsonl(GOOD, '{"story_id": "s\\ud800", "source": "model", "text": "A ship."}'),
        "stories.jsonl",
        "field 'story_id' holds a lone surrogate",
        id="surrogate in story id",
    ),
    pytest.param(jsonl(GOOD), "x" * 5_000 + ".jsonl", "file name is longer", id="long name"),
]


@pytest.mark.parametrize(("data", "name", "sentence"), BAD_STORIES)
def test_a_bad_stories_file_shows_the_form_again_with_a_sentence(
    app, researcher, data, name, sentence
):
    reply = researcher.post(
        "/research/ratings/new", data=form(stories_file=(io.BytesIO(data), name))
    )
    assert reply.status_code == 400
    assert sentence in html.unescape(page_of(reply))
    assert rows(app, "SELECT id FROM experiments WHERE kind = 'rating'") == []


FEI_STORIES = jsonl(GOOD, GOOD_TOO)


def fei_form(*questions: str) -> dict:
    return form(
        instrument="fei",
        stories_file=(io.BytesIO(FEI_STORIES), "stories.jsonl"),
        questions_file=(io.BytesIO(jsonl(*questions)), "questions.jsonl"),
    )


def question(story: str, question_id: str) -> str:
    """A question's line, its id written as is (so that ``\\ud800`` stays a JSON escape)."""
    return (
        f'{{"story_id": "{story}", "question_id": "{question_id}", "kind": "world", '
        '"text": "Is it night?"}'
    )


@pytest.mark.parametrize(
    ("questions", "sentence"),
    [
        pytest.param(
            (question("s1", "q1"), question("s9", "q2")),
            "question 'q2' is about story 's9', which is not among the stories",
            id="unknown story",
        ),
        pytest.param(
            (question("s1", "q1"), question("s2", "q\\ud800")),
            "field 'question_id' holds a lone surrogate",
            id="surrogate in question id",
        ),
    ],
)
def test_bad_fei_questions_show_the_form_again_with_a_sentence(
    app, researcher, questions, sentence
):
    reply = researcher.post("/research/ratings/new", data=fei_form(*questions))
    assert reply.status_code == 400
    assert sentence in html.unescape(page_of(reply))


def test_fei_question_ids_may_repeat_across_stories(app, researcher):
    reply = researcher.post(
        "/research/ratings/new", data=fei_form(question("s1", "q1"), question("s2", "q1"))
    )
    assert reply.status_code == 302, page_of(reply)
    items = rows(app, "SELECT item_id, story_id FROM instrument_items ORDER BY story_id")
    assert [(i["item_id"], i["story_id"]) for i in items] == [("q1@s1", "s1"), ("q1@s2", "s2")]


@pytest.mark.parametrize(
    ("data", "name", "stored_text"),
    [
        pytest.param(
            csv_stories(f"s1,human,One,{LONG_STORY}"), "stories.csv", LONG_STORY.strip(),
            id="a story longer than csv's default field limit",
        ),
        pytest.param(
            csv_stories("s1,human,One,A keeper lit the lamp.", bom="\ufeff"),
            "stories.csv",
            "A keeper lit the lamp.",
            id="csv saved by excel with a byte-order mark",
        ),
    ],
)  # fmt: skip
def test_a_stories_file_as_spreadsheets_save_it_is_read(app, researcher, data, name, stored_text):
    reply = researcher.post(
        "/research/ratings/new",
        data=form(stories_file=(io.BytesIO(data), name), stories_per_rater="1"),
    )
    assert reply.status_code == 302, page_of(reply)
    stored = rows(app, "SELECT story_id, text FROM stories")
    assert stored == [{"story_id": "s1", "text": stored_text}]


CUSTOM_TOML = """id = "mine"
name = "My scale"
version = "1"
[[items]]
id = "clear"
text = "The story was clear."
kind = "likert"
points = 5
labels = ["1", "2", "3", "4", "5"]
"""


@pytest.mark.parametrize(
    ("text", "status", "sentence"),
    [
        pytest.param(DEEP_TOML, 400, "nested too deeply", id="toml nested 3,000 deep"),
        pytest.param(f"x = {HUGE_NUMBER}\n", 400, "more than 4,300 digits", id="huge toml number"),
        pytest.param("\ufeff" + CUSTOM_TOML, 302, "", id="toml with a byte-order mark"),
    ],
)
def test_a_custom_instrument_file_is_read_or_refused_with_a_sentence(
    app, researcher, text, status, sentence
):
    upload = (io.BytesIO(text.encode()), "mine.toml")
    reply = researcher.post(
        "/research/ratings/new", data=form(instrument="custom", instrument_file=upload)
    )
    assert reply.status_code == status, page_of(reply)
    assert sentence in html.unescape(page_of(reply))


# --- import-ratings -------------------------------------------------------------------------


def import_ratings(tmp_path: Path, name: str, data: bytes, *options: str):
    path = tmp_path / name
    path.write_bytes(data)
    db = tmp_path / "cyoa.sqlite"
    return CliRunner().invoke(cli, ["--db", str(db), "import-ratings", str(path), *options])


LONG = ("--format", "long", "--instrument", "aiss-v1", "--name", "imported")
ROW = "story_id,source,rater_id,item,value,rationale\r\n"


@pytest.mark.parametrize(
    ("name", "data", "options", "sentence"),
    [
        pytest.param("a.json", DEEP_JSON.encode(), ("--format", "ttcw", "--name", "t"),
                     "a.json: the JSON is nested too deeply", id="ttcw deep json"),
        pytest.param("a.json", f"[{HUGE_NUMBER}]".encode(), ("--format", "ttcw", "--name", "t"),
                     "a number with more than 4,300 digits", id="ttcw 5,000-digit integer"),
        pytest.param("a.jsonl", jsonl(f'{{"story_id": {DEEP_JSON}}}'), LONG,
                     "a.jsonl, line 1: the JSON is nested too deeply", id="deep jsonl"),
        pytest.param("a.jsonl", jsonl(f'{{"value": {HUGE_NUMBER}}}'), LONG,
                     "a.jsonl, line 1: a number with more than 4,300 digits", id="huge jsonl"),
        pytest.param("a.csv", (ROW + 's1,human,r1,1,4,"Because\r\ns1,human,r1,2,4,x\r\n').encode(),
                     LONG, "a.csv, line 2: a quoted field opens there and never closes",
                     id="unterminated quote"),
        pytest.param("a.csv", (ROW + f"s1,human,r1,1,4,{'x' * 1_000_001}\r\n").encode(), LONG,
                     "a field longer than 1,000,000 characters", id="absurd field"),
        pytest.param("a.jsonl", jsonl('{"story_id": "s1", "source": "h", "rater_id": "r\\udc00",'
                     ' "item": "1", "value": 4}'), LONG,
                     "a.jsonl, line 1, field 'rater_id' holds a lone surrogate",
                     id="surrogate in rater id"),
        pytest.param("a.csv", ROW.encode(), LONG, "a.csv: no judgements found", id="header only"),
    ],
)  # fmt: skip
def test_a_bad_judgements_file_is_one_line_on_stderr_and_exit_code_1(
    tmp_path, name, data, options, sentence
):
    result = import_ratings(tmp_path, name, data, *options)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1
    assert sentence in result.output


def test_a_custom_instrument_nested_3000_deep_is_refused_on_the_command_line(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text(DEEP_TOML)
    data = (ROW + "s1,human,r1,1,4,\r\n").encode()
    options = ("--format", "long", "--instrument", str(deep), "--name", "imported")
    result = import_ratings(tmp_path, "a.csv", data, *options)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert "deep.toml: the TOML is nested too deeply" in result.output


@pytest.mark.parametrize(
    "bom",
    [pytest.param("", id="plain"), pytest.param("\ufeff", id="excel's byte-order mark")],
)
def test_judgements_with_a_long_rationale_are_read_from_csv(tmp_path, bom):
    rows_ = "".join(f"s1,human,r1,{n},4,{LONG_STORY}\r\n" for n in range(1, 23))
    result = import_ratings(tmp_path, "a.csv", (bom + ROW + rows_).encode(), *LONG)
    assert result.exit_code == 0, result.output
    assert "Imported 22 judgements of 1 stories by 1 raters" in result.output


# --- co-writing specs -----------------------------------------------------------------------


def test_a_co_writing_spec_with_the_id_new_is_refused():
    with pytest.raises(SpecError, match="'new' names a page of the app"):
        experiment_from_dict({"id": "new", "title": "New"}, {})


def test_a_co_writing_spec_saved_with_a_byte_order_mark_is_read():
    assert parse_spec('\ufeffid = "pilot"\n', "pilot.toml") == {"id": "pilot"}


# --- the rater's answers --------------------------------------------------------------------


def raw_action(rater: Rater, body: str):
    return rater.client.post(
        "/r/aiss-pilot/action",
        data=body,
        headers={"X-CYOA-Action": "1", "Content-Type": "application/json"},
    )


def answer_body(rater: Rater, action_id: str, rationale: str) -> str:
    page = rater.page()
    story = page.split('id="questions"')[1].split('data-story="')[1].split('"')[0]
    item = page.split('data-item="')[1].split('"')[0]
    return (
        f'{{"action_id": "{action_id}", "type": "answer_given", "payload": {{"story": '
        f'"{story}", "item": "{item}", "value": "4", "rationale": "{rationale}"}}}}'
    )


@pytest.mark.parametrize(
    ("action_id", "rationale", "sentence"),
    [
        pytest.param("a1", "Because \\ud800 it is", "Your answer holds a character that",
                     id="surrogate in a rationale"),
        pytest.param("a\\udfff", "fine", "Your answer holds a character that",
                     id="surrogate in an action id"),
    ],
)  # fmt: skip
def test_a_rater_action_with_a_lone_surrogate_is_answered_with_a_sentence(
    study,  # noqa: F811 - the fixture imported above
    action_id,
    rationale,
    sentence,
):
    rater = Rater(study)
    rater.start()
    reply = raw_action(rater, answer_body(rater, action_id, rationale))
    assert reply.status_code == 400
    assert reply.get_json()["ok"] is False and sentence in reply.get_json()["error"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(DEEP_JSON, id="nested 100,000 deep"),
        pytest.param(f'{{"action_id": "a1", "type": {HUGE_NUMBER}}}', id="5,000-digit integer"),
    ],
)
def test_a_malformed_rater_action_is_answered_with_a_sentence(study, body):  # noqa: F811
    rater = Rater(study)
    rater.start()
    reply = raw_action(rater, body)
    assert reply.status_code == 400
    assert reply.get_json() == {
        "ok": False,
        "error": "The request was malformed. Please reload the page.",
    }
