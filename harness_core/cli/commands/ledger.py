"""``harness ledger migrate|check|prune``: the ledger's lifecycle, on purpose."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy
from .args import LEDGER_HELP


def register_commands(commands: Any) -> None:
    commands.add(
        "ledger",
        "migrate or check the ledger's schema; prune (archive, then remove) old closed sessions",
        lazy("ledger_cmd", "cmd_ledger"),
        add_ledger_arguments,
        json_help=JSON_LINES,
    )


def add_ledger_arguments(p: ArgumentParser) -> None:
    p.add_argument("action", choices=("migrate", "check", "prune"), help="what to do")
    p.add_argument("--ledger", help=LEDGER_HELP)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="migrate: print the statements; prune: list what would go; change nothing",
    )
    p.add_argument("--before", metavar="DATE", help="prune: closed sessions last active before")
    p.add_argument(
        "--older-than", metavar="AGE", help="prune: closed sessions last active AGE ago (30d, 12h)"
    )
    p.add_argument(
        "--archive", metavar="DIR", help="prune: write each session's export bundle here first"
    )
