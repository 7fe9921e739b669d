"""``sandbox-local``: the ``local`` sandbox provider for harness_core (scoped workspaces)."""

from __future__ import annotations

from .provider import (
    ENV_ROOT,
    NAME,
    LocalSandboxProvider,
    LocalState,
    default_root,
    validate_key,
)

__all__ = [
    "ENV_ROOT",
    "NAME",
    "LocalSandboxProvider",
    "LocalState",
    "default_root",
    "validate_key",
]
