"""The ``plan`` verb: how many writers, rounds, stories and raters a comparison needs, and
what it costs, from a stored pilot or from typed assumptions; ``--save`` stores the plan on
the experiment (:mod:`cyoa.research.planning` makes it, as for the dashboards' Plan page)."""

from __future__ import annotations

import os

import click

from cyoa import kinds, store
from cyoa.cli.context import open_existing
from cyoa.errors import AnalysisError
from cyoa.research.planning import (
    PLANNERS,
    Options,
    PlanInputError,
    PlanRecord,
    make_plan,
    parse_assumptions,
)


def _progress(done: int, total: int) -> None:
    click.echo(f"\rsimulating {done}/{total}", err=True, nl=done == total)


def _plan(ctx: click.Context, experiment: str | None, kind: str | None, assume: str,
          options: Options, save: bool) -> PlanRecord:  # fmt: skip
    """The plan asked for, stored on ``experiment`` when ``save``."""
    db = open_existing(ctx) if experiment is not None else None
    planner = (
        kinds.kind_of(db, experiment).planner_for(db, experiment)
        if db is not None
        else PLANNERS[kind]
    )
    try:
        typed = parse_assumptions(assume, planner.keys)
        record = make_plan(db, experiment, kind, typed, options)
    except PlanInputError as error:
        raise click.BadParameter(str(error)) from None
    if save:
        plan_id = store.insert_plan(db, experiment, record.kind, record.to_dict(), record.text)
        click.echo(f"Saved as plan {plan_id} of '{experiment}'.", err=True)
    return record


@click.command("plan")
@click.argument("experiment", required=False)
@click.option(
    "--kind",
    type=click.Choice(list(PLANNERS)),
    default=None,
    help="Plan from assumptions, without a pilot: the study kind.",
)
@click.option("--assume", default="", help='Typed assumptions, e.g. "p=0.6,writer_sd=0.5".')
@click.option("--target-power", type=float, default=0.8, show_default=True)
@click.option("--alpha", type=float, default=0.05, show_default=True, help="Two-sided α.")
@click.option("--hourly-rate", type=float, default=12.0, show_default=True)
@click.option(
    "--fee",
    type=float,
    default=0.33,
    show_default=True,
    help="Platform fee, a fraction of the pay.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option(
    "--alpha-width",
    type=float,
    default=0.2,
    show_default=True,
    help="Target 95% width of α's (and a judge's κ's) interval.",
)
@click.option(
    "--effect",
    type=float,
    default=None,
    help="Effect to detect: a preference (co-writing) or a score difference (rating).",
)
@click.option(
    "--save",
    is_flag=True,
    help="Store the plan on EXPERIMENT (the latest stored plan goes into its evaluation card).",
)
@click.pass_context
def plan_command(ctx: click.Context, experiment: str | None, kind: str | None, assume: str,
                 target_power: float, alpha: float, hourly_rate: float, fee: float,
                 seed: int, alpha_width: float, effect: float | None,
                 save: bool) -> None:  # fmt: skip
    """How many writers × rounds (co-writing) or stories × raters per story (rating) a
    comparison needs to reach the target power, and its cost; how many stories pin α's
    interval (rating), readers per question (FEI) and stories for a judge's κ (judge): from
    a stored pilot EXPERIMENT (its values overridden by --assume; an experiment without a
    pilot is planned from --assume alone), or from --kind and --assume. --save stores the
    plan on EXPERIMENT. Every number has bounds (docs/research.md, "The planner's bounds"):
    one outside them is refused before the plan starts."""
    options = Options(
        target_power, alpha, hourly_rate, fee, seed, effect, _progress, alpha_width=alpha_width,
        currency=os.environ.get("CYOA_CURRENCY", "GBP"),
    )  # fmt: skip
    if (experiment is None) == (kind is None):
        raise click.UsageError("Give either a pilot EXPERIMENT or --kind with --assume.")
    if save and experiment is None:
        raise click.UsageError(
            "--save stores the plan on an experiment: give EXPERIMENT (with --assume for "
            "values it has no pilot for) instead of --kind."
        )
    try:
        record = _plan(ctx, experiment, kind, assume, options, save)
    except (AnalysisError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(record.text)
