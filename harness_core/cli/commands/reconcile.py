"""``harness reconcile``: end the turns (and, on Temporal, the sessions) nobody runs anymore."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy
from .args import LEDGER_HELP


def register_commands(commands: Any) -> None:
    commands.add(
        "reconcile",
        "end turns whose writer is gone (interrupted); see harness reconcile-temporal",
        lazy("reconcile_cmd", "cmd_reconcile"),
        add_reconcile_arguments,
        json_help=JSON_LINES,
    )


def add_reconcile_arguments(p: ArgumentParser) -> None:
    """The arguments every reconcile command shares (the Temporal executor's too)."""
    p.add_argument("--ledger", help=LEDGER_HELP)
    p.add_argument("--dry-run", action="store_true", help="report the orphans, change nothing")
