"""Score researchers' own records with the edit metrics (behind ``python -m cyoa metrics``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from cyoa.metrics.edit import VARIANTS, Variant, edit_metrics
from cyoa.metrics.tokens import ENGLISH

REQUIRED_FIELDS = ("original", "edited")


def score_records(
    records: Iterable[dict], variant: Variant = "cyoa-2021", language: str = ENGLISH
) -> Iterator[dict]:
    """Yield each record with the edit metrics of its ``original`` and ``edited`` texts added.

    Each record is a mapping with at least ``original`` (the model's suggestion) and ``edited``
    (the writer's final text), both strings. The yielded record is a copy with the columns of
    :data:`cyoa.metrics.edit.METRIC_COLUMNS` added (or overwritten), computed by
    :func:`cyoa.metrics.edit.edit_metrics` with ``variant``, in ``language`` (BCP 47); other
    fields pass through.

    Records are read lazily, one at a time. An unknown ``variant`` raises ``ValueError`` at
    once; a record that is not an object, lacks a field, or has a field that is not a string
    raises ``ValueError`` naming its line (1-based, as in a JSON-lines file) when it is reached.
    """
    if variant not in VARIANTS:
        raise ValueError(f"Unknown USER variant {variant!r}: use one of {', '.join(VARIANTS)}.")
    return _scored(records, variant, language)


def _scored(records: Iterable[dict], variant: Variant, language: str) -> Iterator[dict]:
    for line, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise ValueError(
                f"Line {line}: expected a JSON object with 'original' and 'edited', "
                f"got {type(record).__name__}."
            )
        for field in REQUIRED_FIELDS:
            if field not in record:
                raise ValueError(
                    f"Line {line}: the record has no '{field}' field; each record needs "
                    "'original' (the model's suggestion) and 'edited' (the writer's final text)."
                )
            if not isinstance(record[field], str):
                raise ValueError(
                    f"Line {line}: '{field}' must be a string, got {type(record[field]).__name__}."
                )
        yield {**record, **edit_metrics(record["original"], record["edited"], variant, language)}
