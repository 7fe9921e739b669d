"""Entry point module: registers the ``local`` sandbox provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness_hookspecs import hookimpl

from .provider import LocalSandboxProvider


@hookimpl
def register_sandbox_providers(register: Callable[[Any], None]) -> None:
    register(LocalSandboxProvider())
