"""Verbs that set the app up: ``init-db``, ``prepare-models``, ``links``."""

from __future__ import annotations

from pathlib import Path

import click
from flask import Flask

from cyoa import store
from cyoa.cli.context import get_app
from cyoa.database_url import parse_database
from cyoa.kinds import KINDS
from cyoa.web import experiments


@click.command("init-db")
@click.pass_context
def init_db_command(ctx: click.Context) -> None:
    """Create the database tables (done automatically when the app starts)."""
    app = get_app(ctx)
    click.echo(f"Database ready: {parse_database(app.config['DATABASE'])}")


@click.command("prepare-models")
@click.pass_context
def prepare_models_command(ctx: click.Context) -> None:
    """Make the study's models ready once in the model cache: GGUF files found (a packaged
    one assembled), and only what the torch engine runs here converted (shows progress)."""
    from cyoa.generation import load_model_cards, prepare_models

    app = get_app(ctx)
    cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    used = {
        model
        for kind in KINDS.values()
        for model in kind.models_needed(kind.read_at_start(app, cards))
    }
    prepare_models(
        {n: c for n, c in cards.items() if n in used},
        Path(app.config["MODEL_CACHE"]),
        log=click.echo,
    )
    click.echo("Models ready.")


@click.command("links")
@click.option(
    "--base-url",
    default=None,
    help="The address participants reach the app at (default: the CYOA_PUBLIC_URL setting, "
    "else http://CYOA_HOST:CYOA_PORT, the address `make run` serves on).",
)
@click.pass_context
def links_command(ctx: click.Context, base_url: str | None) -> None:
    """Print every experiment's participant link, co-writing and rating, each also in the
    form to paste into Prolific."""
    app = get_app(ctx)
    for line in participant_links(app, base_url or serving_url(app)):
        click.echo(line)


def serving_url(app: Flask) -> str:
    """The address participants reach the app at: the ``PUBLIC_URL`` setting when it is set
    (behind a proxy or another name), else the address ``python app.py`` serves on,
    ``http://HOST:PORT`` (``CYOA_HOST``, default 127.0.0.1; ``CYOA_PORT``, default 5000)."""
    return app.config["PUBLIC_URL"] or f"http://{app.config['HOST']}:{app.config['PORT']}"


def participant_links(app: Flask, base_url: str) -> list[str]:
    """Two lines per experiment of either kind (its link, and its link with Prolific's
    placeholders), and a line on the identifiers a link accepts."""
    db = store.connect(app.config["DATABASE"])
    try:
        stored = list(db.query("SELECT id, kind FROM experiments ORDER BY kind, id"))
    finally:
        db.close()
    lines = []
    for row in stored:
        kind = KINDS[row["kind"]]
        if not kind.serves(app, row["id"]):
            continue
        links = {
            link.key: link
            for link in experiments.participant_links(
                base_url, row["id"], kind.start_path, kind.work
            )
        }
        lines.append(f"  {row['id']} ({row['kind']}): {links['anonymous'].url}")
        lines.append(f"    Prolific: {links['prolific'].url}")
    lines.append("  (other platforms: append ?pid=PARTICIPANT_ID to identify participants)")
    return lines
