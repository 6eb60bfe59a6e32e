"""The app's start and ``python -m cyoa --help`` leave the analysis libraries unimported: each
is imported by the function that uses it (drawing a chart, fitting a model, planning a study),
so every app process and every verb starts without paying for them.

Each check runs in a fresh interpreter, since the test process has imported them already.
"""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import write_setup

from tests.paths import ROOT

# Imported only where they are used; sqlite-utils imports pandas when a database is migrated.
LAZY = ("matplotlib", "scipy", "statsmodels", "pingouin", "seaborn", "krippendorff", "nltk")

LOADED = "import json, sys; print(json.dumps(sorted(set(sys.argv[1:]) & set(sys.modules))))"

# What app.py does: the verbs registered, then the app built.
APP_START = (
    "import json, sys; import cyoa.cli; from cyoa import create_app; "
    "create_app(json.loads(sys.argv.pop(1))); " + LOADED.removeprefix("import json, sys; ")
)


def _loaded(code: str, *args: str, names: tuple[str, ...] = LAZY) -> list[str]:
    run = subprocess.run(
        [sys.executable, "-c", code, *args, *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(run.stdout.splitlines()[-1])


def test_the_app_starts_without_the_analysis_libraries(tmp_path):
    assert _loaded(APP_START, json.dumps(write_setup(tmp_path))) == []


def test_the_command_line_lists_its_verbs_without_importing_them():
    """Nor the verbs' modules, which import the table of kinds and through it both wings."""
    code = (
        "import sys; from cyoa.cli import cli\n"
        "try:\n"
        "    cli(['--help'], prog_name='python -m cyoa')\n"
        "except SystemExit:\n"
        "    pass\n" + LOADED
    )
    assert _loaded(code, names=(*LAZY, "cyoa.kinds", "cyoa.cli.analysis")) == []
