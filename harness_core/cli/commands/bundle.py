"""``harness import`` and ``harness replay`` (the commands are in :mod:`..bundle_cmd`)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy
from .args import LEDGER_HELP

#: ``--pace`` waits each recorded gap, capped at this many seconds (``bundle_cmd.PACE_CAP``).
PACE_CAP = 2.0


def register_commands(commands: Any) -> None:
    commands.add(
        "import",
        "load an exported session bundle into a ledger (ids kept)",
        lazy("bundle_cmd", "cmd_import"),
        _import_arguments,
        json_help="one line: the imported session id, harness and event count",
    )
    commands.add(
        "replay",
        "print a session's events as they happened",
        lazy("bundle_cmd", "cmd_replay"),
        _replay_arguments,
        json_help=JSON_LINES,
    )


def _import_arguments(p: ArgumentParser) -> None:
    p.add_argument(
        "bundle",
        help="a file written by harness export (either --format), or a SuperQode Harness Protocol v1 "
        "session export (- = stdin)",
    )
    p.add_argument("--ledger", help=LEDGER_HELP)


def _replay_arguments(p: ArgumentParser) -> None:
    p.add_argument("session", help="session id")
    p.add_argument("--ledger", help=LEDGER_HELP)
    p.add_argument(
        "--pace", action="store_true", help=f"wait the recorded gaps (each at most {PACE_CAP}s)"
    )
