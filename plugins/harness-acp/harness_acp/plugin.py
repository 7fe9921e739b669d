"""Entry point: registers one ``acp:<agent>`` harness per registry entry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import AcpAdapter
from .registry import AGENTS


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    for name in AGENTS:
        register(AcpAdapter(name))


@hookimpl
def conformance_profile(harness: str) -> Any:
    from .conformance import OFFLINE, profile

    agent = harness.removeprefix("acp:")
    if not harness.startswith("acp:") or agent not in OFFLINE:
        return None
    return profile(agent)
