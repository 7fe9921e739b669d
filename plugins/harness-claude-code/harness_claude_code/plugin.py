"""Entry point: registers the ``claude-code`` harness and its conformance profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import NAME, ClaudeCodeAdapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(ClaudeCodeAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    if harness != NAME:
        return None
    from .conformance import profile

    return profile()
