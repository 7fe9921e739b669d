"""Commands as plugins: the built-in commands and the plugins' register through
``register_commands``; a plugin that is not loaded leaves no command and no ``run`` option."""

from __future__ import annotations

import subprocess
import types

import pytest
from harness_hookspecs import hookimpl

from harness_core.cli import build_parser
from harness_core.cli.commands import CommandSet, add_from_plugins, builtin
from harness_core.plugin_manager import installed_entry_points
from tests.helpers import harness_cmd

PLUGIN_COMMANDS = {"executor-temporal": "worker", "fake-model": "fake-model"}


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*harness_cmd(), *args], env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def without_plugins(cli_env):
    """The CLI's environment with every installed plugin but the Temporal executor and the fake
    model (the plugin manager's ``HARNESS_CORE_PLUGINS``, as a venv without them)."""
    names = [ep.name for ep in installed_entry_points() if ep.name not in PLUGIN_COMMANDS]
    assert "echo" in names and set(PLUGIN_COMMANDS) <= {ep.name for ep in installed_entry_points()}
    return {**cli_env, "HARNESS_CORE_PLUGINS": ",".join(names)}


def test_help_lists_no_command_of_a_plugin_not_loaded(without_plugins, cli_env):
    listed = run(["--help"], without_plugins)
    assert listed.returncode == 0, listed.stderr
    assert "worker" not in listed.stdout and "fake-model" not in listed.stdout
    assert "conformance" in listed.stdout
    with_them = run(["--help"], cli_env)
    assert "worker" in with_them.stdout and "fake-model" in with_them.stdout


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["worker"], "harness: error: invalid-request: argument COMMAND: invalid choice: 'worker'"),
        (
            ["run", "echo", "hi", "--temporal", "127.0.0.1:7233"],
            "harness: error: invalid-request: unrecognized arguments: --temporal 127.0.0.1:7233",
        ),
        (["fake-model", "serve"], "harness: error: invalid-request: argument COMMAND"),
    ],
)
def test_a_plugins_command_without_the_plugin_is_one_line_and_exit_2(
    without_plugins, args, expected
):
    result = run(args, without_plugins)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(expected), result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_with_the_plugin_its_command_and_run_option_parse(cli_env):
    worker = run(["worker", "--help"], cli_env)
    assert worker.returncode == 0 and "--task-queue" in worker.stdout
    options = run(["run", "--help"], cli_env)
    assert options.returncode == 0 and "--temporal ADDRESS" in options.stdout


def test_every_built_in_command_registers_through_the_hook():
    commands = builtin()
    assert list(commands.commands)[:4] == ["plugins", "list", "describe", "run"]
    assert {c.plugin for c in commands.commands.values()} == {"harness_core.cli"}
    parser = build_parser("sessions")
    assert parser.parse_args(["sessions", "--limit", "3"]).limit == 3


def test_a_plugin_adds_a_command_and_a_run_option_with_a_hand_off():
    calls = []

    @hookimpl
    def register_commands(commands):
        commands.add("hello", "say hello", lambda args: calls.append(args.who) or 0, _who)
        commands.add_run_options(_loud, lambda args, invocation: 7 if args.loud else None)

    plugin = types.SimpleNamespace(register_commands=register_commands)
    commands = builtin()
    assert add_from_plugins(commands, [("hello-plugin", plugin)]) == []
    assert commands.commands["hello"].plugin == "hello-plugin"
    [hand_off] = commands.hand_offs()
    assert hand_off(types.SimpleNamespace(loud=True), None) == 7
    assert hand_off(types.SimpleNamespace(loud=False), None) is None


def test_a_plugin_taking_a_built_in_name_adds_nothing():
    @hookimpl
    def register_commands(commands):
        commands.add("extra", "fine", lambda args: 0)
        commands.add("run", "a second run", lambda args: 0)

    commands = builtin()
    before = dict(commands.commands)
    plugin = types.SimpleNamespace(register_commands=register_commands)
    assert add_from_plugins(commands, [("greedy", plugin)]) == ["greedy"]
    assert commands.commands == before  # all or nothing: not even "extra"
    assert isinstance(commands, CommandSet)


def _who(parser):
    parser.add_argument("who")


def _loud(parser):
    parser.add_argument("--loud", action="store_true")
