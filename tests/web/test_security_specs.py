"""Every bad experiment spec, uploaded or typed into the form, gets the form back with a
sentence that names the field, never a server error; every number has a sane range. Also
fuzzed: random values in every field, and TOML and JSON nested up to 100,000 levels deep."""

from __future__ import annotations

import html
import io
import json
import logging

import pytest
from conftest import Researcher
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cyoa import store

BASE = {
    "id": "uploaded",
    "title": "An uploaded study",
    "rounds": 5,
    "min_chars": 20,
    "max_chars": 260,
    "suggestion_timeout_seconds": 20,
    "prompt": {"text": "Write the first sentence of a story."},
    "systems": [
        {"name": "alpha", "model": "fake-a"},
        {"name": "beta", "model": "fake-b", "sampling": {"top_k": 20}},
    ],
}
NAN, INF = float("nan"), float("inf")


def sampling(**values) -> dict:
    return {
        "systems": [{"name": "alpha", "model": "fake-a", "sampling": values}, BASE["systems"][1]]
    }


# (fields replaced in BASE, a part of the message the researcher sees)
BAD_VALUES = [
    ({"rounds": "abc"}, "'rounds' must be a whole number from 1 to 50"),
    ({"rounds": [1]}, "'rounds' must be a whole number"),
    ({"rounds": NAN}, "'rounds' must be a whole number"),
    ({"rounds": INF}, "'rounds' must be a whole number"),
    ({"rounds": 3.5}, "'rounds' must be a whole number"),
    ({"rounds": True}, "'rounds' must be a whole number"),
    ({"rounds": 0}, "'rounds' must be a whole number from 1 to 50"),
    ({"rounds": 10**8}, "'rounds' must be a whole number from 1 to 50"),
    ({"max_chars": 10**9}, "'max_chars' must be a whole number from 1 to 2000"),
    ({"min_chars": 0}, "'min_chars' must be a whole number from 1 to 2000"),
    ({"target_writers": -1}, "'target_writers' must be a whole number from 0 to 100000"),
    ({"suggestion_timeout_seconds": NAN}, "'suggestion_timeout_seconds' must be a number"),
    ({"suggestion_timeout_seconds": -5}, "'suggestion_timeout_seconds' must be a number"),
    ({"suggestion_timeout_seconds": INF}, "'suggestion_timeout_seconds' must be a number"),
    ({"suggestion_timeout_seconds": "60"}, "'suggestion_timeout_seconds' must be a number"),
    ({"survey": "likert"}, "'survey' must be a table"),
    ({"survey": {"likert": "happy"}}, "survey.likert must be a list"),
    ({"survey": {"likert": [{"text": "No id."}]}}, "each needs an 'id'"),
    ({"survey": {"open": [{"id": "why"}]}}, "item 'why' needs a 'text'"),
    ({"survey": {"likert": ["happy"]}}, "each needs an 'id'"),
    ({"prompt": "Write!"}, "'prompt' must be a table"),
    ({"prompt": {"text": ["Write!"]}}, "'text' must be text"),
    ({"systems": "alpha, beta"}, "'systems' must be a list"),
    ({"systems": ["alpha", "beta"]}, "each system is a table"),
    ({"systems": [{"name": "alpha", "model": ["fake-a"]}, BASE["systems"][1]]}, "unknown model"),
    ({"title": 12}, "'title' must be a str"),
    ({"consent": {"text": "x"}}, "'consent' must be text"),
    ({"completion_url": "javascript:alert(1)"}, "'completion_url' must start with https://"),
    (sampling(max_new_tokens=10**9), "max_new_tokens must be a whole number from 1 to 1000"),
    (sampling(max_new_tokens=30.5), "max_new_tokens must be a whole number"),
    (sampling(top_k=-1), "top_k must be a whole number from 0 (off) to 1000"),
    (sampling(top_k="40"), "top_k must be a whole number"),
    (sampling(temperature=NAN), "temperature must be greater than 0"),
    (sampling(temperature=INF), "temperature must be greater than 0"),
    (sampling(top_p=0), "top_p must be in (0, 1]"),
    (sampling(seed=1), "unknown field 'seed'"),
    (
        {"systems": [{"name": "alpha", "model": "fake-a", "sampling": [40]}, BASE["systems"][1]]},
        "invalid sampling",
    ),
]


def nested(depth: int, fmt: str) -> str:
    """A spec whose field ``deep`` holds lists ``depth`` levels deep."""
    if fmt == "json":
        return json.dumps(BASE)[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
    return "deep = " + "[" * depth + "]" * depth + '\nid = "uploaded"\ntitle = "T"\n'


def upload(researcher: Researcher, data: bytes, filename: str):
    return researcher.post(
        "/research/experiments/upload", data={"spec": (io.BytesIO(data), filename)}
    )


def refused(response) -> str:
    """The page's text, after checking it is the form with an error above it."""
    assert response.status_code == 400, response.status_code
    page = response.get_data(as_text=True)
    assert 'class="notice error"' in page
    return html.unescape(page)


def stored_ids(app) -> list[str]:
    db = store.connect(app.config["DATABASE"])
    try:
        return [row["id"] for row in db.query("SELECT id FROM experiments ORDER BY id")]
    finally:
        db.close()


@pytest.mark.parametrize(("fields", "message"), BAD_VALUES)
def test_a_bad_value_in_an_uploaded_spec_is_named(app, researcher, fields, message):
    data = json.dumps({**BASE, **fields}).encode()  # NaN and Infinity as JSON writes them
    assert message in refused(upload(researcher, data, "bad.json"))
    assert stored_ids(app) == ["fake-ab"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rounds = nan", "'rounds' must be a whole number"),
        ("rounds = inf", "'rounds' must be a whole number"),
        ('rounds = "abc"', "'rounds' must be a whole number"),
        ("rounds = 100000000", "'rounds' must be a whole number from 1 to 50"),
        ("suggestion_timeout_seconds = -5.0", "'suggestion_timeout_seconds' must be a number"),
        ("suggestion_timeout_seconds = nan", "'suggestion_timeout_seconds' must be a number"),
        ('survey = "x"', "'survey' must be a table"),
        ('systems = "x"', "'systems' must be a list"),
        ("rounds = " + "1" * 5000, "cannot read the spec"),
    ],
)
def test_a_bad_value_in_a_toml_spec_is_named(app, researcher, text, message):
    systems = (
        '[[systems]]\nname = "alpha"\nmodel = "fake-a"\n\n'
        '[[systems]]\nname = "beta"\nmodel = "fake-b"\n'
    )
    spec = f'id = "uploaded"\ntitle = "T"\n{text}\n\n' + ("" if "systems" in text else systems)
    assert message in refused(upload(researcher, spec.encode(), "bad.toml"))
    assert stored_ids(app) == ["fake-ab"]


@pytest.mark.parametrize("fmt", ["toml", "json"])
@pytest.mark.parametrize("depth", [17, 500, 5_000, 100_000])
def test_a_spec_nested_too_deeply_is_refused(app, researcher, fmt, depth):
    page = refused(upload(researcher, nested(depth, fmt).encode(), f"deep.{fmt}"))
    assert f"deep.{fmt}: the spec is nested too deeply" in page


@pytest.mark.parametrize(
    "fields",
    [
        {"title": "A \ud800 title"},
        {"consent": "\udfff"},
        {"systems": [{"name": "alpha", "model": "fake-\udc00"}, BASE["systems"][1]]},
        {"survey": {"likert": [{"id": "\ud800", "text": "Fine."}]}},
        {"\ud800": 1},
    ],
)
def test_a_lone_surrogate_in_a_json_spec_is_named(app, researcher, fields):
    page = refused(upload(researcher, json.dumps({**BASE, **fields}).encode(), "s.json"))
    assert "holds a lone surrogate" in page
    assert stored_ids(app) == ["fake-ab"]


def test_a_spec_that_is_not_utf8_or_not_a_table_is_refused(researcher):
    assert "not UTF-8" in refused(upload(researcher, b"\xff\xfe\x00", "bad.toml"))
    assert "a spec is a table of fields" in refused(upload(researcher, b"[1, 2]", "bad.json"))
    page = refused(upload(researcher, json.dumps(BASE)[:-1].encode() + b', "x": 1' * 2, "b.json"))
    assert "cannot read the spec" in page


def test_the_sane_values_are_accepted(app, researcher):
    fields = {"rounds": 50, "max_chars": 2000, "suggestion_timeout_seconds": 600}
    good = {**BASE, **fields, **sampling(max_new_tokens=1000, top_k=0, temperature=10.0)}
    response = upload(researcher, json.dumps(good).encode(), "good.json")
    assert response.status_code == 302
    assert stored_ids(app) == ["fake-ab", "uploaded"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"rounds": "100000000"}, "'rounds' must be a whole number from 1 to 50"),
        ({"max_chars": "1000000000"}, "'max_chars' must be a whole number from 1 to 2000"),
        ({"system2_max_new_tokens": "1000000000"}, "max_new_tokens must be a whole number"),
        ({"system2_temperature": "nan"}, "temperature must be greater than 0"),
        ({"system2_top_p": "inf"}, "top_p must be in (0, 1]"),
        ({"rounds": "9" * 5000}, "Rounds: please enter a number"),
        ({"target_writers": "1e9"}, "please enter a number"),
    ],
)
def test_a_bad_number_in_the_form_is_named(app, researcher, overrides, message):
    form = {
        "id": "new-study",
        "title": "A new study",
        "rounds": "5",
        "min_chars": "20",
        "max_chars": "260",
        "target_writers": "0",
        "likert": "happy: I'm happy.",
        "system1_name": "alpha",
        "system1_model": "fake-a",
        "system2_name": "beta",
        "system2_model": "fake-b",
        **overrides,
    }
    page = refused(researcher.post("/research/experiments/new", data=form))
    assert message in page
    assert 'value="A new study"' in page  # the form keeps what was typed
    assert stored_ids(app) == ["fake-ab"]


# --- fuzz ------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(10**12), 10**12),
        st.floats(),  # NaN and infinities too
        st.text(max_size=20),
        st.sampled_from(["\ud800", "a\udfffb", "=HYPERLINK(1)"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = [*BASE, "survey", "slot_order", "completion_url", "target_writers", "consent"]
SYSTEM_FIELDS = ["name", "model", "sampling"]
SAMPLING_FIELDS = ["top_k", "top_p", "temperature", "max_new_tokens"]


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    top=st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=3),
    system=st.dictionaries(st.sampled_from(SYSTEM_FIELDS), json_values, max_size=2),
    sampled=st.dictionaries(st.sampled_from(SAMPLING_FIELDS), json_values, max_size=2),
    fmt=st.sampled_from(["json", "form"]),
)
def test_random_specs_get_an_answer_never_a_server_error(
    researcher, caplog, top, system, sampled, fmt
):
    spec = {**BASE, **top}
    first = {**BASE["systems"][0], **system}
    if sampled and isinstance(first.get("sampling", {}), dict):
        first["sampling"] = {**first.get("sampling", {}), **sampled}
    spec["systems"] = [first, BASE["systems"][1]]
    caplog.clear()
    with caplog.at_level(logging.ERROR):
        if fmt == "json":
            response = upload(researcher, json.dumps(spec).encode(), "fuzz.json")
        else:
            # A browser sends a lone surrogate in a form as U+FFFD: it cannot be encoded.
            form = {
                key: str(value).encode("utf-8", "replace").decode("utf-8")
                for key, value in {**spec, **_form_rows(first)}.items()
            }
            response = researcher.post("/research/experiments/new", data=form)
    assert response.status_code in (302, 400), response.status_code
    if response.status_code == 400:
        assert 'class="notice error"' in response.get_data(as_text=True)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def _form_rows(system: dict) -> dict:
    row = {"system1_name": system.get("name"), "system1_model": system.get("model")}
    row["system2_name"], row["system2_model"] = "beta", "fake-b"
    if isinstance(system.get("sampling"), dict):
        for key, value in system["sampling"].items():
            if key in SAMPLING_FIELDS:
                row[f"system1_{key}"] = value
    return row
