"""The keystroke record's cost: bytes on the wire per round, rows per writer and storage per
writer in SQLite, for a typical writer.

    .venv/bin/python bench/keystrokes.py --writers 10

Writers (bench/participants.py, over Socket.IO, websocket only, against one app process on
a SQLite file, fake models) write stories of five rounds as a typical writer does, key by key
at a human pace (bench/typist.py: about 200 ms a key, a typo now and then taken back, the
writer's clock simulated, so the run takes seconds, not minutes): each round they type a
real sentence of their own (57–111 characters), look at both suggestions and hover each
(view rows), choose one (in one round in three first the other, typing a few words into it
before switching back), take back its last word and type a clause of their own, with one
draft saved midway, and add it; then the survey. The record goes in the page's batches (ten
seconds of typing or 100 rows).

Measured: the bytes of each message a page sends (its JSON as the browser encodes it,
without Socket.IO's few bytes of framing), per round, for the record and for the actions;
rows per writer; the bytes SQLite uses for ``text_operations`` (``dbstat``: its pages and its
key's index) and for ``events`` per writer; and, as a check, that every line, draft and turn
matched its record (the events' ``record``) and that the stored rows reconstruct every
submitted turn. Results: ``bench/results/keystrokes.md`` and ``keystrokes.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.deployment import WRITING, app_processes, write_studies
from bench.participants import Ledger, Writer
from bench.typist import Typist
from cyoa import store
from cyoa.cowriting.flow import normalize_text
from cyoa.cowriting.process.operations import reconstruct

RESULTS = Path(__file__).resolve().parent / "results"
ROUNDS = 5
# Sentences of the kind writers write (first lines and turns of short stories).
SENTENCES = (
    "The lighthouse keeper had not seen a ship in forty years.",
    "Rain hammered the windows while Mara counted the coins on the table.",
    "Nobody in the village remembered who had planted the orchard.",
    "He folded the letter twice and slid it under the door of room nine.",
    "By morning the river had risen to the second step of the church.",
    "The dog barked once, then sat down in the snow and waited.",
    "She had promised her brother she would never open the blue box, and for eleven years "
    "she had kept that promise.",
    "At the edge of the market an old man sold maps of places that did not exist.",
    "The train stopped in the middle of a field and the lights went out.",
    "I found the key in the pocket of a coat I had never worn.",
)
CLAUSES = (
    " and nobody said a word",
    ", just as the bell rang",
    " before the sun came up",
    ", which surprised everyone",
    " while the others slept",
)
SURVEY = {
    "happy": 4,
    "collaborative": 4,
    "useful": 3,
    "connected": 4,
    "ideas": 3,
    "why_chosen": "It fit the story.",
    "looking_for": "Surprises.",
}


def wire_bytes(message: dict[str, Any]) -> int:
    """The bytes of a message's JSON as the browser sends it (JSON.stringify: no spaces,
    UTF-8)."""
    return len(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode())


def write_story(writer: Writer, rng: random.Random) -> dict[str, Any]:
    """One writer's story, typed key by key; the bytes it sent, per round and kind."""
    typist = Typist(rng, int(time.time() * 1000), seq=writer.record_setting["next_seq"] - 1)
    sent = {"record": [0] * ROUNDS, "actions": [0] * ROUNDS, "batches": 0}

    def record(number: int) -> None:
        for batch in typist.batches():
            sent["record"][number - 1] += wire_bytes({"operations": batch})
            sent["batches"] += 1
            assert writer.record(batch)["ok"]

    def act(number: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        payload = {**payload, "round": number}
        sent["actions"][number - 1] += wire_bytes({"type": kind, "payload": payload})
        return writer.act(kind, payload)

    for number in range(1, ROUNDS + 1):
        line = typist.type_text(number, "line", None, "", rng.choice(SENTENCES), pause_ms=4000)
        record(number)
        act(number, "line_submitted", {"text": line, "record_seq": typist.seq})
        view = writer.wait_for("choosing", number)
        texts = {s["slot"]: s["text"] for s in view["current"]["suggestions"]}
        for slot in (1, 2):
            typist.view(number, slot, "visible")
        for slot in (1, 2):
            typist.view(number, slot, "focus")
            typist.view(number, slot, "blur")
        slot = rng.choice((1, 2))
        if rng.random() < 1 / 3:  # tried the other one first, then switched
            other = 3 - slot
            typist.view(number, other, "focus")
            act(number, "suggestion_chosen", {"slot": other})
            typist.type_text(number, "edit", other, texts[other], " perhaps")
            record(number)
            typist.view(number, other, "blur")
        typist.view(number, slot, "focus")
        act(number, "suggestion_chosen", {"slot": slot})
        kept = texts[slot].rstrip(".!?")
        cut = kept.rsplit(" ", 1)[0] if " " in kept else kept
        typist.change(number, "edit", slot, texts[slot], cut)
        half = typist.type_text(number, "edit", slot, cut, rng.choice(CLAUSES))
        record(number)
        act(number, "draft_saved", {"slot": slot, "text": half, "record_seq": typist.seq})
        turn = typist.type_text(number, "edit", slot, half, ".")
        record(number)
        act(number, "turn_submitted", {"text": turn, "record_seq": typist.seq})
    writer.wait_for("survey", ROUNDS)
    writer.act("survey_submitted", {"answers": SURVEY})
    return sent


def stored_figures(database: str) -> dict[str, Any]:
    """Rows and SQLite bytes of the record and of the events; the record checks' outcomes;
    whether the rows reconstruct every submitted line and turn."""
    db = store.connect(database)
    try:
        size = {
            name: db.execute(
                "SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name = ? OR name LIKE ?",
                [name, f"sqlite_autoindex_{name}_%"],
            ).fetchone()[0]
            for name in ("text_operations", "events")
        }
        sessions = [r["id"] for r in db.query("SELECT id FROM sessions")]
        checks, rebuilt, rows = [], 0, 0
        for session in sessions:
            ops = list(
                db.query(
                    "SELECT * FROM text_operations WHERE session_id = ? ORDER BY seq", [session]
                )
            )
            rows += len(ops)
            events = [
                json.loads(e["payload"])
                for e in db.query("SELECT payload FROM events WHERE session_id = ?", [session])
            ]
            checks += [e["record"]["matches"] for e in events if "record" in e]
            shown = {
                (s["round"], s["slot"]): s["text"]
                for s in db.query(
                    "SELECT round, slot, text FROM suggestions WHERE session_id = ?", [session]
                )
            }
            texts = reconstruct(ops, shown)
            for r in db.query("SELECT * FROM rounds WHERE session_id = ?", [session]):
                line = normalize_text(texts[(r["round"], "line", None)])
                turn = normalize_text(texts[(r["round"], "edit", r["chosen_slot"])])
                rebuilt += line == r["writer_line"] and turn == r["final_text"]
    finally:
        db.close()
    return {
        "sessions": len(sessions),
        "rows": rows,
        "bytes": size,
        "checks": len(checks),
        "checks_matching": sum(checks),
        "rounds_rebuilt": rebuilt,
    }


def run(writers: int, seed: int) -> dict[str, Any]:
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cyoa-keys-")))
        database = str(root / "cyoa.sqlite")
        setup = write_studies(root, database, rounds=ROUNDS)
        (process,) = stack.enter_context(app_processes(root, setup, 1))
        sent = []
        for n in range(writers):
            writer = Writer([process.url], WRITING, f"keys-{n}", Ledger())
            try:
                sent.append(write_story(writer, random.Random(seed + n)))
            finally:
                writer.close()
        stored = stored_figures(database)
    record_rounds = [b for s in sent for b in s["record"]]
    action_rounds = [b for s in sent for b in s["actions"]]
    return {
        "writers": writers,
        "rounds_per_writer": ROUNDS,
        "record_bytes_per_round": _spread(record_rounds),
        "action_bytes_per_round": _spread(action_rounds),
        "batches_per_writer": statistics.mean(s["batches"] for s in sent),
        "rows_per_writer": stored["rows"] / writers,
        "record_bytes_stored_per_writer": stored["bytes"]["text_operations"] / writers,
        "events_bytes_stored_per_writer": stored["bytes"]["events"] / writers,
        "stored": stored,
    }


def _spread(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "mean": round(statistics.mean(ordered), 1),
        "p50": ordered[len(ordered) // 2],
        "max": ordered[-1],
    }


def render_markdown(result: dict[str, Any]) -> str:
    """The benchmark's page: the command, the table, what was checked."""
    r, s = result, result["stored"]
    kib = 1024
    rows_per_round = r["rows_per_writer"] / r["rounds_per_writer"]
    wire_row = r["record_bytes_per_round"]["mean"] / rows_per_round
    stored_row = r["record_bytes_stored_per_writer"] / r["rows_per_writer"]
    lines = [
        "# The keystroke record's cost",
        "",
        f"`{r['command']}` — {r['finished']}, {r['machine']['cpus']} CPUs, Python "
        f"{r['machine']['python']}; load average at start {r['load_average_start']}. Script: "
        "[bench/keystrokes.py](../keystrokes.py), whose docstring says what the typical "
        "writer does.",
        "",
        "| per typical writer | figure |",
        "|---|---|",
        f"| record sent per round (bytes: mean, median, largest) | "
        f"{r['record_bytes_per_round']['mean']:,.0f}, {r['record_bytes_per_round']['p50']:,}, "
        f"{r['record_bytes_per_round']['max']:,} |",
        f"| actions sent per round, for scale (bytes: mean) | "
        f"{r['action_bytes_per_round']['mean']:,.0f} |",
        f"| record batches per writer (messages) | {r['batches_per_writer']:.1f} |",
        f"| record rows per writer ({r['rounds_per_writer']} rounds) | "
        f"{r['rows_per_writer']:,.0f} |",
        f"| SQLite storage of the record per writer (KiB, table and key) | "
        f"{r['record_bytes_stored_per_writer'] / kib:,.1f} |",
        f"| SQLite storage of the events per writer, for scale (KiB) | "
        f"{r['events_bytes_stored_per_writer'] / kib:,.1f} |",
        "",
        f"Checked: {s['checks_matching']} of {s['checks']} record checks (every line, draft "
        f"and turn) matched, and the stored rows reconstruct {s['rounds_rebuilt']} of "
        f"{s['sessions'] * r['rounds_per_writer']} rounds' line and turn exactly.",
        "",
        "## Reading the table",
        "",
        f"- A row is about {wire_row:.0f} bytes on the wire and {stored_row:.0f} bytes in "
        "SQLite: one keystroke is one row (its text is a character or two), so a round's "
        f"record grows with the keys pressed, a kilobyte on the wire per {1024 / wire_row:.0f}.",
        "- The batches go through the page's outbox like the actions: each is one message "
        "the server answers after its commit, so a writer's messages grow by the batches "
        "(a batch costs the server about what an action does); their effect on capacity is "
        "on [capacity.md](capacity.md), measured with the record on and off.",
        "- A study that sets `record_keystrokes = false` sends and stores none of it.",
        "",
        *_capacity_lines(result.get("capacity") or []),
        "Raw figures: [keystrokes.json](keystrokes.json).",
        "",
    ]
    return "\n".join(lines)


def capacity_runs(folders: list[Path]) -> list[dict[str, Any]]:
    """The runs of bench/capacity.py kept in ``folders`` (each its ``--results``), in the
    order given: the record off and on, interleaved in one sitting."""
    runs = []
    for folder in folders:
        for run in json.loads((folder / "capacity.json").read_text()).values():
            runs.append(
                {
                    "config": run["config"],
                    "command": run["command"],
                    "load_average_start": run["load_average_start"],
                    "largest_held": run["largest_held"],
                    "steps": [
                        {
                            "participants": step["participants"],
                            "held": step["held"],
                            "p95_s": step["all"]["p95_s"],
                            "p99_s": step["all"]["p99_s"],
                            "messages": step["all"]["n"],
                            "app_cpu_cores": step["app_cpu_cores"][0],
                        }
                        for step in run["steps"]
                    ],
                }
            )
    return runs


def _capacity_lines(runs: list[dict[str, Any]]) -> list[str]:
    if not runs:
        return []
    lines = [
        "## Capacity with the record on and off",
        "",
        "bench/capacity.py, one app process on SQLite, the record off and on in turn in one "
        "sitting (`--record off|on`, otherwise the same command); per run its first step "
        "(the step every run reached) and the largest number of participants held.",
        "",
        "| run | load average at start | largest held | first step: participants, "
        "p95 / p99 (ms), messages, app CPU (cores) |",
        "|---|---|---|---|",
    ]
    for run in runs:
        first = run["steps"][0]
        lines.append(
            f"| {run['config']} | {run['load_average_start']} | {run['largest_held'] or 'none'} | "
            f"{first['participants']}, {first['p95_s'] * 1000:.0f} / "
            f"{first['p99_s'] * 1000:.0f}, {first['messages']}, {first['app_cpu_cores']} |"
        )
    lines += ["", f"Command of the last run: `{runs[-1]['command']}`.", ""]
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_mode.setdefault(run["config"].rsplit(" ", 1)[-1], []).append(run)
    if {"on", "off"} <= set(by_mode):
        cpu = {
            m: statistics.mean(r["steps"][0]["app_cpu_cores"] for r in by_mode[m]) for m in by_mode
        }
        sent = {m: statistics.mean(r["steps"][0]["messages"] for r in by_mode[m]) for m in by_mode}
        lines.append(
            f"At the first step the app process used {cpu['off']:.3f} cores with the record off "
            f"and {cpu['on']:.3f} with it on ({(cpu['on'] / cpu['off'] - 1) * 100:+.0f}%), for "
            f"{sent['off']:.0f} and {sent['on']:.0f} messages."
        )
        held = {m: [r["largest_held"] or 0 for r in by_mode[m]] for m in by_mode}
        if any(len(set(h)) > 1 for h in held.values()):
            lines.append(
                "Runs of the same setting held from "
                + " and from ".join(f"{min(h)} to {max(h)} ({m})" for m, h in held.items())
                + " participants: on this machine its load, not the setting, decided the "
                "largest number held."
            )
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument(
        "--capacity",
        type=Path,
        nargs="+",
        help="add these bench/capacity.py --results folders to the stored page; run no writer",
    )
    args = parser.parse_args(argv)
    if args.capacity:
        path = args.results / "keystrokes.json"
        result = json.loads(path.read_text()) | {"capacity": capacity_runs(args.capacity)}
        path.write_text(json.dumps(result, indent=2) + "\n")
        (args.results / "keystrokes.md").write_text(render_markdown(result))
        return
    started = [round(x, 2) for x in os.getloadavg()]
    result = run(args.writers, args.seed)
    result |= {
        "command": "python bench/keystrokes.py "
        + shlex.join(sys.argv[1:] if argv is None else argv),
        "finished": time.strftime("%Y-%m-%d %H:%M"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "load_average_start": started,
    }
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "keystrokes.json").write_text(json.dumps(result, indent=2) + "\n")
    (args.results / "keystrokes.md").write_text(render_markdown(result))
    print(render_markdown(result))


if __name__ == "__main__":
    main()
