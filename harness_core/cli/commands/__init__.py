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

from argparse import Namespace
from collections.abc import Callable
from importlib import import_module

from ...command_registry import (
    BUILTIN,
    Command,
    CommandSet,
    PluginCommands,
    RunOptions,
    add_from_plugins,
)

__all__ = [
    "BUILTIN",
    "DEFAULT_COMMANDS",
    "JSON_LINES",
    "Command",
    "CommandSet",
    "PluginCommands",
    "RunOptions",
    "add_from_plugins",
    "builtin",
    "lazy",
]

#: The modules of the built-in commands, in the order ``harness --help`` lists them.
DEFAULT_COMMANDS = (
    "info",
    "run",
    "session",
    "branching",
    "reading",
    "bundle",
    "policy",
    "conformance",
    "tools",
    "reconcile",
    "ledger",
)

#: The ``--json`` help most commands share.
JSON_LINES = "print JSON Lines (one object per line)"


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
