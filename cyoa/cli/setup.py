"""Verbs that set the app up: ``init-db``, ``prepare-models``, ``links``."""

from __future__ import annotations

from pathlib import Path

import click
from flask import Flask

from cyoa.cli.context import get_app


@click.command("init-db")
@click.pass_context
def init_db_command(ctx: click.Context) -> None:
    """Create the database tables (done automatically when the app starts)."""
    app = get_app(ctx)
    click.echo(f"Database ready: {app.config['DATABASE']}")


@click.command("prepare-models")
@click.pass_context
def prepare_models_command(ctx: click.Context) -> None:
    """Convert the packaged models once into the model cache (shows progress)."""
    from cyoa.generation import load_model_cards, prepare_models

    app = get_app(ctx)
    cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    used = {
        s.model.name
        for e in app.extensions["cyoa"]["study"].experiments.values()
        for s in e.systems
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
    help="The address writers reach the app at (default: http://CYOA_HOST:CYOA_PORT, the "
    "address `make run` serves on).",
)
@click.pass_context
def links_command(ctx: click.Context, base_url: str | None) -> None:
    """Print every experiment's participant link and the identifiers it accepts."""
    app = get_app(ctx)
    for line in participant_links(app, base_url or serving_url(app)):
        click.echo(line)


def serving_url(app: Flask) -> str:
    """The address ``python app.py`` serves on: ``http://HOST:PORT`` from the app's settings
    (``CYOA_HOST``, default 127.0.0.1; ``CYOA_PORT``, default 5000)."""
    return f"http://{app.config['HOST']}:{app.config['PORT']}"


def participant_links(app: Flask, base_url: str) -> list[str]:
    """One line per experiment with its writers' link, and a line on the identifiers the
    link accepts."""
    study = app.extensions["cyoa"]["study"]
    lines = []
    for exp in study.experiments.values():
        lines.append(f"  {exp.id}: {base_url.rstrip('/')}/s/{exp.id}")
    lines.append(
        "  (append ?PROLIFIC_PID=…&STUDY_ID=…&SESSION_ID=… or ?pid=… to identify participants)"
    )
    return lines
