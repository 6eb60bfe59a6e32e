"""Benchmark: the whole ``analyze`` of a synthetic experiment, and each metric's throughput.

    .venv/bin/python bench/analysis.py                  # 20,000 writers × 5 rounds
    .venv/bin/python bench/analysis.py --writers 2000   # a quicker run

Builds a synthetic experiment in a temporary SQLite file through the real import path
(``import_tsv``: every event recorded, as for imported studies, then ``tag_experiment``: its
sentences tagged for the text metrics, as ``python -m cyoa import-tsv`` does and as the
running app does while writers write). Then times ``load_study`` + ``analyze`` + ``render``
(what ``python -m cyoa analyze`` does) three times: the whole analysis of the experiment as
stored (the headline figure), after 1% of the tagged sentences are forgotten (a study analysed
again after more writing that the background tagger has not reached yet), and with nothing
tagged at all (the ``sentence_tags`` table emptied: the worst case, where the analysis tags
every sentence itself). Then it measures each metric alone on a sample. Prints the figures and
writes ``bench/results/analysis.json`` and ``bench/results/analysis.md``.

The synthetic texts are varied on purpose: sentences are drawn from a small grammar over
some hundred nouns, verbs, adjectives and names, so that (as in a real study) nearly every
sentence is different and no cache of identical texts can make the analysis look faster. The
share of distinct sentences is reported.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cyoa import store  # noqa: E402
from cyoa.cowriting.analysis.data import load_study  # noqa: E402
from cyoa.cowriting.analysis.render import render  # noqa: E402
from cyoa.cowriting.analysis.tables import analyze  # noqa: E402
from cyoa.cowriting.analysis.tag_cache import SentenceTagCache, tag_experiment  # noqa: E402
from cyoa.cowriting.analysis.tsv import WriterRow, import_tsv, write_cyoa_tsv  # noqa: E402
from cyoa.metrics import text as text_metrics  # noqa: E402
from cyoa.metrics.edit import (  # noqa: E402
    edit_distance,
    edit_metrics_many,
    jaccard,
    jaccard_normalized,
    user_metric,
)
from cyoa.stats import clustered_preference  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _words(text: str) -> list[str]:
    return text.split()


NAMES = _words(
    "Mara Jonah Elsie Tobias Priya Wendell Ines Caleb Rosa Anselm Nadia Felix Hana Otto Lucia "
    "Bram Zora Emil Greta Idris Saoirse Mateo Yuki Dmitri Amara Silas Freya Kofi Maeve Rafael"
)
NOUNS = _words(
    "door window lantern river forest castle garden kitchen letter knife ship harbor storm "
    "mountain village tower bridge road horse dog cat bird wolf stone key map coin candle fire "
    "table chair book mirror clock bell rope boat island cave tunnel field barn fence gate roof "
    "wall floor stair cellar attic train station ticket coat hat boot glove ring necklace box "
    "bottle cup plate bread apple soup wine milk cheese market shop street city sky moon sun "
    "star cloud rain snow wind ice sand beach wave shore cliff valley hill lake pond well "
    "church school office hospital prison palace temple library museum theater photograph "
    "painting song voice whisper shadow light darkness silence noise smell blood bone skull "
    "feather leaf branch root flower seed tree grass meadow orchard vineyard wheel cart "
    "hammer nail saw axe shovel bucket basket blanket pillow bed curtain carpet lamp radio "
    "telephone computer machine engine robot soldier captain king queen princess witch "
    "doctor nurse teacher student farmer baker sailor pilot detective thief stranger child "
    "mother father brother sister uncle grandmother friend neighbor enemy ghost dragon"
)
VERBS = _words(
    "opened closed found lost carried dropped watched followed touched pushed pulled "
    "grabbed lifted buried painted burned broke fixed cleaned hid stole bought sold "
    "remembered forgot noticed ignored answered called warned thanked kissed hugged "
    "chased caught threw kicked climbed crossed entered left reached searched"
)
INTRANSITIVE = _words(
    "laughed cried waited slept smiled screamed shivered sighed paused hesitated froze "
    "trembled whispered wandered listened danced sang prayed fell ran walked"
)
ADJECTIVES = _words(
    "old young dark bright cold warm heavy light quiet loud strange familiar broken rusty "
    "wooden golden silver tiny huge narrow wide empty crowded ancient secret hidden wet dry "
    "bitter sweet gentle cruel tired hungry lonely careful curious nervous proud"
)
ADVERBS = _words(
    "slowly quickly quietly carefully suddenly finally softly nervously angrily gently "
    "silently eagerly reluctantly"
)
PLACES = (
    "near the {n}",
    "behind the {n}",
    "under the {n}",
    "inside the {a} {n}",
    "across the {n}",
    "beside the {n}",
    "at the edge of the {n}",
)


def _np(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}"
    return f"{rng.choice(['the', 'a', 'her', 'his', 'their'])} {rng.choice(NOUNS)}"


def sentence(rng: random.Random) -> str:
    """One varied story sentence (about 8–30 words)."""
    subject = rng.choice(NAMES) if rng.random() < 0.5 else _np(rng).capitalize()
    inner = subject if subject in NAMES else subject[0].lower() + subject[1:]
    place = rng.choice(PLACES).format(n=rng.choice(NOUNS), a=rng.choice(ADJECTIVES))
    templates = (
        lambda: f"{subject} {rng.choice(VERBS)} {_np(rng)} {place}.",
        lambda: f"{subject} {rng.choice(ADVERBS)} {rng.choice(VERBS)} {_np(rng)}.",
        lambda: (
            f"{subject} {rng.choice(INTRANSITIVE)} {place}, and {_np(rng)} "
            f"{rng.choice(INTRANSITIVE)}."
        ),
        lambda: (
            f"When {_np(rng)} {rng.choice(INTRANSITIVE)}, {inner} {rng.choice(VERBS)} {_np(rng)}."
        ),
        lambda: f"{subject} had never seen {_np(rng)} so {rng.choice(ADJECTIVES)} before.",
        lambda: (
            f'"{rng.choice(["Wait", "Look", "Run", "Listen", "Stop"])}!" '
            f"{rng.choice(['said', 'shouted', 'whispered'])} {rng.choice(NAMES)}, and "
            f"{rng.choice(VERBS)} {_np(rng)} {place}."
        ),
        lambda: (
            f"{subject} {rng.choice(VERBS)} {_np(rng)} and {rng.choice(VERBS)} "
            f"{_np(rng)} {place} while {_np(rng)} {rng.choice(INTRANSITIVE)}."
        ),
    )
    text = rng.choice(templates)()
    if rng.random() < 0.4:
        # A trailing clause, so that sentences are as long as story sentences usually are.
        clause = f", as {_np(rng)} {rng.choice(INTRANSITIVE)} {rng.choice(PLACES)}"
        text = text[:-1] + clause.format(n=rng.choice(NOUNS), a=rng.choice(ADJECTIVES)) + "."
    return text


def edit(text: str, rng: random.Random) -> str:
    """A writer's edit of a suggestion: kept, trimmed, reworded, extended or rewritten."""
    words = text.split()
    roll = rng.random()
    if roll < 0.25:
        return text
    if roll < 0.45 and len(words) > 4:
        del words[rng.randrange(1, len(words) - 1)]
    elif roll < 0.7:
        words[rng.randrange(len(words))] = rng.choice(NOUNS + ADJECTIVES)
    elif roll < 0.9:
        words[-1] = words[-1].rstrip(".!?") + ","
        words += f"and {rng.choice(INTRANSITIVE)} {rng.choice(ADVERBS)}.".split()
    else:
        return sentence(rng)
    return " ".join(words)


def synthetic_rows(writers: int, seed: int = 2021) -> list[WriterRow]:
    """``writers`` complete 5-round stories; the model is chosen in about 60% of rounds."""
    rng = random.Random(seed)
    rows = []
    for index in range(writers):
        model = tuple(sentence(rng) for _ in range(5))
        baseline = tuple(sentence(rng) for _ in range(5))
        accepted = tuple("true" if rng.random() < 0.6 else "false" for _ in range(5))
        chosen = [
            m if a == "true" else b for m, b, a in zip(model, baseline, accepted, strict=True)
        ]
        rows.append(
            WriterRow(
                writer=f"writer{index:06d}",
                model_lines=model,
                baseline_lines=baseline,
                user_lines=tuple(sentence(rng) for _ in range(5)),
                user_edits=tuple(edit(text, rng) for text in chosen),
                is_model_accepted=accepted,
                likert=tuple(rng.choice((1, 2, 3, 4, 4, 5, 5)) for _ in range(5)),
            )
        )
    return rows


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")


def _timed(func):
    start = time.perf_counter()
    result = func()
    return result, time.perf_counter() - start


def throughput(rows: list[WriterRow], sample_pairs: int, sample_texts: int) -> dict:
    """Each metric alone, single process unless said, on a sample of the synthetic data."""
    pairs = [
        (
            row.model_lines[i] if row.is_model_accepted[i] == "true" else row.baseline_lines[i],
            row.user_edits[i],
        )
        for row in rows
        for i in range(5)
    ][:sample_pairs]
    texts = [" ".join(row.model_lines) for row in rows][:sample_texts]
    figures = {}
    for name, func in (
        ("edit_distance", edit_distance),
        ("jaccard", jaccard),
        ("jaccard_normalized", jaccard_normalized),
        ("user (cyoa-2021)", lambda o, e: user_metric(o, e, "cyoa-2021")),
    ):
        _, seconds = _timed(lambda func=func: [func(o, e) for o, e in pairs])
        figures[f"{name} pairs/s"] = _rate(len(pairs), seconds)
    _, seconds = _timed(lambda: edit_metrics_many(pairs))
    figures["all 8 edit columns pairs/s"] = _rate(len(pairs), seconds)
    split, seconds = _timed(lambda: text_metrics.split_sentences_many(texts))
    figures["sentence split texts/s"] = _rate(len(texts), seconds)
    _, seconds = _timed(lambda: [text_metrics.distinct_n(t, n) for t in texts for n in (1, 2, 3)])
    figures["distinct-1/2/3 texts/s"] = _rate(len(texts), seconds)
    sentences = [s for text_sentences in split for s in text_sentences]
    text_metrics._tagger()
    _, seconds = _timed(lambda: text_metrics._tag_lemmas(sentences))
    figures["spaCy tagging sentences/s (1 process)"] = _rate(len(sentences), seconds)
    figures["spaCy tagging texts/s (1 process, 5 sentences each)"] = _rate(len(texts), seconds)
    shares = [(sum(a == "true" for a in row.is_model_accepted), 5) for row in rows]
    _, seconds = _timed(lambda: clustered_preference(shares))
    figures[f"writer bootstrap, {len(rows)} writers × 10,000 resamples (s)"] = round(seconds, 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, default=20_000)
    parser.add_argument("--compat", action="store_true", help="also time --compat cyoa-2021")
    parser.add_argument("--no-write", action="store_true", help="print only, write no results")
    args = parser.parse_args()

    rows, generate_seconds = _timed(lambda: synthetic_rows(args.writers))
    all_sentences = [
        s
        for row in rows
        for group in (row.model_lines, row.baseline_lines, row.user_lines)
        for s in group
    ]
    distinct_share = len(set(all_sentences)) / len(all_sentences)
    words_per_sentence = sum(len(s.split()) for s in all_sentences) / len(all_sentences)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.sqlite"
        db = store.connect(path)
        # A throwaway file: no need to wait for the disk at each commit.
        db.execute("PRAGMA synchronous = OFF")
        text = write_cyoa_tsv(rows, 5, 5)
        _, import_seconds = _timed(lambda: import_tsv(db, text, "bench", source="synthetic"))
        print(f"built {args.writers} writers in {import_seconds:.1f} s (import_tsv)", flush=True)
        cpu_before = _cpu_seconds()
        tagged_ahead, tag_seconds = _timed(
            lambda: tag_experiment(db, "bench", workers=os.cpu_count() or 1)
        )
        tag_cpu = _cpu_seconds() - cpu_before
        db.close()
        print(f"tagged {tagged_ahead} sentences at import in {tag_seconds:.1f} s", flush=True)

        def run(compat: str | None) -> tuple[dict, float]:
            """What ``python -m cyoa analyze bench`` does: load, analyze (tagged sentences
            kept in the database), render."""
            timings = {}
            cpu_before = _cpu_seconds()
            load_before = os.getloadavg()[0]
            start = time.perf_counter()
            db = store.connect(path)
            data, timings["load_study (s)"] = _timed(lambda: load_study(db, "bench"))
            cache = SentenceTagCache(db)
            analysis, timings["analyze (s)"] = _timed(
                lambda: analyze(data, compat=compat, cache=cache)
            )
            db.close()
            _, timings["render markdown (s)"] = _timed(lambda: render([analysis], "markdown"))
            total = time.perf_counter() - start
            timings = {k: round(v, 2) for k, v in timings.items()}
            timings["sentences tagged"] = cache.stored
            timings["sentences from the cache"] = cache.hits
            # CPU time of this process and its workers: what the work costs whatever else
            # runs on the machine; the load averages say how busy the machine was.
            timings["cpu seconds (all processes)"] = round(_cpu_seconds() - cpu_before, 1)
            timings["load average before, after"] = [
                round(load_before, 2),
                round(os.getloadavg()[0], 2),
            ]
            return timings, total

        def forget(where: str) -> None:
            db = store.connect(path)
            with store.write_transaction(db):
                db.execute(f"DELETE FROM sentence_tags {where}")
            db.close()

        runs = {}
        timings, total = run(None)
        runs["as stored"] = {"total_seconds": round(total, 2), "steps": timings}
        print(f"analyze: {total:.1f} s  {timings}", flush=True)
        # As when a running study is analysed again after more writing that the background
        # tagger has not reached yet: 1% of the tagged sentences are forgotten.
        forget("WHERE rowid % 100 = 0")
        timings, incremental = run(None)
        runs["one percent new"] = {"total_seconds": round(incremental, 2), "steps": timings}
        print(f"analyze with 1% new sentences: {incremental:.1f} s  {timings}", flush=True)
        # The worst case: nothing tagged ahead (imported with --no-tag, or the table dropped).
        forget("")
        timings, cold = run(None)
        runs["nothing tagged"] = {"total_seconds": round(cold, 2), "steps": timings}
        print(f"analyze with nothing tagged: {cold:.1f} s  {timings}", flush=True)
        compat = None
        if args.compat:
            compat_timings, compat_total = run("cyoa-2021")
            compat = {"total_seconds": round(compat_total, 2), "steps": compat_timings}
            print(f"analyze --compat cyoa-2021: {compat_total:.1f} s  {compat_timings}", flush=True)

    figures = throughput(rows, sample_pairs=20_000, sample_texts=2_000)
    for name, value in figures.items():
        print(f"  {name}: {value:,}")
    result = {
        "writers": args.writers,
        "rounds": args.writers * 5,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "distinct_sentence_share": round(distinct_share, 4),
        "words_per_sentence": round(words_per_sentence, 1),
        "generate_seconds": round(generate_seconds, 2),
        "import_seconds": round(import_seconds, 2),
        "tag_at_import": {
            "sentences": tagged_ahead,
            "seconds": round(tag_seconds, 2),
            "cpu_seconds": round(tag_cpu, 1),
        },
        "analyze_total_seconds": runs["as stored"]["total_seconds"],
        "runs": runs,
        "target_seconds": 60,
        "target_met": runs["as stored"]["total_seconds"] <= 60,
        "compat": compat,
        "throughput_single_process": figures,
    }
    if not args.no_write:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / "analysis.json").write_text(json.dumps(result, indent=2) + "\n")
        (RESULTS / "analysis.md").write_text(markdown(result))
        print(f"wrote {RESULTS / 'analysis.json'} and {RESULTS / 'analysis.md'}")


def markdown(result: dict) -> str:
    """The bench result as a short Markdown report."""
    lines = [
        "# Analysis benchmark",
        "",
        "`.venv/bin/python bench/analysis.py"
        + ("" if result["writers"] == 20_000 else f" --writers {result['writers']}")
        + (" --compat" if result["compat"] else "")
        + "`",
        "",
        f"- {result['writers']:,} writers, {result['rounds']:,} rounds; "
        f"{result['machine']['cpus']} CPUs, Python {result['machine']['python']}",
        f"- distinct sentences: {100 * result['distinct_sentence_share']:.1f}%, "
        f"{result['words_per_sentence']} words per sentence on average",
        f"- building the database (import_tsv, every event): {result['import_seconds']} s",
        f"- tagging its {result['tag_at_import']['sentences']:,} distinct sentences at import "
        f"(tag_experiment, {result['machine']['cpus']} processes; what `import-tsv` does, and "
        f"what the app does in the background while writers write): "
        f"{result['tag_at_import']['seconds']} s, "
        f"{result['tag_at_import']['cpu_seconds']} CPU seconds",
        f"- **whole analyze of the experiment as stored: "
        f"{result['analyze_total_seconds']} s** (target 60 s: "
        + ("met" if result["target_met"] else "missed")
        + ")",
    ]
    labels = {
        "as stored": "of the experiment as stored (its sentences tagged at import)",
        "one percent new": "after 1% of the tagged sentences are forgotten (a running study "
        "analysed again before the background tagger has reached its newest sentences)",
        "nothing tagged": "with nothing tagged (`sentence_tags` emptied, or imported with "
        "`--no-tag`: the analysis tags every sentence itself)",
    }
    for name, run in result["runs"].items():
        lines.append(f"- analyze {labels[name]}: **{run['total_seconds']} s**")
        for step, value in run["steps"].items():
            lines.append(f"  - {step}: {value}")
    if result["compat"]:
        lines.append(f"- analyze --compat cyoa-2021: {result['compat']['total_seconds']} s")
        for step, value in result["compat"]["steps"].items():
            lines.append(f"  - {step}: {value}")
    lines += ["", "Throughput of each metric alone (one process):", ""]
    lines += ["| metric | figure |", "|---|---|"]
    for name, value in result["throughput_single_process"].items():
        lines.append(f"| {name} | {value:,} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
