"""``harness conformance``: the conformance kit against one harness."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from . import JSON_LINES, lazy
from .args import positive_seconds


def register_commands(commands: Any) -> None:
    commands.add(
        "conformance",
        "run the conformance kit against a harness",
        lazy("conformance_cmd", "cmd_conformance"),
        _arguments,
        json_help=JSON_LINES,
    )


def _arguments(p: ArgumentParser) -> None:
    p.add_argument("name")
    p.add_argument("--workspace", help="workspace directory (default: a temporary one)")
    p.add_argument(
        "--timeout", type=positive_seconds, default=60.0, help="per-turn deadline in seconds"
    )
