"""Entry point: registers the ``opencode`` harness."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import OpenCodeAdapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(OpenCodeAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    if harness != "opencode":
        return None
    from .conformance import profile

    return profile()
