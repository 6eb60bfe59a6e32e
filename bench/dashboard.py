"""Benchmark: the rating and co-writing dashboards' latency when they answer from their stored
analysis, and the analysis' own time, on three rating studies and a co-writing study.

    .venv/bin/python bench/dashboard.py              # the four studies, 40 requests each
    .venv/bin/python bench/dashboard.py --requests 10
    .venv/bin/python bench/dashboard.py --only cowriting   # the others' rows kept as measured

The studies are imported through ``python -m cyoa import-ratings`` into a temporary SQLite
file:

- ``ttcw-release``: the TTCW release's expert judgements (1,008) with its seven LLM judges'
  verdicts (/work/shared/data/ttcw, or CYOA_DATA);
- ``likert-1320`` and ``likert-23232``: AISS ratings of about the size of Confederacy of Models
  (1,300 ratings) and of DeLucia et al.'s ratings (23,240): these two data sets are not
  available to the benchmark, so it makes ratings of the same number in CYOA's long format (30
  and 528 stories, two raters each, 22 items; seeded values, so the raters disagree as people
  do).

For each study it times the analysis itself (:func:`cyoa.rating.research.dashboard.analyse`,
with the app's default 1,000 bootstrap replicates; before the stored analysis this was the
first load of the page), then requests the page and ``progress.json`` through the app
(Flask's test client: the app's own time, no network) while the stored analysis is current,
and again while a newer analysis is being computed in the background, and reports p50 and
p95. Writes ``bench/results/dashboard.json`` and ``bench/results/dashboard.md``.

The co-writing study, ``cowriting-105``: 105 writers × 5 rounds with the keystroke record on
(:mod:`bench.cowriting_study`, written through the store's events and ``text_operations`` as
the study writes them). It times the analysis itself
(:func:`cyoa.cowriting.research.dashboard.analyse`, and within it the "How writers wrote"
tables' reading of every session's record, :func:`cyoa.cowriting.research.exports.process_rows`),
the page's first load (nothing stored yet: it starts the analysis and answers at once), its
later loads and ``progress.json`` with the stored analysis current, and again while a newer
analysis is computed after a 106th writer finished.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from click.testing import CliRunner  # noqa: E402
from werkzeug.security import generate_password_hash  # noqa: E402

from bench import cowriting_study  # noqa: E402
from cyoa import create_app, store  # noqa: E402
from cyoa.cli import cli  # noqa: E402
from cyoa.cowriting.research import dashboard as cowriting_dashboard  # noqa: E402
from cyoa.cowriting.research import lifecycle  # noqa: E402
from cyoa.cowriting.research.exports import process_rows  # noqa: E402
from cyoa.rating.instruments import load_instrument  # noqa: E402
from cyoa.rating.parts import parts as rating_parts  # noqa: E402
from cyoa.rating.research import dashboard  # noqa: E402
from cyoa.web.parts import shared  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path(os.environ.get("CYOA_DATA", "/work/shared/data"))
JUDGES = ("cgpt", "gpt4", "claudev13", "claudev2", "claudev21", "claude3-opus", "gemini-pro")
PASSWORD = "bench-password"
AISS_ITEMS = load_instrument("aiss-v1").items
# A co-writing study without writers, whose page is loaded first: the first load measured is
# the first with nothing stored, not the process's first render of the page.
WARM_UP = "cowriting-empty"


def _cli(db: str, *args: str) -> None:
    result = CliRunner().invoke(cli, ["--db", db, *args])
    if result.exit_code != 0:
        raise SystemExit(f"{' '.join(args)}: {result.output}")


def import_ttcw(db: str) -> str:
    """The TTCW release with its seven LLM judges."""
    ttcw = DATA / "ttcw"
    _cli(db, "import-ratings", str(ttcw / "ttcw_annotations_gpt.json"), "--format", "ttcw",
         "--name", "ttcw-release")  # fmt: skip
    for judge in JUDGES:
        verdicts = ttcw / "llm_verdicts" / f"annotations_{judge}.jsonl"
        _cli(db, "import-ratings", str(verdicts), "--format", "ttcw-llm",
             "--into", "ttcw-release", "--judge", judge)  # fmt: skip
    return "ttcw-release"


def import_likert(db: str, folder: Path, stories: int, seed: int) -> str:
    """AISS ratings of ``stories`` stories from two sources, two raters each, every item:
    ``stories × 2 × 22`` ratings in the long format."""
    name = f"likert-{stories * 2 * len(AISS_ITEMS)}"
    rng = random.Random(seed)
    rows = []
    for n in range(stories):
        source = ("model-a", "model-b")[n % 2]
        quality = rng.gauss(3.4 if source == "model-a" else 3.0, 0.6)
        for rater in (n % 7, 7 + n % 5):
            for item in AISS_ITEMS:
                value = min(5, max(1, round(quality + rng.gauss(0, 0.9))))
                rows.append({"story_id": f"s{n}", "source": source, "rater_id": f"r{rater}",
                             "item": item.id, "value": value})  # fmt: skip
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    _cli(db, "import-ratings", str(path), "--format", "long", "--name", name,
         "--instrument", "aiss-v1")  # fmt: skip
    return name


def _login(app):
    client = app.test_client()
    client.get("/research/login")
    with client.session_transaction() as session:
        token = session["csrf"]
    reply = client.post(
        "/research/login", data={"name": "bench", "password": PASSWORD, "csrf_token": token}
    )
    assert reply.status_code == 302, reply.status_code
    return client


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": statistics.median(ordered), "p95": p95, "n": len(ordered)}


def _requests(client, url: str, count: int, while_busy=None) -> dict[str, dict[str, float]]:
    """``count`` requests of the page and of progress.json, timed; with ``while_busy`` (the
    app's background analyses) only those made while it computes."""
    timings: dict[str, list[float]] = {"page": [], "progress.json": []}
    for _ in range(count):
        if while_busy is not None and while_busy.wait_idle(0):
            break
        for name, path in (("page", url), ("progress.json", f"{url}/progress.json")):
            began = time.perf_counter()
            reply = client.get(path)
            timings[name].append(time.perf_counter() - began)
            assert reply.status_code == 200, (path, reply.status_code)
    return {name: _percentiles(values) for name, values in timings.items()}


def measure(app, client, exp_id: str, count: int) -> dict:
    """The analysis' own time, then the page's latency with the stored analysis current and
    while a newer one is computed in the background."""
    url = f"/research/ratings/{exp_id}"
    replicates = int(app.config["RATING_BOOTSTRAP"])
    db = store.connect(app.config["DATABASE"])
    with app.app_context():
        exp = rating_parts(app).ratings.experiment(exp_id)
        began = time.perf_counter()
        answers, _, result, _ = dashboard.analyse(db, exp, replicates, lambda step: None)
        analysis_seconds = time.perf_counter() - began
    db.close()
    client.get(f"{url}/progress.json")  # the first load: starts the background analysis
    assert shared(app).analyses.wait_idle(600)
    current = client.get(f"{url}/progress.json").get_json()["analysis"]
    assert current["state"] == "current", current
    idle = _requests(client, url, count)
    # A newer analysis at once (as 30 s after new answers; here the replicates change the
    # data version).
    app.config["RATING_BOOTSTRAP"] = replicates + 1
    interval, dashboard.RECOMPUTE_SECONDS = dashboard.RECOMPUTE_SECONDS, 0
    assert client.get(f"{url}/progress.json").get_json()["analysis"]["state"] == "computing"
    busy = _requests(client, url, count, while_busy=shared(app).analyses)
    assert shared(app).analyses.wait_idle(600)
    app.config["RATING_BOOTSTRAP"], dashboard.RECOMPUTE_SECONDS = replicates, interval
    return {
        "study": exp_id,
        "answers": answers,
        "stored_kb": round(len(json.dumps(result)) / 1024),
        "analysis_seconds": analysis_seconds,
        "current": idle,
        "while_computing": busy,
    }


def _timed_get(client, path: str) -> float:
    began = time.perf_counter()
    reply = client.get(path)
    assert reply.status_code == 200, (path, reply.status_code)
    return time.perf_counter() - began


def measure_cowriting(app, client, exp_id: str, count: int) -> dict:
    """The co-writing dashboard: the analysis' own time (and its reading of the keystroke
    record), the page's first load, later loads while the stored analysis is current, and
    loads while a newer one is computed after one more writer finished."""
    url = f"/research/experiments/{exp_id}"
    db = store.connect(app.config["DATABASE"])
    with app.app_context():
        exp = lifecycle.stored_experiment(db, exp_id, shared(app).cards)
        began = time.perf_counter()
        rounds, _, result = cowriting_dashboard.analyse(db, exp, lambda step: None)
        analysis_seconds = time.perf_counter() - began
        began = time.perf_counter()
        process_rows(db, exp_id)
        record_seconds = time.perf_counter() - began
    operations = db.execute("SELECT count(*) FROM text_operations").fetchone()[0]
    _timed_get(client, f"/research/experiments/{WARM_UP}")  # the page's templates compiled
    first = _timed_get(client, url)  # nothing stored: starts the analysis
    assert shared(app).analyses.wait_idle(600)
    current = client.get(f"{url}/results.json").get_json()["analysis"]
    assert current["state"] == "current", current
    idle = _requests(client, url, count)
    interval, cowriting_dashboard.RECOMPUTE_SECONDS = cowriting_dashboard.RECOMPUTE_SECONDS, 0
    cowriting_study.add_writer(db, exp_id, 106, 5, random.Random(106))
    db.close()
    assert client.get(f"{url}/results.json").get_json()["analysis"]["state"] == "computing"
    busy = _requests(client, url, count, while_busy=shared(app).analyses)
    assert shared(app).analyses.wait_idle(600)
    cowriting_dashboard.RECOMPUTE_SECONDS = interval
    return {
        "study": exp_id,
        "answers": rounds,
        "unit": "rounds",
        "keystroke_rows": operations,
        "stored_kb": round(len(json.dumps(result)) / 1024),
        "analysis_seconds": analysis_seconds,
        "record_seconds": record_seconds,
        "first_load_seconds": first,
        "current": idle,
        "while_computing": busy,
    }


def _ms(timing: dict[str, float]) -> str:
    return f"{1000 * timing['p50']:.0f} / {1000 * timing['p95']:.0f} ms"


def _row(r: dict) -> str:
    cur, busy = r["current"], r["while_computing"]
    return (
        f"| {r['study']} | {r['answers']:,} | {r['analysis_seconds']:.1f} s | "
        f"{_ms(cur['page'])} | {_ms(cur['progress.json'])} | "
        f"{_ms(busy['page'])} | {_ms(busy['progress.json'])} ({busy['page']['n']}) | "
        f"{r['stored_kb']:,} KB | {r['measured']} |"
    )


def _cowriting_row(r: dict) -> str:
    cur, busy = r["current"], r["while_computing"]
    return (
        f"| {r['study']} | {r['answers']:,} ({r['keystroke_rows']:,}) | "
        f"{r['analysis_seconds']:.1f} s ({r['record_seconds']:.1f} s) | "
        f"{1000 * r['first_load_seconds']:.0f} ms | {_ms(cur['page'])} | "
        f"{_ms(cur['progress.json'])} | {_ms(busy['page'])} | "
        f"{_ms(busy['progress.json'])} ({busy['page']['n']}) | {r['stored_kb']:,} KB | "
        f"{r['measured']} |"
    )


def page(results: list[dict], count: int, command: str) -> str:
    rating = [r for r in results if r.get("unit") != "rounds"]
    cowriting = [r for r in results if r.get("unit") == "rounds"]
    lines = [
        "# Dashboard: answering from the stored analysis",
        "",
        f"`{command}` ({count} requests of each kind per study and state; each row says when",
        "and under what load it was measured: the machine's 1-minute load average).",
        "",
        "Both dashboards answer from their stored analysis (`analyses`) and compute a newer",
        "one in the background (docs/architecture.md). *Analysis* is the analysis' own time",
        "(charts included): before the stored analysis, what the first load of the page took.",
        "Latency is p50 / p95 of the app's own time per request (Flask's test client), with",
        "the stored analysis current, and while a newer analysis is computed on a background",
        "thread of the same process (only the requests made before it landed; their number in",
        "brackets).",
        "",
        "## Rating dashboard",
        "",
        "1,000 bootstrap replicates.",
        "",
        "| study | answers (human) | analysis | page, current | progress.json, current "
        "| page, while computing | progress.json, while computing (n) | stored result "
        "| measured |",
        "|---|---|---|---|---|---|---|---|---|",
        *(_row(r) for r in rating),
        "",
        "`ttcw-release`: the TTCW release's 1,008 expert judgements and its seven LLM judges'",
        "verdicts. `likert-1320` and `likert-23232`: seeded AISS ratings of about the sizes of",
        "Confederacy of Models (1,300) and DeLucia et al. (23,240), whose files were not",
        "available to the benchmark (`bench/dashboard.py` says how they are made).",
        "",
        "## Co-writing dashboard",
        "",
        "| study | rounds (keystroke rows) | analysis (reading the record) | page, first load "
        "| page, later loads | progress.json | page, while computing "
        "| progress.json, while computing (n) | stored result | measured |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(_cowriting_row(r) for r in cowriting),
        "",
        "`cowriting-105`: 105 seeded writers × 5 rounds, two systems, the keystroke record on",
        "(`bench/cowriting_study.py`: each line and clause typed key by key, a typo now and",
        'then taken back, about 110 rows a round). *Reading the record* is the "How writers',
        "wrote\" tables' share of the analysis (`process_rows`: every session's record loaded",
        "and measured), which runs in the background analysis, never on the request. The",
        "first load (one request, after the page of a study without writers was loaded once,",
        "so that it is not the process's first render of the page) finds nothing stored: it",
        'starts the analysis and answers at once ("Computing the first analysis…"). The',
        '"while computing" loads follow a 106th writer finishing. The page itself still',
        "reads the progress and the writers table on each request (`sessions`, `rounds`).",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument(
        "--only",
        choices=("rating", "cowriting"),
        help="measure these studies only; the other rows are kept from the last run",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        db = str(root / "bench.sqlite")
        handle = store.connect(db)
        store.init_db(handle)
        handle.close()
        studies = []
        if args.only != "cowriting":
            studies = [
                import_ttcw(db),
                import_likert(db, root, 30, seed=1),
                import_likert(db, root, 528, seed=2),
            ]
        handle = store.connect(db)
        if args.only != "rating":
            began = time.perf_counter()
            cowriting_study.build(handle, "cowriting-105", writers=105)
            cowriting_study.build(handle, WARM_UP, writers=0)
            print(f"built cowriting-105 in {time.perf_counter() - began:.1f} s", flush=True)
        store.create_researcher(handle, "bench", generate_password_hash(PASSWORD))
        handle.close()
        app = create_app(
            {
                "DATABASE": db,
                "SECRET_KEY": "bench",
                "LOAD_MODELS_AT_START": False,
                "TAG_SENTENCES": False,
                "MODEL_CACHE": str(root / "models"),
                "RATING_FILES": str(root / "rating-files"),
            }
        )
        client = _login(app)
        results = []
        for exp_id in studies:
            results.append(measure(app, client, exp_id, args.requests))
            results[-1]["measured"] = _measured()
            print(_row(results[-1]), flush=True)
        if args.only != "rating":
            results.append(measure_cowriting(app, client, "cowriting-105", args.requests))
            results[-1]["measured"] = _measured()
            print(_cowriting_row(results[-1]), flush=True)
    if args.only is not None:
        kept = json.loads((RESULTS / "dashboard.json").read_text())["results"]
        unit = "rounds" if args.only == "rating" else None
        results = [r for r in kept if r.get("unit") == unit] + results
        results.sort(key=lambda r: r.get("unit") == "rounds")
    command = (
        "python bench/dashboard.py"
        + (f" --requests {args.requests}" if args.requests != 40 else "")
        + (f" --only {args.only}" if args.only else "")
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "dashboard.json").write_text(json.dumps({"results": results}, indent=2) + "\n")
    (RESULTS / "dashboard.md").write_text(page(results, args.requests, command))


def _measured() -> str:
    """When and where a row was measured: UTC time, machine, cores, 1-minute load average."""
    at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"{at}; {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"


if __name__ == "__main__":
    main()
