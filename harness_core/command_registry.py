"""What ``register_commands`` fills (``harness_hookspecs.specs.commands``): the ``harness``
commands and ``harness run`` options, each stamped with the plugin that registered it.

Standard library only, no attrs: the command line builds its parser from this on every
``harness`` invocation, and the plugin cache lists plugins' commands with it.
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

#: The plugin that registers the built-in commands (in listings and errors).
BUILTIN = "harness_core.cli"


class Command(NamedTuple):
    """One ``harness NAME`` subcommand (see ``harness_hookspecs.specs.commands``). A named
    tuple, not attrs: building the parser must not import attrs (``harness --help``)."""

    name: str
    help: str
    run: Callable[[Namespace], int]
    arguments: Callable[[ArgumentParser], None] | None = None
    json_help: str | None = None
    plugin: str = BUILTIN


class RunOptions(NamedTuple):
    """Options a plugin adds to ``harness run``, and its hand-off (``None``: options only)."""

    arguments: Callable[[ArgumentParser], None]
    run: Callable[[Namespace, Any], int | None] | None = None
    plugin: str = BUILTIN


class ServeOptions(NamedTuple):
    """Options a plugin adds to ``harness serve``, and its controller hand-off."""

    arguments: Callable[[ArgumentParser], None]
    controller: Callable[[Namespace], Any]
    plugin: str = BUILTIN


class CommandSet:
    """Every registered command and run option; what ``register_commands`` is called with
    (through :meth:`for_plugin`, which stamps the registering plugin's name)."""

    def __init__(self) -> None:
        self.commands: dict[str, Command] = {}
        self.run_options: list[RunOptions] = []
        self.serve_options: list[ServeOptions] = []

    def for_plugin(self, plugin: str) -> PluginCommands:
        """The ``commands`` argument for ``plugin``'s ``register_commands``."""
        return PluginCommands(self, plugin)

    def hand_offs(self) -> list[Callable[[Namespace, Any], int | None]]:
        """The run options' hand-offs, in registration order."""
        return [options.run for options in self.run_options if options.run is not None]


class PluginCommands:
    """One plugin's view of a :class:`CommandSet` (``harness_hookspecs.specs.commands.Commands``)."""

    def __init__(self, commands: CommandSet, plugin: str) -> None:
        self.commands = commands
        self.plugin = plugin

    def add(
        self,
        name: str,
        help: str,
        run: Callable[[Namespace], int],
        arguments: Callable[[ArgumentParser], None] | None = None,
        *,
        json_help: str | None = None,
    ) -> None:
        if not name or name.startswith("-") or name in self.commands.commands:
            raise ValueError(f"command name {name!r} is taken or not a name")
        self.commands.commands[name] = Command(
            name, help, run, arguments, json_help, plugin=self.plugin
        )

    def add_run_options(
        self,
        arguments: Callable[[ArgumentParser], None],
        run: Callable[[Namespace, Any], int | None] | None = None,
    ) -> None:
        self.commands.run_options.append(RunOptions(arguments, run, plugin=self.plugin))

    def add_serve_options(
        self, arguments: Callable[[ArgumentParser], None], controller: Callable[[Namespace], Any]
    ) -> None:
        self.commands.serve_options.append(ServeOptions(arguments, controller, self.plugin))


def add_from_plugins(commands: CommandSet, plugins: Iterable[tuple[str, Any]]) -> list[str]:
    """Call each ``(name, plugin object)``'s ``register_commands``; the names of those that
    failed (their commands are then absent, as a broken plugin's are)."""
    failed = []
    for name, plugin in plugins:
        hook = getattr(plugin, "register_commands", None)
        if hook is None or not hasattr(hook, "harness_core_impl"):
            continue
        staged = CommandSet()
        staged.commands.update(commands.commands)
        try:
            hook(commands=staged.for_plugin(name))
        except Exception:
            failed.append(name)
            continue
        commands.commands.update(staged.commands)
        commands.run_options += staged.run_options
        commands.serve_options += staged.serve_options
    return failed
