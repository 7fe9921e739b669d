"""``harness sessions``, ``events`` and ``export``: what the ledger holds."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy
from .args import LEDGER_HELP, count

#: ``harness sessions`` shows the newest this many by default.
DEFAULT_SESSIONS_LIMIT = 50


def register_commands(commands: Any) -> None:
    commands.add(
        "sessions",
        "list sessions with turns, tokens and cost",
        lazy("reading", "cmd_sessions"),
        _sessions_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "events",
        "print a session's events from the ledger",
        lazy("reading", "cmd_events"),
        _events_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "export",
        "export a session as a portable JSON bundle",
        lazy("reading", "cmd_export"),
        _export_arguments,
        json_help="the bundle on one line (and a JSON confirmation with -o)",
    )


def _sessions_arguments(p: ArgumentParser) -> None:
    p.add_argument("--ledger", help=LEDGER_HELP)
    p.add_argument("--limit", type=count(1), help=f"newest N (default {DEFAULT_SESSIONS_LIMIT})")
    p.add_argument("--harness", help="only sessions of this harness")
    p.add_argument(
        "--status",
        choices=("running", "interrupted", "idle", "closed", "open"),
        help="only sessions in this state (open: any but closed)",
    )
    p.add_argument("--since", help="created since: 30m, 2h, 7d, 1w or an ISO date/time")
    p.add_argument("-q", "--query", metavar="TEXT", help="search prompts and answers")


def _events_arguments(p: ArgumentParser) -> None:
    p.add_argument("session", help="session id")
    p.add_argument("--ledger", help=LEDGER_HELP)
    p.add_argument("--after", type=count(0), default=0, help="only events with sequence > N")
    p.add_argument("--limit", type=count(1), help="at most N events")
    p.add_argument(
        "--follow", action="store_true", help="keep printing new events as they are recorded"
    )
    p.add_argument(
        "--tree",
        action="store_true",
        help="with the child sessions it delegated to, each under the call that started it",
    )


def _export_arguments(p: ArgumentParser) -> None:
    p.add_argument("session", help="session id")
    p.add_argument("--ledger", help=LEDGER_HELP)
    p.add_argument("-o", "--output", help="write to this file (default: stdout)")
    p.add_argument(
        "--format",
        choices=("harness-core", "superqode"),
        default="harness-core",
        help="harness-core (default: what harness import reads back whole) or superqode "
        "(a SuperQode Harness Protocol v1 session bundle)",
    )
