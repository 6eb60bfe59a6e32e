"""What a planned study costs: participants × minutes × an hourly rate, plus the platform's fee,
with enough participants recruited that those kept after exclusions reach the plan.

Pure arithmetic on plain numbers, shared by both study kinds' planners.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Currencies written with a symbol before the amount; any other ISO 4217 code is written
# before it ("CHF 12.00").
SYMBOLS = {"GBP": "£", "USD": "$", "EUR": "€"}


def money(amount: float, currency: str) -> str:
    """``amount`` in ``currency`` (an ISO 4217 code) to the cent: ``money(53.2, "GBP")`` is
    "£53.20", ``money(53.2, "CHF")`` "CHF 53.20"; a rate such as 12 per hour reads "£12.00"."""
    symbol = SYMBOLS.get(currency.upper())
    return f"{symbol}{amount:,.2f}" if symbol else f"{currency.upper()} {amount:,.2f}"


@dataclass(frozen=True)
class Cost:
    """The cost of a plan: ``recruit`` participants (``kept`` of them expected to remain),
    each paid ``minutes`` × ``hourly_rate`` / 60; ``pay`` is their total, ``fee`` the
    platform's share on top, ``total`` = ``pay`` + ``fee`` (in the rate's currency)."""

    kept: int
    recruit: int
    minutes: float
    hourly_rate: float
    fee_rate: float
    exclusion_rate: float
    pay: float
    fee: float
    total: float


def study_cost(
    participants: int,
    minutes: float,
    hourly_rate: float,
    fee_rate: float = 0.0,
    exclusion_rate: float = 0.0,
) -> Cost:
    """The cost of keeping ``participants`` after exclusions.

    ``recruit = ceil(participants / (1 − exclusion_rate))``: with a share ``exclusion_rate``
    of participants excluded (or dropping out), that many must be recruited for the expected
    kept sample to reach the plan. Every recruit is paid (an excluded participant still
    worked): ``pay = recruit × minutes / 60 × hourly_rate``; ``fee = pay × fee_rate`` (e.g.
    0.33 for a platform that adds a third); ``total = pay + fee``.

    Units: minutes per participant; ``hourly_rate`` in currency per hour; ``fee_rate`` and
    ``exclusion_rate`` fractions. Reference: Karpinska et al. (2021), §6, on reporting pay
    and time on task.
    """
    if participants < 0:
        raise ValueError(f"participants must be 0 or more, got {participants}.")
    if not minutes >= 0 or not hourly_rate >= 0:
        raise ValueError(
            f"minutes and hourly rate must be 0 or more, got {minutes} and {hourly_rate}."
        )
    if not fee_rate >= 0:
        raise ValueError(f"the platform fee must be a fraction of 0 or more, got {fee_rate}.")
    if not 0 <= exclusion_rate < 1:
        raise ValueError(
            f"the exclusion rate must be a fraction in [0, 1), got {exclusion_rate}: "
            "if every participant is excluded no number of recruits reaches the plan."
        )
    recruit = math.ceil(participants / (1 - exclusion_rate) - 1e-9)
    pay = recruit * minutes / 60 * hourly_rate
    fee = pay * fee_rate
    return Cost(
        kept=participants,
        recruit=recruit,
        minutes=minutes,
        hourly_rate=hourly_rate,
        fee_rate=fee_rate,
        exclusion_rate=exclusion_rate,
        pay=pay,
        fee=fee,
        total=pay + fee,
    )
