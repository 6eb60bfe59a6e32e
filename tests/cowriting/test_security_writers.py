"""Writers in their own story only: the start form cannot be sent from another site, a
participant id alone does not open a story from another browser, and the home page names
no system."""

from conftest import Writer

from cyoa import store
from cyoa.cowriting import service
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.web.realtime import socketio


def rows(app, sql: str) -> list[dict]:
    db = store.connect(app.config["DATABASE"])
    try:
        return list(db.query(sql))
    finally:
        db.close()


def consent_page(client, query: str = ""):
    """Open the consent page; returns it and the CSRF token it gave this browser."""
    page = client.get(f"/s/fake-ab{query}")
    with client.session_transaction() as s:
        return page, s.get("csrf", "")


# --- the start form (CSRF) ---------------------------------------------------------------


def test_a_start_form_sent_from_another_site_starts_nothing_and_sets_no_cookie(app):
    # Another site's form: no token, and (SameSite=Lax) none of this site's cookies.
    form = {"consent": "yes", "pid": "chosen-by-the-attacker"}
    response = app.test_client().post("/s/fake-ab/start", data=form)
    assert response.status_code == 302
    assert "/s/fake-ab/write" not in response.headers["Location"]
    assert "Set-Cookie" not in response.headers
    assert rows(app, "SELECT * FROM sessions") == []


def test_a_forged_start_form_cannot_swap_a_writers_story(app):
    writer = Writer(app, "?pid=the-writer")
    before = writer.session_id
    # A browser that sends the cookie along (no SameSite), with a form without the token.
    forged = {"consent": "yes", "pid": "chosen-by-the-attacker"}
    writer.http.post("/s/fake-ab/start", data=forged)
    writer.http.post("/s/fake-ab/start", data={**forged, "csrf_token": "x" * 43})
    assert writer.session_id == before
    assert [p["external_id"] for p in rows(app, "SELECT * FROM participants")] == ["the-writer"]


def test_an_expired_start_form_says_so_and_the_next_one_works(client):
    page, token = consent_page(client, "?pid=p1")
    with client.session_transaction() as s:
        s["csrf"] = "the-token-of-another-day"
    response = client.post(
        "/s/fake-ab/start", data={"consent": "yes", "pid": "p1", "csrf_token": token}
    )
    page = client.get(response.headers["Location"]).get_data(as_text=True)
    assert "This page had expired" in page and 'name="pid" value="p1"' in page
    _, token = consent_page(client, "?pid=p1")
    response = client.post(
        "/s/fake-ab/start", data={"consent": "yes", "pid": "p1", "csrf_token": token}
    )
    assert response.headers["Location"].endswith("/s/fake-ab/write")


# --- resuming a story (the participant id is not a secret) --------------------------------


def test_a_participant_id_alone_does_not_open_a_story_in_another_browser(app):
    writer = Writer(app, "?pid=victim-7")
    writer.write_round(1)
    mallory = app.test_client()
    page, token = consent_page(mallory, "?pid=victim-7")
    assert page.status_code == 403
    assert "in progress in another browser" in page.get_data(as_text=True)
    form = {"consent": "yes", "pid": "victim-7", "csrf_token": token or "seeded"}
    with mallory.session_transaction() as s:
        s["csrf"] = form["csrf_token"]
    assert mallory.post("/s/fake-ab/start", data=form).status_code == 403
    with mallory.session_transaction() as s:
        assert "fake-ab" not in s.get("cyoa", {})
    assert mallory.get("/s/fake-ab/write").headers["Location"].endswith("/s/fake-ab")
    io = socketio.test_client(app, flask_test_client=mallory)
    assert io.emit("join", {"experiment": "fake-ab"}, callback=True)["ok"] is False
    assert len(rows(app, "SELECT * FROM sessions")) == 1


def test_prolific_needs_the_session_id_the_story_began_with_from_another_browser(app):
    first = Writer(app, "?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=only-the-writer-has-it")
    first.write_round(1)
    other = app.test_client()
    for query in ("?PROLIFIC_PID=abc123", "?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=guess"):
        assert other.get(f"/s/fake-ab{query}").status_code == 403, query
    again = other.get(
        "/s/fake-ab?PROLIFIC_PID=abc123&STUDY_ID=s1&SESSION_ID=only-the-writer-has-it"
    )
    assert again.headers["Location"].endswith("/s/fake-ab/write")


def test_the_same_browser_resumes_with_the_participant_id_alone(app):
    writer = Writer(app, "?PROLIFIC_PID=p-1&SESSION_ID=s-1")
    writer.write_round(1)
    response = writer.http.get("/s/fake-ab?PROLIFIC_PID=p-1")
    assert response.headers["Location"].endswith("/s/fake-ab/write")
    assert writer.reconnect()["state"]["round"] == 2


def test_a_story_started_a_moment_ago_by_another_request_is_not_handed_over(app, monkeypatch):
    study = cowriting_parts(app).study
    exp = study.experiment("fake-ab")
    participant = {"external_id": "p-race", "id_source": "pid"}
    assert study.open_session(exp, participant)
    assert study.open_session(exp, participant) is None
    # The other request commits between this one's look-up and its insert.
    real_find = service.cowriting_store.find_session_for_participant
    calls = []

    def not_yet_on_the_first_look(*args):
        calls.append(args)
        return None if len(calls) == 1 else real_find(*args)

    monkeypatch.setattr(
        service.cowriting_store, "find_session_for_participant", not_yet_on_the_first_look
    )
    assert study.open_session(exp, participant) is None
    assert len(rows(app, "SELECT * FROM sessions")) == 1


# --- the home page ---------------------------------------------------------------------


def test_the_home_page_names_no_system_and_no_study_that_is_not_open(app, client):
    page = client.get("/").get_data(as_text=True)
    assert "A test study" in page and "/s/fake-ab" in page
    for hidden in ("fake-a-topk", "fake-b-topk", "topk", "Fake model"):
        assert hidden not in page
    db = store.connect(app.config["DATABASE"])
    db.execute("UPDATE experiments SET status = 'paused'")
    db.close()
    assert "/s/fake-ab" not in client.get("/").get_data(as_text=True)
