"""The package's modules import each other in one direction: down the layers, never in a circle.

Every ``import`` counts, at module level or inside a function, so neither a circle nor an
import up a layer can hide in a function-local import.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import ROOT

PACKAGE = ROOT / "cyoa"

# The layers, lowest first, each a set of the package's parts (a subpackage or a module right
# under cyoa/, with everything inside it; "cyoa" alone is the package's own __init__.py). A
# module imports its own layer and the layers below, never one above: the shared plumbing knows
# no study kind, so a kind is one wing that can be read, changed or added on its own, and only
# the research shell and the app see every kind. The wings stay apart: a wing imports the
# shared layer and itself, never the other wing. A part named nowhere is shared: a new
# top-level module starts at the bottom and may import only shared code.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "shared",
        frozenset(
            {
                "cyoa.store",
                "cyoa.stats",
                "cyoa.paths",
                "cyoa.errors",
                "cyoa.web",
                "cyoa.generation",
                "cyoa.judging",
                "cyoa.planning_record",
                "cyoa.metrics",
                "cyoa.data",
            }
        ),
    ),
    ("wing", frozenset({"cyoa.cowriting", "cyoa.rating"})),
    # migrate-db compares every kind's analysis between two databases.
    ("research shell", frozenset({"cyoa.research", "cyoa.kinds", "cyoa.migrate_db"})),
    ("app", frozenset({"cyoa", "cyoa.__main__", "cyoa.cli"})),
)
APART = "wing"
# The one import between the wings, and why: a rating study may rate a co-writing study's
# finished stories, so the rating wing reads them as the co-writing analysis does.
CROSSINGS = frozenset({("cyoa.rating.stories.cowriting", "cyoa.cowriting.analysis.data")})


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module → the package's modules it imports (``from a import b`` names the submodule
    ``a.b`` when there is one, else ``a``)."""
    modules = {module_name(path, package): path for path in package.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                subs = [f"{node.module}.{alias.name}" for alias in node.names]
                found = [sub for sub in subs if sub in modules]
                targets = found if len(found) == len(subs) else [node.module, *found]
            else:
                continue
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def part_of(module: str) -> str:
    """The part a module belongs to: the package itself or the name right under it."""
    return ".".join(module.split(".")[:2])


def layer_violations(
    graph: dict[str, set[str]],
    layers: tuple[tuple[str, frozenset[str]], ...],
    apart: str,
) -> list[str]:
    """Each import ``importer -> imported`` that runs up a layer, or from one part of the
    ``apart`` layer into another; a part in no layer counts as the lowest layer's."""
    ranks = {part: i for i, (_, parts) in enumerate(layers) for part in parts}
    apart_rank = [name for name, _ in layers].index(apart)
    found = []
    for importer in sorted(graph):
        for imported in sorted(graph[importer]):
            here, there = part_of(importer), part_of(imported)
            rank_here, rank_there = ranks.get(here, 0), ranks.get(there, 0)
            across = here != there and rank_here == rank_there == apart_rank
            if rank_there > rank_here or across:
                found.append(f"{importer} -> {imported}")
    return found


def test_the_circle_finder_finds_a_circle_through_a_function_local_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from pkg.a import thing\n")
    (package / "c.py").write_text("import pkg.a\n")
    assert circles(import_graph(package)) == [["pkg.a", "pkg.b"]]


def test_the_layer_checker_finds_imports_up_a_layer_and_across_wings(tmp_path):
    package = tmp_path / "pkg"
    (package / "left").mkdir(parents=True)
    (package / "right").mkdir()
    (package / "__init__.py").write_text("from pkg import left\n")
    (package / "base.py").write_text("def f():\n    import pkg.shell\n")
    (package / "extra.py").write_text("from pkg import base\nimport pkg.left\n")
    (package / "shell.py").write_text("import pkg.left.page\nimport pkg.right\n")
    (package / "left" / "__init__.py").write_text("from pkg import base, extra\n")
    (package / "left" / "page.py").write_text("from pkg.left import thing\nimport pkg.right\n")
    (package / "right" / "__init__.py").write_text("from pkg.shell import thing\n")
    layers = (
        ("shared", frozenset({"pkg.base"})),
        ("wing", frozenset({"pkg.left", "pkg.right"})),
        ("shell", frozenset({"pkg.shell"})),
        ("app", frozenset({"pkg"})),
    )
    assert layer_violations(import_graph(package), layers, apart="wing") == [
        "pkg.base -> pkg.shell",
        "pkg.extra -> pkg.left",
        "pkg.left.page -> pkg.right",
        "pkg.right -> pkg.shell",
    ]


def test_no_module_imports_up_a_layer_or_across_wings():
    violations = [
        found
        for found in layer_violations(import_graph(PACKAGE), LAYERS, APART)
        if tuple(found.split(" -> ")) not in CROSSINGS
    ]
    assert not violations, "imports up a layer or across wings:\n" + "\n".join(violations)


def test_no_module_of_the_package_imports_itself_back_through_others():
    assert circles(import_graph(PACKAGE)) == []


# What the llama.cpp engine shares with the torch engine: a request row and its stream, the
# sampler (so both engines draw the same way from their logits), the cores they split.
SHARED_WITH_LLAMACPP = frozenset(
    {
        "cyoa.generation.engine.cores",
        "cyoa.generation.engine.rows",
        "cyoa.generation.engine.sampling",
    }
)


def test_the_app_reaches_the_engine_only_through_its_interface():
    graph = import_graph(PACKAGE)
    inside = {name for name in graph if name.startswith("cyoa.generation.engine.")}
    outside = [name for name in graph if not name.startswith("cyoa.generation.engine")]
    reaching_in = {
        name: sorted(
            graph[name] & inside - (SHARED_WITH_LLAMACPP if ".llamacpp." in name else set())
        )
        for name in outside
    }
    assert {name: used for name, used in reaching_in.items() if used} == {}
