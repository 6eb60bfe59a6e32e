"""A column of an exported table: its name, type and meaning (the data dictionary's row)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # "string", "int", "float" or "bool"
    description: str
