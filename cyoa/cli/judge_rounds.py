"""``judge-rounds``: a model card judges a co-writing experiment's rounds (which of the two
suggestions continues the story better, each round shown in both orders), as a judge that
``analyze`` compares with the writers' choices."""

from __future__ import annotations

from pathlib import Path

import click

from cyoa.cli.context import get_app, open_or_create, read_utf8
from cyoa.cowriting.judges.runs import (
    RoundJudgeError,
    RoundJudgeRequest,
    judge_rounds,
    run_progress,
)
from cyoa.errors import AnalysisError
from cyoa.generation import ModelCardError, load_model_cards
from cyoa.generation.checkpoints import ModelLoadError
from cyoa.generation.openai_backend import ModelServerError
from cyoa.generation.pool import make_backend
from cyoa.judging.runs import DONE
from cyoa.web.workers import new_worker_id


@click.command("judge-rounds")
@click.argument("experiment")
@click.option("--model", required=True, help="The judge's model card (models/NAME.toml).")
@click.option("--judge", default="", help="The judge's name (default: the card's name).")
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=None,
    help="Judge only the first N rounds with a choice (a trial); run again without it for all.",
)
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 4096),
    default=None,
    help="At most this many tokens per answer (default 128).",
)
@click.option(
    "--template",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A text file with the prompt template ({story}, {a}, {b}); the default otherwise.",
)
@click.pass_context
def judge_rounds_command(
    ctx: click.Context,
    experiment: str,
    model: str,
    judge: str,
    limit: int | None,
    seed: int,
    max_tokens: int | None,
    template: Path | None,
) -> None:
    """Let the model card --model say, for each round of the co-writing EXPERIMENT in which
    the writer chose between two suggestions, which one continues the story better: each
    round asked twice, the suggestions swapped, each verdict stored as it comes. Run it
    again to resume a run that stopped: what is stored is kept and not asked again."""
    app = get_app(ctx)
    try:
        cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    except ModelCardError as error:
        raise click.ClickException(str(error)) from error
    if model not in cards:
        raise click.ClickException(
            f"Unknown model card {model!r}: use one of {', '.join(sorted(cards))}."
        )
    text = read_utf8(template, "The template") if template else None
    request = RoundJudgeRequest(experiment, cards[model], judge, seed, max_tokens, text, limit)
    db = open_or_create(ctx)
    try:
        backend = make_backend(cards[model], Path(app.config["MODEL_CACHE"]))
        click.echo(f"Loading {model}…", err=True)
        backend.load(log=lambda line: click.echo(line, err=True))
        run = judge_rounds(db, request, backend, new_worker_id(), log=click.echo)
        progress = run_progress(db, run)
    except (RoundJudgeError, AnalysisError, ModelLoadError, ModelServerError) as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    click.echo(
        f"Judge '{run.judge}' of '{run.experiment}': {run.state}, {progress['done']:,}/"
        f"{progress['total']:,} verdicts, {progress['unparsed']:,} unparsed (stored without a "
        "choice, counted by analyze)."
    )
    if run.state != DONE:
        raise click.ClickException(run.error or "The run stopped; run the command again to resume.")
