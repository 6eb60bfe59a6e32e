"""A generation job of the rating form is bounded, can be cancelled, and says it was
interrupted when its server stopped: it never leaves a half-made experiment or its files."""

from __future__ import annotations

import io
import os
import re
import time
from pathlib import Path

import pytest
import requests
from conftest import RESEARCHER_PASSWORD, Researcher, write_setup
from werkzeug.security import generate_password_hash

from cyoa import store
from cyoa.rating.parts import parts as rating_parts
from cyoa.rating.research.jobs import JOBS_KEPT, GenerationJob, forget_old, status_path
from tests.rating.test_research_rating_admin import form, page_of, rows
from tests.web.test_workers import AppProcess

PROMPTS = "\n".join(f"Opening number {n} of the tale." for n in range(1, 7))


def generating(exp_id: str = "generated", **overrides) -> dict:
    fields = {
        "id": exp_id, "stories_from": "generated", "generate_models": ["fake-a", "fake-b"],
        "prompts": PROMPTS, "sentences": "5", "stories_file": (io.BytesIO(b""), ""),
    }  # fmt: skip
    return form(**{**fields, **overrides})


@pytest.fixture
def slow(make_app):
    """A researcher on an app whose fake models take a moment per word."""
    app = make_app(options_a="delay_seconds = 0.01", options_b="delay_seconds = 0.01")
    person = Researcher(app)
    assert person.login().status_code == 302
    return person


def attempts(app, exp_id: str = "generated") -> list[Path]:
    folder = Path(app.config["RATING_FILES"]) / exp_id
    return list(folder.iterdir()) if folder.is_dir() else []


def test_a_job_over_the_cap_is_refused_with_the_cap_and_why(app):
    researcher = Researcher(app)
    researcher.login()
    prompts = "\n".join(f"Prompt {n}." for n in range(1, 21))
    reply = researcher.post(
        "/research/ratings/new",
        data=generating(prompts=prompts, stories_per_prompt="5", sentences="10"),
    )
    assert reply.status_code == 400
    page = page_of(reply)
    assert "this asks for 200 stories of 10 sentences, 2,000 sentences in all" in page
    assert "one job writes at most 1,000" in page and "within the hour" in page
    assert rating_parts(app).jobs == {}
    assert attempts(app) == []


def test_a_running_job_can_be_cancelled_and_leaves_nothing(slow):
    researcher, app = slow, slow.app
    job = researcher.post("/research/ratings/new", data=generating())
    assert job.status_code == 302, page_of(job)
    page = page_of(researcher.get(job.location))
    assert f'action="{job.location}/cancel"' in page and ">Cancel</button>" in page
    assert researcher.http.post(job.location + "/cancel").status_code == 400  # no CSRF token
    assert len(attempts(app)) == 1
    cancelled = researcher.post(job.location + "/cancel", follow_redirects=True)
    assert "The job stops before its next story (if a model is still loading, once it is ready" in (
        page_of(cancelled)
    )
    deadline = time.monotonic() + 60
    while (progress := researcher.get(job.location + ".json").get_json())["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert progress["state"] == "cancelled", progress
    assert progress["done"] < progress["total"] == 12
    assert progress["error"] == "Cancelled: nothing was stored, and its files were removed."
    assert rows(app, "SELECT * FROM experiments WHERE kind = 'rating'") == []
    assert attempts(app) == []
    back = page_of(researcher.get(f"/research/ratings/new?job={job.location.rsplit('/', 1)[1]}"))
    assert "Opening number 6 of the tale.</textarea>" in back  # the form as it was sent
    again = researcher.post("/research/ratings/new", data=generating())
    assert again.status_code == 302, page_of(again)  # the id is free again


def test_an_interrupted_job_reads_as_interrupted_after_a_restart(tmp_path, monkeypatch):
    config = write_setup(
        tmp_path, options_a="delay_seconds = 0.05", options_b="delay_seconds = 0.05"
    )
    monkeypatch.setenv("CYOA_RATING_FILES", config["RATING_FILES"])
    first = AppProcess(tmp_path, config, "", "first")
    try:
        first.wait_ready()
        db = store.connect(config["DATABASE"])
        try:
            store.create_researcher(
                db, "alice", generate_password_hash(RESEARCHER_PASSWORD, "pbkdf2:sha256:1000")
            )
        finally:
            db.close()
        http = requests.Session()

        def token(url: str) -> str:
            return re.search(r'name="csrf_token" value="([^"]+)"', http.get(url).text)[1]

        login = {"name": "alice", "password": RESEARCHER_PASSWORD}
        login["csrf_token"] = token(f"{first.url}/research/login")
        assert http.post(f"{first.url}/research/login", data=login).ok
        fields = {k: v for k, v in generating().items() if k != "stories_file"}
        fields["csrf_token"] = token(f"{first.url}/research/ratings/new")
        reply = http.post(
            f"{first.url}/research/ratings/new",
            data=fields,
            files={"stories_file": ("", b"")},
            allow_redirects=False,
        )
        assert reply.status_code == 302, reply.text
        job = reply.headers["Location"]
        deadline = time.monotonic() + 60
        while http.get(f"{first.url}{job}.json").json()["done"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        folder = Path(config["RATING_FILES"]) / "generated"
        assert len(list(folder.iterdir())) == 1
        first.proc.kill()  # the server dies while the job runs
        first.proc.wait(timeout=10)
    finally:
        first.stop()
    second = AppProcess(tmp_path, config, "", "second")
    try:
        second.wait_ready()
        assert list(folder.iterdir()) == []  # the killed job's attempt is removed at start
        progress = http.get(f"{second.url}{job}.json").json()
        assert progress["state"] == "interrupted"
        assert progress["error"].startswith("Interrupted: the server stopped while the stories")
        page = http.get(f"{second.url}{job}").text
        assert "nothing was stored" in page and "Back to the form" in page
        assert rows_of(config["DATABASE"]) == []
    finally:
        second.stop()


def rows_of(database: str) -> list[dict]:
    db = store.connect(database)
    try:
        return list(db.query("SELECT id FROM experiments WHERE kind = 'rating'"))
    finally:
        db.close()


def test_forgetting_old_jobs_keeps_every_running_job_s_status(tmp_path):
    def job(n: int, state: str) -> GenerationJob:
        saved = GenerationJob(f"job{n}", "x", 1, {}, False, tmp_path, tmp_path / "x", "w", 0, state)
        saved.save()
        os.utime(status_path(tmp_path, saved.id), (1000 + n, 1000 + n))
        return saved

    running = [job(n, "running") for n in range(3)]  # the oldest: other processes' jobs
    ended = [job(n, "created") for n in range(3, JOBS_KEPT + 5)]
    forget_old(tmp_path)
    assert all(status_path(tmp_path, j.id).exists() for j in running)
    kept = [j for j in ended if status_path(tmp_path, j.id).exists()]
    assert len(kept) == JOBS_KEPT - 3 and kept == ended[-len(kept) :]  # the newest
