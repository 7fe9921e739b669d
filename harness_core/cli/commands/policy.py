"""``harness policy``: a command against the auto posture's command policy."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import lazy


def register_commands(commands: Any) -> None:
    commands.add(
        "policy",
        "check a command against the auto posture's command policy: verdict and rule",
        lazy("policy_cmd", "cmd_policy"),
        _arguments,
        json_help="one JSON object: verdict, rule, reason, command",
    )


def _arguments(parser: ArgumentParser) -> None:
    from ..policy_cmd import add_arguments

    add_arguments(parser)
