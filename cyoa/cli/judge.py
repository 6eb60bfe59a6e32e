"""``judge``: a model card administers a rating experiment's instrument to its stories, as a
judge panel that ``analyze`` calibrates against the human raters."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cyoa.cli.context import get_app, open_or_create, read_utf8
from cyoa.generation import ModelCardError, load_model_cards
from cyoa.generation.checkpoints import ModelLoadError
from cyoa.generation.openai_backend import ModelServerError
from cyoa.generation.pool import make_backend
from cyoa.judging.runs import DONE
from cyoa.rating.importing import RatingImportError
from cyoa.rating.judges.runs import (
    JudgeRunError,
    RunRequest,
    default_concurrency,
    judge_experiment,
    plan,
    run_estimate,
    run_status,
)
from cyoa.web.workers import new_worker_id


@click.command("judge")
@click.argument("experiment")
@click.option("--model", required=True, help="The judge's model card (models/NAME.toml).")
@click.option("--judge", default="", help="The judge panel's name (default: the card's name).")
@click.option(
    "--limit",
    type=click.IntRange(1),
    default=None,
    help="Judge only the first N stories (a trial); run again without it to judge the rest.",
)
@click.option(
    "--items",
    default="",
    help="Ask only these items, comma-separated ids (e.g. TTCW tests 1,13); default: all.",
)
@click.option("--seed", type=click.IntRange(0, 2**31 - 1), default=0, show_default=True)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 4096),
    default=None,
    help="At most this many tokens per answer (default 256).",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=None,
    help="Prompts asked at once (default: 1 for a local model, 4 for a served one).",
)
@click.option(
    "--templates",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A JSON object of prompt templates by kind (ttcw, yes_no, true_false, likert), e.g. "
    "a published run's; the defaults otherwise.",
)
@click.option("--estimate", is_flag=True, help="Print the estimate and stop; store nothing.")
@click.pass_context
def judge_command(
    ctx: click.Context,
    experiment: str,
    model: str,
    judge: str,
    limit: int | None,
    items: str,
    seed: int,
    max_tokens: int | None,
    concurrency: int | None,
    templates: Path | None,
    estimate: bool,
) -> None:
    """Let the model card --model answer EXPERIMENT's instrument about each of its stories
    (one prompt per story × item, from the prompt templates), storing each verdict as it
    comes as the judge panel --judge. Run it again to resume a run that stopped: what is
    stored is kept and not asked again. Prints the estimate (tokens, time) first."""
    app = get_app(ctx)
    try:
        cards = load_model_cards(Path(app.config["MODELS_DIR"]))
    except ModelCardError as error:
        raise click.ClickException(str(error)) from error
    if model not in cards:
        raise click.ClickException(
            f"Unknown model card {model!r}: use one of {', '.join(sorted(cards))}."
        )
    chosen = tuple(item.strip() for item in items.split(",") if item.strip()) or None
    request = RunRequest(
        experiment, cards[model], judge, seed, max_tokens, _templates(templates), concurrency,
        limit, chosen,
    )  # fmt: skip
    db = open_or_create(ctx)
    try:
        prompts, sampling, _ = plan(db, request)
        backend = make_backend(cards[model], Path(app.config["MODEL_CACHE"]))
        click.echo(f"Loading {model}…", err=True)
        backend.load(log=lambda line: click.echo(line, err=True))
        if estimate:
            workers = concurrency or default_concurrency(cards[model])
            guess, _ = run_estimate(db, prompts, sampling, cards[model], backend, workers)
            click.echo(guess.sentence())
            return
        run = judge_experiment(db, request, backend, new_worker_id(), log=click.echo)
        status = run_status(db, run)
    except (JudgeRunError, RatingImportError, ModelLoadError, ModelServerError) as error:
        raise click.ClickException(str(error)) from error
    finally:
        db.close()
    click.echo(
        f"Judge '{run.judge}' of '{run.experiment}': {run.state}, {status['done']:,}/"
        f"{status['total']:,} verdicts, {status['unparsed']:,} unparsed (stored without a "
        "value, counted by analyze)."
    )
    if run.state != DONE:
        raise click.ClickException(run.error or "The run stopped; run the command again to resume.")


def _templates(path: Path | None) -> dict[str, str] | None:
    if path is None:
        return None
    text = read_utf8(path, "The templates file")
    try:
        given = json.loads(text)
    except json.JSONDecodeError as error:
        raise click.ClickException(
            f"The templates file {path} is not JSON ({error}): write it as a JSON object of "
            "templates by kind and run the command again."
        ) from None
    if not isinstance(given, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in given.items()
    ):
        raise click.ClickException(
            f"{path.name} must be a JSON object of templates by kind, e.g. "
            '{"ttcw": "{story}\\n\\n{full_prompt}\\nAnswer:"}.'
        )
    return given
