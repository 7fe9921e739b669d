"""Entry point: registers the ``stdio-jsonl`` harness."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import StdioJsonlAdapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(StdioJsonlAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    """The conformance kit drives the bundled reference program."""
    if harness != "stdio-jsonl":
        return None
    from harness_hookspecs.specs.conformance import ConformanceProfile

    return ConformanceProfile(
        prompt="reply ok",
        slow_prompt="sleep 30",
        config={"command": [sys.executable, "-m", "harness_stdio_jsonl.reference"]},
    )
