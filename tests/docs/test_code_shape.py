"""The code's shape: functions short enough to read at once.

A function over 80 lines does several things; its steps, named, read better as functions of
their own. The schema's migrations are the exception: each is one step of the schema's history,
kept as it was written (see :data:`cyoa.store.MIGRATIONS`).
"""

from __future__ import annotations

import ast
from pathlib import Path

from cyoa import store
from tests.paths import ROOT

PACKAGE = ROOT / "cyoa"
LONGEST = 80


def long_functions(package: Path, longest: int) -> list[tuple[str, str, int]]:
    """Every function (and method) under ``package`` longer than ``longest`` lines, from its
    ``def`` to its last line (a command's option decorators are not counted): (file, name,
    lines)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > longest:
                    found.append((str(path.relative_to(package.parent)), node.name, length))
    return found


def test_no_function_is_longer_than_80_lines_except_the_migrations():
    migrations = {("cyoa/store.py", step.__name__) for step in store.MIGRATIONS}
    too_long = [
        f"{path}: {name} ({length} lines)"
        for path, name, length in long_functions(PACKAGE, LONGEST)
        if (path, name) not in migrations
    ]
    assert not too_long, f"Functions over {LONGEST} lines:\n" + "\n".join(too_long)
