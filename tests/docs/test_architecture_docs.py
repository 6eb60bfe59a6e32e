"""Documentation that cannot drift: docs/architecture.md names every module of the package.

A module is named by its path from the checkout (``cyoa/rating/research/charts.py``), a
package by its folder with the closing slash (``cyoa/rating/research/``) or by its
``__init__.py``. A path counts only where it stands whole: ``cyoa/rating/research/charts.py``
does not name the package ``cyoa/rating/research/``.
"""

import re
from pathlib import Path

from tests.paths import ROOT

PACKAGE = ROOT / "cyoa"
ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def names_of(module: Path, root: Path) -> list[str]:
    """The paths that name ``module`` in the docs: its own path, and for a package's
    ``__init__.py`` also the package's folder."""
    path = module.relative_to(root).as_posix()
    return [path, path.removesuffix("__init__.py")] if module.name == "__init__.py" else [path]


def named(path: str, text: str) -> bool:
    """Whether ``path`` stands whole in ``text``, not as the start or end of a longer path."""
    return re.search(rf"(?<![\w/.]){re.escape(path)}(?![\w/])", text) is not None


def missing_modules(package: Path, text: str) -> list[str]:
    """The modules of ``package`` that ``text`` does not name, by their paths."""
    modules = sorted(package.rglob("*.py"))
    return [
        module.relative_to(package.parent).as_posix()
        for module in modules
        if not any(named(name, text) for name in names_of(module, package.parent))
    ]


def test_a_module_counts_as_named_only_by_its_whole_path(tmp_path):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    for module in ("__init__.py", "sub/__init__.py", "sub/card.py", "card.py", "store.py"):
        (package / module).write_text("")
    text = "`pkg/sub/card.py` and `pkg/__init__.py`; mypkg/store.py"
    assert missing_modules(package, text) == ["pkg/card.py", "pkg/store.py", "pkg/sub/__init__.py"]


def test_every_module_of_the_package_is_in_the_architecture_docs():
    missing = missing_modules(PACKAGE, ARCHITECTURE)
    assert not missing, "docs/architecture.md does not name:\n" + "\n".join(missing)
