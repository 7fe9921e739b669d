"""Command-line hooks: how a plugin adds ``harness`` subcommands and ``harness run`` options.

As llm's and datasette's ``register_commands`` and tox's ``tox_add_option``: the ``harness``
command line calls :func:`register_commands` while it builds its parser, and the built-in
commands register through the same call (pytest's default plugins), so a plugin's command is
one like any other, and a command whose plugin is not installed is simply absent.
"""

from __future__ import annotations

from argparse import ArgumentParser, Namespace
from collections.abc import Callable
from typing import Any, Protocol

from ..markers import hookspec

#: ``arguments(parser)`` adds a command's arguments (or ``harness run``'s options) to its parser.
AddArguments = Callable[[ArgumentParser], None]

#: ``run(args)`` runs a command with its parsed arguments; returns the process's exit code.
RunCommand = Callable[[Namespace], int]

#: ``run(args, invocation)`` is called by ``harness run`` once the prompt, the configuration and
#: the workspace are read (``invocation`` holds them, with the run's printer); returns an exit
#: code when the plugin ran the turn itself (e.g. on remote workers), ``None`` to leave the turn
#: to the local controller.
RunHandOff = Callable[[Namespace, Any], "int | None"]
#: ``controller(args)`` is called by ``harness serve`` before it serves; returns an async context
#: manager whose value is the controller to serve over (one that answers the calls a local
#: ``Controller`` answers, raising ``unsupported-feature`` for those it cannot), or ``None`` to
#: leave serving to the local controller.
ServeHandOff = Callable[[Namespace], Any]


class Commands(Protocol):
    """What :func:`register_commands` is called with."""

    def add(
        self,
        name: str,
        help: str,
        run: RunCommand,
        arguments: AddArguments | None = None,
        *,
        json_help: str | None = None,
    ) -> None:
        """Add the subcommand ``harness NAME``: ``help`` is its one line in ``harness --help``,
        ``arguments`` adds its arguments (called only when its parser is built), ``run`` runs it.
        ``json_help`` gives it a ``--json`` flag with that help. A name already taken is
        refused (the plugin is then reported as broken by ``harness plugins``)."""

    def add_run_options(self, arguments: AddArguments, run: RunHandOff | None = None) -> None:
        """Add options to ``harness run`` (``arguments(parser)``) and, with ``run``, a hand-off
        the command calls before running the turn locally (see :data:`RunHandOff`)."""

    def add_serve_options(self, arguments: AddArguments, controller: ServeHandOff) -> None:
        """Add options to ``harness serve`` (``arguments(parser)``) and the hand-off that may
        give it another controller to serve over (see :data:`ServeHandOff`)."""


@hookspec
def register_commands(commands: Commands) -> None:
    """Add ``harness`` subcommands and ``harness run`` options.

    Called by the ``harness`` command line while it builds its parser, with a :class:`Commands`
    to call: for ``harness --help`` (and a mistyped command) to list the commands, for the
    plugin's own command when that command runs, and on each ``harness run`` for plugins that
    add run options. A listing may come from the plugin cache without calling it. Keep the
    implementing module cheap to import (``harness run`` imports it): import what a command
    needs inside its ``run``. Not ``firstresult``: every plugin's implementation runs. Returns
    nothing.
    """
