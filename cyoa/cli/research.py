"""Command-line verbs of the researcher's workspace:

- ``create-researcher NAME``: a researcher account (password prompted twice on a terminal,
  else read from the first line of standard input);
- ``experiment create FILE`` / ``experiment open|pause|close ID`` / ``experiment list``;
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cyoa import kinds, store
from cyoa.cli.context import get_app, open_existing, open_or_create
from cyoa.cowriting.spec import SpecError
from cyoa.rating.spec import RatingSpecError
from cyoa.web.auth import AccountError, create_researcher
from cyoa.web.experiments import LifecycleError, SpecFileError, parse_spec, set_status
from cyoa.web.parts import shared as shared_parts


def _password(name: str) -> str:
    if sys.stdin.isatty():
        return click.prompt(
            f"Password for {name}", hide_input=True, confirmation_prompt=True, err=True
        )
    return sys.stdin.readline().rstrip("\r\n")


@click.command("create-researcher")
@click.argument("name")
@click.pass_context
def create_researcher_command(ctx: click.Context, name: str) -> None:
    """Create a researcher account NAME (for the pages under /research/)."""
    password = _password(name)
    db = open_or_create(ctx)
    try:
        create_researcher(db, name, password)
    except AccountError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        db.close()
    click.echo(f"Researcher '{name}' created. Log in at /research/login.")


@click.group("experiment")
def experiment_group() -> None:
    """Create experiments and open, pause or close them."""


@experiment_group.command("create")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def experiment_create_command(ctx: click.Context, file: Path) -> None:
    """Store the spec FILE (TOML or JSON) as a new, paused experiment: co-writing, or a
    rating study (kind = "rating")."""
    cards = shared_parts(get_app(ctx)).cards
    db = open_or_create(ctx)
    try:
        raw = parse_spec(file.read_text(encoding="utf-8"), str(file))
        done = kinds.of_spec(raw).create(db, raw, file, cards)
    except (SpecFileError, SpecError, RatingSpecError) as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        db.close()
    click.echo(done)


def _status_command(status: str, verb: str):
    @click.argument("experiment_id")
    @click.pass_context
    def command(ctx: click.Context, experiment_id: str) -> None:
        cards = shared_parts(get_app(ctx)).cards if status == "open" else {}
        db = open_existing(ctx)
        try:
            if status == "open" and store.get_experiment(db, experiment_id) is not None:
                refusal = kinds.kind_of(db, experiment_id).open_refusal(db, experiment_id, cards)
                if refusal:
                    raise click.ClickException(refusal)
            set_status(db, experiment_id, status)
        except LifecycleError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            db.close()
        click.echo(f"Experiment '{experiment_id}' is {status}.")

    command.__doc__ = f"{verb} the experiment EXPERIMENT_ID."
    return command


experiment_group.command("open")(_status_command("open", "Open (take new writers)"))
experiment_group.command("pause")(
    _status_command("paused", "Pause (no new writers; writers with a session can finish)")
)
experiment_group.command("close")(
    _status_command("closed", "Close (no new writers; writers with a session can finish)")
)


@experiment_group.command("list")
@click.pass_context
def experiment_list_command(ctx: click.Context) -> None:
    """Print every stored experiment, of either kind, with its status and how many writers
    (co-writing) or raters (rating) it has."""
    db = open_existing(ctx)
    try:
        rows = []
        for row in db.query("SELECT id, status, kind, title FROM experiments ORDER BY id"):
            table = kinds.KINDS[row["kind"]].participants
            count = db.execute(f"SELECT count(*) FROM {table} WHERE experiment_id = ?", [row["id"]])
            rows.append({**row, "people": f"{count.fetchone()[0]} {table}"})
    finally:
        db.close()
    for row in rows:
        click.echo(f"{row['id']}\t{row['status']}\t{row['kind']}\t{row['people']}\t{row['title']}")
