"""What every verb needs: the app (built on demand) and the database it works on."""

from __future__ import annotations

import os
from pathlib import Path

import click
from flask import Flask
from flask.cli import ScriptInfo

from cyoa import create_app, store
from cyoa.database_url import DatabaseLocation, DatabaseSettingError, parse_database, sqlite_path
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
                overrides["DATABASE"] = str(sqlite_path(db_path))
            if info is not None:
                app = info.load_app()
                app.config.update(overrides)
            else:
                app = create_app(overrides)
        except DatabaseSettingError as error:
            raise click.ClickException(str(error)) from None
        root.meta["app"] = app
    return root.meta["app"]


def database_path(ctx: click.Context) -> Path:
    """The database a verb works on: ``--db`` if given (no app is built), else the app's."""
    db_path = (ctx.find_object(dict) or {}).get("db_path")
    try:
        return sqlite_path(db_path or get_app(ctx).config["DATABASE"])
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None


def configured_database(ctx: click.Context) -> Path:
    """The database a verb works on, found as the app would find it but without building the
    app (which would create a missing database): ``--db``, else the app Flask's CLI loaded,
    else ``CYOA_DATABASE``, else ``instance/cyoa.sqlite``."""
    db_path = (ctx.find_object(dict) or {}).get("db_path")
    if not db_path and ctx.find_object(ScriptInfo) is not None:
        db_path = get_app(ctx).config["DATABASE"]
    setting = db_path or os.environ.get("CYOA_DATABASE") or ROOT / "instance" / "cyoa.sqlite"
    try:
        return sqlite_path(setting)
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None


def configured_location(ctx: click.Context) -> DatabaseLocation:
    """The database a verb works on, a SQLite file or a PostgreSQL server, found as
    :func:`configured_database` finds it (``--db``, the loaded app's, ``CYOA_DATABASE``,
    ``instance/cyoa.sqlite``) but without building an app."""
    db_path = (ctx.find_object(dict) or {}).get("db_path")
    if not db_path and ctx.find_object(ScriptInfo) is not None:
        db_path = get_app(ctx).config["DATABASE"]
    setting = db_path or os.environ.get("CYOA_DATABASE") or ROOT / "instance" / "cyoa.sqlite"
    try:
        return parse_database(setting)
    except DatabaseSettingError as error:
        raise click.ClickException(str(error)) from None


def open_existing(ctx: click.Context) -> Db:
    """The verb's database, which must exist, with its tables brought up to date."""
    path = database_path(ctx)
    if not path.exists():
        raise click.ClickException(f"There is no database at {path}: check --db.")
    db = store.connect(path)
    store.init_db(db)
    return db


def open_or_create(ctx: click.Context) -> Db:
    """The verb's database, created if missing, with its tables brought up to date."""
    db = store.connect(database_path(ctx))
    store.init_db(db)
    return db
