"""What every verb needs: the app (built on demand) and the database it works on."""

from __future__ import annotations

import os
from pathlib import Path

import click
from flask import Flask
from flask.cli import ScriptInfo

from cyoa import create_app, store
from cyoa.database_url import DatabaseLocation, DatabaseSettingError, parse_database
from cyoa.db.engine import check_reachable
from cyoa.db.facade import Db
from cyoa.paths import ROOT


def get_app(ctx: click.Context) -> Flask:
    """The app for a verb: the one Flask's CLI loaded, or a new one (models not loaded)."""
    root = ctx.find_root()
    if "app" not in root.meta:
        overrides: dict[str, object] = {"LOAD_MODELS_AT_START": False}
        db_path = (ctx.find_object(dict) or {}).get("db_path")
        info = ctx.find_object(ScriptInfo)
        try:
            if db_path:
                overrides["DATABASE"] = parse_database(db_path).setting
            if info is not None:
                app = info.load_app()
                app.config.update(overrides)
            else:
                app = create_app(overrides)
        except DatabaseSettingError as error:
            raise click.ClickException(str(error)) from None
        root.meta["app"] = app
    return root.meta["app"]


def database_setting(ctx: click.Context) -> str:
    """The database a verb works on (a SQLite path or a PostgreSQL URL, for
    :func:`cyoa.store.connect`): ``--db`` if given (no app is built), else the app's."""
    db_path = (ctx.find_object(dict) or {}).get("db_path")
    try:
        return parse_database(db_path or get_app(ctx).config["DATABASE"]).setting
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None


def configured_location(ctx: click.Context) -> DatabaseLocation:
    """The database a verb works on, a SQLite file or a PostgreSQL server, found as the app
    would find it but without building the app (which would create a missing database):
    ``--db``, else the app Flask's CLI loaded, else ``CYOA_DATABASE``, else
    ``instance/cyoa.sqlite``."""
    db_path = (ctx.find_object(dict) or {}).get("db_path")
    if not db_path and ctx.find_object(ScriptInfo) is not None:
        db_path = get_app(ctx).config["DATABASE"]
    setting = db_path or os.environ.get("CYOA_DATABASE") or ROOT / "instance" / "cyoa.sqlite"
    try:
        return parse_database(setting)
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None


def open_existing(ctx: click.Context) -> Db:
    """The verb's database, which must exist (a SQLite file; on PostgreSQL, CYOA's tables),
    with its tables brought up to date."""
    place = parse_database(database_setting(ctx))
    if place.path is not None and not place.path.exists():
        raise click.ClickException(f"There is no database at {place}: check --db.")
    db = store.connect(place.setting)
    try:
        check_reachable(db.engine)
        if place.kind == "postgresql" and "experiments" not in db.table_names():
            raise click.ClickException(
                f"The PostgreSQL database {place} has no CYOA tables: check --db, or create "
                "them with `python -m cyoa --db URL init-db`."
            )
        store.init_db(db)
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None
    return db


def open_or_create(ctx: click.Context) -> Db:
    """The verb's database, created if missing, with its tables brought up to date."""
    db = store.connect(database_setting(ctx))
    try:
        store.init_db(db)
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None
    return db


def read_utf8(path: Path, what: str) -> str:
    """The text of the file ``path`` a verb was given (``what`` it is: "The template");
    :class:`click.ClickException` saying where it is not UTF-8 and what to do."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise click.ClickException(
            f"{what} {path} is not UTF-8 text (byte {error.object[error.start]:#04x} at "
            f"position {error.start:,}): save it as UTF-8 and run the command again."
        ) from None
