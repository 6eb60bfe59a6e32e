"""Documentation that cannot drift: every verb is in the README, and every option of the
analysis verbs is in the README and docs/analysis.md."""

import click
import pytest

from cyoa.cli import cli
from tests.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
COMMAND_LINE = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
ANALYSIS = (ROOT / "docs" / "analysis.md").read_text(encoding="utf-8")
# The group imports a verb's module when the verb is asked for (cyoa/cli/__init__.py).
CONTEXT = click.Context(cli)


@pytest.mark.parametrize("verb", cli.list_commands(CONTEXT))
def test_every_verb_is_in_the_readme(verb):
    assert f"python -m cyoa {verb} " in COMMAND_LINE or f"] {verb} " in COMMAND_LINE


@pytest.mark.parametrize(
    ("verb", "option"),
    [
        (verb, option)
        for verb in ("analyze", "metrics", "import-tsv", "tag", "export", "import-ratings")
        for param in cli.get_command(CONTEXT, verb).params
        for option in param.opts
        if option.startswith("--")
    ],
)
def test_every_analysis_option_is_documented(verb, option):
    assert option in COMMAND_LINE
    assert option in ANALYSIS
