"""Researchers' logins end where they should: a logout or a password change ends every
login of the account server-side (a copied cookie included), and the login limit holds in
parallel, does not tell which names exist by its timing, and forgets old failures."""

import statistics
import threading
import time

from conftest import RESEARCHER_PASSWORD, Researcher, Writer
from werkzeug.security import generate_password_hash

from cyoa import store
from cyoa.web import auth
from cyoa.web.auth import LoginLimiter, create_researcher
from cyoa.web.realtime import socketio

NEW_PASSWORD = "a brand new password"


def logged_in(app) -> Researcher:
    person = Researcher(app)
    assert person.login().status_code == 302
    return person


def copy_of_cookie(app, person: Researcher):
    """Another browser holding a copy of ``person``'s session cookie."""
    thief = app.test_client()
    thief.set_cookie("session", person.http.get_cookie("session").value)
    return thief


def status_of(app, exp_id: str) -> str:
    db = store.connect(app.config["DATABASE"])
    try:
        return db.execute("SELECT status FROM experiments WHERE id = ?", [exp_id]).fetchone()[0]
    finally:
        db.close()


def test_a_cookie_copied_before_logout_opens_nothing_after_it(app):
    writer = Writer(app, "?pid=w1")
    writer.write_round(1)
    person = logged_in(app)
    token = person.csrf_token()
    pages = [
        "/research/",
        "/research/experiments/fake-ab",
        "/research/experiments/fake-ab/writers/1",
        "/research/experiments/fake-ab/download/bundle.zip",
        "/research/experiments/fake-ab/download/events.csv",
    ]
    # One copy per way in, each used first after the logout: a refused request clears its
    # copy's login, which would hide whether the next request is refused too.
    copies = {way: copy_of_cookie(app, person) for way in [*pages, "form", "live room"]}
    assert all(copy_of_cookie(app, person).get(url).status_code == 200 for url in pages)

    assert person.post("/research/logout").status_code == 302

    for url in pages:
        response = copies[url].get(url)
        assert response.status_code == 302, url
        assert response.headers["Location"].startswith("/research/login")
    form = {"status": "closed", "csrf_token": token}
    response = copies["form"].post("/research/experiments/fake-ab/status", data=form)
    assert response.status_code == 302
    assert response.headers["Location"].startswith("/research/login")
    assert status_of(app, "fake-ab") == "open"
    io = socketio.test_client(app, flask_test_client=copies["live room"])
    assert io.emit("research_join", {"experiment": "fake-ab"}, callback=True)["ok"] is False


def test_logging_out_ends_the_accounts_logins_in_every_browser(app):
    laptop, phone = logged_in(app), logged_in(app)
    assert phone.get("/research/").status_code == 200
    laptop.post("/research/logout")
    assert phone.get("/research/").status_code == 302
    assert laptop.get("/research/").status_code == 302
    assert laptop.login().status_code == 302  # the password still works
    assert laptop.get("/research/").status_code == 200


def change_password(person: Researcher, current: str, new: str, again: str | None = None):
    data = {"current_password": current, "new_password": new, "new_password_again": again or new}
    return person.post("/research/password", data=data)


def test_a_password_change_ends_every_other_login_and_keeps_this_one(app):
    laptop, phone = logged_in(app), logged_in(app)
    thief = copy_of_cookie(app, laptop)
    response = change_password(laptop, RESEARCHER_PASSWORD, NEW_PASSWORD)
    assert response.status_code == 302
    assert "password is changed" in laptop.get("/research/").get_data(as_text=True)
    assert phone.get("/research/").status_code == 302
    assert thief.get("/research/").status_code == 302
    assert Researcher(app).login().status_code == 401  # the old password
    assert Researcher(app, password=NEW_PASSWORD).login().status_code == 302


def test_a_password_change_needs_the_current_password_and_a_good_new_one(app):
    person = logged_in(app)
    wrong = change_password(person, "not the password", NEW_PASSWORD)
    assert wrong.status_code == 401
    assert "current password is not right" in wrong.get_data(as_text=True)
    differ = change_password(person, RESEARCHER_PASSWORD, NEW_PASSWORD, "something else!!")
    assert differ.status_code == 400 and "differ" in differ.get_data(as_text=True)
    short = change_password(person, RESEARCHER_PASSWORD, "short")
    assert short.status_code == 400 and "at least 10" in short.get_data(as_text=True)
    assert person.get("/research/").status_code == 200
    assert Researcher(app).login().status_code == 302  # nothing changed


def test_parallel_wrong_passwords_cannot_outrun_the_limit(app, monkeypatch):
    """30 wrong passwords at once: 5 are checked, 25 refused, as if sent one by one. The
    check is slowed to a real hash's time so that every attempt starts before any ends."""
    real_check = auth.check_password_hash

    def slow_check(stored: str, password: str) -> bool:
        time.sleep(0.3)
        return real_check(stored, password)

    monkeypatch.setattr(auth, "check_password_hash", slow_check)
    Researcher(app)  # the account
    browsers = [Researcher(app) for _ in range(30)]
    tokens = [b.csrf_token() for b in browsers]
    start = threading.Barrier(len(browsers))
    statuses: list[int] = []

    def attempt(browser: Researcher, token: str) -> None:
        form = {"name": "alice", "password": "wrong password!", "csrf_token": token}
        start.wait()
        statuses.append(browser.http.post("/research/login", data=form).status_code)

    threads = [
        threading.Thread(target=attempt, args=pair) for pair in zip(browsers, tokens, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [401] * 5 + [429] * 25


def test_an_unknown_name_costs_a_full_password_check(app, monkeypatch):
    checked: list[str] = []
    real_check = auth.check_password_hash

    def spy(stored: str, password: str) -> bool:
        checked.append(stored)
        return real_check(stored, password)

    monkeypatch.setattr(auth, "check_password_hash", spy)
    assert Researcher(app).login(name="nobody-here").status_code == 401
    # One check, against a hash made as the app makes an account's (scrypt and its cost).
    method = generate_password_hash("x").split("$")[0]
    assert len(checked) == 1 and checked[0].split("$")[0] == method


def test_login_time_does_not_tell_whether_a_name_exists(app):
    db = store.connect(app.config["DATABASE"])
    try:
        create_researcher(db, "carol", "a long enough password")  # scrypt, as the app makes it
    finally:
        db.close()
    person = Researcher(app)

    def seconds(name: str, attempt: int) -> float:
        started = time.perf_counter()
        # Each from its own address, so the limit does not step in.
        response = person.login(
            name=name, password="wrong password!", environ_base={"REMOTE_ADDR": f"10.1.0.{attempt}"}
        )
        assert response.status_code == 401
        return time.perf_counter() - started

    seconds("nobody", 0)  # the first unknown name makes the dummy hash
    known = statistics.median(seconds("carol", n) for n in range(1, 6))
    unknown = statistics.median(seconds("nobody", n) for n in range(1, 6))
    assert 0.5 < unknown / known < 2, (known, unknown)


def test_the_limiter_forgets_names_once_their_failures_are_old():
    now = [1000.0]
    limiter = LoginLimiter(max_failures=5, window=300, clock=lambda: now[0])
    for n in range(100_010):
        assert limiter.begin((f"name{n}", "10.0.0.1")) == 0
    assert len(limiter) == 100_010
    now[0] += 301
    limiter.begin(("alice", "10.0.0.2"))
    assert len(limiter) == 1


def test_the_limiter_counts_an_attempt_until_it_succeeds():
    now = [1000.0]
    limiter = LoginLimiter(max_failures=5, window=300, clock=lambda: now[0])
    key = ("alice", "127.0.0.1")
    for _ in range(5):
        assert limiter.begin(key) == 0
        now[0] += 10
    assert limiter.begin(key) == 250  # until the oldest attempt is 300 s old
    now[0] += 250
    assert limiter.begin(key) == 0
    limiter.succeeded(key)
    assert len(limiter) == 0
