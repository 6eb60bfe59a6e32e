"""The ``cyoa`` group lists its verbs without importing them (cyoa/cli/__init__.py's
``VERBS``): the list it shows is each verb's own, and each verb runs its own command."""

import click
import pytest
from click.testing import CliRunner

from cyoa.cli import VERBS, cli

CONTEXT = click.Context(cli)


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_the_listed_help_is_the_first_sentence_of_the_verb_s_own(verb):
    command = cli.get_command(CONTEXT, verb)
    assert command.name == verb
    assert VERBS[verb][2] == command.get_short_help_str(limit=10_000)


def test_every_verb_of_the_verbs_modules_is_listed():
    """A command added to a module but not to VERBS would never run; a group's own subcommands
    are the group's."""
    listed = {(module, name) for module, name, _ in VERBS.values()}
    for module in {module for module, _, _ in VERBS.values()}:
        found = vars(__import__(f"cyoa.cli.{module}", fromlist=["_"]))
        grouped = [value for value in found.values() if isinstance(value, click.Group)]
        inside = {id(command) for group in grouped for command in group.commands.values()}
        commands = {
            name
            for name, value in found.items()
            if isinstance(value, click.Command) and id(value) not in inside
        }
        assert {(module, name) for name in commands} <= listed, module


def test_an_unknown_verb_is_refused_with_the_group_s_usage():
    result = CliRunner().invoke(cli, ["no-such-verb"])
    assert result.exit_code == 2
    assert "No such command 'no-such-verb'" in result.output
