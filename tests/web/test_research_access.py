"""Researcher pages: login, logout, CSRF, the login rate limit, and that every researcher
URL (collected from the app's url_map, so a new one cannot slip through) needs a login."""

import tempfile
from pathlib import Path

import pytest
from conftest import RESEARCHER_PASSWORD, Researcher, Writer, write_setup
from werkzeug.routing import Map, Rule

from cyoa import create_app, store
from cyoa.web.auth import AccountError, LoginLimiter, create_researcher

PUBLIC = {"research.login"}
# A sample value for each URL argument of a researcher route; a new argument name makes
# test_every_url_argument_has_a_sample fail until a sample is added here.
SAMPLES = {
    "exp_id": "fake-ab",
    "participant_id": 1,
    "name": "preference.csv",
    "rater_id": "r1",
    "table": "judgements",
    "fmt": "csv",
    "job_id": "job1",
    "judge": "judge-1",
}


def _researcher_urls() -> list[tuple[str, str, str]]:
    app = create_app(write_setup(Path(tempfile.mkdtemp(prefix="cyoa-urls-"))))
    urls = []
    for rule in app.url_map.iter_rules():
        researcher_side = rule.endpoint.startswith("research")
        if not researcher_side or rule.endpoint in PUBLIC:
            continue
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            urls.append((rule.endpoint, rule.rule, method))
    return urls


RESEARCHER_URLS = _researcher_urls()


def _arguments(rule: str) -> set[str]:
    compiled = Rule(rule, endpoint="x")
    Map([compiled])
    return set(compiled.arguments)


def _url(rule: str) -> str:
    adapter = Map([Rule(rule, endpoint="x")]).bind("localhost")
    return adapter.build("x", {name: SAMPLES[name] for name in _arguments(rule)})


def test_every_url_argument_has_a_sample():
    assert len(RESEARCHER_URLS) >= 10
    for _, rule, _ in RESEARCHER_URLS:
        assert _arguments(rule) <= set(SAMPLES), rule


def _csrf_for(client) -> str:
    client.get("/research/login")
    with client.session_transaction() as s:
        return s["csrf"]


@pytest.mark.parametrize(("endpoint", "rule", "method"), RESEARCHER_URLS)
def test_every_researcher_url_needs_a_login(app, endpoint, rule, method):
    Writer(app)  # a session and participant exist, so the URLs name real things
    for client in (app.test_client(), Writer(app, "?pid=someone-else").http):
        # A valid CSRF token: the refusal comes from the missing login, not from CSRF.
        data = {"csrf_token": _csrf_for(client), "status": "closed"}
        response = client.open(_url(rule), method=method, data=data)
        assert response.status_code == 302, (endpoint, response.status_code)
        assert response.headers["Location"].startswith("/research/login")
    assert store.connect(app.config["DATABASE"]).execute(
        "SELECT status FROM experiments WHERE id = 'fake-ab'"
    ).fetchone() == ("open",)


def test_the_login_page_is_public_and_carries_a_csrf_token(client):
    page = client.get("/research/login")
    assert page.status_code == 200
    assert 'name="csrf_token"' in page.get_data(as_text=True)


def test_a_researcher_logs_in_and_out(app):
    person = Researcher(app)
    response = person.login(follow_redirects=True)
    assert response.status_code == 200
    assert "Experiments" in response.get_data(as_text=True)
    assert "A test study" in response.get_data(as_text=True)
    assert person.post("/research/logout").headers["Location"] == "/research/login"
    assert person.get("/research/").status_code == 302


def test_login_goes_back_to_the_page_asked_for_but_never_elsewhere(app):
    person = Researcher(app)

    def login(target: str):
        data = {"name": person.name, "password": RESEARCHER_PASSWORD}
        data["csrf_token"] = person.csrf_token()  # a login renews the token
        return person.http.post(f"/research/login?next={target}", data=data)

    assert login("/research/experiments/fake-ab").headers["Location"] == (
        "/research/experiments/fake-ab"
    )
    for target in ("https://evil.example/", "//evil.example/research/", "/s/fake-ab"):
        assert login(target).headers["Location"] == "/research/"


def test_a_wrong_password_is_refused(app):
    person = Researcher(app)
    response = person.login(password="not the password")
    assert response.status_code == 401
    assert "Wrong name or password" in response.get_data(as_text=True)
    assert person.get("/research/").status_code == 302


def test_forms_without_the_csrf_token_are_refused(app, researcher):
    bare = researcher.http.post("/research/experiments/fake-ab/status", data={"status": "closed"})
    assert bare.status_code == 400
    assert "did not come from this site" in bare.get_data(as_text=True)
    forged = researcher.http.post(
        "/research/experiments/fake-ab/status", data={"status": "closed", "csrf_token": "x" * 43}
    )
    assert forged.status_code == 400
    db = store.connect(app.config["DATABASE"])
    assert db.execute("SELECT status FROM experiments").fetchone() == ("open",)
    db.close()
    login = app.test_client().post(
        "/research/login", data={"name": "alice", "password": RESEARCHER_PASSWORD}
    )
    assert login.status_code == 400


def test_five_failed_logins_lock_that_name_from_that_address(app):
    person = Researcher(app)
    for _ in range(5):
        assert person.login(password="wrong password!").status_code == 401
    locked = person.login()  # even the right password
    assert locked.status_code == 429
    assert "Too many failed attempts" in locked.get_data(as_text=True)
    assert person.get("/research/").status_code == 302
    # Another address, or another name, is not locked.
    other = Researcher(app)
    assert other.login(environ_base={"REMOTE_ADDR": "10.0.0.9"}).status_code == 302
    Researcher(app, name="bob")
    assert Researcher(app, name="bob").login().status_code == 302


def test_the_rate_limit_forgets_failures_after_the_window():
    now = [1000.0]
    limiter = LoginLimiter(max_failures=5, window=300, clock=lambda: now[0])
    key = ("alice", "127.0.0.1")
    for _ in range(5):
        assert limiter.begin(key) == 0  # a failure until it succeeds
        now[0] += 10
    assert limiter.begin(key) == pytest.approx(250)
    now[0] += 250
    assert limiter.begin(key) == 0
    limiter.succeeded(key)
    assert limiter.begin(key) == 0


def test_passwords_are_stored_hashed_and_must_be_long_enough(app):
    db = store.connect(app.config["DATABASE"])
    try:
        create_researcher(db, "carol", "a long enough password")
        row = store.get_researcher(db, "carol")
        assert row["password_hash"].startswith("scrypt:")
        assert "a long enough password" not in row["password_hash"]
        with pytest.raises(AccountError, match="at least 10 characters"):
            create_researcher(db, "dave", "short")
        with pytest.raises(AccountError, match="exists already"):
            create_researcher(db, "carol", "another long password")
        with pytest.raises(AccountError, match="no spaces"):
            create_researcher(db, "carol smith", "a long enough password")
    finally:
        db.close()


def test_a_deleted_account_is_logged_out_at_once(app, researcher):
    assert researcher.get("/research/").status_code == 200
    db = store.connect(app.config["DATABASE"])
    db.execute("DELETE FROM researchers")
    db.close()
    assert researcher.get("/research/").status_code == 302


def test_writers_cannot_join_the_researchers_room(app, writer):
    io = Researcher(app).socket()  # cookies without a login
    ack = io.emit("research_join", {"experiment": "fake-ab"}, callback=True)
    assert ack == {"ok": False, "error": "Please log in as a researcher and reload the page."}
    ack = writer.io.emit("research_join", {"experiment": "fake-ab"}, callback=True)
    assert ack["ok"] is False
    writer.write_round(1)
    assert not [m for m in writer.io.get_received() if m["name"] == "research_update"]
