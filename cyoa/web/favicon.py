"""The site's icon: every page links ``static/favicon.svg``, and ``/favicon.ico`` (which a
browser asks for when a page names no icon, e.g. a JSON answer opened in a tab) serves the
same file, so neither is a 404."""

from __future__ import annotations

from flask import Flask, Response, current_app, send_from_directory


def init_app(app: Flask) -> None:
    """Serve ``/favicon.ico`` from the static folder."""
    app.add_url_rule("/favicon.ico", endpoint="favicon", view_func=_favicon)


def _favicon() -> Response:
    return send_from_directory(
        current_app.static_folder or "static", "favicon.svg", mimetype="image/svg+xml"
    )
