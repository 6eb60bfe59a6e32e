"""The verb that moves a study database between SQLite and PostgreSQL: ``migrate-db``
(docs/deployment.md, "Moving a study to PostgreSQL")."""

from __future__ import annotations

import click

from cyoa.cli.context import configured_location
from cyoa.database_url import DatabaseSettingError, parse_database
from cyoa.migrate_db import MigrationError, check_again, migrate
from cyoa.store import SCHEMA_VERSION


@click.command("migrate-db")
@click.option(
    "--to",
    "target",
    required=True,
    metavar="URL|PATH",
    help="The empty database to copy into: a PostgreSQL URL or a new SQLite file.",
)
@click.option(
    "--check-only",
    is_flag=True,
    help="Copy nothing: check the copy TARGET against the database again (a move stopped "
    "during its check).",
)
@click.pass_context
def migrate_db_command(ctx: click.Context, target: str, check_only: bool) -> None:
    """Copy the database (--db or CYOA_DATABASE) into the empty database TARGET, then check
    the copy: rows per table, every experiment's analysis, every session's story; with
    --check-only, only check an earlier copy. Stop the app first. Exit code 1 when the copy
    differs."""
    source = configured_location(ctx)
    try:
        destination = parse_database(target)
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None
    try:
        if check_only:
            click.echo(f"Checking {destination} against {source}…")
            check = check_again(source, destination)
        else:
            click.echo(f"Copying {source} into {destination}:")
            moved = migrate(source, destination, _table_copied, _copied)
            check = moved.check
    except MigrationError as error:
        raise click.ClickException(str(error)) from None
    if not check_only and moved.source_version != SCHEMA_VERSION:
        click.echo(f"The source was upgraded from schema version {moved.source_version} in a copy.")
    for mismatch in check.mismatches:
        click.echo(f"Differs: {mismatch}", err=True)
    if check.mismatches:
        click.echo(f"The copy differs from the source in {len(check.mismatches)} places.", err=True)
        ctx.exit(1)
    click.echo(
        f"Checked: the rows of every table, the analysis of each of {check.experiments} "
        f"experiments and the story of each of {check.sessions} sessions are equal."
    )


def _table_copied(table: str, rows: int) -> None:
    click.echo(f"  {table}: {rows:,}")


def _copied(rows: dict[str, int]) -> None:
    click.echo(f"Copied {sum(rows.values()):,} rows in {len(rows)} tables. Checking the copy…")
