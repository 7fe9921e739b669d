"""Entry point module: registers the ``bubblewrap`` sandbox provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .provider import BubblewrapSandboxProvider


@hookimpl
def register_sandbox_providers(register: Callable[[Any], None]) -> None:
    register(BubblewrapSandboxProvider())
