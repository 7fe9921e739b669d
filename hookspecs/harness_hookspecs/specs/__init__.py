"""The hookspecs, one module per concern. ``harness_core`` adds them all to its plugin manager."""

from . import (
    commands,
    conformance,
    credentials,
    lifecycle,
    observers,
    permissions,
    registration,
    sandbox,
)

ALL = (
    registration,
    lifecycle,
    sandbox,
    credentials,
    observers,
    conformance,
    permissions,
    commands,
)

__all__ = [
    "ALL",
    "commands",
    "conformance",
    "credentials",
    "lifecycle",
    "observers",
    "permissions",
    "registration",
    "sandbox",
]
