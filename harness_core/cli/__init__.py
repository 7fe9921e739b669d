"""The ``harness`` command line.

Imports stay lazy so ``harness --help`` and ``harness list`` start fast. Bad input prints one line
on stderr (``harness: error: <reason>: <message> (<hint>)``) and exits with the code documented
in :mod:`harness_core.cli.errors`; nothing recorded is lost. Every ``--json`` prints JSON Lines
(see :mod:`harness_core.cli.output`).
"""

from __future__ import annotations

import os
import sys
from argparse import ArgumentParser, ArgumentTypeError, Namespace
from collections.abc import Callable, Sequence
from importlib import import_module
from typing import Any, NoReturn

from .exits import EXIT_CANCELLED, EXIT_OK, EXIT_USAGE
from .view import format_event

__all__ = ["build_parser", "format_event", "main"]

#: ``harness sessions`` shows the newest this many by default.
DEFAULT_SESSIONS_LIMIT = 50


class _Parser(ArgumentParser):
    """argparse, but a usage error is the same one line as every other error."""

    def error(self, message: str) -> NoReturn:
        from .errors import CliError

        hint = f"{message}; see {self.prog} --help"
        raise CliError("invalid-request", hint)


def _lazy(module: str, function: str) -> Callable[[Namespace], int]:
    """``module.function``, imported when the command runs: ``harness list`` must not pay for
    the imports of ``harness run`` (the ledger, the controller) just to build the parser."""

    def command(args: Namespace) -> int:
        return int(getattr(import_module(f"{__name__}.{module}"), function)(args))

    command.__name__ = function
    return command


def _positive_seconds(text: str) -> float:
    from ..number_checks import positive_number

    try:
        return positive_number(text, seconds=True)
    except ValueError as error:
        raise ArgumentTypeError(str(error)) from None


def _positive_number(text: str) -> float:
    from ..number_checks import positive_number

    try:
        return positive_number(text)
    except ValueError as error:
        raise ArgumentTypeError(str(error)) from None


def _count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        from ..number_checks import whole_number

        try:
            return whole_number(text, minimum)
        except ValueError as error:
            raise ArgumentTypeError(str(error)) from None

    parse.__name__ = "count"
    return parse


def _command(
    sub: Any, name: str, help: str, func: Callable[[Namespace], int], json_help: str | None = None
) -> ArgumentParser:
    parser: ArgumentParser = sub.add_parser(name, help=help, description=help)
    parser.set_defaults(func=func)
    parser.add_argument(
        "--json", action="store_true", help=json_help or "print JSON Lines (one object per line)"
    )
    return parser


class _Skipped:
    """Stands in for the parser of a command this invocation does not run: argparse builds
    each subparser with gettext look-ups (a dozen ``stat`` calls each) and a terminal-size query
    per argument, most of a ``harness run``'s parsing time for parsers it never uses."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def set_defaults(self, **kwargs: Any) -> None:
        return None


class _OnlyCommand:
    """The subparsers action, adding only ``command``'s parser (the others are skipped)."""

    def __init__(self, sub: Any, command: str) -> None:
        self.sub = sub
        self.command = command

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        return self.sub.add_parser(name, **kwargs) if name == self.command else _Skipped()


def build_parser(command: str | None = None, *, only_command: bool = True) -> ArgumentParser:
    """The whole parser; with ``command`` (what ``main`` is about to run; ``""`` for none),
    optional plugins' arguments only for the command that needs them, and with
    ``only_command`` only that command's parser (it parses the same). A ``command`` that is no
    command gets every parser (for the usage error listing them)."""
    if command and only_command:
        parser = _build_parser(command, only=True)
        if command in _subcommands(parser):
            return parser
    return _build_parser(command, only=False)


def _subcommands(parser: ArgumentParser) -> dict[str, Any]:
    sub = next(a for a in parser._actions if a.dest == "command")
    choices: dict[str, Any] = getattr(sub, "choices", None) or {}
    return choices


def _build_parser(command: str | None, *, only: bool) -> ArgumentParser:
    parser = _Parser(
        prog="harness",
        description="Drive coding-agent harnesses through one Session -> Turns control plane.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub: Any = parser.add_subparsers(dest="command", metavar="COMMAND")
    if only and command:
        sub = _OnlyCommand(sub, command)
    ledger_help = "ledger URL (default: $HARNESS_LEDGER or sqlite:.harness/ledger.sqlite)"

    _command(
        sub,
        "plugins",
        "list installed plugins, what each registers, broken ones",
        _lazy("info", "cmd_plugins"),
    )
    _command(sub, "list", "list harness names", _lazy("info", "cmd_list"))
    p = _command(sub, "describe", "describe a harness", _lazy("info", "cmd_describe"))
    p.add_argument("name", help="harness name (see harness list)")

    p = _command(
        sub,
        "run",
        "run one turn (opening or resuming a session): the answer as it streams",
        _lazy("run", "cmd_run"),
        "print every event as JSON Lines",
    )
    p.add_argument("name", help="harness name")
    p.add_argument(
        "prompt", nargs="?", help="the prompt; - (or piped stdin without PROMPT) reads stdin"
    )
    p.add_argument("--prompt-file", metavar="FILE", help="read the prompt from FILE (- = stdin)")
    p.add_argument("--session", help="resume this session id instead of opening a new one")
    p.add_argument("--workspace", help="workspace directory (default: current directory)")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("--model", help="the model the harness should use (passed to its CLI)")
    p.add_argument("--posture", choices=("strict", "auto", "dangerous"), help="default: auto")
    p.add_argument(
        "--grant-dangerous",
        action="store_true",
        help="grant this run the dangerous posture (refused without it)",
    )
    p.add_argument("--sandbox", metavar="PROVIDER", help="sandbox provider (see harness plugins)")
    p.add_argument(
        "--scope",
        default="run",
        choices=("run", "agent", "agent-user"),
        help="workspace scope: a fresh one per run, or durable per agent / agent+user",
    )
    p.add_argument(
        "--network",
        default="open",
        choices=("none", "mcp-only", "allowlist", "open"),
        help="the sandbox's network policy (default open; enforced by bubblewrap)",
    )
    p.add_argument(
        "--allow", action="append", default=[], metavar="HOST:PORT", help="allowlist entry"
    )
    p.add_argument(
        "--sandbox-config", action="append", default=[], metavar="KEY=VALUE", help="repeatable"
    )
    p.add_argument("--agent", help="who the session runs for (agent-level credential grants)")
    p.add_argument("--user", help="the user the agent works for (agent-user workspaces)")
    p.add_argument("--timeout", type=_positive_seconds, help="turn deadline in seconds")
    p.add_argument("--max-events", type=_count(1), help="event-count limit for the turn")
    p.add_argument(
        "--approve",
        action="store_true",
        help="ask on the terminal (y/n) before each tool call (implies --posture strict)",
    )
    p.add_argument("--max-turns", type=_count(1), help="session budget: turns (all runs)")
    p.add_argument("--max-cost", type=_positive_number, metavar="USD", help="session budget")
    p.add_argument("--max-tokens", type=_count(1), help="session budget: input + output tokens")
    p.add_argument(
        "--max-wall-clock",
        type=_positive_seconds,
        metavar="SECONDS",
        help="session budget: seconds since the session was opened or resumed",
    )
    p.add_argument(
        "--output-schema",
        metavar="FILE",
        help="a JSON Schema file the final answer must match; prints the parsed answer",
    )
    p.add_argument(
        "--output-retries",
        type=_count(0),
        metavar="N",
        help="retries of an answer that does not match --output-schema (default 2)",
    )
    p.add_argument("--close", action="store_true", help="close the session after the turn")
    p.add_argument("--temporal", metavar="ADDRESS", help="run on Temporal workers (harness worker)")
    p.add_argument("--events", action="store_true", help="one line per event instead")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="harness configuration (VALUE parsed as JSON when it is JSON); repeatable",
    )

    p = _command(
        sub,
        "close",
        "close a session (after harness run without --close)",
        _lazy("run", "cmd_close"),
    )
    p.add_argument("session", help="session id (see harness sessions)")
    p.add_argument("--ledger", help=ledger_help)
    p = _command(
        sub,
        "logs",
        "print a session's diagnostic log (what a failing harness raised, with its traceback)",
        _lazy("reading", "cmd_logs"),
    )
    p.add_argument("session", help="session id (see harness sessions)")
    p.add_argument("--ledger", help=ledger_help)
    p = _command(
        sub,
        "cancel",
        "cancel the turn a harness run is running in a session",
        _lazy("run", "cmd_cancel"),
    )
    p.add_argument("session", help="session id (see harness sessions)")

    p = _command(
        sub,
        "sessions",
        "list sessions with turns, tokens and cost",
        _lazy("reading", "cmd_sessions"),
    )
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("--limit", type=_count(1), help=f"newest N (default {DEFAULT_SESSIONS_LIMIT})")
    p.add_argument("--harness", help="only sessions of this harness")
    p.add_argument("--status", choices=("open", "closed"), help="only open or closed sessions")
    p.add_argument("--since", help="created since: 30m, 2h, 7d, 1w or an ISO date/time")
    p.add_argument("-q", "--query", metavar="TEXT", help="search prompts and answers")
    p = _command(
        sub, "events", "print a session's events from the ledger", _lazy("reading", "cmd_events")
    )
    p.add_argument("session", help="session id (see harness sessions)")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("--after", type=_count(0), default=0, help="only events with sequence > N")
    p.add_argument("--limit", type=_count(1), help="at most N events")
    p.add_argument(
        "--follow", action="store_true", help="keep printing new events as they are recorded"
    )
    p = _command(
        sub,
        "export",
        "export a session as a portable JSON bundle",
        _lazy("reading", "cmd_export"),
        "the bundle on one line (and a JSON confirmation with -o)",
    )
    p.add_argument("session", help="session id (see harness sessions)")
    p.add_argument("--ledger", help=ledger_help)
    p.add_argument("-o", "--output", help="write to this file (default: stdout)")
    if not (only and command) or command in ("import", "replay"):  # else skipped: no import
        from . import bundle_cmd

        bundle_cmd.add_commands(sub, _command, ledger_help)

    p = _command(
        sub,
        "policy",
        "check a command against the auto posture's command policy: verdict and rule",
        _lazy("policy_cmd", "cmd_policy"),
        "one JSON object: verdict, rule, reason, command",
    )
    if not (only and command) or command == "policy":  # else skipped: no import
        from .policy_cmd import add_arguments as add_policy_arguments

        add_policy_arguments(p)
    p = _command(
        sub,
        "conformance",
        "run the conformance kit against a harness",
        _lazy("conformance_cmd", "cmd_conformance"),
    )
    p.add_argument("name", help="harness name (see harness list)")
    p.add_argument("--workspace", help="workspace directory (default: a temporary one)")
    p.add_argument(
        "--timeout", type=_positive_seconds, default=60.0, help="per-turn deadline in seconds"
    )
    p = sub.add_parser("new", help="scaffold a new plugin from the cookiecutter template")
    p.set_defaults(func=_lazy("info", "cmd_new"))
    p.add_argument(
        "--kind",
        choices=("harness", "harness-cli", "sandbox", "credentials"),
        help="what the plugin provides (harness-cli: an adapter for a CLI)",
    )
    p.add_argument("--name", help="the plugin's name (the distribution is harnessplane-NAME)")
    p.add_argument("--description", help="one line for the package metadata")
    p.add_argument("--author", help="the package author")
    p.add_argument("--output-dir", default=".", help="where to create the project (default .)")
    p.add_argument("--no-input", action="store_true", help="ask nothing: defaults for the rest")
    p = sub.add_parser("serve", help="serve the HTTP API and the live session viewer (127.0.0.1)")
    p.set_defaults(func=_serve)
    if not (only and command) or command == "serve":  # else skipped: no import
        from ..serve.command import add_arguments as add_serve_arguments

        add_serve_arguments(p)
    p = sub.add_parser("worker", help="run a Temporal worker for sessions (executor-temporal)")
    p.set_defaults(func=_worker)
    if command in (None, "worker"):
        _worker_arguments(p)
    p = sub.add_parser("fake-model", help="run the scripted fake model server (offline tests)")
    p.set_defaults(func=_lazy("info", "cmd_fake_model"))
    p.add_argument("rest", nargs="...", help="e.g. serve --port 8080 --script FILE")
    return parser


def _serve(args: Namespace) -> int:
    from ..serve.command import main as serve_main

    return serve_main(args)


def _worker_arguments(parser: ArgumentParser) -> None:
    try:
        from executor_temporal.cli import add_arguments
    except ImportError:
        return  # `harness worker` then says what to install
    add_arguments(parser)


def _worker(args: Namespace) -> int:
    from .errors import CliError

    try:
        from executor_temporal.cli import run
    except ImportError:
        raise CliError("unsupported", "install harnessplane-executor-temporal") from None
    return run(args)


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
