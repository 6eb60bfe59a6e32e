"""Words of any script for the co-writing metrics: what each candidate rule finds, and what it
costs, in English, Arabic (with vowel marks) and Chinese (docs/analysis.md, "A study in
another language").

    .venv/bin/python bench/word_rules.py    # bench/results/word-rules.{md,json}

Candidates, each on about 200,000 characters of each language (a few story sentences,
repeated):

- ``str.split``: the papers' English words (whitespace);
- ``re \\w+``: Python's own regular expressions, which cut Arabic words at their vowel marks;
- ``\\w runs, unspaced scripts per character``: the ``regex`` package's Unicode ``\\w``
  (letters with their marks), one character a word in Han, Hiragana, Katakana and Thai;
- ``words()``: :func:`cyoa.metrics.tokens.words`, the rule the metrics use: the ``regex``
  package's Unicode default word boundaries (UAX #29), the segments holding a word character.

For each: the words found and the best of 5 runs in milliseconds. The figures are
wall-clock times: run it on a quiet machine.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import regex

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cyoa.metrics.tokens import words  # noqa: E402

TEXTS = {
    "English": "The lighthouse keeper found a letter on the rocks. It was addressed to him, "
    "in his dead wife's handwriting. He sat down on the wet stone and read it twice. ",
    "Arabic": "وَجَدَ حارسُ المنارةِ رسالةً على الصخور. كانت موجّهةً إليه، بخطِّ زوجته الراحلة. "
    "جلس على الحجر المبلّل وقرأها مرّتين. ",
    "Chinese": "灯塔看守人在岩石上发现了一封信。信是写给他的，是他亡妻的笔迹。"
    "他坐在湿石头上，把信读了两遍。",
}
CHARACTERS = 200_000
REPEATS = 5
_STDLIB_WORD = re.compile(r"\w+")
_UNSPACED = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}"
_SCRIPT_RUNS = regex.compile(rf"[{_UNSPACED}]\p{{M}}*|[\w--[{_UNSPACED}]]+", regex.V1)

CANDIDATES: dict[str, Callable[[str], list[str]]] = {
    "str.split": str.split,
    "re \\w+": _STDLIB_WORD.findall,
    "\\w runs, unspaced scripts per character": _SCRIPT_RUNS.findall,
    "words() (UAX #29)": words,
}


def _best_ms(tokenize: Callable[[str], list[str]], text: str) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        started = time.perf_counter()
        tokenize(text)
        best = min(best, time.perf_counter() - started)
    return round(best * 1000, 1)


def measure() -> list[dict]:
    rows = []
    for language, sample in TEXTS.items():
        text = sample * (CHARACTERS // len(sample) + 1)
        for name, tokenize in CANDIDATES.items():
            rows.append(
                {
                    "language": language,
                    "rule": name,
                    "characters": len(text),
                    "words": len(tokenize(text)),
                    "sample_words": tokenize(sample)[:6],
                    "ms": _best_ms(tokenize, text),
                }
            )
    return rows


def main() -> None:
    rows = measure()
    results = ROOT / "bench" / "results"
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M")
    (results / "word-rules.json").write_text(
        json.dumps({"when": stamp, "cpus": os.cpu_count(), "rows": rows}, ensure_ascii=False,
                   indent=2) + "\n", encoding="utf-8"
    )  # fmt: skip
    table = [
        "| language | rule | words | first words of the sample | ms |",
        "|---|---|---|---|---|",
        *(
            f"| {r['language']} | {r['rule']} | {r['words']:,} | "
            f"{' · '.join(r['sample_words'])} | {r['ms']} |"
            for r in rows
        ),
    ]
    doc = (__doc__ or "").split("\n\n", 2)[2]
    page = [
        "# Words of any script",
        "",
        f"`.venv/bin/python bench/word_rules.py` — {stamp}, {os.cpu_count()} CPUs.",
        "",
        doc.strip(),
        "",
        *table,
        "",
        f"Load average (1, 5, 15 min) at the end: {[round(x, 2) for x in os.getloadavg()]}",
        "",
    ]
    (results / "word-rules.md").write_text("\n".join(page), encoding="utf-8")
    print("\n".join(table))


if __name__ == "__main__":
    main()
