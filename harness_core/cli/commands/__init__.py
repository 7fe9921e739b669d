"""The ``harness`` commands: each registers itself through ``register_commands``.

As pytest's default plugins: every built-in command lives in a module of this package with a
``register_commands(commands)`` function, the same hook a plugin implements (the Temporal
executor adds ``worker`` and ``run --temporal``, the fake model ``fake-model``). A command's
arguments are added only when its parser is built, and its code is imported only when it runs,
so ``harness --help`` and ``harness list`` stay fast. Plugins' commands are listed from the
plugin cache (:mod:`harness_core.plugin_cache`); a plugin is imported only for its own command
and, for ``harness run``, when it adds run options.
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from collections.abc import Callable, Iterable
from importlib import import_module
from typing import Any, NamedTuple

#: The modules of the built-in commands, in the order ``harness --help`` lists them.
DEFAULT_COMMANDS = (
    "info",
    "run",
    "session",
    "reading",
    "bundle",
    "conformance",
    "tools",
)

#: The plugin that registers the built-in commands (in listings and errors).
BUILTIN = "harness_core.cli"

#: The ``--json`` help most commands share.
JSON_LINES = "print JSON Lines (one object per line)"


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


class CommandSet:
    """Every registered command and run option; what ``register_commands`` is called with
    (through :meth:`for_plugin`, which stamps the registering plugin's name)."""

    def __init__(self) -> None:
        self.commands: dict[str, Command] = {}
        self.run_options: list[RunOptions] = []

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


def lazy(module: str, function: str) -> Callable[[Namespace], int]:
    """``harness_core.cli.<module>.<function>``, imported when the command runs: ``harness list``
    must not pay for the imports of ``harness run`` (the ledger, the controller)."""

    def command(args: Namespace) -> int:
        return int(getattr(import_module(f"harness_core.cli.{module}"), function)(args))

    command.__name__ = function
    return command


def builtin() -> CommandSet:
    """The built-in commands, each module registering its own."""
    commands = CommandSet()
    register = commands.for_plugin(BUILTIN)
    for name in DEFAULT_COMMANDS:
        import_module(f"{__name__}.{name}").register_commands(register)
    return commands


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
    return failed
