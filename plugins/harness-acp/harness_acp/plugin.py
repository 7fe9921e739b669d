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
