"""The ``harness`` command line.

Imports stay lazy so ``harness --help`` and ``harness list`` start fast. Bad input prints one line
on stderr (``harness: error: <reason>: <message> (<hint>)``) and exits with the code documented
in :mod:`harness_core.cli.errors`; nothing recorded is lost. Every ``--json`` prints JSON Lines
(see :mod:`harness_core.cli.output`).
"""

from __future__ import annotations

import os
import sys
from argparse import ArgumentParser, Namespace
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .commands.reading import DEFAULT_SESSIONS_LIMIT
from .exits import EXIT_CANCELLED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from .commands import CommandSet

__all__ = ["DEFAULT_SESSIONS_LIMIT", "build_parser", "main"]

#: The built-in commands plugins add options to (``add_run_options``, ``add_serve_options``).
OPTIONS_FROM_PLUGINS = ("run", "serve")


class _Parser(ArgumentParser):
    """argparse, but a usage error is the same one line as every other error, naming the
    command's own ``--help``; an ``intermixed`` parser takes its options anywhere among its
    positionals (``harness run echo --close "closing"``)."""

    intermixed = False
    _mixing = False
    _checking = False
    #: the command the last parse found (its ``--help`` is the one a usage error points at)
    _command: str | None = None

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self.intermixed and not self._mixing:
            self._mixing = True  # argparse's intermixed parsing calls back into this method
            try:
                return self.parse_known_intermixed_args(args, namespace)
            finally:
                self._mixing = False
        known, extras = super().parse_known_args(args, namespace)
        self._command = getattr(known, "command", None)
        return known, extras

    def add_argument(self, *args: Any, **kwargs: Any) -> Any:
        self._checking = True
        try:
            return super().add_argument(*args, **kwargs)
        finally:
            self._checking = False

    def _get_formatter(self) -> Any:
        # add_argument builds a formatter only to check the metavar against nargs, and the
        # width does not matter to that: give one, or argparse queries the terminal size for
        # every argument (and imports shutil, with bz2 and lzma, to do it).
        formatter: Any = self.formatter_class  # argparse's formatters all take ``width``
        if self._checking:
            return formatter(prog=self.prog, width=80)
        # HelpFormatter's own default width, without importing shutil for it (intermixed
        # parsing formats the usage on every ``harness run``)
        return formatter(prog=self.prog, width=_terminal_columns() - 2)

    def error(self, message: str) -> NoReturn:
        from .errors import CliError

        command = self._command if " " not in self.prog else None
        hint = f"{message}; see {self.prog}{' ' + command if command else ''} --help"
        raise CliError("invalid-request", hint)


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` (``$COLUMNS``, else the terminal of stdout, else
    80), as argparse's HelpFormatter asks it, without importing shutil."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    try:
        lines = int(os.environ["LINES"])
    except (KeyError, ValueError):
        lines = 0
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((80, 24))
        if columns <= 0:
            columns = size.columns or 80
    return columns


def build_parser(command: str | None = None, *, only_command: bool = True) -> ArgumentParser:
    """The parser of every command, the installed plugins' too (see :mod:`.commands`).

    With ``command`` (what ``main`` is about to run; ``""`` for none) the plugins are imported
    only as that command needs them (its own plugin; for ``run``, those adding run options; the
    others' commands are listed from the plugin cache), only that command's parser gets its
    arguments, and with ``only_command`` the others are left out (it parses the same). A
    ``command`` that is no command gets every command listed (for the usage error naming them).
    """
    from .commands import builtin

    commands = builtin()
    listed = None
    if command is None or command not in commands.commands or command in OPTIONS_FROM_PLUGINS:
        listed = _add_plugin_commands(commands, command)
    known = command in commands.commands
    parser = _parser(commands, command, only=known and only_command)
    # what the plugin cache answered, for the command (``harness run``: which plugins to load)
    # to use rather than check the installed distributions again
    parser.set_defaults(plugin_listing=listed)
    return parser


def _parser(commands: CommandSet, command: str | None, *, only: bool) -> ArgumentParser:
    parser = _Parser(
        prog="harness",
        description="Drive coding-agent harnesses through one Session -> Turns control plane.",
    )
    parser.set_defaults(
        hand_offs=commands.hand_offs(),
        serve_hand_offs=[options.controller for options in commands.serve_options],
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    # prog given: argparse would otherwise format the usage of "harness" to find it
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", prog=parser.prog)
    for entry in commands.commands.values():
        # argparse builds each subparser with gettext look-ups and a terminal-size query per
        # argument: most of a ``harness run``'s parsing time, for parsers it never uses.
        if only and entry.name != command:
            continue
        p = sub.add_parser(entry.name, help=entry.help, description=entry.help)
        p.set_defaults(func=entry.run)
        if command is not None and entry.name != command:
            continue  # listed, not parsed: no arguments
        if entry.json_help is not None:
            p.add_argument("--json", action="store_true", help=entry.json_help)
        if entry.arguments is not None:
            entry.arguments(p)
        if entry.name == "run":
            for options in commands.run_options:
                options.arguments(p)
        elif entry.name == "serve":
            for served in commands.serve_options:
                served.arguments(p)
    return parser


def _add_plugin_commands(commands: CommandSet, command: str | None) -> dict[str, Any]:
    """Add the installed plugins' commands: for real (arguments, code) those ``command`` needs
    (all for ``None``), the others as listed by the plugin cache (name and help). Returns that
    listing."""
    from ..plugin_cache import listing
    from .commands import Command, add_from_plugins

    known = listing()
    rows = [row for row in known["plugins"] if row.get("commands") or row.get("run_options")]
    if command is None:
        wanted = {row["name"] for row in rows}
    elif command in OPTIONS_FROM_PLUGINS:
        wanted = {row["name"] for row in rows if row.get("run_options")}
    else:
        wanted = {row["name"] for row in rows if command in (c[0] for c in row["commands"])}
    if wanted:  # (the plugin manager's imports only then: not for harness --help)
        from ..plugin_manager import EntryPointRef

        refs = [EntryPointRef(*ep) for ep in known["entry_points"] if ep[0] in wanted]
        add_from_plugins(commands, ((ref.name, _load(ref)) for ref in refs))
    for row in rows:
        for name, help, json_help in row["commands"]:
            if row["name"] not in wanted and name not in commands.commands:
                commands.commands[name] = Command(
                    name, help, _listed_only, None, json_help, plugin=row["name"]
                )
    return known


def _load(ref: Any) -> Any:
    try:
        return ref.load()
    except Exception:  # a broken plugin: its commands are absent (harness plugins says why)
        return None


def _listed_only(args: Namespace) -> int:
    from .errors import CliError

    raise CliError("invalid-request", f"run harness {args.command} as the command itself")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``harness`` command; ``argv`` defaults to the process's. Run as the process's
    command (no ``argv``: the ``harness`` script, ``python -m harness_core.cli``), it then
    leaves the process at once (see :func:`_leave`)."""
    code = _main(argv)
    if argv is None:
        _leave(code)
    return code


def _leave(code: int) -> None:
    """End the process as a normal exit does - the interpreter's thread joins
    (``threading._shutdown``: non-daemon threads and executors), the ``atexit`` handlers, flushed
    stdout/stderr - but without tearing down the interpreter: freeing every module's objects
    took 30-80 ms of CPU after a ``harness run`` of a CLI, and the OS frees the memory at once.
    Files and ledgers are closed by the commands themselves before this."""
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if shutdown is None or run_exit_functions is None:  # another interpreter: exit normally
        return
    shutdown()
    run_exit_functions()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: what the normal exit would report
            code = code or 120
    os._exit(code)


def _main(argv: Sequence[str] | None) -> int:
    # Non-UTF-8 argv arrives as surrogate escapes, and a stdout may be strict: never crash on
    # writing back what we were given or what an older ledger holds.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    if os.environ.get("HARNESS_DEBUG"):
        _debug_logging()
    try:
        arguments = sys.argv[1:] if argv is None else list(argv)
        command = next((a for a in arguments if not a.startswith("-")), "")
        # Only the command's own parser when it comes first: after a top-level option (--help)
        # the top-level parser answers, listing every command.
        parser = build_parser(command, only_command=arguments[:1] == [command])
        args = parser.parse_args(arguments)
        if args.version:
            from .info import version_text

            print(version_text())
            return EXIT_OK
        if not getattr(args, "func", None):
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        return int(args.func(args))
    except BaseException as raised:
        error = raised
        # Without harness_hookspecs loaded nothing could raise a HarnessError (--help, a bad
        # option on a fast command): don't import it just to check.
        if "harness_hookspecs" in sys.modules:
            from harness_hookspecs import HarnessError

            from .errors import report, unwrap

            error = unwrap(raised)
            if isinstance(error, HarnessError):
                return report(error)
        if isinstance(error, KeyboardInterrupt):
            return EXIT_CANCELLED
        if isinstance(error, BrokenPipeError):
            _quiet_stdout()
            return EXIT_OK
        if isinstance(error, SystemExit):  # --help and the like
            return int(error.code or 0) if isinstance(error.code, int | None) else EXIT_USAGE
        if os.environ.get("HARNESS_DEBUG"):
            raise
        from .errors import internal

        return internal(error)


def _debug_logging() -> None:
    """``HARNESS_DEBUG=1``: the runtime's log records (a harness's traceback) on stderr too."""
    import logging

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("harness: debug: %(name)s: %(message)s"))
    debug_logger = logging.getLogger("harness_core")
    debug_logger.addHandler(handler)
    debug_logger.setLevel(logging.DEBUG)


def _quiet_stdout() -> None:
    # A closed pipe (harness sessions | head): don't let the interpreter's final flush complain.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
