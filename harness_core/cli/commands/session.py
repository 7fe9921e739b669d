"""``harness close``, ``logs`` and ``cancel``: a session after ``harness run``."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy
from .args import LEDGER_HELP


def register_commands(commands: Any) -> None:
    commands.add(
        "close",
        "close a session (after harness run without --close)",
        lazy("run", "cmd_close"),
        _close_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "logs",
        "print a session's diagnostic log (what a failing harness raised, with its traceback)",
        lazy("reading", "cmd_logs"),
        _close_arguments,  # the same: SESSION and --ledger
        json_help=JSON_LINES,
    )
    commands.add(
        "cancel",
        "cancel the turn a harness run is running in a session",
        lazy("run", "cmd_cancel"),
        _close_arguments,  # SESSION (an id or its unique prefix, looked up in --ledger)
        json_help=JSON_LINES,
    )


def _close_arguments(p: ArgumentParser) -> None:
    p.add_argument("session", help="session id")
    p.add_argument("--ledger", help=LEDGER_HELP)
