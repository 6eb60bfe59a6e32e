"""The researcher's front door, for every study kind: logging in and out, changing the
password, and the list of experiments (co-writing and rating) with their progress and links.

Every view except the login page is :func:`~cyoa.web.auth.login_required`, and every unsafe
request (POST) must carry the session's CSRF token (checked before the view runs).
"""

from __future__ import annotations

from flask import flash, g, redirect, render_template, request, url_for

from cyoa.cowriting.pages import START_PATH, WORK
from cyoa.cowriting.parts import parts as cowriting_parts
from cyoa.cowriting.research import lifecycle
from cyoa.cowriting.research.progress import progress_payload
from cyoa.rating.experiment import rating_summaries
from cyoa.web import auth
from cyoa.web import research as web
from cyoa.web.experiments import participant_links
from cyoa.web.parts import shared as shared_parts

bp = web.blueprint("research", __name__, "/research")


# --- login ----------------------------------------------------------------------------


def _too_many(wait: float) -> str:
    minutes = max(1, round(wait / 60))
    return (
        f"Too many failed attempts for this name from your address. Please wait about "
        f"{minutes} minute{'s' if minutes > 1 else ''} and try again."
    )


@bp.route("/login", methods=["GET", "POST"])
def login():
    next_url = request.values.get("next", "")
    if request.method == "GET":
        return render_template("research/login.html", next=next_url)
    name = (request.form.get("name") or "").strip()
    key = auth.limiter_key(name)
    limiter = shared_parts().login_limiter
    wait = limiter.begin(key)
    if wait:
        page = render_template(
            "research/login.html", next=next_url, error=_too_many(wait), name=name
        )
        return page, 429
    with web.db() as db:
        researcher = auth.authenticate(db, name, request.form.get("password") or "")
    if researcher is None:
        error = "Wrong name or password. Please try again."
        return render_template("research/login.html", next=next_url, error=error, name=name), 401
    limiter.succeeded(key)
    auth.log_in(researcher)
    return redirect(auth.safe_next(next_url))


@bp.post("/logout")
@auth.login_required
def logout():
    with web.db() as db:
        auth.end_sessions(db, g.researcher["id"])
    auth.log_out()
    flash("You are logged out, in every browser.")
    return redirect(url_for("research.login"))


@bp.route("/password", methods=["GET", "POST"])
@auth.login_required
def password():
    if request.method == "GET":
        return render_template("research/password.html")
    name = g.researcher["name"]
    new = request.form.get("new_password") or ""
    error = ""
    if new != (request.form.get("new_password_again") or ""):
        error = "The two new passwords differ. Please type the same one twice."
    else:
        try:
            auth.validate_account(name, new)
        except auth.AccountError as exc:
            error = str(exc)
    if error:
        return render_template("research/password.html", error=error), 400
    key = auth.limiter_key(name)
    limiter = shared_parts().login_limiter
    wait = limiter.begin(key)
    if wait:
        return render_template("research/password.html", error=_too_many(wait)), 429
    with web.db() as db:
        if auth.authenticate(db, name, request.form.get("current_password") or "") is None:
            error = "The current password is not right. Please try again."
            return render_template("research/password.html", error=error), 401
        try:
            researcher = auth.change_password(db, g.researcher["id"], new)
        except auth.AccountError as exc:  # the account was deleted meanwhile
            return render_template("research/password.html", error=str(exc)), 400
    limiter.succeeded(key)
    auth.log_in(researcher)
    flash("Your password is changed, and you are logged out in every other browser.")
    return redirect(url_for("research.experiments"))


# --- experiments ----------------------------------------------------------------------


@bp.get("/")
@auth.login_required
def experiments():
    study = cowriting_parts().study
    base_url = web.public_url()
    rows = []
    with web.db() as db:
        lifecycle.sync_from_db(db, study.experiments, shared_parts().cards)
        unserved = lifecycle.unserved_experiments(db, study.experiments, shared_parts().cards)
        for exp in sorted([*study.experiments.values(), *unserved], key=lambda e: e.id):
            rows.append(
                {
                    "experiment": exp,
                    "progress": progress_payload(db, exp),
                    "links": participant_links(base_url, exp.id, START_PATH, WORK),
                    "open_refusal": lifecycle.open_refusal(exp),
                }
            )
        ratings = rating_summaries(db)
    return render_template("research/experiments.html", rows=rows, ratings=ratings)
