"""Entry point: registers the ``codex`` harness and its conformance profile."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import NAME, CodexAdapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(CodexAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    if harness != NAME:
        return None
    from .conformance import profile

    return profile()
