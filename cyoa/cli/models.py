"""Verbs for trying a model before it goes into an experiment: ``try-model``."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import click
import psutil

from cyoa.cli.context import get_app
from cyoa.generation import ModelCardError, load_model_card
from cyoa.generation.checkpoints import ModelLoadError
from cyoa.generation.openai_backend import ModelServerError
from cyoa.generation.pool import make_backend
from cyoa.generation.trial import DEFAULT_STORY, sampling_problems, try_model


@click.command("try-model")
@click.argument("card_file", metavar="CARD.toml", type=click.Path(path_type=Path))
@click.option(
    "--story",
    default="",
    help="The story so far, which the model continues (default: a short opening).",
)
@click.option(
    "--n",
    "count",
    type=click.IntRange(1, 50),
    default=3,
    show_default=True,
    help="How many suggestions to generate.",
)
@click.option(
    "--seed",
    type=click.IntRange(0, 2**31 - 1),
    default=1,
    show_default=True,
    help="The first suggestion's seed; the next ones take the seeds after it.",
)
@click.pass_context
def try_model_command(
    ctx: click.Context, card_file: Path, story: str, count: int, seed: int
) -> None:
    """Load the model card CARD.toml (any file, not only one in models/) and print --n
    suggestions continuing --story, made as the study makes them (the card's sampling and
    prompt, one sentence), each with its seed, the seconds to its first token and to its
    end, and its tokens; and the memory the process holds. For a model on a server, a line
    for each setting the server refuses or does not use as the card says. A wrong card
    prints what to fix and exits with status 1."""
    process = psutil.Process()
    try:
        card = load_model_card(card_file)
        backend = make_backend(card, Path(get_app(ctx).config["MODEL_CACHE"]))
        click.echo(f"Loading {card.name} (version {card.version or 'not given'})…", err=True)
        before = process.memory_info().rss
        backend.load(log=lambda line: click.echo(line, err=True))
    except (ModelCardError, ModelLoadError, ModelServerError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    loaded = process.memory_info().rss
    device = getattr(backend, "device", "") or card.backend
    click.echo(f"{card.name} on {device}, version {card.version or 'not given'}")
    click.echo(
        f"Memory: {_size(loaded)} resident after loading ({_signed_size(loaded - before)} "
        f"while loading, torch and transformers included on first use), "
        f"{_size(_peak_resident())} at the peak so far{_gpu_memory(device)}"
    )
    story = story.strip() or DEFAULT_STORY
    click.echo(f"Story: {story}")
    try:
        problems = sampling_problems(backend, card, story)
        trials = try_model(backend, card, story, count, seed)
    except (ModelServerError, ValueError) as exc:
        raise click.ClickException(str(exc)) from exc
    for n, trial in enumerate(trials, start=1):
        suggestion = trial.suggestion
        if suggestion is None:
            click.echo(f"{n}. seed {trial.seed}: no suggestion ({trial.error})")
            continue
        first = suggestion.first_token_seconds
        click.echo(
            f"{n}. seed {trial.seed} · first token "
            f"{'none' if first is None else f'{first:.2f} s'} · end "
            f"{suggestion.generation_seconds:.2f} s · {suggestion.token_count} tokens"
        )
        click.echo(f"   {suggestion.text}")
    click.echo(
        f"Memory after generating: {_size(process.memory_info().rss)} resident, "
        f"{_size(_peak_resident())} at the peak{_gpu_memory(device)}"
    )
    for problem in problems:
        click.echo(f"Sampling: {problem}")
    if all(trial.suggestion is None for trial in trials):
        raise click.ClickException(
            f"{card.name} wrote no usable suggestion in {count} tries: see the reasons above."
        )


def _peak_resident() -> int:
    """The most memory this process has held resident so far, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # Linux counts kilobytes


def _gpu_memory(device: str) -> str:
    """What the model holds on a CUDA GPU, for the memory line (empty elsewhere)."""
    if not device.startswith("cuda"):
        return ""
    import torch

    now = torch.cuda.memory_allocated(device)
    peak = torch.cuda.max_memory_allocated(device)
    return f"; {device}: {_size(now)} allocated, {_size(peak)} at the peak"


def _size(size: int) -> str:
    return f"{size / 1e9:.2f} GB"


def _signed_size(size: int) -> str:
    return ("+" if size >= 0 else "−") + _size(abs(size))
