"""Entry point: registers the ``stdio-jsonl`` harness."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import ENV_COMMAND, StdioJsonlAdapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(StdioJsonlAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    """The conformance kit drives the program ``HARNESS_JSONL_COMMAND`` names (how an author
    checks their own program), else the bundled reference program."""
    if harness != "stdio-jsonl":
        return None
    from harness_hookspecs.specs.conformance import ConformanceProfile

    if os.environ.get(ENV_COMMAND):  # the adapter reads it when the config names no command
        return ConformanceProfile(prompt="reply ok", slow_prompt="sleep 30")
    return ConformanceProfile(
        prompt="reply ok",
        slow_prompt="sleep 30",
        config={"command": [sys.executable, "-m", "harness_stdio_jsonl.reference"]},
    )
