"""The researcher's downloads in the field's formats, at
``/research/experiments/<id>/preference-data.zip`` (:mod:`.preference_data`; ``?licence=`` the
licence to state) and ``/research/experiments/<id>/coauthor.zip`` (:mod:`.coauthor`). Thin:
read the request, call the export, send the file."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from flask import flash, redirect, request, send_file, url_for

from cyoa.cowriting.research import coauthor, preference_data
from cyoa.cowriting.research.views import experiment_or_404
from cyoa.web import auth
from cyoa.web import research as web
from cyoa.web.tables import ExportError

bp = web.blueprint("research_cowriting_interchange", __name__, "/research/experiments")


def _send(exp_id: str, make, name: str, mimetype: str):
    with web.db() as db:
        try:
            data = make(db)
        except ExportError as exc:
            flash(str(exc), "error")
            return redirect(
                url_for("research_cowriting.experiment", exp_id=exp_id, _anchor="downloads")
            )
    stamp = datetime.now(UTC).strftime("%Y%m%d")
    return send_file(
        io.BytesIO(data),
        mimetype=mimetype,
        as_attachment=True,
        download_name=f"{exp_id}-{name}-{stamp}.zip",
    )


@bp.get("/<exp_id>/preference-data.zip")
@auth.login_required
def preference_data_zip(exp_id: str):
    exp = experiment_or_404(exp_id)
    licence = request.args.get("licence", "")[:200]
    return _send(
        exp.id,
        lambda db: preference_data.export(db, exp.id, "zip", licence),
        "preference-data",
        "application/zip",
    )


@bp.get("/<exp_id>/coauthor.zip")
@auth.login_required
def coauthor_zip(exp_id: str):
    exp = experiment_or_404(exp_id)
    return _send(exp.id, lambda db: coauthor.export_zip(db, exp.id), "coauthor", "application/zip")
