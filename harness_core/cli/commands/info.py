"""``harness plugins``, ``list`` and ``describe``: what is installed."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy


def register_commands(commands: Any) -> None:
    commands.add(
        "plugins",
        "list installed plugins, what each registers, broken ones",
        lazy("info", "cmd_plugins"),
        json_help=JSON_LINES,
    )
    commands.add("list", "list harness names", lazy("info", "cmd_list"), json_help=JSON_LINES)
    commands.add(
        "describe",
        "describe a harness",
        lazy("info", "cmd_describe"),
        _describe_arguments,
        json_help=JSON_LINES,
    )
    commands.add(
        "doctor",
        "what is installed and will work: harness CLIs, versions, credentials, sandboxes",
        lazy("doctor", "cmd_doctor"),
        json_help=JSON_LINES,
    )


def _describe_arguments(parser: ArgumentParser) -> None:
    parser.add_argument("name")
