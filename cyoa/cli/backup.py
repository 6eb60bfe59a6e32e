"""Verbs that keep a study's data safe: ``backup`` and ``restore`` (docs/deployment.md,
"Backing up and restoring")."""

from __future__ import annotations

from pathlib import Path

import click

from cyoa.backup import BackupError, backup_database, restore_database
from cyoa.backup_postgresql import backup_postgresql, restore_postgresql
from cyoa.cli.context import configured_location


@click.command("backup")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def backup_command(ctx: click.Context, file: Path) -> None:
    """Copy the database into the new FILE, safely while the app runs and writes: one
    consistent snapshot (SQLite's online backup; pg_dump's custom format for PostgreSQL)."""
    source = configured_location(ctx)
    try:
        if source.path is None:
            version = backup_postgresql(source, file)
        else:
            version = backup_database(source.path, file)
    except BackupError as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"Backed up {source} (schema version {version}) to {file}.")


@click.command("restore")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--force",
    is_flag=True,
    help="Replace the database even though it exists (and even while a process has it open).",
)
@click.pass_context
def restore_command(ctx: click.Context, file: Path, force: bool) -> None:
    """Make the backup FILE the database (created if missing), upgraded to this CYOA's
    schema; an existing database is replaced only with --force."""
    target = configured_location(ctx)
    try:
        if target.path is None:
            version, restored = restore_postgresql(file, target, force=force)
        else:
            version, restored = restore_database(file, target.path, force=force)
    except BackupError as error:
        raise click.ClickException(str(error)) from None
    upgraded = f", upgraded from schema version {version}" if version != restored else ""
    click.echo(f"Restored {file} into {target} (schema version {restored}{upgraded}).")
