"""A co-writing study as preference data for model builders: each round is a preference pair
with the writer's own edit beside it.

One row per writer × submitted round with two suggestions: ``prompt`` (the story so far, as
the models saw it before the model card's template: every turn up to and with the writer's
line of the round, as :func:`cyoa.generation.text.story_as_models_see_it` gives it to them,
joined by one space and cleaned, with a full stop added when the last turn does not end a
sentence), ``chosen`` (the suggestion the writer took, as the model
wrote it), ``rejected`` (the other one) and ``edited`` (what the writer added after editing
the chosen one), with the systems, slot, writer, round, study, licence and consent time.

The names are those of TRL's "preference" dataset type in its standard (not conversational)
format, explicit prompt: ``{"prompt", "chosen", "rejected"}``, which TRL's DPO and reward
trainers read (huggingface.co/docs/trl, "Dataset formats and types", v0.12–v0.17; checked
against that page). The completions do not begin with a space: put one between prompt and
completion when concatenating, as :func:`cyoa.generation.text.build_prompt` does. The other
columns are extra; TRL's trainers ignore what they do not use. ``edited`` is the human edit of
``chosen``, a third completion no peer's preference data has (Clark & Smith, NAACL 2021, §3:
the writer edits the suggestion they took).

Rounds with one suggestion only (the other failed) are left out: there is no pair. Writers
appear as ``writer-1``, ``writer-2``, … in the order they started, never by their platform id.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from typing import Any

from cyoa import store
from cyoa.cowriting.research.exports import preference_rows, session_rows
from cyoa.db.facade import Db
from cyoa.generation.text import story_as_models_see_it
from cyoa.web.columns import Column
from cyoa.web.tables import ExportError, to_jsonl, to_parquet

FORMATS = ("jsonl", "parquet", "zip")
NO_LICENCE = "not stated"

COLUMNS: tuple[Column, ...] = (
    Column(
        "prompt",
        "string",
        "the story so far as the models saw it, up to and with the writer's line: turns"
        " joined by one space, cleaned, a full stop added if the last turn ends no sentence",
    ),
    Column("chosen", "string", "the suggestion the writer took, as the model wrote it"),
    Column("rejected", "string", "the other suggestion of the round, as the model wrote it"),
    Column("edited", "string", "what the writer added: the chosen suggestion after their edit"),
    Column("chosen_system", "string", "system of the chosen suggestion"),
    Column("rejected_system", "string", "system of the rejected suggestion"),
    Column("chosen_model", "string", "model card of the chosen suggestion"),
    Column("rejected_model", "string", "model card of the rejected suggestion"),
    Column("chosen_slot", "int", "slot (1 or 2, the order on the page) of the chosen one"),
    Column("writer", "string", "writer-1, writer-2, … in the order they started (no platform id)"),
    Column("session_id", "string", "the writing session (→ sessions.id in the study's exports)"),
    Column("round", "int", "round number, 1-based"),
    Column("study", "string", "experiment id"),
    Column("licence", "string", "the licence of the dataset, as the researcher gave it"),
    Column("consented_at", "string", "when the writer agreed to the card's consent text (UTC)"),
)


def preference_pairs(
    db: Db, exp_id: str, licence: str = NO_LICENCE
) -> tuple[list[dict[str, Any]], int]:
    """The rows (:data:`COLUMNS`) of ``exp_id``, in session order, and how many submitted
    rounds were left out because they had one suggestion only."""
    consented = {s["session_id"]: s["started_at"] for s in session_rows(db, exp_id)}
    writers: dict[str, str] = {}
    story: dict[str, list[str]] = {}
    rows, left_out = [], 0
    for r in preference_rows(db, exp_id):
        session = r["session_id"]
        writers.setdefault(session, f"writer-{len(writers) + 1}")
        turns = story.setdefault(session, [])
        turns.append(r["writer_line"])
        prompt = story_as_models_see_it(turns)
        turns.append(r["final_text"])
        other = 3 - r["chosen_slot"]
        if r["one_suggestion_only"] or r[f"slot{other}_text"] is None:
            left_out += 1
            continue
        rows.append(
            {
                "prompt": prompt,
                "chosen": r["chosen_suggestion"],
                "rejected": r[f"slot{other}_text"],
                "edited": r["final_text"],
                "chosen_system": r["chosen_system"],
                "rejected_system": r[f"slot{other}_system"],
                "chosen_model": r["chosen_model"],
                "rejected_model": r[f"slot{other}_model"],
                "chosen_slot": r["chosen_slot"],
                "writer": writers[session],
                "session_id": session,
                "round": r["round"],
                "study": exp_id,
                "licence": licence,
                "consented_at": consented.get(session),
            }
        )
    return rows, left_out


def dataset_card(
    stored: dict[str, Any], rows: Sequence[dict[str, Any]], left_out: int, licence: str
) -> str:
    """The dataset card (README.md, Hugging Face's layout: YAML metadata, then the text):
    what a row is, how to load it into TRL, the licence, the consent text the writers
    agreed to, and what was left out. The licence is written into the YAML as a JSON string
    (JSON strings are YAML), so a colon or a line break in it cannot break the header."""
    spec = json.loads(stored["spec"])
    writers = len({r["writer"] for r in rows})
    systems = ", ".join(s["name"] for s in spec.get("systems", []))
    stated = licence != NO_LICENCE
    licence_line = (
        f"Released by the study's researchers under: {licence}."
        if stated
        else "No licence was given with this export: ask the study's researchers before you "
        "share or train on it (export again with a licence to state one)."
    )
    columns = "\n".join(f"| `{c.name}` | {c.type} | {c.description} |" for c in COLUMNS)
    consent = "\n".join(
        f"> {line}" if line else ">" for line in spec.get("consent", "").splitlines()
    )
    return f"""---
license: {json.dumps(licence if stated else "unknown")}
task_categories:
- text-generation
tags:
- preference
- dpo
- human-edits
- story-writing
---

# {stored["title"]}: preference pairs with human edits

From the co-writing study `{stored["id"]}` (CYOA; Clark & Smith, NAACL 2021): a writer wrote a
story in turns with two of the systems ({systems}); in each round both suggested a sentence, the
writer took one, edited it and added it to the story. Each row is one such round:
{len(rows)} rounds by {writers} writers. {left_out} rounds where one suggestion failed (no
pair) are left out.

## Licence

{licence_line}

## Consent

Every writer agreed to this text before writing (`consented_at` is when):

{consent or "> (the study's spec has no consent text)"}

## Use

The columns `prompt`, `chosen`, `rejected` are TRL's "preference" type (standard format,
explicit prompt), read by its DPO and reward trainers; the completions start without a space,
so join prompt and completion with one. `edited` is the writer's own edit of `chosen`.

```python
from datasets import load_dataset
pairs = load_dataset("parquet", data_files="preference-data.parquet")["train"]
```

| column | type | meaning |
|---|---|---|
{columns}
"""


def export(db: Db, exp_id: str, fmt: str, licence: str = NO_LICENCE) -> bytes:
    """The preference data of the stored experiment ``exp_id`` as JSON Lines, Parquet, or a
    zip of both with the dataset card (``README.md``)."""
    if fmt not in FORMATS:
        raise ExportError(f"Unknown format '{fmt}': use one of {', '.join(FORMATS)}.")
    stored = store.get_experiment(db, exp_id)
    if stored is None:
        raise ExportError(f"There is no experiment '{exp_id}' in this database: check the name.")
    if stored["kind"] != "cowriting":
        raise ExportError(
            f"'{exp_id}' is a {stored['kind']} study: preference pairs come from the rounds of "
            "a co-writing study."
        )
    licence = licence.strip() or NO_LICENCE
    rows, left_out = preference_pairs(db, exp_id, licence)
    if fmt == "jsonl":
        return to_jsonl(rows, COLUMNS)
    if fmt == "parquet":
        return to_parquet(rows, COLUMNS)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("preference-data.jsonl", to_jsonl(rows, COLUMNS))
        archive.writestr("preference-data.parquet", to_parquet(rows, COLUMNS))
        archive.writestr("README.md", dataset_card(stored, rows, left_out, licence))
    return out.getvalue()
