"""``harness steer``, ``checkpoints``, ``diff``, ``rewind`` and ``fork``: a session's checkpoints and
branches (:mod:`harness_core.branching`)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy
from .args import LEDGER_HELP


def register_commands(commands: Any) -> None:
    commands.add(
        "steer",
        "add text to the turn a harness run is running in a session",
        lazy("run", "cmd_steer"),
        _steer_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "checkpoints",
        "list a session's workspace checkpoints",
        lazy("branching_cmd", "cmd_checkpoints"),
        _session_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "diff",
        "show the files a turn changed (its checkpoints' diff)",
        lazy("branching_cmd", "cmd_diff"),
        _diff_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "rewind",
        "restore a session's workspace (and conversation, where the harness can) to a checkpoint",
        lazy("branching_cmd", "cmd_rewind"),
        _rewind_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "fork",
        "open a child session continuing a session's conversation up to an event",
        lazy("branching_cmd", "cmd_fork"),
        _fork_arguments,
        json_help=JSON_LINES,
    )


def _session_arguments(p: ArgumentParser) -> None:
    p.add_argument("session", help="session id (or a unique prefix)")
    p.add_argument("--ledger", help=LEDGER_HELP)


def _steer_arguments(p: ArgumentParser) -> None:
    _session_arguments(p)
    p.add_argument("text", help="what to tell the harness, before its next model request")


def _diff_arguments(p: ArgumentParser) -> None:
    _session_arguments(p)
    p.add_argument("turn", nargs="?", help="turn id, or its number from 1 (default: the last)")
    p.add_argument("--stat", action="store_true", help="the changed files only, no patch")


def _rewind_arguments(p: ArgumentParser) -> None:
    _session_arguments(p)
    p.add_argument("checkpoint", help="checkpoint id (or a unique prefix, ckpt_...)")


def _fork_arguments(p: ArgumentParser) -> None:
    _session_arguments(p)
    p.add_argument("--at", metavar="EVENT", help="the parent's last event kept (default: its last)")
    p.add_argument(
        "--workspace",
        metavar="DIR",
        help="the child's workspace (default: the parent's; needed for an imported session)",
    )
