"""The package's modules import each other in one direction: no import circles.

Every ``import`` counts, at module level or inside a function, so a circle cannot hide in a
function-local import either.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cyoa"


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


def test_the_circle_finder_finds_a_circle_through_a_function_local_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("def f():\n    from pkg.a import thing\n")
    (package / "c.py").write_text("import pkg.a\n")
    assert circles(import_graph(package)) == [["pkg.a", "pkg.b"]]


def test_no_module_of_the_package_imports_itself_back_through_others():
    assert circles(import_graph(PACKAGE)) == []


def test_the_app_reaches_the_engine_only_through_its_interface():
    graph = import_graph(PACKAGE)
    inside = {name for name in graph if name.startswith("cyoa.generation.engine.")}
    outside = [name for name in graph if not name.startswith("cyoa.generation.engine")]
    reaching_in = {name: sorted(graph[name] & inside) for name in outside}
    assert {name: used for name, used in reaching_in.items() if used} == {}
