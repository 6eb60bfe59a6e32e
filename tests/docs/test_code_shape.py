"""The code's shape: functions short enough to read at once, and no step outside the wings
that depends on the study kind.

A function over 80 lines does several things; its steps, named, read better as functions of
their own. The schema's migrations are the exception: each is one step of the schema's history,
kept as it was written (see :data:`cyoa.store.MIGRATIONS`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cyoa import store
from cyoa.kinds import KINDS
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


# Modules that name a kind outside the wings, and why. The table of kinds is where each kind
# is named once; everything else looks a kind's part up there.
KIND_NAMED_BY = {
    "cyoa/kinds.py": "the table of kinds: each kind's entry, and co-writing as a spec's default",
}
WINGS = ("cowriting", "rating")
# A kind compared in SQL: kind = 'rating', kind <> 'cowriting', kind IN ('rating', …).
_SQL_KIND = re.compile(r"\bkind\s*(?:=|==|!=|<>|\bin\b\s*\()\s*'(\w+)'", re.IGNORECASE)


def _names(node: ast.AST) -> set[str]:
    """The strings ``node`` is or holds (a constant, or a tuple, list or set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return {name for element in node.elts for name in _names(element)}
    return set()


def kind_decisions(package: Path, kinds: set[str], wings: tuple[str, ...]) -> list[str]:
    """Every place outside the ``wings`` (folders right under ``package``) that decides by a
    study kind written as a literal: a comparison with one of ``kinds`` (``==``, ``!=``,
    ``in``), a ``case`` of one, a dict keyed by one, or SQL comparing ``kind`` with one, as
    ``file:line: code``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent)
        if len(relative.parts) > 2 and relative.parts[1] in wings:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                named = set().union(*(_names(n) for n in [node.left, *node.comparators]))
            elif isinstance(node, ast.MatchValue):
                named = _names(node.value)
            elif isinstance(node, ast.Dict):
                named = set().union(set(), *(_names(key) for key in node.keys if key))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = set(_SQL_KIND.findall(node.value))
            else:
                continue
            if named & kinds:
                found.append(f"{relative.as_posix()}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_kind_finder_finds_comparisons_cases_dicts_and_sql_outside_the_wings(tmp_path):
    package = tmp_path / "pkg"
    (package / "left").mkdir(parents=True)
    (package / "shell.py").write_text(
        'if kind == "left": pass\nok = kind in ("x", "right")\nKEYS = {"left": 1}\n'
        'Q = "SELECT id FROM t WHERE kind = \'right\'"\nmatch kind:\n    case "left": pass\n'
        'fine = kind == "other"\nDEFAULT = "DEFAULT \'left\'"\n'
    )
    (package / "left" / "own.py").write_text('if kind == "left": pass\n')
    found = kind_decisions(package, {"left", "right"}, ("left",))
    assert [line.split(": ")[0] for line in found] == [
        "pkg/shell.py:1", "pkg/shell.py:2", "pkg/shell.py:3", "pkg/shell.py:4", "pkg/shell.py:6",
    ]  # fmt: skip


def test_no_module_outside_the_wings_decides_by_a_kind_written_as_a_literal():
    found = [
        place
        for place in kind_decisions(PACKAGE, set(KINDS), WINGS)
        if place.split(":")[0] not in KIND_NAMED_BY
    ]
    assert not found, (
        "decided by kind outside the wings (look the kind's part up in cyoa/kinds.py):\n"
        + "\n".join(found)
    )
