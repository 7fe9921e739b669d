"""Entry point: registers the ``pi`` harness."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import PiAdapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(PiAdapter())


@hookimpl
def conformance_profile(harness: str) -> Any:
    if harness != "pi":
        return None
    from .conformance import profile

    return profile()
