"""Entry point: registers the ``stdio-jsonl`` harness."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .adapter import StdioJsonlAdapter


@hookimpl
def register_harnesses(register: Callable[[Any], None]) -> None:
    register(StdioJsonlAdapter())
