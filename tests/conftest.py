"""Fixtures: each test gets a fresh app on a temporary SQLite file, with the *fake* model
backend (deterministic text, for fast tests only) unless a test asks for real models.

A module marked ``pytestmark = pytest.mark.both_databases`` runs each test twice: ``[sqlite]``
and ``[postgresql]``, the second on a new database of the session's PostgreSQL server
(bench/postgres_server.py). :func:`write_setup` puts the test's database in the app config,
so the app, the verbs (``--db``) and :func:`db_rows` all use it. The data, study, rating and
Socket.IO modules opt in; modules about SQLite itself stay on it alone: its migrations of old
files (test_store_migrations), its online backup (test_backup_restore), its locks and busy
waits (test_robustness_locks), and pages and benchmarks whose subject is not the database."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from parallel_workers import pytest_configure  # noqa: F401 (the hook: one thread per worker)

from bench.postgres_server import create_database, postgres_cluster, postgres_url  # noqa: F401
from cyoa import create_app, store
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.db import engine as db_engine
from cyoa.web.realtime import socketio
from tests.paths import ROOT

# In CI (CI=true) property and fuzz tests draw the same examples on every run, so a run's
# result depends on the code alone; elsewhere they explore new examples each time.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


FAKE_CARD = """
# A fake model for fast tests only: deterministic sentences, no weights.
name = "{name}"
display_name = "Fake model {name} (tests only)"
backend = "fake"
version = "fake-1"

[sampling]
top_k = 40
top_p = 1.0
temperature = 1.0
max_new_tokens = 40

[options]
{options}
"""

EXPERIMENT = """
{top}
id = "fake-ab"
title = "A test study"
consent = "Consent text for the test study."
instructions = "Write with the machine."
rounds = {rounds}
min_chars = 20
max_chars = 260
suggestion_timeout_seconds = {timeout}
completion_url = "https://example.org/complete?cc={{code}}"

[prompt]
text = "Write the first sentence of a story."

[[systems]]
name = "fake-a-topk"
model = "fake-a"

[[systems]]
name = "fake-b-topk"
model = "fake-b"
sampling = {{ top_k = 20 }}
{systems}
"""


DATABASE_KINDS = ("sqlite", "postgresql")
# The database of the running test when it is not a SQLite file in its folder (a PostgreSQL
# URL, set by the ``app_database`` fixture); write_setup reads it.
_test_database: str | None = None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each ``both_databases`` test (or each test of such a module) once per kind of
    database; one also marked ``sqlite_only`` (about SQLite itself) runs on SQLite alone."""
    if metafunc.definition.get_closest_marker("both_databases"):
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only")
        metafunc.fixturenames.append("database_kind")
        kinds = DATABASE_KINDS[:1] if sqlite_only else DATABASE_KINDS
        metafunc.parametrize("database_kind", kinds, indirect=True, scope="module")


@pytest.fixture(scope="module")
def database_kind(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: the kind of database this test's app uses."""
    return getattr(request, "param", "sqlite")


def fresh_database(request: pytest.FixtureRequest, kind: str, folder: Path) -> str:
    """A new database of ``kind`` for one test (or one module's shared study): a SQLite file
    in ``folder``, or a new database on the session's PostgreSQL server."""
    if kind == "sqlite":
        return str(folder / "cyoa.sqlite")
    cluster = request.getfixturevalue("postgres_cluster")
    name = "".join(c if c.isalnum() else "_" for c in request.node.name)[:40].lower()
    return create_database(cluster, f"t_{name}_{os.urandom(4).hex()}")


@pytest.fixture(autouse=True)
def app_database(request: pytest.FixtureRequest, tmp_path_factory) -> Any:
    """The running test's database (see the module docstring), put where write_setup finds
    it; None on SQLite, where each app's file lies in its own folder."""
    global _test_database
    callspec = getattr(request.node, "callspec", None)
    kind = callspec.params.get("database_kind", "sqlite") if callspec else "sqlite"
    _test_database = None if kind == "sqlite" else fresh_database(request, kind, Path())
    try:
        yield _test_database
    finally:
        _test_database = None


@pytest.fixture
def database(app_database: str | None, tmp_path: Path) -> str:
    """The running test's database as ``--db`` takes it: its PostgreSQL database, or a
    SQLite file in its folder."""
    return app_database or str(tmp_path / "cyoa.sqlite")


def write_setup(
    root: Path,
    rounds: int = 5,
    options_a: str = "",
    options_b: str = "",
    timeout: float = 20,
    top: str = "",
    systems: str = "",
) -> dict[str, str]:
    """Fake model cards and a test experiment in ``root``; the app config that uses them.
    ``top`` adds top-level spec fields, ``systems`` more ``[[systems]]`` tables. The database
    is a SQLite file in ``root``, or the test's PostgreSQL database (``both_databases``)."""
    models = root / "models"
    experiments = root / "experiments"
    models.mkdir(exist_ok=True)
    experiments.mkdir(exist_ok=True)
    (models / "fake-a.toml").write_text(FAKE_CARD.format(name="fake-a", options=options_a))
    (models / "fake-b.toml").write_text(FAKE_CARD.format(name="fake-b", options=options_b))
    spec = EXPERIMENT.format(rounds=rounds, timeout=timeout, top=top, systems=systems)
    (experiments / "fake-ab.toml").write_text(spec)
    return {
        "TESTING": True,
        "SECRET_KEY": "test-secret",
        "DATABASE": _test_database or str(root / "cyoa.sqlite"),
        "MODELS_DIR": str(models),
        "EXPERIMENTS_DIR": str(experiments),
        "MODEL_CACHE": str(root / "model-cache"),
        "RATING_FILES": str(root / "rating-files"),
        "DEFAULT_EXPERIMENT": "fake-ab",
        # Background tagging spawns spaCy processes; its own tests turn it on.
        "TAG_SENTENCES": False,
        # Every test's participants start from one address; the limit's own tests lower it.
        "START_BURST": 1000,
        # ... and their raters answer far faster than people do; the limit's own tests too.
        "RATER_ACTION_BURST": 1000,
        # The dashboard's intervals need not be precise for a page test (the default is 1000).
        "RATING_BOOTSTRAP": 100,
    }


@pytest.fixture
def make_app(tmp_path):
    def make(**kwargs: Any):
        return create_app(write_setup(tmp_path, **kwargs))

    return make


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


class Writer:
    """A writer in a browser, as far as the server can tell: a cookie jar (the Flask test
    client) and a Socket.IO connection that shares it."""

    def __init__(self, app, query: str = "", experiment: str = "fake-ab", lang: str = ""):
        self.app = app
        self.experiment = experiment
        # The page's language, which its Socket.IO connection names (static/js/write.js).
        self.lang = lang
        self.http = app.test_client()
        response = self.http.get(f"/s/{experiment}{query}")
        assert response.status_code in (200, 302)
        if response.status_code == 200:
            form = {"consent": "yes", "csrf_token": self.csrf_token, **dict(_query_pairs(query))}
            response = self.http.post(f"/s/{experiment}/start", data=form)
            assert response.status_code == 302, response.data
        self.io = None
        self.connect()

    @property
    def csrf_token(self) -> str:
        """The token the consent page put in this browser's session (and its form)."""
        with self.http.session_transaction() as s:
            return s["csrf"]

    def connect(self) -> dict[str, Any]:
        query = f"lang={self.lang}" if self.lang else None
        self.io = socketio.test_client(self.app, flask_test_client=self.http, query_string=query)
        assert self.io.is_connected()
        self.joined = self.io.emit("join", {"experiment": self.experiment}, callback=True)
        return self.joined

    def reconnect(self) -> dict[str, Any]:
        self.io.disconnect()
        return self.connect()

    @property
    def runner(self):
        return cowriting_parts(self.app).runner

    @property
    def study(self):
        return cowriting_parts(self.app).study

    @property
    def session_id(self) -> str:
        with self.http.session_transaction() as s:
            return s["cyoa"][self.experiment]

    def act(self, event_type: str, payload: dict | None = None, action_id: str | None = None):
        data = {"type": event_type, "payload": payload or {}}
        if action_id:
            data["action_id"] = action_id
        return self.io.emit("action", data, callback=True)

    def state(self) -> dict[str, Any]:
        return self.io.emit("join", {"experiment": self.experiment}, callback=True)["state"]

    def wait_for(self, phase: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.runner.wait_idle(timeout=max(0.1, deadline - time.monotonic()))
            state = self.state()
            if state["phase"] == phase:
                return state
            time.sleep(0.02)
        raise AssertionError(f"phase {phase!r} not reached; state is {state}")

    def write_round(self, n: int, slot: int = 1, edit: str | None = None) -> dict[str, Any]:
        ack = self.act("line_submitted", {"text": f"The writer's own line for round {n}."})
        assert ack["ok"], ack
        self.wait_for("choosing")
        assert self.act("suggestion_chosen", {"slot": slot})["ok"]
        text = edit or f"The edited suggestion kept in round {n}."
        ack = self.act("turn_submitted", {"text": text})
        assert ack["ok"], ack
        return ack["state"]


def _query_pairs(query: str):
    for part in query.lstrip("?").split("&"):
        if "=" in part:
            key, value = part.split("=", 1)
            yield key, value


@pytest.fixture
def writer(app):
    return Writer(app)


SURVEY_ANSWERS = {
    "happy": 4,
    "collaborative": 5,
    "useful": 3,
    "connected": 2,
    "ideas": 1,
    "why_chosen": "The one that fit the mood.",
    "looking_for": "Surprises.",
}


@pytest.fixture
def short_busy_wait(monkeypatch) -> None:
    """SQLite's busy wait cut from 10 s to 0.2 s, for a test that holds the write lock itself
    and waits for the app to give up. Each new connection reads the wait from
    :mod:`cyoa.db.engine` (``store``'s copy is what the runner's deadlines and backups read),
    so the idle pooled connections of the databases already open are closed: none keeps its
    10 s."""
    monkeypatch.setattr(db_engine, "BUSY_TIMEOUT_SECONDS", 0.2)
    monkeypatch.setattr(store, "BUSY_TIMEOUT_SECONDS", 0.2)
    for location in list(store._handles):
        store.forget(location)


@pytest.hookimpl(tryfirst=True, hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Expose each phase's report on the test item (the browser fixture saves screenshots
    when the test failed)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


@pytest.fixture(scope="session")
def packaged_gguf_cache(tmp_path_factory) -> Path:
    """One model cache for the tests that run the packaged SmolLM2 GGUF file through a
    ``gguf`` card named ``mine``, holding its conversion (keyed by the file's SHA-256): the
    tests only read it. Under pytest-xdist the workers of a run share it, and the first to
    come converts the file (tens of seconds) while the others wait on a file lock."""
    from tiny_checkpoint import SMOL

    from cyoa.generation import load_model_card
    from cyoa.generation.weights import ensure_converted, locate_gguf

    root = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        root = root.parent  # the run's folder, above each worker's own
    cache = root / "packaged-gguf-cache"
    with open(root / "packaged-gguf-cache.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        work = root / "packaged-gguf"
        work.mkdir(exist_ok=True)
        card = work / "mine.toml"
        gguf = locate_gguf(SMOL, work)
        card.write_text(f'backend = "transformers"\ngguf = "{gguf}"\n[sampling]\ntop_k = 40\n')
        ensure_converted(load_model_card(card), cache, log=lambda _: None)
    return cache


@pytest.fixture(scope="session")
def shared_gemma() -> Iterator[Callable[..., Any]]:
    """``shared_gemma(mode, emptied=False, **options)``: the packaged Gemma run by the torch
    engine in ``mode`` (a :class:`~cyoa.generation.local.TransformersBackend` with the
    ``options`` given, such as ``prefix_tokens``), loaded the first time a test of this worker
    asks for that mode and those options and shared by every test after it (a load takes 10
    to 30 s and a gigabyte).

    Safe to share because its users only read it: they stream from it, and every stream
    leaves the batch when it ends. The one thing streams change is its store of texts read;
    ``emptied=True`` gives it back with that store empty and its counts of hits and reused
    tokens at zero, as a new load's (less the warm-up's text), for a test that counts on
    them. A test that changes the backend otherwise (closes it, patches how it loads) loads
    its own."""
    from cyoa.generation import load_model_cards
    from cyoa.generation.local import TransformersBackend
    from tests.tiny_checkpoint import MODEL_CACHE, torch_engine

    card = torch_engine(load_model_cards(ROOT / "models")["gemma-3-270m"])
    loaded: dict[tuple, TransformersBackend] = {}

    def backend(mode: str, emptied: bool = False, **options) -> TransformersBackend:
        key = (mode, *sorted(options.items()))
        if key not in loaded:
            loaded[key] = TransformersBackend(card, MODEL_CACHE, mode=mode, **options)
            loaded[key].load(log=lambda _: None)
        if emptied:
            store = loaded[key].prefixes
            store.clear()
            store.hits = store.tokens_reused = 0
        return loaded[key]

    yield backend
    for each in loaded.values():
        each.close()


PACKAGED_MODELS = ("gemma-3-270m", "smollm2-135m-instruct")
STORY_PROMPT = (
    "The lighthouse keeper had not seen a ship in forty years, until the night of the storm."
)


@pytest.fixture(scope="session")
def packaged_stories(tmp_path_factory) -> Path:
    """A JSONL file of one story per packaged model (:data:`PACKAGED_MODELS`), each
    :data:`STORY_PROMPT` and three sentences with the same seeds, written by
    ``generate-stories`` with the real models; the tests only read it. Under pytest-xdist the
    workers of a run share it: the first to come writes it (tens of seconds) while the others
    wait on a file lock."""
    from click.testing import CliRunner

    from cyoa.cli import cli  # here: it imports every wing's analysis, seconds for every run

    root_dir = ROOT
    root = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        root = root.parent  # the run's folder, above each worker's own
    work = root / "packaged-stories"
    stories = work / "stories.jsonl"
    with open(root / "packaged-stories.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stories.exists():
            (work / "no-experiments").mkdir(parents=True, exist_ok=True)
            (work / "prompts.txt").write_text(STORY_PROMPT + "\n")
            cache = os.environ.get("CYOA_MODEL_CACHE", str(root_dir / "instance" / "models"))
            env = {
                "CYOA_MODELS_DIR": str(root_dir / "models"),
                "CYOA_MODEL_CACHE": cache,
                "CYOA_EXPERIMENTS_DIR": str(work / "no-experiments"),
            }
            models = [arg for name in PACKAGED_MODELS for arg in ("--model", name)]
            written = work / "writing.jsonl"
            result = CliRunner().invoke(
                cli,
                ["--db", str(work / "cyoa.sqlite"), "generate-stories", str(work / "prompts.txt"),
                 *models, "--out", str(written), "--sentences", "3"],
                env=env,
            )  # fmt: skip
            assert result.exit_code == 0, result.output
            written.rename(stories)  # whole, or not there: a failed run is not reused
    return stories


CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="module")
def chromium():
    """Debian's headless Chromium, launched once per test file (a launch takes seconds);
    each test opens its own context, so cookies, storage and offline state are its own."""
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: run `make browser` (apt-get install chromium).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield browser
        browser.close()


RESEARCHER_PASSWORD = "correct horse battery staple"


class Researcher:
    """A researcher in a browser (like flaskr's ``AuthActions``): a cookie jar that logs in,
    and posts forms with the session's CSRF token."""

    def __init__(self, app, name: str = "alice", password: str = RESEARCHER_PASSWORD):
        from werkzeug.security import generate_password_hash

        from cyoa import store

        self.app = app
        self.name = name
        self.password = password
        self.http = app.test_client()
        db = store.connect(app.config["DATABASE"])
        try:
            if store.get_researcher(db, name) is None:
                # A cheap hash keeps the tests fast; accounts made by the app use scrypt
                # (tested in test_research_access.py), and logins check either.
                cheap = generate_password_hash(password, "pbkdf2:sha256:1000")
                store.create_researcher(db, name, cheap)
        finally:
            db.close()

    def csrf_token(self) -> str:
        with self.http.session_transaction() as s:
            token = s.get("csrf")
        if token is None:
            self.http.get("/research/login")
            with self.http.session_transaction() as s:
                token = s["csrf"]
        return token

    def login(self, name: str | None = None, password: str | None = None, **kwargs):
        data = {
            "name": self.name if name is None else name,
            "password": self.password if password is None else password,
            "csrf_token": self.csrf_token(),
        }
        return self.http.post("/research/login", data=data, **kwargs)

    def get(self, url: str, **kwargs):
        return self.http.get(url, **kwargs)

    def post(self, url: str, data: dict | None = None, **kwargs):
        return self.http.post(url, data={"csrf_token": self.csrf_token(), **(data or {})}, **kwargs)

    def analysed(self, url: str, timeout: float = 120.0) -> dict:
        """Wait for the event "the dashboard serves the analysis of the data as it is now":
        ask its JSON at ``url`` (a rating dashboard's progress.json, a co-writing one's
        results.json: each starts the background analysis when the data changed) until its
        ``analysis`` is current; returns that JSON."""
        from cyoa.web.parts import shared

        deadline = time.monotonic() + timeout
        while True:
            progress = self.get(url).get_json()
            if progress["analysis"]["state"] == "current":
                return progress
            left = deadline - time.monotonic()
            assert left > 0, progress["analysis"]["text"]
            # When this app computes it, its jobs end at the event; else ask again soon.
            shared(self.app).analyses.wait_idle(left)
            time.sleep(0.05)

    def socket(self):
        """A Socket.IO connection sharing this researcher's cookies."""
        return socketio.test_client(self.app, flask_test_client=self.http)


@pytest.fixture
def researcher(app):
    """A logged-in researcher."""
    person = Researcher(app)
    assert person.login().status_code == 302
    return person


def db_rows(path: str, sql: str) -> list[dict]:
    """The rows of ``sql`` in the database at ``path`` (a SQLite file or a PostgreSQL URL: a
    server process's database)."""
    db = store.connect(path)
    try:
        return list(db.query(sql))
    finally:
        db.close()
