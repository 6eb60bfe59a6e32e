"""The writer's pages over plain HTTP: consent, links, closed studies, headers."""

import pytest

from cyoa import store

pytestmark = pytest.mark.both_databases


def start(client, **form):
    """Post the consent form as a browser does: with the CSRF token the page put in the
    session (seeded if the page showed no form, e.g. a closed study's)."""
    with client.session_transaction() as s:
        token = s.setdefault("csrf", "a-token-for-this-browser")
    return client.post("/s/fake-ab/start", data={"csrf_token": token, **form})


def test_the_participant_link_opens_the_consent_page_first(client):
    page = client.get("/s/fake-ab?PROLIFIC_PID=p1&STUDY_ID=s&SESSION_ID=t")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert "Consent text for the test study." in html
    assert 'name="PROLIFIC_PID" value="p1"' in html


def test_starting_without_consent_explains_what_to_do(client):
    page = start(client, pid="p2")
    assert page.status_code == 400
    assert "Please tick the box" in page.get_data(as_text=True)


def test_consenting_starts_a_session_and_opens_the_writing_page(client):
    response = start(client, consent="yes", pid="p3")
    assert response.headers["Location"].endswith("/s/fake-ab/write")
    page = client.get("/s/fake-ab/write")
    assert page.status_code == 200
    assert "Write the first sentence of a story." in page.get_data(as_text=True)


def test_the_writing_page_without_a_session_goes_back_to_consent(client):
    assert client.get("/s/fake-ab/write").headers["Location"].endswith("/s/fake-ab")


def test_the_thank_you_page_waits_for_a_finished_story(client):
    start(client, consent="yes")
    assert client.get("/s/fake-ab/done").headers["Location"].endswith("/s/fake-ab/write")


def test_an_unknown_study_is_a_friendly_404(client):
    page = client.get("/s/no-such-study")
    assert page.status_code == 404


def test_a_bad_participant_id_is_refused(client):
    assert client.get("/s/fake-ab?pid=<script>").status_code == 400


def test_a_closed_study_refuses_new_writers_with_a_friendly_page(app, client):
    db = store.connect(app.config["DATABASE"])
    db.execute("UPDATE experiments SET status = 'closed'")
    db.close()
    page = client.get("/s/fake-ab")
    assert page.status_code == 403
    assert "not taking new writers" in page.get_data(as_text=True)
    assert start(client, consent="yes").status_code == 403


def test_pages_forbid_inline_scripts_and_framing(client):
    headers = client.get("/s/fake-ab").headers
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_home_page_lists_the_studies(client):
    assert "/s/fake-ab" in client.get("/").get_data(as_text=True)
