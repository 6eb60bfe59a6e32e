"""A researcher previews a rating study as a rater sees it: the rater's own page
(``rate.html``) for any of the study's stories, in any status (paused and closed too), with
a banner saying nothing is saved. The page's script runs in preview mode and sends nothing,
and this view writes nothing: no rater, no assignment, no event, so a preview never counts.
"""

from __future__ import annotations

import random

from flask import flash, redirect, render_template, request, url_for

from cyoa.rating.blind import rater_item_ids
from cyoa.rating.instruments import rater_credit
from cyoa.rating.pages import shown_questions, use_language
from cyoa.rating.research.views import rating_experiment_or_404
from cyoa.rating.service import question_order
from cyoa.web import auth
from cyoa.web import research as web

bp = web.blueprint("research_rating_preview", __name__, "/research/ratings")


def story_number(asked: int | None, total: int) -> int:
    """The story to show, 1 to ``total``: the one asked for, the nearest one to it when it is
    out of range, and the first when none (or no number) was asked for."""
    return min(max(asked or 1, 1), total)


@bp.get("/<exp_id>/preview")
@auth.login_required
def preview(exp_id: str):
    """Story ``?story=N`` of the study, as its raters see it, with links to the others."""
    exp = rating_experiment_or_404(exp_id)
    use_language(exp)  # the rater's page, in the study's language
    dashboard = url_for("research_ratings.rating_experiment", exp_id=exp_id)
    story_ids = list(exp.stories)
    if not story_ids:
        flash("This study has no stories to preview yet: add stories first.")
        return redirect(dashboard)
    total = len(story_ids)
    position = story_number(request.args.get("story", type=int), total)
    story_id = story_ids[position - 1]
    # The order a rater would see, the same on every visit to this story's preview.
    questions = question_order(exp, story_id, random.Random(story_id))

    shown_ids = {q: q for q in questions} | rater_item_ids(exp, story_id)

    def page(n: int) -> str:
        return url_for("research_rating_preview.preview", exp_id=exp_id, story=n)

    return render_template(
        "rate.html",
        experiment=exp,
        story=exp.stories[story_id],
        questions=shown_questions(exp, questions),
        answers={},
        position=position,
        total=total,
        shown_ids=shown_ids,
        required=sorted(shown_ids[q] for q in exp.questions.required() & set(questions)),
        first=position == 1,
        attribution=exp.questions.instrument.attribution,
        credit=rater_credit(exp.questions.instrument),
        rater_key="preview",
        preview={
            "previous": page(position - 1) if position > 1 else "",
            "next": page(position + 1) if position < total else "",
            "finish": page(position + 1) if position < total else dashboard,
            "back": dashboard,
        },
    )
